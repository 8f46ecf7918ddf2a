#!/usr/bin/env bash
# One NetherNet session (scripts/nethernet_peers.py: server and client on aiortc,
# HTTP signaling, ICE, DTLS 1.2, SCTP data channels, loopback) captured by
# tcpdump on lo. Leaves
#   OUTDIR/nethernet-join.pcap         the capture (TCP PORT: signaling; UDP: ICE/DTLS/SCTP)
#   OUTDIR/nethernet-join.keylog       the DTLS key log (NSS CLIENT_RANDOM lines, one per
#                                      end: the same line twice)
#   OUTDIR/nethernet-join.truth.jsonl  every data channel message, batch and game packet
#                                      each side sent and received, the SDPs, the DTLS
#                                      parameters (scripts/nethernet_peers.py says what)
# The game packets are those of samples/bedrock-login.packets.jsonl (a bedrock-protocol
# 1.26.45 session) unless PACKETS=FILE; MAX_PACKETS=N keeps the first N;
# SEGMENT=N cuts batches into NetherNet segments of N bytes (default 262143: only
# a batch over 256 KB fragments); PINGS=N unreliable pings (default 3).
# RELAY=SEED: the UDP leg goes through scripts/relay.py (seed SEED; LOSS, DUP, REORDER:
# its rates, default 0.1 0.05 0.05 as lossy.pcap's): the client starts it toward the
# server's candidate (nethernet_peers.py --relay PORT+1:PORT+2, --lossy: pings best
# effort) and each side's only remote candidate is a relay socket (client -> PORT+1,
# server -> PORT+2). The files are then OUTDIR/nethernet-lossy.* (PORT default 19770),
# plus nethernet-lossy.relay.json (the relay's counts) and nethernet-lossy.relay-trace.jsonl
# (its decisions). The capture keeps both legs (udp port PORT+1 or PORT+2): the client's
# side and the server's side of the relay (samples/README.md says why). tshark must read
# them one conversation at a time: scripts/nethernet-tshark-check.py OUTDIR/nethernet-lossy
#   sudo RELAY=15 SEGMENT=2000 MAX_PACKETS=20 PINGS=20 scripts/nethernet-capture.sh samples
# NO_ENDPOINT=1: the server is Python's own http.server, a real HTTP server without
# NetherNet (GET /v1/join answers 404, as a server without a NetherNet endpoint does):
# the client asks, records the 404 and gives up. Files: OUTDIR/nethernet-no-endpoint.*
# (PORT default 19780).
# REFUSE=1: the server answers the offer 403 (nethernet_peers.py --refuse-offer): the
# client records it and gives up. Files: OUTDIR/nethernet-refused.* (PORT default 19790).
# FAULT=unreachable|fingerprint|ciphers|ice-pwd|identity: a join that fails on purpose
# (nethernet_peers.py --fault; the client gets ciphers, the server the others):
# unreachable candidates in the SDPs, an answer whose a=fingerprint is not the server's
# certificate, no shared DTLS cipher suite (a fatal alert), an answer whose a=ice-pwd is
# not the server's, an answer whose identity assertion does not sign its a=fingerprint.
# Both sides fail, as they must; the script checks that the client recorded its
# failure. Files: OUTDIR/nethernet-unreachable.*, nethernet-fingerprint.*,
# nethernet-alert.*, nethernet-ice-pwd.*, nethernet-identity.* (PORT default 19800,
# 19810, 19820, 19830, 19840).
# Needs root (tcpdump) and aiortc in target/venv (target/venv/bin/pip install aiortc==1.16.0), or
# NETHERNET_PYTHON=a python with aiortc.
#   sudo scripts/nethernet-capture.sh samples
#   sudo SEGMENT=1000 scripts/nethernet-capture.sh /tmp/out 19770
# Then, with tshark 4.0: the dtls.keys_list entry (any RSA key file: the keys come
# from the key log) makes DTLS's payload SCTP; its port is a UDP port of the ICE
# pair (either end's; the STUN requests show them), not the SCTP port 5000:
#   openssl genrsa -out /tmp/any.pem 2048
#   udp=$(tshark -r OUTDIR/nethernet-join.pcap -Y stun -T fields -e udp.srcport | head -1)
#   tshark -r OUTDIR/nethernet-join.pcap -o tls.keylog_file:OUTDIR/nethernet-join.keylog \
#     -o udp.try_heuristic_first:TRUE -o "dtls.keys_list:127.0.0.1,$udp,sctp,/tmp/any.pem" -Y 'sctp || http'
set -euo pipefail
out=${1:?usage: nethernet-capture.sh OUTDIR [PORT]}
relay=${RELAY:-}
no_endpoint=${NO_ENDPOINT:-}
if [ -n "$relay" ]; then port=${2:-19770}; name=nethernet-lossy; else port=${2:-19760}; name=nethernet-join; fi
if [ -n "$no_endpoint" ]; then port=${2:-19780}; name=nethernet-no-endpoint; fi
refuse=${REFUSE:-}
if [ -n "$refuse" ]; then port=${2:-19790}; name=nethernet-refused; server_args=(--refuse-offer); fi
fault=${FAULT:-}
fault_args=()
case "$fault" in
  "") ;;
  unreachable) port=${2:-19800}; name=nethernet-unreachable; server_args=(--fault unreachable) ;;
  fingerprint) port=${2:-19810}; name=nethernet-fingerprint; server_args=(--fault fingerprint) ;;
  ciphers) port=${2:-19820}; name=nethernet-alert; fault_args=(--fault ciphers) ;;
  ice-pwd) port=${2:-19830}; name=nethernet-ice-pwd; server_args=(--fault ice-pwd) ;;
  identity) port=${2:-19840}; name=nethernet-identity; server_args=(--fault identity) ;;
  *) echo "nethernet-capture: FAULT is unreachable, fingerprint, ciphers, ice-pwd or identity" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
