#!/usr/bin/env bash
# One bedrock-protocol session captured: OUTDIR/bedrock-VERSION.pcap, with
# the key log, both sides' private keys and the packets each side sent
# (.packets.jsonl, recorded inside bedrock-protocol). Needs root (tcpdump)
# and scripts/bedrock-setup.sh.
#   scripts/bedrock-capture.sh 1.26.45 samples
set -euo pipefail
version=${1:?VERSION}
out=${2:-.}
port=${3:-19470}
cd "$(dirname "$0")/.."
scripts/bedrock-setup.sh
base="$out/bedrock-$version"
rm -f "$base".pcap "$base".keylog "$base".packets.jsonl
tcpdump -i lo -Z root -U -n -s 4096 -w "$base.pcap" "udp port $port" 2>/dev/null &
dump=$!
sleep 1
node scripts/bedrock_peers.js --version "$version" --port "$port" \
  --out "$base.packets.jsonl" --keylog "$base.keylog"
sleep 0.5
kill -INT "$dump"
wait "$dump" || true
ls -l "$base".*
