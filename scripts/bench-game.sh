#!/usr/bin/env bash
# bench-game.sh: what the Bedrock game layer costs. Builds a large capture by
# repeating a real bedrock-protocol session (each copy on its own client and
# server ports, starting a second after the one before ended; UDP checksums
# zeroed, as IPv4 allows), then times, output to
# /dev/null, median wall time of RUNS runs after a warm-up:
#     raknet-dissect messages BIG --json                  (the mirror alone)
#     raknet-dissect game BIG --json                      (+ the game layer, no key)
#     raknet-dissect game BIG --json --keylog KEYLOG --no-fields (+ decryption)
#     raknet-dissect game BIG --json --keylog KEYLOG      (+ every packet's fields)
# and prints MB/s of capture (file bytes / 10^6 / wall s) and the peak RSS.
#
# The session, SESSION=play (the default): a gameplay session of 1.26.45,
# the login and 300 rounds of the client's move_player and the server's
# level_chunk + move_entity (1.1 MB; made once with scripts/bedrock-capture.sh
# PLAY=300, which needs root, node and npm, into target/bench/play/); the
# mix of a real server's traffic, where chunks are most of the bytes.
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
    login)
        SRC=$ROOT/samples/bedrock-login.pcap
        KEYLOG=$ROOT/samples/bedrock-login.keylog ;;
    *) echo "bench-game: SESSION=play|login, not $SESSION" >&2; exit 2 ;;
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
run "game --json --keylog" "$BIN" game "$BIG" --json --keylog "$KEYLOG"
