#!/usr/bin/env bash
# bench-mirror.sh: time the reliability mirror (`flows`, `messages --json`) against
# tshark on one capture of REAL peers of at least 100 MB.
#
# Usage:
#     scripts/bench-mirror.sh                  # as root: capture target/bench/bulk100.pcap first
#     scripts/bench-mirror.sh CAPTURE [PORT]   # any pcap/pcapng; PORT = RakNet server port
#                                              # (default: read from the capture's first packet)
#
# Without CAPTURE it records target/bench/bulk100.pcap: tcpdump -i lo -B 131072 (as
# scripts/bench-vs-tshark.sh does) around one `scripts/peers.py session --scenario bulk
# --messages 48000`: two peers of the original RakNet C++ library (PyPI `raknet`)
# exchanging 48,000 messages each way, ~110,000 UDP packets, ~106 MB, in 20-50 s.  A
# capture in which tcpdump reports packets dropped by the kernel is deleted and the
# script fails (the mirror would see gaps the peers never had).
#
# Then, on that one file, output to /dev/null, each command is timed (median wall
# time; all but tshark -T json after one warm-up run):
#     raknet-dissect flows FILE                          RUNS runs
#     tshark -r FILE -q -z conv,udp                      TSHARK_RUNS runs
#     raknet-dissect messages FILE --json                RUNS runs
#     tshark -r FILE -d udp.port==PORT,raknet -T json    TSHARK_JSON_RUNS runs, no warm-up
#                                                      (it writes ~8 bytes per byte read)
#     raknet-dissect messages FILE                       RUNS runs, for information
# It prints MB/s (file bytes / 10^6 / median wall s), CPU seconds, and the ratios
# tshark wall / ours wall, with a PASS or MISS line for each target of the issue:
# `flows` >= 20x `tshark -q -z conv,udp`, `messages --json` >= 10x `tshark -T json`
# (judged on the median wall ratio; the ratio of best wall times is printed beside it,
# as `flows` takes ~50 ms and a busy machine shows in it).
# Peak memory: max RSS of ours by /usr/bin/time -f %M (one extra run each); tshark's
# is the largest ru_maxrss of its timed runs (wait4, the same measure).
#
# Environment:
#     RUNS=11              timed runs of each raknet-dissect command (each well under 1 s)
#     TSHARK_RUNS=3        timed runs of tshark -q -z conv,udp
#     TSHARK_JSON_RUNS=2   timed runs of tshark -T json (each ~15-25 s on 100 MB)
#     BENCH_PORT=19190     server port of the capture (client: +1)
#     MESSAGES=48000       messages each way in the capture
#     MIN_MB=100           the capture must have at least this many 10^6 bytes
#     BENCH_REUSE=1        reuse target/bench/bulk100.pcap if it exists (no capture, no root)
#     RAKNET_PYTHON        a python with `raknet` (default target/venv/bin/python, created
#                          like make-samples.sh does when missing)
#     BENCH_STRICT=1       exit 4 when a target is missed
#
# Needs: tshark, capinfos (package tshark), /usr/bin/time (package time), python3,
# cargo; for the capture also tcpdump and root.  About 2 minutes plus `cargo build
# --release` on 2 CPUs (the wall times show the machine's load: the script prints
# the load average, and CPU seconds beside them).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
RUNS=${RUNS:-11}
TSHARK_RUNS=${TSHARK_RUNS:-3}
TSHARK_JSON_RUNS=${TSHARK_JSON_RUNS:-2}
BENCH_PORT=${BENCH_PORT:-19190}
MESSAGES=${MESSAGES:-48000}
MIN_MB=${MIN_MB:-100}
BENCH_DIR=$ROOT/target/bench
CAPTURE_PID=""
TMP=""

die() { echo "bench-mirror: $*" >&2; exit 1; }
say() { echo "bench-mirror: $*" >&2; }

cleanup() {
    if [ -n "$CAPTURE_PID" ]; then kill -INT "$CAPTURE_PID" 2>/dev/null || true; fi
    if [ -n "$TMP" ]; then rm -rf "$TMP"; fi
}
trap cleanup EXIT

# --- tools -------------------------------------------------------------------------
for t in tshark capinfos; do
    command -v "$t" >/dev/null ||
        die "$t not found: install Wireshark's command-line tools (apt-get install tshark)"
done
[ -x /usr/bin/time ] || die "/usr/bin/time not found (apt-get install time)"
command -v python3 >/dev/null || die "python3 not found"
command -v cargo >/dev/null || die "cargo not found"
for v in RUNS TSHARK_RUNS TSHARK_JSON_RUNS MESSAGES MIN_MB; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer"
done

mkdir -p "$BENCH_DIR"
TMP=$(mktemp -d "$BENCH_DIR/tmp.XXXXXX")
# The helpers write their timing script into $TMP.
# shellcheck source=bench-lib.sh
. "$ROOT/scripts/bench-lib.sh"

