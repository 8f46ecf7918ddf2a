#!/usr/bin/env bash
# bench-game.sh: what the Bedrock game layer costs. Builds a large capture by
# repeating a real bedrock-protocol session (each copy on its own client and
# server ports, starting a second after the one before ended; UDP checksums
# zeroed, as IPv4 allows), then times, output to
# /dev/null, median wall time of RUNS runs after a warm-up:
#     raknet-dissect messages BIG --json                  (the mirror alone)
#     raknet-dissect game BIG --json                      (+ the game layer, no key)
#     raknet-dissect game BIG --json --keylog KEYLOG --no-fields (+ decryption)
#     raknet-dissect game BIG --json --keylog KEYLOG      (+ every packet's fields,
#                                                        --threads 1, then 2)
# and prints MB/s of capture (file bytes / 10^6 / wall s) and the peak RSS.
# Then, per decompressed byte (the game packets' bytes, 10^6 a second), the
# same packets three more ways, one thread each: bedrock-protocol's own
# receiving side (scripts/bench_deserialize.js: inflate, split and
# parsePacketBuffer of every packet, on the session's batches rebuilt as its
# framer builds them and repeated to the same size), our inflate alone on
# those batches (examples/inflate_ceiling.rs: the ceiling of the game
# layer), and ours (`game --json --keylog --threads 1`, every field, the
# capture read, decrypted and printed), with the two ratios issue 27 asks
# about. The session's recording (PACKETS) is needed: SESSION=play and
# SESSION=every have it.
#
# The session, SESSION=play (the default): a gameplay session of 1.26.45,
# the login and 300 rounds of the client's move_player and the server's
# level_chunk + move_entity (1.1 MB; made once with scripts/bedrock-capture.sh
# PLAY=300, which needs root, node and npm, into target/bench/play/); the
# mix of a real server's traffic, where chunks are most of the bytes.
# SESSION=every: every packet type both ways with seeded random values
# (bedrock_peers.js --every 7, made once into target/bench/every/): a mix
# of small packets of every layout, where the field decoding is most of
# the cost.
# SESSION=login: samples/bedrock-login.pcap, a session that is all login
# (12.9 KB, of which the Login is 10 KB): there the cost is the P-384
# signature checks of each Login, about 1.5 ms a login whatever the
# capture's size.
#
# Usage: scripts/bench-game.sh [MB] [RUNS]     (default 200 MB, 5 runs)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MB=${1:-200}
RUNS=${2:-5}
SESSION=${SESSION:-play}
DIR=$ROOT/target/bench
BIG=$DIR/bedrock-$SESSION-$MB.pcap
mkdir -p "$DIR"
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
BIN=$ROOT/target/release/raknet-dissect
case $SESSION in
    play)
        SRC=$DIR/play/bedrock-1.26.45.pcap
        KEYLOG=$DIR/play/bedrock-1.26.45.keylog
        [ -s "$SRC" ] || PLAY=300 "$ROOT/scripts/bedrock-capture.sh" 1.26.45 "$DIR/play" 19496 ;;
    every)
        SRC=$DIR/every/bedrock-1.26.45.pcap
        KEYLOG=$DIR/every/bedrock-1.26.45.keylog
        [ -s "$SRC" ] || EVERY=7 "$ROOT/scripts/bedrock-capture.sh" 1.26.45 "$DIR/every" 19497 ;;
    login)
        SRC=$ROOT/samples/bedrock-login.pcap
        KEYLOG=$ROOT/samples/bedrock-login.keylog ;;
    *) echo "bench-game: SESSION=play|every|login, not $SESSION" >&2; exit 2 ;;
esac
if ! [ -s "$BIG" ]; then
    python3 "$ROOT/scripts/repeat-capture.py" "$SRC" "$BIG" "$MB"
