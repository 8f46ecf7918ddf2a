#!/usr/bin/env bash
# bench-filter.sh: what display filters (-Y) and field export (-T fields) cost,
# against `read` with no filter, on one capture of REAL peers.
#
# Usage:
#     scripts/bench-filter.sh [CAPTURE]
#
# Without CAPTURE it uses target/bench/bulk100.pcap when present, else records it
# (as root) like scripts/bench-mirror.sh does: tcpdump on lo around one
# `scripts/peers.py session --scenario bulk` of two original-RakNet peers.
#
# Each command writes to /dev/null; RUNS runs after one warm-up, median wall time:
#     read FILE                                  the baseline (a line per packet)
#     read FILE -Y 'flow > 0 && len > 0 && !(anomalies.kind == "bound_exceeded")'
#                                                keeps every line: the filter's whole cost
#     read FILE -Y 'kind == "data" && len > 100 && !anomalies'     keeps most lines
#     read FILE -Y 'id == 0x86 && len > 1000 || anomalies.kind == "resend"'
#                                                a frame-level test on every packet
#     read FILE --json  and  read FILE --json -Y with the first filter
#     read FILE -T fields -e frame -e dir -e seq -e channel        for information
# and prints each ratio to the baseline of its kind and the lines each filter
# kept, with PASS or MISS against the issue's bound: `read -Y` within 1.5x of `read`.
#
# Environment: RUNS=9; BENCH_STRICT=1 exits 4 when a bound is missed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
RUNS=${RUNS:-9}
BENCH_DIR=$ROOT/target/bench
CAPTURE_PID=""
TMP=""
die() { echo "bench-filter: $*" >&2; exit 1; }
say() { echo "bench-filter: $*" >&2; }
cleanup() {
    if [ -n "$CAPTURE_PID" ]; then kill -INT "$CAPTURE_PID" 2>/dev/null || true; fi
    if [ -n "$TMP" ]; then rm -rf "$TMP"; fi
}
trap cleanup EXIT
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer"
mkdir -p "$BENCH_DIR"
TMP=$(mktemp -d "$BENCH_DIR/tmp.XXXXXX")
# shellcheck source=bench-lib.sh
. "$ROOT/scripts/bench-lib.sh"

CAPTURE=${1:-$BENCH_DIR/bulk100.pcap}
if [ ! -s "$CAPTURE" ] && [ -z "${1:-}" ]; then
    bench_capture "$CAPTURE" 19190 48000 500
    [ "${DROPPED:-x}" = 0 ] || { rm -f "$CAPTURE"; die "tcpdump dropped packets: capture deleted, try again"; }
fi
[ -f "$CAPTURE" ] || die "$CAPTURE: no such file"
bench_build
BIN=$TMP/raknet-dissect
cp "$BUILT" "$BIN"

say "$(basename "$CAPTURE"): $(stat -c %s "$CAPTURE") bytes, $("$BIN" "$CAPTURE" -T fields -e frame | wc -l) RakNet packets; load $(cut -d' ' -f1-3 /proc/loadavg)"
ALL='flow > 0 && len > 0 && !(anomalies.kind == "bound_exceeded")'
KEEP='kind == "data" && len > 100 && !anomalies'
DEEP='id == 0x86 && len > 1000 || anomalies.kind == "resend"'
MISSED=0
row() { # NAME BASE_WALL CMD...: time CMD, print it and its ratio to BASE_WALL
    local name=$1 base=$2 r wall ratio
    shift 2
    r=$(bench 1 "$RUNS" "$@")
    wall=${r%% *}
    ratio=$( [ "$base" = - ] && echo 1 || fdiv "$wall" "$base")
    printf '%-58s %8.3f s  %6.2fx\n' "$name" "$wall" "$ratio" >&2
    LAST=$wall
    RATIO=$ratio
}
verdict() { # RATIO: PASS/MISS against 1.5
    if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 1.5 else 1)" "$1"; then
        echo "PASS"
    else
        MISSED=1
        echo "MISS"
    fi
}
kept() { "$BIN" "$CAPTURE" -Y "$1" | wc -l; }
row "read" - "$BIN" "$CAPTURE"
BASE=$LAST
for f in "$ALL" "$KEEP" "$DEEP"; do
    row "read -Y '$f'" "$BASE" "$BIN" "$CAPTURE" -Y "$f"
    say "  $(verdict "$RATIO"): within 1.5x of read ($(kept "$f") lines kept)"
done
row "read --json" - "$BIN" "$CAPTURE" --json
JBASE=$LAST
row "read --json -Y '$ALL'" "$JBASE" "$BIN" "$CAPTURE" --json -Y "$ALL"
say "  $(verdict "$RATIO"): read --json -Y within 1.5x of read --json"
row "read -T fields -e frame -e dir -e seq -e channel" "$BASE" "$BIN" "$CAPTURE" -T fields -e frame -e dir -e seq -e channel
if [ "$MISSED" = 1 ] && [ -n "${BENCH_STRICT:-}" ]; then exit 4; fi
