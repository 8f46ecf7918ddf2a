#!/usr/bin/env bash
# bench-proxy-nethernet.sh: the RakNet -> NetherNet bridge of `proxy` (issue 29), measured once
# on a real session: bedrock-protocol's client (RakNet) logs in through our proxy (the release
# build) to aiortc's NetherNet server (scripts/nethernet_peers.py server --game, playing the
# server's side of bedrock-protocol's own session of 1.26.45), spawns, chats and leaves; the
# proxy writes its capture (-w).
#
# Usage:
#     cargo build --release && scripts/bench-proxy-nethernet.sh [PORT]      (default 27711)
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
bin=target/release/raknet-dissect
py=${AIORTC_PYTHON:-target/venv/bin/python}
[ -x "$bin" ] || { echo "bench-proxy-nethernet: build first: cargo build --release" >&2; exit 1; }
bash scripts/bedrock-setup.sh >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"; kill $server 2>/dev/null || true' EXIT
node scripts/bedrock_peers.js --version 1.26.45 --port "$port" --out "$work/packets.jsonl" \
  --keylog "$work/recorded.keylog" >/dev/null 2>&1
"$py" scripts/nethernet_peers.py server --game --port $((port + 2)) --packets "$work/packets.jsonl" \
  --truth "$work/truth.jsonl" --keylog "$work/aiortc.keylog" 2>"$work/server.err" &
server=$!
for _ in $(seq 100); do grep -q 'server listening' "$work/server.err" && break; sleep 0.1; done
/usr/bin/time -f "%U %S %M" -o "$work/time" "$bin" proxy --listen "127.0.0.1:$((port + 4))" \
  --upstream "nethernet://127.0.0.1:$((port + 2))" --once --json -w "$work/proxy.pcapng" \
  >"$work/proxy.jsonl" 2>"$work/proxy.err" &
proxy=$!
sleep 1
node scripts/bedrock_peers.js --version 1.26.45 --port $((port + 4)) --client-only 1 --timeout 15 \
  --out "$work/client.jsonl" --keylog "$work/client.keylog" 2>"$work/client.err" || {
  cat "$work/client.err" "$work/proxy.err" >&2; echo "bench-proxy-nethernet: the client failed" >&2; exit 1; }
wait "$proxy" || { cat "$work/proxy.err" >&2; echo "bench-proxy-nethernet: the proxy failed" >&2; exit 1; }
wait "$server" || { cat "$work/server.err" >&2; echo "bench-proxy-nethernet: the server failed" >&2; exit 1; }
"$bin" game "$work/proxy.pcapng" --json --no-fields >"$work/game.jsonl"
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
OWN = {"login", "client_to_server_handshake", "server_to_client_handshake"}
def leg(flow, d):
    return [(r["data"], r["ts"]) for r in recs if r["flow"] == flow and r["dir"] == d and r["name"] not in OWN]
for d, src, dst in (("c2s", raknet, nethernet), ("s2c", nethernet, raknet)):
    a, b = leg(src, d), leg(dst, d)
    assert [x for x, _ in a] == [x for x, _ in b], f"{d}: the legs carried other packets"
    ms = sorted((tb - ta) * 1000 for (_, ta), (_, tb) in zip(a, b))
    print(f"{d}: {len(ms)} packets, added latency median {statistics.median(ms):.3f} ms, max {ms[-1]:.3f} ms")
joined = next(json.loads(l) for l in open(f"{work}/proxy.jsonl") if '"joined"' in l)
u, s, rss = open(f"{work}/time").read().split()
print(f"upstream joined in {joined['join_ms']} ms; proxy CPU {float(u) + float(s):.2f} s, max RSS {int(rss) // 1024} MB")
PYEOF