# --- the capture ---------------------------------------------------------------------
CAPTURE=${1:-}
PORT=${2:-}
if [ -z "$CAPTURE" ] && [ -n "${BENCH_REUSE:-}" ] && [ -s "$BENCH_DIR/bulk100.pcap" ]; then
    CAPTURE=$BENCH_DIR/bulk100.pcap
    PORT=${PORT:-$BENCH_PORT}
    say "reusing $CAPTURE (BENCH_REUSE=1; port $PORT assumed)"
elif [ -z "$CAPTURE" ]; then
    PORT=$BENCH_PORT
    CAPTURE=$BENCH_DIR/bulk100.pcap
    bench_capture "$CAPTURE" "$PORT" "$MESSAGES" 500
    [ -n "$DROPPED" ] || { cat "$TMP/tcpdump.err" >&2; die "tcpdump printed no drop count"; }
    if [ "$DROPPED" != 0 ]; then
        rm -f "$CAPTURE"
        die "tcpdump says $DROPPED packets dropped by kernel: capture deleted, try again"
    fi
fi
[ -f "$CAPTURE" ] || die "$CAPTURE: no such file"
CAPTURE=$(cd "$(dirname "$CAPTURE")" && pwd)/$(basename "$CAPTURE")
BYTES=$(stat -c %s "$CAPTURE")
if [ "$BYTES" -lt $((MIN_MB * 1000000)) ]; then
    die "$CAPTURE has $BYTES bytes, fewer than $MIN_MB MB (raise MESSAGES, or MIN_MB=1 to time it anyway)"
fi

# --- the binary ------------------------------------------------------------------------
bench_build
# A private copy: a concurrent `cargo build` cannot swap the binary between runs.
BIN=$TMP/raknet-dissect
cp "$BUILT" "$BIN"
REV="$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- src Cargo.toml Cargo.lock 2>/dev/null || echo '+uncommitted src changes')"

if [ -z "$PORT" ]; then
    # The server port: the destination of the first client-to-server packet we print.
    PORT=$(bench_port "$BIN" "$CAPTURE")
    [ -n "$PORT" ] || die "cannot tell the RakNet server port of $CAPTURE: give it as PORT"
    say "RakNet server port (from the first packet): $PORT"
fi
DECODE=(-d "udp.port==$PORT,raknet")

# --- counts ----------------------------------------------------------------------------------
say "counting (capinfos, flows, messages, tshark conv,udp)"
FRAMES=$(capinfos -M -c "$CAPTURE" | sed -n 's/^Number of packets: *//p')
FTYPE=$(capinfos -t "$CAPTURE" | sed -n 's/^File type: *//p')
"$BIN" flows "$CAPTURE" --json >"$TMP/flows.json" || die "raknet-dissect flows --json failed"
FLOWS=$(python3 - "$TMP/flows.json" <<'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
flows = [r for r in recs if r.get("type") == "flow"]
def both(k):
    return sum(int((f.get(d) or {}).get(k) or 0) for f in flows for d in ("c2s", "s2c"))
print(len(flows), both("packets"), both("messages"), both("lost"), both("resends"),
      both("anomalies"))
EOF
) || die "cannot read the flows --json output"
read -r NFLOWS FLOW_PKTS FLOW_MSGS FLOW_LOST FLOW_RESENDS FLOW_ANOM <<<"$FLOWS"
MSG_BYTES=$("$BIN" messages "$CAPTURE" --json | wc -c)
MSG_LINES=$("$BIN" messages "$CAPTURE" --json | wc -l)
tshark -r "$CAPTURE" -q -z conv,udp 2>/dev/null >"$TMP/conv.txt" || die "tshark -z conv,udp failed"
CONVS=$(grep -c ' <-> ' "$TMP/conv.txt" || true)

# --- timings -------------------------------------------------------------------------------------
say "timing on $CAPTURE (load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs)"
T_FLOWS=$(bench 1 "$RUNS" "$BIN" flows "$CAPTURE")
T_CONV=$(bench 1 "$TSHARK_RUNS" tshark -r "$CAPTURE" -q -z conv,udp)
T_MSGJ=$(bench 1 "$RUNS" "$BIN" messages "$CAPTURE" --json)
say "tshark -T json, $TSHARK_JSON_RUNS run(s), no warm-up (this one is slow)"
T_TJSON=$(bench 0 "$TSHARK_JSON_RUNS" tshark -r "$CAPTURE" "${DECODE[@]}" -T json)
T_MSG=$(bench 1 "$RUNS" "$BIN" messages "$CAPTURE")

say "peak memory (/usr/bin/time -f %M)"
RSS_FLOWS=$(maxrss "$BIN" flows "$CAPTURE")
RSS_MSGJ=$(maxrss "$BIN" messages "$CAPTURE" --json)

