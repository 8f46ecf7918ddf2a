#!/usr/bin/env bash
# bench-separate.sh: what --separate buys, files read in parallel.
#
# Usage: scripts/bench-separate.sh [DIR|N] [RUNS]    (default 8 copies, 5 runs)
#
# The captures: DIR's capture files (a fleet: target/fleet/captures, made by
# scripts/fleet.sh), or N links to target/bench/bulk.pcap (two peers of the
# original RakNet library; scripts/bench-vs-tshark.sh records it) in
# target/bench/sep-N/. A key log in DIR (all.keylog, or every *.keylog
# concatenated) is given to `game`.
#
# Checks first that every command prints the same bytes with --separate
# --threads 1 and 2, then times, best of RUNS (output to /dev/null), each
# command with --threads 1 (the files as one capture), --threads 2, and
# --separate with 1 and 2 threads, and prints --threads 1 against
# --separate --threads 2.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARG=${1:-8}
RUNS=${2:-5}
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
BIN=$ROOT/target/release/raknet-dissect
KEYS=()
if [ -d "$ARG" ]; then
    DIR=$ARG
    ls "$DIR"/*.keylog >/dev/null 2>&1 && { cat "$DIR"/*.keylog > "$ROOT/target/separate.keylog"; KEYS=(--keylog "$ROOT/target/separate.keylog"); }
else
    SRC=$ROOT/target/bench/bulk.pcap
    [ -s "$SRC" ] || { echo "bench-separate: $SRC missing: run scripts/bench-vs-tshark.sh first (root)" >&2; exit 2; }
    DIR=$ROOT/target/bench/sep-$ARG
    mkdir -p "$DIR"
    for i in $(seq 1 "$ARG"); do ln -sf "$SRC" "$DIR/bulk-$i.pcap"; done
fi
files=$(ls "$DIR" | grep -cE '\.(pcap|pcapng|cap)$' || true)
bytes=$(find -L "$DIR" -maxdepth 8 -type f \( -name '*.pcap' -o -name '*.pcapng' -o -name '*.cap' \) -printf '%s\n' | awk '{s+=$1} END {print s}')
echo "$DIR: $files captures, $((bytes / 1000000)) MB, best of $RUNS, load $(cut -d' ' -f1-3 /proc/loadavg)"

# The key log goes to `game` only.
keys() { case $1 in game*) echo "${KEYS[*]}" ;; esac; }
commands=("flows --json" "stats --json" "handshake --json" "read --json" "messages --json" "game --json")
same=0
for cmd in "${commands[@]}"; do
    # shellcheck disable=SC2086
    a=$("$BIN" $cmd $(keys "$cmd") --separate --threads 1 "$DIR" 2>/dev/null | md5sum)
    # shellcheck disable=SC2086
    b=$("$BIN" $cmd $(keys "$cmd") --separate --threads 2 "$DIR" 2>/dev/null | md5sum)
    if [ "$a" = "$b" ]; then same=$((same + 1)); else echo "DIFFERENT: $cmd --separate"; fi
done
echo "byte-identical with --separate --threads 1 and 2: $same of ${#commands[@]} commands"

best() {
    local b=999 s e t
    for _ in $(seq "$RUNS"); do
        s=$(date +%s.%N); "$@" > /dev/null 2>&1 || true; e=$(date +%s.%N)
        t=$(echo "$e - $s" | bc -l)
        b=$(echo "if ($t < $b) $t else $b" | bc -l)
    done
    printf '%.3f' "$b"
}
printf '%-18s %10s %10s %12s %12s %8s\n' command "t1" "t2" "sep t1" "sep t2" "t1/sep t2"
for cmd in "${commands[@]}"; do
    # shellcheck disable=SC2086
    t1=$(best "$BIN" $cmd $(keys "$cmd") --threads 1 "$DIR")
    # shellcheck disable=SC2086
    t2=$(best "$BIN" $cmd $(keys "$cmd") --threads 2 "$DIR")
    # shellcheck disable=SC2086
    s1=$(best "$BIN" $cmd $(keys "$cmd") --separate --threads 1 "$DIR")
    # shellcheck disable=SC2086
    s2=$(best "$BIN" $cmd $(keys "$cmd") --separate --threads 2 "$DIR")
    printf '%-18s %10s %10s %12s %12s %7.2fx\n' "$cmd" "$t1" "$t2" "$s1" "$s2" "$(echo "$t1 / $s2" | bc -l)"
done
