#!/usr/bin/env bash
# One NetherNet join with a second, independent WebRTC stack as the CLIENT: headless
# Chromium (libwebrtc, dcsctp, BoringSSL: the Minecraft client's own stack) running
# scripts/chromium_page.html, against the aiortc server of scripts/nethernet_peers.py
# (server --chromium-page PORT+1), captured by tcpdump. Leaves
#   OUTDIR/nethernet-chromium.pcap         the capture: TCP PORT (the signaling: GET /v1/join,
#                                          POST /v1/join/{id}) and UDP (ICE/DTLS/SCTP)
#   OUTDIR/nethernet-chromium.keylog       the DTLS key log (NSS CLIENT_RANDOM), written by the
#                                          aiortc server (the DTLS client: its answer is
#                                          a=setup:active); one line, both directions
#   OUTDIR/nethernet-chromium.truth.jsonl  nethernet_peers.py's --truth records: the server's,
#                                          and the page's own (what Chromium sent and
#                                          received), POSTed by the page at its end and
#                                          appended with "side":"client"
# The page (the top of scripts/chromium_page.html says what it does) does what
# `nethernet_peers.py client` does: GET /v1/join, an offer (Chromium's SDP, non-trickle)
# with an a=identity made with WebCrypto ECDSA P-384, the two channels, the client's side
# of the session (the same batches and segments, served by the server as
# /chromium/session.json), the pings answered, the channels closed. The page and its
# session.json come from 127.0.0.1:PORT+1 (not captured); Chromium runs with
# --disable-web-security so the page's fetches to the signaling port need no CORS
# headers and send no preflight: the signaling is the join's alone (SAME_ORIGIN=1: see below).
# NO_IDENTITY=1: the page's offer carries no a=identity (the server runs
# --allow-no-identity: recorded identity null, verified false, identity_absent true).
# PACKETS=FILE, MAX_PACKETS=N, SEGMENT=N, PINGS=N: as scripts/nethernet-capture.sh.
# Confinement: the script re-runs itself in a new network namespace (unshare --net) that
# has only lo, so nothing reaches another interface; there Chromium needs
# --allow-loopback-in-peer-connection (libwebrtc skips loopback otherwise) and media
# permission (the page calls getUserMedia, granted by --use-fake-ui-for-media-stream with a
# fake device): without it Chromium gathers only 0.0.0.0 candidates, which it drops.
# Needs root (unshare, tcpdump), aiortc in target/venv (target/venv/bin/pip install
# aiortc==1.16.0) or NETHERNET_PYTHON, and Chromium (apt-get install -y chromium
# chromium-driver; or CHROMIUM=the browser binary).
#   sudo scripts/chromium-capture.sh /tmp/out          (PORT default 19850)
#   sudo SEGMENT=1000 scripts/chromium-capture.sh /tmp/out 19860
# CHROMIUM_LOG=FILE keeps Chromium's stderr (its console messages included).
# OURS=BIN: the server is ours, `BIN serve --bedrock --nethernet --once` (RakNet beside it),
# game VERSION (default 1.26.45, the version of PACKETS); nethernet_peers.py only serves the
# page (page --game), which plays the recorded client by what our server sends, to the
# spawn. The key log is then our server's (it is the DTLS client), and
#   OUTDIR/nethernet-chromium.server.jsonl  our server's records (--json)
set -euo pipefail
out=${1:?usage: chromium-capture.sh OUTDIR [PORT]}
port=${2:-19850}
page_port=$((port + 1)) web_security=(--disable-web-security)
# SAME_ORIGIN=1: the page on the signaling port itself (no --disable-web-security); the
# capture then holds the page's requests too (GET /chromium.html, /chromium/session.json,
# /favicon.ico, POST /chromium/truth).
[ -n "${SAME_ORIGIN:-}" ] && { page_port=$port; web_security=(); }
name=nethernet-chromium
self=$(readlink -f "$0")
here=$(cd "$(dirname "$self")/.." && pwd)
py=${NETHERNET_PYTHON:-$here/target/venv/bin/python}
"$py" -c 'import aiortc' 2>/dev/null || {
  echo "chromium-capture: $py cannot import aiortc (target/venv/bin/pip install aiortc==1.16.0)" >&2; exit 1; }
