#!/usr/bin/env bash
# bench-proxy-nethernet.sh: the bridges of `proxy` between the transports (issue 29), each
# measured once on a real session, the proxy (the release build) writing its capture (-w):
#   raknet-to-nethernet  bedrock-protocol's client (RakNet) logs in through the proxy to aiortc's
#                        NetherNet server (scripts/nethernet_peers.py server --game, playing the
#                        server's side of bedrock-protocol's own session of 1.26.45), spawns,
#                        chats and leaves;
#   nethernet-to-raknet  aiortc's client (client --game --chat, the client's side of that
#                        session) joins the proxy and plays through it to bedrock-protocol's
#                        server on RakNet.
#
# Usage:
#     cargo build --release && scripts/bench-proxy-nethernet.sh [PORT] [BRIDGE]
#     (default 27711, both bridges)
#
# Measured, from the proxy's own capture (`game --json` on it, the keys inside): per game
# packet, from its arrival on one leg to its departure on the other, each leg's packets
# matched in order and by their bytes (median, max, each way; the first c2s packets wait for
# the upstream's channels to open); the upstream's join time; the proxy's CPU time and max RSS.
# Needs scripts/bedrock-setup.sh (bedrock-protocol), node, target/venv with aiortc, python3,
# /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
port=${1:-27711}
bridges=${2:-raknet-to-nethernet nethernet-to-raknet}
bin=target/release/raknet-dissect
py=${AIORTC_PYTHON:-target/venv/bin/python}
[ -x "$bin" ] || { echo "bench-proxy-nethernet: build first: cargo build --release" >&2; exit 1; }
bash scripts/bedrock-setup.sh >/dev/null
work=$(mktemp -d)
server=
trap 'rm -rf "$work"; [ -n "$server" ] && kill $server 2>/dev/null || true' EXIT
node scripts/bedrock_peers.js --version 1.26.45 --port "$port" --out "$work/packets.jsonl" \
  --keylog "$work/recorded.keylog" >/dev/null 2>&1
fail() { cat "$work"/*.err >&2; echo "bench-proxy-nethernet: $1" >&2; exit 1; }
for bridge in $bridges; do
rm -f "$work"/*.err "$work/truth.jsonl" "$work/proxy.pcapng"
case $bridge in
  raknet-to-nethernet)
    "$py" scripts/nethernet_peers.py server --game --port $((port + 2)) --packets "$work/packets.jsonl" \
      --truth "$work/truth.jsonl" --keylog "$work/aiortc.keylog" 2>"$work/server.err" &
    server=$!
    for _ in $(seq 100); do grep -q 'server listening' "$work/server.err" && break; sleep 0.1; done
    up="nethernet://127.0.0.1:$((port + 2))" listen="raknet://127.0.0.1:$((port + 4))" ;;
  nethernet-to-raknet)
    node scripts/bedrock_peers.js --version 1.26.45 --port $((port + 2)) --server-only 1 --timeout 15 \
      --out "$work/server.jsonl" --keylog "$work/server.keylog" 2>"$work/server.err" &
    server=$!
    for _ in $(seq 100); do grep -q 'waiting for a client' "$work/server.err" && break; sleep 0.1; done
    up="raknet://127.0.0.1:$((port + 2))" listen="127.0.0.1:$((port + 4))" ;;
  *) echo "bench-proxy-nethernet: raknet-to-nethernet or nethernet-to-raknet, not $bridge" >&2; exit 2 ;;
esac
/usr/bin/time -f "%U %S %M" -o "$work/time" "$bin" proxy --listen "$listen" --upstream "$up" \
  --once --json -w "$work/proxy.pcapng" >"$work/proxy.jsonl" 2>"$work/proxy.err" &
proxy=$!
sleep 1
if [ "$bridge" = raknet-to-nethernet ]; then
  node scripts/bedrock_peers.js --version 1.26.45 --port $((port + 4)) --client-only 1 --timeout 15 \
    --out "$work/client.jsonl" --keylog "$work/client.keylog" 2>"$work/client.err" || fail "the client failed"
else
  "$py" scripts/nethernet_peers.py client --game --chat --port $((port + 4)) \
    --packets "$work/packets.jsonl" --truth "$work/truth.jsonl" --keylog "$work/aiortc.keylog" \
    2>"$work/client.err" || fail "the client failed"
fi
wait "$proxy" || fail "the proxy failed"
wait "$server" || fail "the server failed"
server=
"$bin" game "$work/proxy.pcapng" --json --no-fields >"$work/game.jsonl"
echo "$bridge:"
python3 - "$work" <<'PYEOF'
import json, statistics, sys
work = sys.argv[1]
recs = [json.loads(l) for l in open(f"{work}/game.jsonl")]
assert all(r["type"] == "game" for r in recs), "a batch of the proxy's capture did not open"
flows = sorted({r["flow"] for r in recs})
assert len(flows) == 2, flows
# The NetherNet leg has no encryption handshake of its own.
nethernet = next(f for f in flows
                 if not any(r["flow"] == f and r["name"] == "client_to_server_handshake" for r in recs))
raknet = next(f for f in flows if f != nethernet)
# The player's leg is the one the first packet (request_network_settings) arrived on.
player = min(recs, key=lambda r: r["ts"])["flow"]
upstream = nethernet if player == raknet else raknet
OWN = {"login", "client_to_server_handshake", "server_to_client_handshake"}
def leg(flow, d):
    return [(r["data"], r["ts"]) for r in recs if r["flow"] == flow and r["dir"] == d and r["name"] not in OWN]
for d, src, dst in (("c2s", player, upstream), ("s2c", upstream, player)):
    a, b = leg(src, d), leg(dst, d)
    assert [x for x, _ in a] == [x for x, _ in b], f"{d}: the legs carried other packets"
    ms = sorted((tb - ta) * 1000 for (_, ta), (_, tb) in zip(a, b))
    print(f"  {d}: {len(ms)} packets, added latency median {statistics.median(ms):.3f} ms, max {ms[-1]:.3f} ms")
joined = next(json.loads(l) for l in open(f"{work}/proxy.jsonl") if '"joined"' in l)
u, s, rss = open(f"{work}/time").read().split()
who = "the upstream" if player == raknet else "the player"
print(f"  {who} joined over NetherNet in {joined['join_ms']} ms; proxy CPU {float(u) + float(s):.2f} s, max RSS {int(rss) // 1024} MB")
PYEOF
done
