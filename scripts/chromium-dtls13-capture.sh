#!/usr/bin/env bash
# A WebRTC data channel between two peers of one headless Chromium page
# (scripts/chromium_pair.html): libwebrtc on both sides negotiates DTLS 1.3 (Chromium 156
# does by default; aiortc, werift and so every NetherNet peer of our other scripts stop at
# 1.2), captured by tcpdump in a network namespace that has only lo. No signaling: the
# conversation is found from its UDP traffic alone. Leaves
#   OUTDIR/webrtc-dtls13.pcap   all UDP on lo (STUN, DTLS 1.3, its sealed records)
#   OUTDIR/webrtc-dtls13.log    the page's log: candidates, messages each side received,
#                               each side's getStats (tlsVersion, cipher, DTLS role)
# PQC=0: Chromium without its post-quantum key exchange (--disable-features=WebRtcPqcForDtls):
# a small ServerHello that shares its datagram with the first sealed record; files
# webrtc-dtls13-nopqc.*. Needs root (unshare, tcpdump) and Chromium (apt-get install -y
# chromium).
#   sudo scripts/chromium-dtls13-capture.sh samples
set -euo pipefail
out=${1:?usage: chromium-dtls13-capture.sh OUTDIR}
self=$(readlink -f "$0")
here=$(cd "$(dirname "$self")" && pwd)
chromium=${CHROMIUM:-/usr/lib/chromium/chromium}
[ -x "$chromium" ] || { echo "chromium-dtls13-capture: no Chromium (apt-get install -y chromium)" >&2; exit 1; }
if [ -z "${DTLS13_IN_NETNS:-}" ]; then
  mkdir -p "$out"
  exec unshare --net env DTLS13_IN_NETNS=1 "$self" "$(cd "$out" && pwd)"
fi
ip link set lo up
name=webrtc-dtls13
features=WebRtcHideLocalIpsWithMdns
[ "${PQC:-1}" = 0 ] && { name=webrtc-dtls13-nopqc; features=$features,WebRtcPqcForDtls; }
tmp=$(mktemp -d)
cp "$here/chromium_pair.html" "$tmp/index.html"
port=19950
(cd "$tmp" && exec python3 -m http.server "$port" --bind 127.0.0.1) >"$tmp/http.log" 2>&1 &
web=$!
tcpdump -i lo -Z root -U --immediate-mode -n -s 0 -B 32768 -w "$out/$name.pcap" udp 2>"$tmp/dump.err" &
dump=$!
cleanup() { kill "$web" "$dump" 2>/dev/null || true; [ -n "${browser:-}" ] && kill "$browser" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
for _ in $(seq 100); do grep -q 'listening on' "$tmp/dump.err" && break; sleep 0.05; done
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
sleep 0.2
"$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$tmp/profile" --allow-loopback-in-peer-connection \
  --use-fake-ui-for-media-stream --use-fake-device-for-media-stream \
  --disable-features="$features" "http://127.0.0.1:$port/index.html" >"$tmp/chromium.log" 2>&1 &
browser=$!
for _ in $(seq 200); do grep -q 'GET /done' "$tmp/http.log" && break; sleep 0.1; done
grep -q 'GET /done' "$tmp/http.log" || { cat "$tmp/chromium.log" >&2; echo "chromium-dtls13-capture: the page never reported" >&2; exit 1; }
sleep 0.3
kill "$browser" 2>/dev/null || true
browser=
kill -INT "$dump"; wait "$dump" || true
grep 'GET /done' "$tmp/http.log" | sed 's|.*GET /done?\([^ ]*\) HTTP.*|\1|' \
  | python3 -c 'import sys, urllib.parse; print(urllib.parse.unquote(sys.stdin.read().strip()))' >"$out/$name.log"
grep -q 'tlsVersion=FEFC' "$out/$name.log" || { cat "$out/$name.log" >&2; echo "chromium-dtls13-capture: not DTLS 1.3" >&2; exit 1; }
ls -l "$out/$name.pcap" "$out/$name.log"
