#!/usr/bin/env bash
# bench-threads.sh: what --threads buys, on a large capture of real peers.
#
# Usage: scripts/bench-threads.sh [MB] [RUNS]     (default 1000 MB, 3 runs)
#
# The capture: target/bench/bulk.pcap (two peers of the original RakNet
# library, `scripts/bench-vs-tshark.sh` records it; made here when missing,
# which needs root, tcpdump and the PyPI package raknet) repeated to MB
# megabytes, each copy on its own ports (scripts/repeat-capture.py).
#
# Checks first that every capture command prints the same bytes with
# --threads 2 as with --threads 1 on it (read, read --json, read -V,
# messages, messages --json, flows, stats, handshake, game), then times,
# median wall time of RUNS runs, output to /dev/null:
#     tshark -r BIG -d udp.port==20000-60000,raknet    (lines, the reference; once)
#     raknet-dissect BIG (lines), messages, read --json, messages --json
# each with --threads 1 and --threads 2, with the peak RSS, and prints the
# ratios the issue asks for: lines against tshark (>= 25x), and --threads 2
# against --threads 1 for messages and --json (>= 1.6x), memory < 100 MB.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MB=${1:-1000}
RUNS=${2:-3}
DIR=$ROOT/target/bench
SRC=$DIR/bulk.pcap
BIG=$DIR/bulk-$MB.pcap
mkdir -p "$DIR"
if ! [ -s "$SRC" ]; then
    RUNS=1 BIG_RUNS=1 "$ROOT/scripts/bench-vs-tshark.sh" >/dev/null
fi
[ -s "$BIG" ] || python3 "$ROOT/scripts/repeat-capture.py" "$SRC" "$BIG" "$MB"
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
BIN=$ROOT/target/release/raknet-dissect
bytes=$(stat -c %s "$BIG")
echo "$BIG: $((bytes / 1000000)) MB, $RUNS runs each, load $(cut -d' ' -f1-3 /proc/loadavg)"

# The same bytes whatever the threads.
same=0
for cmd in "" "read --json" "read -V" "messages" "messages --json" flows stats handshake game; do
    # shellcheck disable=SC2086
    a=$("$BIN" $cmd "$BIG" --threads 1 2>/dev/null | md5sum)
    # shellcheck disable=SC2086
    b=$("$BIN" $cmd "$BIG" --threads 2 2>/dev/null | md5sum)
    if [ "$a" = "$b" ]; then same=$((same + 1)); else echo "DIFFERENT: ${cmd:-read} --threads 2"; fi
done
echo "byte-identical with --threads 2: $same of 9 commands"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# time NAME CMD...: sets T (median seconds) and prints a line.
time_it() {
    local name=$1; shift
    local times=() s e rss
    for _ in $(seq "$RUNS"); do
        s=$(date +%s.%N); "$@" > /dev/null 2>&1; e=$(date +%s.%N)
        times+=("$(echo "$e - $s" | bc -l)")
    done
    T=$(printf '%s\n' "${times[@]}" | median)
    /usr/bin/time -o "$DIR/rss.txt" -f %M "$@" > /dev/null 2>&1
    rss=$(tail -1 "$DIR/rss.txt")
    printf '%-34s %8.3f s %9.1f MB/s %8s KB peak RSS\n' "$name" "$T" \
        "$(echo "$bytes / 1000000 / $T" | bc -l)" "$rss"
}
ratio() { echo "scale=2; $1 / $2" | bc -l; }

s=$(date +%s.%N); tshark -r "$BIG" -d 'udp.port==20000-60000,raknet' > /dev/null 2>&1; e=$(date +%s.%N)
tshark=$(echo "$e - $s" | bc -l)
printf '%-34s %8.3f s\n' "tshark (lines, once)" "$tshark"
declare -A t
for cmd in "" messages "read --json" "messages --json"; do
    for n in 1 2; do
        # shellcheck disable=SC2086
        time_it "${cmd:-lines} --threads $n" "$BIN" $cmd "$BIG" --threads "$n"
        t["$cmd/$n"]=$T
    done
done
echo "lines against tshark: $(ratio "$tshark" "${t[/2]}")x with --threads 2, $(ratio "$tshark" "${t[/1]}")x with 1 (target >= 25x)"
for cmd in messages "read --json" "messages --json"; do
    echo "$cmd: --threads 2 $(ratio "${t[$cmd/1]}" "${t[$cmd/2]}")x faster than --threads 1 (target >= 1.6x)"
done