chromium=${CHROMIUM:-}
if [ -z "$chromium" ]; then
  # The binary itself, not Debian's /usr/bin/chromium wrapper (it adds /etc/chromium.d's flags).
  for c in /usr/lib/chromium/chromium /usr/bin/chromium; do [ -x "$c" ] && { chromium=$c; break; }; done
fi
[ -n "$chromium" ] && [ -x "$chromium" ] || {
  echo "chromium-capture: no Chromium (apt-get install -y chromium chromium-driver, or CHROMIUM=PATH)" >&2; exit 1; }
for tool in unshare ip tcpdump setsid; do
  command -v "$tool" >/dev/null || { echo "chromium-capture: $tool is missing" >&2; exit 1; }
done

# Confinement: a new network namespace with only lo.
if [ -z "${CHROMIUM_CAPTURE_NETNS:-}" ]; then
  [ "$(id -u)" -eq 0 ] || { echo "chromium-capture: needs root (unshare --net, tcpdump)" >&2; exit 1; }
  exec env CHROMIUM_CAPTURE_NETNS=$$ unshare --net -- "$self" "$@"
fi
ip link set lo up
links=$(ip -o link show | awk -F': ' '{print $2}' | tr '\n' ' ')
[ "$links" = "lo " ] || { echo "chromium-capture: the namespace has links other than lo: $links" >&2; exit 1; }

mkdir -p "$out"
base="$out/$name"
rm -f "$base".pcap "$base".keylog "$base".truth.jsonl "$base".server.jsonl
role=server peer_keylog=$base.keylog
[ -n "${OURS:-}" ] && { role=page; peer_keylog=/dev/null; }
peer_args=(--port "$port" --truth "$base.truth.jsonl" --keylog "$peer_keylog"
  --segment-size "${SEGMENT:-262143}" --pings "${PINGS:-3}" --max-packets "${MAX_PACKETS:-0}"
  --chromium-page "$page_port" --timeout 60 --step-timeout 15)
[ -n "${PACKETS:-}" ] && peer_args+=(--packets "$PACKETS")
[ -n "${NO_IDENTITY:-}" ] && peer_args+=(--allow-no-identity --chromium-no-identity)
[ -n "${OURS:-}" ] && peer_args+=(--game)
err=$(mktemp)
srv_err=$(mktemp)
chr_err=${CHROMIUM_LOG:-$(mktemp)}
profile=$(mktemp -d)
server="" chrome="" ours=""
# As nethernet-capture.sh: every packet whole, a big kernel buffer, each packet written at once.
tcpdump -i lo -Z root -U --immediate-mode -n -s 0 -B 32768 -w "$base.pcap" \
  "host 127.0.0.1 and (tcp port $port or udp)" 2>"$err" &
dump=$!
cleanup() {
  [ -n "$chrome" ] && kill -TERM -- "-$chrome" 2>/dev/null || true
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  [ -n "$ours" ] && kill "$ours" 2>/dev/null || true
  kill -INT "$dump" 2>/dev/null || true
  rm -rf "$err" "$srv_err" "$profile"
  [ -n "${CHROMIUM_LOG:-}" ] || rm -f "$chr_err"
}
trap cleanup EXIT
for _ in $(seq 100); do grep -q 'listening on' "$err" && break; sleep 0.05; done
grep -q 'listening on' "$err" || { cat "$err" >&2; echo "chromium-capture: tcpdump did not start" >&2; exit 1; }
sleep 0.2   # the filter is attached just before tcpdump says it listens
start=$(date +%s.%N)
if [ -n "${OURS:-}" ]; then
  "$OURS" serve --listen "127.0.0.1:$port" --bedrock --nethernet --once --json \
    --version "${VERSION:-1.26.45}" --tls-keylog-out "$base.keylog" >"$base.server.jsonl" 2>>"$srv_err" &
  ours=$!
  for _ in $(seq 200); do grep -q '"transport":"nethernet"' "$base.server.jsonl" && break; sleep 0.05; done
  grep -q '"transport":"nethernet"' "$base.server.jsonl" || {
    cat "$srv_err" >&2; echo "chromium-capture: our server did not start" >&2; exit 1; }
