#!/usr/bin/env bash
# One bedrock-protocol session (scripts/bedrock_peers.js: server and client
# on jsp-raknet, loopback) captured by tcpdump on lo. Leaves
#   OUTDIR/bedrock-VERSION.pcap           the capture (udp port PORT)
#   OUTDIR/bedrock-VERSION.keylog         its BEDROCK_SALT_KEY line
#   OUTDIR/bedrock-VERSION.packets.jsonl  every game packet each side sent,
#                                          recorded inside bedrock-protocol
# The client logs in with a 64x64 classic skin (SKIN=classic, the default
# here: small files); SKIN=bp gives bedrock-protocol's own 256x256 default
# skin (a Login of about 590 KB before compression). PLAY=N adds N rounds of
# gameplay (the client's move, the server's chunk: about 4 KB a round);
# WORLD=1 a world's worth of packets from the server (every packet type);
# EVERY=SEED every packet type both ways with seeded random values.
# Needs root (tcpdump), node and npm (scripts/bedrock-setup.sh runs first).
#   sudo scripts/bedrock-capture.sh 1.26.45 samples
#   sudo scripts/bedrock-capture.sh 1.19.1 /tmp/out 19480
# Then, with tshark: the 0xFE messages of the capture
#   tshark -r OUTDIR/bedrock-VERSION.pcap -d udp.port==PORT,raknet -Y 'raknet.packet_id == 0xfe'
set -euo pipefail
version=${1:?usage: bedrock-capture.sh VERSION [OUTDIR] [PORT]}
out=${2:-.}
port=${3:-19470}
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/bedrock-setup.sh"
mkdir -p "$out"
base="$out/bedrock-$version"
rm -f "$base".pcap "$base".keylog "$base".packets.jsonl
err=$(mktemp)
# -s 4096: every datagram whole (jsp-raknet's MTU is at most 1400).
tcpdump -i lo -Z root -U --immediate-mode -n -s 4096 -w "$base.pcap" "udp port $port" 2>"$err" &
dump=$!
trap 'kill -INT $dump 2>/dev/null || true; rm -f "$err"' EXIT
for _ in $(seq 100); do grep -q 'listening on' "$err" && break; sleep 0.05; done
grep -q 'listening on' "$err" || { cat "$err" >&2; echo "bedrock-capture: tcpdump did not start" >&2; exit 1; }
status=0
node "$here/scripts/bedrock_peers.js" --version "$version" --port "$port" \
  --out "$base.packets.jsonl" --keylog "$base.keylog" --skin "${SKIN:-classic}" --play "${PLAY:-0}" --world "${WORLD:-0}" \
  ${EVERY:+--every "$EVERY"} || status=$?
sleep 0.5
kill -INT "$dump"
wait "$dump" || true
trap - EXIT
grep -v 'listening on' "$err" >&2 || true
rm -f "$err"
if [ "$status" -ne 0 ]; then
  echo "bedrock-capture: bedrock_peers.js failed (exit $status); the capture is incomplete" >&2
  exit "$status"
fi
ls -l "$base".pcap "$base".keylog "$base".packets.jsonl
