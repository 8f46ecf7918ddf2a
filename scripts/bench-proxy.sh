#!/usr/bin/env bash
# bench-proxy.sh: what `proxy` costs, measured on a real session (issue 29): bedrock-protocol's
# client plays PLAY rounds (a move_player each; the server answers each with a level_chunk of
# 8 KB and a move_entity: scripts/bedrock_peers.js --play) through our proxy (the release
# build) to bedrock-protocol's server, both on loopback; the proxy writes its capture (-w).
#
# Usage:
#     cargo build --release && scripts/bench-proxy.sh [PLAY] [PORT]      (defaults 2000, 19960)
#
# Measured:
#     added latency  per game packet, from its arrival on one leg to its departure on the
#                    other, as the proxy's own capture stamps them (`game --json` on it: each
#                    leg's packets matched in order and by their bytes): median, p99, max, for
#                    each way
#     packets/s      game packets relayed (both ways, `game_counts`) per second of the proxy's
#                    CPU time (user + sys, /usr/bin/time): what one core relays
#     max RSS        of the proxy
# The client and the server must exit 0, every packet one leg carried the other must carry.
# Needs scripts/bedrock-setup.sh (bedrock-protocol), node, python3, /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
play=${1:-2000}
port=${2:-19960}
up=$port
listen=$((port + 1))
bin=target/release/raknet-dissect
[ -x "$bin" ] || { echo "bench-proxy: build first: cargo build --release" >&2; exit 1; }
bash scripts/bedrock-setup.sh >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"; kill $server 2>/dev/null || true' EXIT
node scripts/bedrock_peers.js --version 1.26.45 --port "$up" --server-only 1 --timeout 60 --play "$play" \
  --out "$work/server.jsonl" --keylog "$work/server.keylog" 2>"$work/server.err" &
server=$!
for _ in $(seq 100); do grep -q 'waiting for a client' "$work/server.err" && break; sleep 0.1; done
/usr/bin/time -f "%U %S %M" -o "$work/time" ${BENCH_PERF:+perf record -g -o "$BENCH_PERF"} "$bin" proxy --listen "127.0.0.1:$listen" \
  --upstream "127.0.0.1:$up" --once --json --hide move_player,level_chunk,move_entity \
  -w "$work/proxy.pcapng" >"$work/proxy.jsonl" 2>"${BENCH_ERR:-$work/proxy.err}" &
proxy=$!
sleep 1
node scripts/bedrock_peers.js --version 1.26.45 --port "$listen" --client-only 1 --timeout 60 --play "$play" \
  --out "$work/client.jsonl" --keylog "$work/client.keylog" 2>"$work/client.err" || {
  cat "$work/client.err" "$work/proxy.err" >&2; echo "bench-proxy: the client failed" >&2; exit 1; }
wait "$proxy" || { cat "$work/proxy.err" >&2; echo "bench-proxy: the proxy failed" >&2; exit 1; }
wait "$server" || { cat "$work/server.err" >&2; echo "bench-proxy: the server failed" >&2; exit 1; }
"$bin" game "$work/proxy.pcapng" --json --no-fields >"$work/game.jsonl"
python3 - "$work" "$play" <<'EOF'
import json, statistics, sys
work, play = sys.argv[1], int(sys.argv[2])
recs = [json.loads(l) for l in open(f"{work}/game.jsonl")]
assert all(r["type"] == "game" for r in recs), "a batch of the proxy's capture did not decrypt"
flows = sorted({r["flow"] for r in recs})
assert len(flows) == 2, flows
player, upstream = flows
ENDED = {"login", "client_to_server_handshake", "server_to_client_handshake"}
def leg(flow, d):
    return [(r["data"], r["ts"]) for r in recs if r["flow"] == flow and r["dir"] == d and r["name"] not in ENDED]
counts = next(json.loads(l) for l in open(f"{work}/proxy.jsonl") if '"game_counts"' in l)
u, s, rss = open(f"{work}/time").read().split()
cpu = float(u) + float(s)
total = sum(counts["c2s"].values()) + sum(counts["s2c"].values())
print(f"bench-proxy: {play} rounds; {total} game packets relayed; proxy CPU {cpu:.2f} s "
      f"(user {u}, sys {s}); max RSS {int(rss) // 1024} MB; {total / cpu:,.0f} packets per CPU second")
for name, came, went in (("c2s", leg(player, "c2s"), leg(upstream, "c2s")),
                         ("s2c", leg(upstream, "s2c"), leg(player, "s2c"))):
    n = min(len(came), len(went))
    assert [d for d, _ in came[:n]] == [d for d, _ in went[:n]], f"{name}: the legs differ"
    lat = sorted((w - c) * 1e3 for (_, c), (_, w) in zip(came[:n], went[:n]))
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
    print(f"bench-proxy: {name}: {n} packets, added latency median {statistics.median(lat):.3f} ms, "
          f"p99 {p(0.99):.3f} ms, max {lat[-1]:.3f} ms")
EOF