fi
timeout 80 "$py" "$here/scripts/nethernet_peers.py" "$role" "${peer_args[@]}" 2>>"$srv_err" &
server=$!
for _ in $(seq 100); do grep -q 'chromium page on' "$srv_err" && break; sleep 0.05; done
if ! grep -q 'chromium page on' "$srv_err"; then
  cat "$srv_err" >&2; echo "chromium-capture: the server did not start" >&2; exit 1
fi
# Its own session (setsid): the browser's processes are killed as one group, by its id.
setsid "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --allow-loopback-in-peer-connection \
  --disable-features=WebRtcHideLocalIpsWithMdns ${web_security[@]+"${web_security[@]}"} \
  --use-fake-ui-for-media-stream --use-fake-device-for-media-stream \
  --enable-logging=stderr --v=0 \
  "http://127.0.0.1:$page_port/chromium.html" >"$chr_err" 2>&1 &
chrome=$!
pgid=$(ps -o pgid= -p "$chrome" | tr -d ' ' || true)
[ -z "$pgid" ] || [ "$pgid" = "$chrome" ] || {
  echo "chromium-capture: Chromium is not its own process group" >&2; exit 1; }
# Until the server ends; if the browser ends first (a crash), the server is stopped.
while kill -0 "$server" 2>/dev/null; do
  if ! kill -0 "$chrome" 2>/dev/null; then
    echo "chromium-capture: Chromium exited before the server finished" >&2
    kill "$server" 2>/dev/null || true
    break
  fi
  sleep 0.1
done
status=0
wait "$server" || status=$?
server=""
kill -TERM -- "-$chrome" 2>/dev/null || true
for _ in $(seq 50); do kill -0 -- "-$chrome" 2>/dev/null || break; sleep 0.1; done
kill -KILL -- "-$chrome" 2>/dev/null || true
wait "$chrome" 2>/dev/null || true
chrome=""
if [ -n "$ours" ]; then
  # --once: it ends when the page's channels close; else it is stopped.
  for _ in $(seq 100); do kill -0 "$ours" 2>/dev/null || break; sleep 0.1; done
  kill "$ours" 2>/dev/null && { echo "chromium-capture: our server did not end by itself" >&2; status=1; }
  wait "$ours" 2>/dev/null || true
  ours=""
fi
end=$(date +%s.%N)
cat "$srv_err" >&2
sleep 0.5
kill -INT "$dump"
wait "$dump" || true
trap - EXIT
grep -v 'listening on' "$err" >&2 || true
if [ "$status" -ne 0 ]; then
  echo "chromium-capture: the join failed (server exit $status); Chromium's console (or log):" >&2
  { grep -a 'CONSOLE' "$chr_err" || cat "$chr_err"; } | tail -20 >&2 || true
  [ -n "${CHROMIUM_LOG:-}" ] || rm -f "$chr_err"
  rm -rf "$err" "$srv_err" "$profile"
  echo "chromium-capture: the capture is incomplete" >&2
  exit "$status"
fi
[ -n "${CHROMIUM_LOG:-}" ] || rm -f "$chr_err"
rm -rf "$err" "$srv_err" "$profile"
grep -q '"side":"client".*"type":"result"\|"type":"result","side":"client"' "$base.truth.jsonl" || {
  echo "chromium-capture: no result from the page in $base.truth.jsonl" >&2; exit 1; }
awk -v a="$start" -v b="$end" 'BEGIN { printf "chromium-capture: %.1f s from the server'"'"'s start to its end\n", b - a }' >&2
ls -l "$base".pcap "$base".keylog "$base".truth.jsonl