fi
bytes=$(stat -c %s "$BIG")
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() {
    local name=$1; shift
    "$@" > /dev/null
    local times=()
    for _ in $(seq "$RUNS"); do
        local s e
        s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N)
        times+=("$(echo "$e - $s" | bc -l)")
    done
    local wall rss
    wall=$(printf '%s\n' "${times[@]}" | median)
    rss=$( { /usr/bin/time -f %M "$@" > /dev/null; } 2>&1 | tail -1)
    printf '%-40s %8.3f s %9.1f MB/s %8s KB peak RSS\n' "$name" "$wall" \
        "$(echo "$bytes / 1000000 / $wall" | bc -l)" "$rss"
}
echo "$BIG: $((bytes / 1000000)) MB ($SESSION session repeated), $RUNS runs each"
run "messages --json" "$BIN" messages "$BIG" --json
run "game --json (no key)" "$BIN" game "$BIG" --json
run "game --json --keylog --no-fields" "$BIN" game "$BIG" --json --keylog "$KEYLOG" --no-fields
run "game --json --keylog --threads 1" "$BIN" game "$BIG" --json --keylog "$KEYLOG" --threads 1
run "game --json --keylog --threads 2" "$BIN" game "$BIG" --json --keylog "$KEYLOG" --threads 2

# Per decompressed byte, beside bedrock-protocol and the inflate ceiling.
PACKETS=${KEYLOG%.keylog}.packets.jsonl
[ -s "$PACKETS" ] || { echo "(no $PACKETS: no comparison per decompressed byte)"; exit 0; }
decompressed=$("$BIN" game "$BIG" --json --keylog "$KEYLOG" --no-fields --threads 1 |
    python3 -c 'import sys, json; print(sum(r["len"] for r in map(json.loads, sys.stdin) if r["type"] == "game"))')
mb=$((decompressed / 1000000))
theirs=$(node "$ROOT/scripts/bench_deserialize.js" --packets "$PACKETS" --version 1.26.45 \
    --mb "$mb" --runs "$RUNS" --batches "$DIR/batches-$SESSION-$MB.bin")
cargo build --release --quiet --example inflate_ceiling --manifest-path "$ROOT/Cargo.toml"
ceiling=$("$ROOT/target/release/examples/inflate_ceiling" "$DIR/batches-$SESSION-$MB.bin" "$RUNS")
ours=()
for _ in $(seq "$RUNS"); do
    s=$(date +%s.%N); "$BIN" game "$BIG" --json --keylog "$KEYLOG" --threads 1 > /dev/null; e=$(date +%s.%N)
    ours+=("$(echo "$e - $s" | bc -l)")
done
ours_s=$(printf '%s\n' "${ours[@]}" | median)
python3 - "$theirs" "$ceiling" "$decompressed" "$ours_s" <<'PY'
import json, sys
theirs, ceiling = json.loads(sys.argv[1]), json.loads(sys.argv[2])
ours_bytes, ours_s = int(sys.argv[3]), float(sys.argv[4])
rate = lambda b, s: b / 1e6 / s
bp = rate(theirs["bytes"], theirs["deserialize_s"])
node_inflate = rate(theirs["bytes"], theirs["inflate_s"])
ceil = rate(theirs["bytes"], ceiling["inflate_s"])
us = rate(ours_bytes, ours_s)
print(f"per decompressed byte, one thread ({ours_bytes / 1e6:.0f} MB of packets ours, {theirs['bytes'] / 1e6:.0f} MB theirs):")
print(f"  bedrock-protocol: inflate + split + parse    {bp:8.1f} MB/s")
print(f"  bedrock-protocol: inflate alone (node zlib)  {node_inflate:8.1f} MB/s")
print(f"  ours: inflate alone (the ceiling)            {ceil:8.1f} MB/s")
print(f"  ours: game --json --keylog, every field      {us:8.1f} MB/s")
print(f"  ours / bedrock-protocol: {us / bp:.2f}x; ours / the inflate ceiling: {100 * us / ceil:.0f}%")
PY