py=${NETHERNET_PYTHON:-$here/target/venv/bin/python}
"$py" -c 'import aiortc' 2>/dev/null || {
  echo "nethernet-capture: $py cannot import aiortc (target/venv/bin/pip install aiortc==1.16.0)" >&2; exit 1; }
mkdir -p "$out"
base="$out/$name"
rm -f "$base".pcap "$base".keylog "$base".truth.jsonl
[ -n "$relay" ] && rm -f "$base".relay.json "$base".relay-trace.jsonl
peer_args=(--port "$port" --truth "$base.truth.jsonl" --keylog "$base.keylog"
  --segment-size "${SEGMENT:-262143}" --pings "${PINGS:-3}" --max-packets "${MAX_PACKETS:-0}")
[ -n "${PACKETS:-}" ] && peer_args+=(--packets "$PACKETS")
client_args=(${fault_args[@]+"${fault_args[@]}"}) server_args=(${server_args[@]+"${server_args[@]}"}) udp_filter="udp" peer_timeout=40
[ -n "$fault" ] && peer_args+=(--step-timeout 6 --timeout 15)
if [ -n "$relay" ]; then
  rates="--loss ${LOSS:-0.1} --dup ${DUP:-0.05} --reorder ${REORDER:-0.05} --duration 120"
  peer_args+=(--lossy --step-timeout 30 --timeout 100)
  client_args=(--relay "$((port + 1)):$((port + 2))"
    "--relay-args=--seed $relay $rates --stats-json $base.relay.json --trace $base.relay-trace.jsonl")
  server_args=(--relay-candidate "$((port + 2))")
  udp_filter="udp port $((port + 1)) or udp port $((port + 2))"
  peer_timeout=110
fi
err=$(mktemp)
srv_err=$(mktemp)
server=""
# -s 0: every packet whole (a DTLS record of a 262 KB message's chunks is ~1.2 KB, but
# the HTTP bodies and loopback's 64 KB MTU may be larger).
# A bigger buffer (-B, KiB) so that the kernel drops none: DTLS flights and SCTP windows
# come in bursts, with the relay each datagram crosses lo twice, and tests capture while
# other tests load the machine.
buf=(-B 32768)
tcpdump -i lo -Z root -U --immediate-mode -n -s 0 ${buf[@]+"${buf[@]}"} -w "$base.pcap" \
  "host 127.0.0.1 and (tcp port $port or $udp_filter)" 2>"$err" &
dump=$!
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  kill -INT "$dump" 2>/dev/null || true
  rm -f "$err" "$srv_err"
}
trap cleanup EXIT
for _ in $(seq 100); do grep -q 'listening on' "$err" && break; sleep 0.05; done
grep -q 'listening on' "$err" || { cat "$err" >&2; echo "nethernet-capture: tcpdump did not start" >&2; exit 1; }
sleep 0.2   # the filter is attached just before tcpdump says it listens
status=0
if [ -n "$no_endpoint" ]; then
  www=$(mktemp -d)
  timeout "$peer_timeout" "$py" -m http.server "$port" --bind 127.0.0.1 --directory "$www" 2>"$srv_err" >&2 &
  server=$!
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
  echo "server listening (python -m http.server)" >>"$srv_err"
else
timeout "$peer_timeout" "$py" "$here/scripts/nethernet_peers.py" server "${peer_args[@]}" ${server_args[@]+"${server_args[@]}"} 2>"$srv_err" &
server=$!
for _ in $(seq 100); do grep -q 'server listening' "$srv_err" && break; sleep 0.05; done
fi
if ! grep -q 'server listening' "$srv_err"; then
  cat "$srv_err" >&2; echo "nethernet-capture: the server did not start" >&2; exit 1
fi
timeout "$peer_timeout" "$py" "$here/scripts/nethernet_peers.py" client "${peer_args[@]}" ${client_args[@]+"${client_args[@]}"} || status=$?
if [ -n "$fault" ]; then
  # Both sides fail, as they must; the client must have recorded why.
  wait "$server" 2>/dev/null || true
  if [ "$status" -ne 0 ] && grep -q '"side":"client".*"type":"result","ok":false\|"type":"result".*"side":"client".*"ok":false' "$base.truth.jsonl"; then
    status=0
  else
    status=1
  fi
elif [ -n "$refuse" ]; then
  # The client's failure is the point: it must have recorded the 403.
  srv=0
  wait "$server" || srv=$?
  if [ "$srv" -eq 0 ] && grep -q '"status": *403' "$base.truth.jsonl"; then status=0; else status=1; fi
elif [ -n "$no_endpoint" ]; then
  # The client's failure is the point: it must have recorded the 404.
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  grep -q '"status": *404' "$base.truth.jsonl" && status=0 || status=1
  rm -rf "$www"
else
wait "$server" || { s=$?; [ "$status" -ne 0 ] || status=$s; }
fi
server=""
cat "$srv_err" >&2
sleep 0.5
kill -INT "$dump"
wait "$dump" || true
trap - EXIT
grep -v 'listening on' "$err" >&2 || true
rm -f "$err" "$srv_err"
if [ "$status" -ne 0 ]; then
  echo "nethernet-capture: nethernet_peers.py failed (exit $status); the capture is incomplete" >&2
  exit "$status"
fi
ls -l "$base".pcap "$base".keylog "$base".truth.jsonl
[ -z "$relay" ] || ls -l "$base".relay.json "$base".relay-trace.jsonl