# --- report ----------------------------------------------------------------------------------------
w() { echo "$1" | cut -d' ' -f1; }     # median wall
wmin() { echo "$1" | cut -d' ' -f2; }
cpu() { echo "$1" | cut -d' ' -f3; }
rss() { echo "$1" | cut -d' ' -f4; }
MB=$(python3 -c "print($BYTES / 1e6)")
row() { # LABEL RESULT RUNS
    local wall
    wall=$(w "$2")
    printf '  %-52s %4s %9.3f %9.3f %9.3f %9.1f\n' "$1" "$3" "$wall" "$(wmin "$2")" "$(cpu "$2")" \
        "$(fdiv "$MB" "$wall")"
}
R_FLOWS=$(fdiv "$(w "$T_CONV")" "$(w "$T_FLOWS")")
R_FLOWS_CPU=$(fdiv "$(cpu "$T_CONV")" "$(cpu "$T_FLOWS")")
R_MSGJ=$(fdiv "$(w "$T_TJSON")" "$(w "$T_MSGJ")")
R_MSGJ_CPU=$(fdiv "$(cpu "$T_TJSON")" "$(cpu "$T_MSGJ")")
R_FLOWS_MIN=$(fdiv "$(wmin "$T_CONV")" "$(wmin "$T_FLOWS")")
R_MSGJ_MIN=$(fdiv "$(wmin "$T_TJSON")" "$(wmin "$T_MSGJ")")

echo
echo "capture: $CAPTURE"
printf '  %s, %s bytes (%.1f MB), RakNet server port %s\n' "$FTYPE" "$BYTES" "$MB" "$PORT"
echo "  frames (capinfos): $FRAMES"
echo "  raknet-dissect flows: $NFLOWS flow(s), $FLOW_PKTS packets, $FLOW_MSGS messages delivered," \
    "$FLOW_LOST lost, $FLOW_RESENDS resends, $FLOW_ANOM anomalies (both directions)"
echo "  tshark -z conv,udp: $CONVS UDP conversation(s); frames in no RakNet flow:" \
    "$((FRAMES - FLOW_PKTS))"
printf '  raknet-dissect messages --json: %s records, %s bytes (%.1f MB)\n' \
    "$MSG_LINES" "$MSG_BYTES" "$(fdiv "$MSG_BYTES" 1e6)"
echo "binary: raknet-dissect at $REV"
echo "machine: $(nproc) CPUs, load average now $(cut -d' ' -f1-3 /proc/loadavg); $(tshark --version 2>/dev/null | head -n 1)"
echo
echo "output to /dev/null; MB/s = $BYTES bytes / 10^6 / median wall s"
printf '  %-52s %4s %9s %9s %9s %9s\n' command runs median-s min-s cpu-s MB/s
row "raknet-dissect flows FILE" "$T_FLOWS" "$RUNS"
row "tshark -r FILE -q -z conv,udp" "$T_CONV" "$TSHARK_RUNS"
row "raknet-dissect messages FILE --json" "$T_MSGJ" "$RUNS"
row "tshark -r FILE ${DECODE[*]} -T json" "$T_TJSON" "$TSHARK_JSON_RUNS"
row "raknet-dissect messages FILE (text, for information)" "$T_MSG" "$RUNS"
echo "  (tshark -T json: $TSHARK_JSON_RUNS run(s), no warm-up; the others after one warm-up run)"
echo
printf 'ratio tshark/ours: median wall (median CPU; best wall, less sensitive to load):\n'
printf '  flows vs conv,udp:           %6.1fx  (%.1fx; %.1fx)\n' "$R_FLOWS" "$R_FLOWS_CPU" "$R_FLOWS_MIN"
printf '  messages --json vs -T json:  %6.1fx  (%.1fx; %.1fx)\n' "$R_MSGJ" "$R_MSGJ_CPU" "$R_MSGJ_MIN"
echo
echo "peak memory, max RSS (KB):"
printf '  %-44s %10s\n' "raknet-dissect flows FILE" "$RSS_FLOWS"
printf '  %-44s %10s\n' "raknet-dissect messages FILE --json" "$RSS_MSGJ"
printf '  %-44s %10s\n' "tshark -q -z conv,udp (reference)" "$(rss "$T_CONV")"
printf '  %-44s %10s\n' "tshark -T json (reference)" "$(rss "$T_TJSON")"
echo

missed=0
verdict() { # LABEL RATIO TARGET
    if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)" "$2" "$3"; then
        printf 'PASS  %s: %.1fx tshark (target >= %sx)\n' "$1" "$2" "$3"
    else
        printf 'MISS  %s: %.1fx tshark (target >= %sx)\n' "$1" "$2" "$3"
        missed=1
    fi
}
verdict "flows vs tshark -q -z conv,udp" "$R_FLOWS" 20
verdict "messages --json vs tshark -T json" "$R_MSGJ" 10
if [ -n "${BENCH_STRICT:-}" ] && [ "$missed" = 1 ]; then
    exit 4
fi
