#!/usr/bin/env bash
# fleet.sh: a fleet's worth of captures from real peers, then `export` over
# all of them, timed (issue 18, docs/scale.md).
#
#   sudo scripts/fleet.sh [N] [DIR]     (default 200 captures into target/fleet)
#
# Capture i (0-based), each on its own ports, captured by tcpdump on lo:
#   i % 4 == 3  a Bedrock session of bedrock-protocol (scripts/bedrock-capture.sh,
#               PLAY=2), the version cycling through 1.26.45, 1.21.50, 1.19.1,
#               with its key log
#   otherwise   the original RakNet library (scripts/peers.py, PyPI raknet)
#               sending every reliability, through scripts/relay.py seeded
#               with i, loss (i % 11) %, 5% duplicates and reordering
# Then every capture is exported into DIR/out/NAME/ (its key log given for
# the Bedrock ones), one after the other, and the whole is timed; then all
# of them in one run into DIR/all/ (every key log at once), timed; with
# DuckDB (the test virtualenv's python), a query over all of them runs last.
# Needs root (tcpdump), the venv of .ci/run (target/venv: raknet, duckdb),
# node and npm (scripts/bedrock-setup.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-200}
DIR=${2:-$ROOT/target/fleet}
PY=${RAKNET_PYTHON:-$ROOT/target/venv/bin/python}
BIN=$ROOT/target/release/raknet-dissect
[ "$(id -u)" = 0 ] || { echo "fleet: must run as root (tcpdump on lo)" >&2; exit 2; }
(cd "$ROOT" && cargo build --release -q)
"$ROOT/scripts/bedrock-setup.sh" >/dev/null
mkdir -p "$DIR/captures" "$DIR/out"
versions=(1.26.45 1.21.50 1.19.1)
start=$SECONDS
for i in $(seq 0 $((N - 1))); do
    name=$(printf 'cap-%04d' "$i")
    port=$((30000 + 4 * i))
    if [ $((i % 4)) = 3 ]; then
        v=${versions[$(((i / 4) % 3))]}
        PLAY=2 "$ROOT/scripts/bedrock-capture.sh" "$v" "$DIR/tmp-$name" "$port" >/dev/null 2>&1 \
            || { echo "fleet: $name: bedrock session failed" >&2; continue; }
        mv "$DIR/tmp-$name/bedrock-$v.pcap" "$DIR/captures/$name.pcap"
        mv "$DIR/tmp-$name/bedrock-$v.keylog" "$DIR/captures/$name.keylog"
        rm -rf "$DIR/tmp-$name"
    else
        relay=$((port + 1))
        tcpdump -i lo -Z root --immediate-mode -U -n -w "$DIR/captures/$name.pcap" "udp port $port" 2>"$DIR/tcpdump.err" &
        dump=$!
        for _ in $(seq 100); do grep -q 'listening on' "$DIR/tcpdump.err" && break; sleep 0.05; done
        python3 "$ROOT/scripts/relay.py" --listen "127.0.0.1:$relay" --target "127.0.0.1:$port" \
            --seed "$i" --loss "0.$(printf '%02d' $((i % 11)))" --dup 0.05 --reorder 0.05 --duration 60 2>/dev/null &
        relay_pid=$!
        sleep 0.3
        timeout 60 "$PY" "$ROOT/scripts/peers.py" session --port "$port" --connect-port "$relay" \
            --scenario all-reliabilities --seed "$i" --allow-undelivered >/dev/null 2>&1 || true
        kill -INT "$relay_pid" 2>/dev/null || true
        sleep 0.5
        kill -INT "$dump" 2>/dev/null || true
        wait "$dump" "$relay_pid" 2>/dev/null || true
    fi
done
made=$(ls "$DIR/captures"/*.pcap | wc -l)
bytes=$(cat "$DIR/captures"/*.pcap | wc -c)
echo "fleet: $made captures, $bytes bytes, made in $((SECONDS - start)) s"
t0=$(date +%s.%N)
for f in "$DIR/captures"/*.pcap; do
    name=$(basename "$f" .pcap)
    keys=()
    [ -f "${f%.pcap}.keylog" ] && keys=(--keylog "${f%.pcap}.keylog")
    "$BIN" export "$f" "${keys[@]}" --out "$DIR/out/$name" >/dev/null
done
t1=$(date +%s.%N)
printf 'fleet: export of %s captures, one process each: %.2f s (%.1f MB/s), %s bytes of Parquet\n' "$made" \
    "$(echo "$t1 - $t0" | bc -l)" "$(echo "$bytes / 1000000 / ($t1 - $t0)" | bc -l)" "$(du -sb "$DIR/out" | cut -f1)"
# The same captures in one run: one table each with a `file` column, every
# key log given at once (each connection tries them all).
cat "$DIR/captures"/*.keylog > "$DIR/all.keylog" 2>/dev/null || : > "$DIR/all.keylog"
rm -rf "$DIR/all"
t0=$(date +%s.%N)
"$BIN" export "$DIR/captures" --keylog "$DIR/all.keylog" --out "$DIR/all" >/dev/null
t1=$(date +%s.%N)
printf 'fleet: export of %s captures in one run: %.2f s (%.1f MB/s), %s bytes of Parquet\n' "$made" \
    "$(echo "$t1 - $t0" | bc -l)" "$(echo "$bytes / 1000000 / ($t1 - $t0)" | bc -l)" "$(du -sb "$DIR/all" | cut -f1)"
if "$PY" -c 'import duckdb' 2>/dev/null; then
    "$PY" - "$DIR/out" <<'EOF'
import sys, time, duckdb
out = sys.argv[1]
t = time.time()
rows = duckdb.sql(f"""SELECT server, count(*) AS flows, sum("c2s.lost" + "s2c.lost") AS lost
FROM read_parquet('{out}/*/flows.parquet', union_by_name = true)
GROUP BY server ORDER BY lost DESC LIMIT 5""").fetchall()
print(f"fleet: DuckDB, loss per server over every capture, {time.time() - t:.3f} s:")
for r in rows:
    print("   ", r)
EOF
fi
