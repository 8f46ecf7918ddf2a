#!/usr/bin/env bash
# NetherNet LAN discovery (UDP 7551) between a real server and client of the npm package
# nethernet 1.1.2 (PrismarineJS/node-nethernet; scripts/lan_discovery.js drives it),
# captured by tcpdump. Everything runs in a fresh network namespace that has only lo
# (unshare --net): the client's discovery requests are broadcast to 127.255.255.255:7551,
# the server answers from 0.0.0.0:7551, and the signals of a LAN join go over the same
# socket pair; ICE/DTLS/SCTP use other UDP ports of 127.0.0.1 (captured too).
# Leaves
#   OUTDIR/nethernet-lan.pcap         all UDP on lo (the namespace has nothing else): LAN discovery
#                                     on 7551, then the join's ICE, DTLS and SCTP (werift)
#   OUTDIR/nethernet-lan.truth.jsonl  one line per discovery packet each side sent or
#                                     received, recorded inside nethernet
#                                     (scripts/lan_discovery.js says what); then the join as
#                                     werift saw it: records with a "type" (dtls, sctp, dcep,
#                                     and message: each data-channel message each side's
#                                     application sent or received, label, stream, PPID, hex)
#   OUTDIR/nethernet-lan.keylog       the join's DTLS keys (NSS key-log format, CLIENT_RANDOM,
#                                     from inside werift; one line per association), for
#                                     raknet-dissect --tls-keylog and tshark's tls.keylog_file
# Packets: discovery request (client, broadcast), response (server data: SERVER_DATA_VERSION=6,
# go-nethernet's layout, default; 4: bedrock-protocol's nethernet-branch layout, files
# nethernet-lan-v4.*), CONNECTREQUEST + CANDIDATEADD (client), CONNECTRESPONSE +
# CANDIDATEADD (server), a refused second CONNECTREQUEST (client) and its CONNECTERROR
# 13 (server).
# GAME_BATCH="HEX [HEX...]": the batches the client sends, in order (default
# ff06c1000000039c; see scripts/lan_discovery.js --game-batch).
# Needs root (unshare, tcpdump), node and scripts/lan/node_modules (installed here if
# missing: cd scripts/lan && npm ci --ignore-scripts).
#   sudo scripts/lan-discovery-capture.sh /tmp/out
set -euo pipefail
out=${1:?usage: lan-discovery-capture.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
node=${NODE:-node}
version=${SERVER_DATA_VERSION:-6}
name=nethernet-lan
[ "$version" = 6 ] || name=nethernet-lan-v$version

if [ -z "${LAN_CAPTURE_IN_NETNS:-}" ]; then
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  if [ ! -d "$here/lan/node_modules/nethernet" ]; then
    (cd "$here/lan" && npm ci --ignore-scripts --no-audit --no-fund >&2)
  fi
  exec unshare --net env LAN_CAPTURE_IN_NETNS=1 "$0" "$out"
fi

ip link set lo up
base=$out/$name
tmp=$(mktemp -d)
server=
dump=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  [ -n "$dump" ] && kill -INT "$dump" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# As nethernet-capture.sh: every packet whole and a big kernel buffer (-B, KiB; with
# --immediate-mode and -s 0 the default 2 MiB ring holds only a few packets), so that the
# kernel drops none of the join's DTLS flights and SCTP bursts.
tcpdump -i lo -Z root -U --immediate-mode -n -s 0 -B 32768 -w "$base.pcap" udp 2>"$tmp/dump.err" &
dump=$!
for _ in $(seq 100); do grep -q 'listening on' "$tmp/dump.err" && break; sleep 0.05; done
grep -q 'listening on' "$tmp/dump.err" || { cat "$tmp/dump.err" >&2; echo "lan-discovery-capture: tcpdump did not start" >&2; exit 1; }
sleep 0.2   # the filter is attached just before tcpdump says it listens

"$node" "$here/lan_discovery.js" server "$tmp/server.jsonl" --server-data-version "$version" --keylog "$tmp/server.keylog" \
  >"$tmp/server.out" 2> >(sed 's/^/  /' >&2) &
server=$!
for _ in $(seq 100); do grep -q READY "$tmp/server.out" && break; sleep 0.05; done
grep -q READY "$tmp/server.out" || { echo "lan-discovery-capture: server did not start" >&2; exit 1; }

status=0
"$node" "$here/lan_discovery.js" client "$tmp/client.jsonl" --keylog "$tmp/client.keylog" $(for b in ${GAME_BATCH:-}; do printf -- '--game-batch %s ' "$b"; done) 2> >(sed 's/^/  /' >&2) || status=$?
wait "$server" || status=$?
server=
sleep 0.2
kill -INT "$dump"; wait "$dump" || true
dump=
# tcpdump's statistics, when the kernel dropped any datagram
grep -q '^[1-9][0-9]* packets\? dropped by' "$tmp/dump.err" && sed 's/^/lan-discovery-capture: tcpdump: /' "$tmp/dump.err" | grep -E 'captured|received|dropped' >&2
[ "$status" = 0 ] || { echo "lan-discovery-capture: a peer failed ($status)" >&2; exit "$status"; }

"$node" "$here/lan_discovery.js" merge "$base.truth.jsonl" "$tmp/server.jsonl" "$tmp/client.jsonl"
# both sides log the same association: keep each line once, in order
cat "$tmp/server.keylog" "$tmp/client.keylog" 2>/dev/null | awk '!seen[$0]++' >"$base.keylog"
# discovery records (no "type"; the join's records have one)
count() { "$node" -e 'let n=0; for (const l of require("fs").readFileSync(process.argv[1], "utf8").split("\n")) { if (!l.trim()) continue; const r = JSON.parse(l); if (process.argv[2] === "message" ? r.type === "message" && r.event === process.argv[3] : !r.type && r.event === process.argv[2]) n++ } console.log(n)' "$base.truth.jsonl" "$@"; }
sent=$(count sent)
captured=$(tcpdump -r "$base.pcap" -n 'udp port 7551' 2>/dev/null | wc -l)
echo "lan-discovery-capture: $base.pcap: $captured datagrams on port 7551 ($(tcpdump -r "$base.pcap" -n 2>/dev/null | wc -l) in all); truth: $sent sent, $(count received) received" >&2
echo "lan-discovery-capture: join: $(wc -l <"$base.keylog") DTLS key(s) in $base.keylog; data-channel messages: $(count message sent) sent, $(count message received) received" >&2
[ "$sent" = "$captured" ] || { echo "lan-discovery-capture: $sent sent but $captured captured" >&2; exit 1; }
