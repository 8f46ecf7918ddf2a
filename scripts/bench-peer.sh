#!/usr/bin/env bash
# bench-peer.sh: the client benchmark of issue 4: a bulk transfer over loopback to a
# server of the original RakNet C++ library, once from the original library's client and
# once from ours (`raknet-dissect connect`); the target is our client at least as fast.
#
# Usage:
#     scripts/bench-peer.sh
#
# Each run sends BENCH_BYTES bytes (default 100,000,000) as BENCH_BYTES / BENCH_SIZE
# RELIABLE_ORDERED messages of BENCH_SIZE bytes (default 1000) on channel 0, to a fresh
#     scripts/peers.py server --port PORT --expect N        (PyPI `raknet`, the C++ library)
# from one of:
#     original   scripts/peers.py client --connect 127.0.0.1:PORT --bulk-bytes B --bulk-size S
#                (0x86, u32 BE serial, filler; one message in ~1 MB asks for an ACK receipt,
#                at most 8 of them unacknowledged, i.e. ~8 MB queued in RakNet)
#     ours       raknet-dissect connect 127.0.0.1:PORT --send HEX --repeat N
#                    --reliability reliable-ordered --channel 0 --wait 0
#                (HEX: a message of BENCH_SIZE bytes, 0x86, serial 0, the same filler; sent N
#                times, then it waits until all are acknowledged and disconnects)
# The runs alternate (original, ours, original, ...), RUNS of each, every run on a port of
# its own (BENCH_PORT, BENCH_PORT + 1, ...).  Measured, per run:
#     transfer s  from the server's first to its last user message (the line
#                 `server: N user messages, B bytes in T s ...` of peers.py server)
#     wall s      from just before the client process starts to the server's last user
#                 message (`server: first user message at E1, last at E2`): process start
#                 (Python and its imports for the original), connection and transfer
#     MB/s        BENCH_BYTES / 10^6 / transfer s, and / wall s
#     max RSS     of the client process (/usr/bin/time -f %M, when installed)
#     drops       UDP datagrams the kernel dropped for want of receive buffer during the
#                 run (RcvbufErrors of /proc/net/snmp: the whole machine's count)
# A run fails the script unless the client and the server exit 0 and the server got exactly
# N messages and BENCH_BYTES bytes.  It prints every run, the medians, the ratio ours /
# original of the median MB/s (transfer; wall beside it) and PASS when ours >= original,
# MISS otherwise.
#
# Without a `connect` subcommand in the binary (it is being written), the original half is
# still measured and printed, then the script fails (exit 1) saying so.
#
# Environment:
#     BENCH_BYTES=100000000   bytes per run
#     BENCH_SIZE=1000         bytes per message: 1..65000 (our client gets it as one hex
#                             argument, at most 128 KB), dividing BENCH_BYTES
#     RUNS=3                  runs of each client (medians reported)
#     BENCH_PORT=19200        port of the first run's server (then +1 per run)
#     BENCH_TIMEOUT=120       limit on one client run and on its server, seconds
#     BENCH_BUILD=1           `cargo build --release` first (by default only when
#                             target/release/raknet-dissect is missing)
#     BENCH_BIN=FILE          time this binary as ours instead (no build)
#     BENCH_RCVBUF=BYTES      give the server `--rcvbuf BYTES` (a larger socket receive
#                             buffer: fewer kernel drops on a busy machine; peers.py's doc)
#     RAKNET_PYTHON           a python with `raknet` (default target/venv/bin/python,
#                             created when missing)
#     BENCH_STRICT=1          exit 4 on MISS
#
# Variance: RakNet asks for a 256 KB socket receive buffer (512 KB on Linux).  The
# original client's bursts overflow it: the kernel drops datagrams at the server's socket
# (the drops column: a few hundred per 100 MB run), RakNet resends and slows down.  On 2
# CPUs the original client did 10-15 MB/s that way (9-35 MB/s on 20 MB runs under load),
# and PASS / MISS on 3 runs is then largely noise.  With BENCH_RCVBUF=8000000 there were no
# drops and it did 36.3-36.8 MB/s in every run: use it (or more RUNS) to compare the
# clients themselves; the default measures them against RakNet's own buffer.
#
# Needs: python3, timeout (coreutils); cargo only to build.  About 10-30 s per 100 MB run
# pair on 2 CPUs.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BENCH_BYTES=${BENCH_BYTES:-100000000}
BENCH_SIZE=${BENCH_SIZE:-1000}
RUNS=${RUNS:-3}
BENCH_PORT=${BENCH_PORT:-19200}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-120}
BENCH_DIR=$ROOT/target/bench
CAPTURE_PID=""   # bench-lib.sh's convention; no capture here
SERVER_PID=""
TMP=""

die() { echo "bench-peer: $*" >&2; exit 1; }
say() { echo "bench-peer: $*" >&2; }

cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi
    if [ -n "$TMP" ]; then rm -rf "$TMP"; fi
}
trap cleanup EXIT

# --- settings and tools ----------------------------------------------------------------
for v in BENCH_BYTES BENCH_SIZE RUNS BENCH_PORT BENCH_TIMEOUT; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer"
done
[ "$BENCH_SIZE" -le 65000 ] || die "BENCH_SIZE must be at most 65000 (one hex argument)"
[ $((BENCH_BYTES % BENCH_SIZE)) = 0 ] || die "BENCH_SIZE must divide BENCH_BYTES"
[ $((BENCH_PORT + 2 * RUNS)) -le 65536 ] || die "BENCH_PORT too high for $RUNS runs"
COUNT=$((BENCH_BYTES / BENCH_SIZE))
RCVBUF=()
if [ -n "${BENCH_RCVBUF:-}" ]; then
    [[ $BENCH_RCVBUF =~ ^[1-9][0-9]*$ ]] || die "BENCH_RCVBUF must be a positive integer"
    RCVBUF=(--rcvbuf "$BENCH_RCVBUF")
fi
command -v python3 >/dev/null || die "python3 not found"
command -v timeout >/dev/null || die "timeout not found (coreutils)"
RSS_TOOL=()
if [ -x /usr/bin/time ]; then RSS_TOOL=(/usr/bin/time -o RSSFILE -f %M); fi

mkdir -p "$BENCH_DIR"
TMP=$(mktemp -d "$BENCH_DIR/tmp.XXXXXX")
# shellcheck source=bench-lib.sh
. "$ROOT/scripts/bench-lib.sh"
bench_python

# --- the binary: built only when missing or asked (someone may be building this tree) ---
if [ -n "${BENCH_BIN:-}" ]; then
    [ -x "$BENCH_BIN" ] || die "BENCH_BIN=$BENCH_BIN is not an executable file"
    BUILT=$BENCH_BIN
elif [ -n "${BENCH_BUILD:-}" ] || ! [ -x "$ROOT/target/release/raknet-dissect" ]; then
    command -v cargo >/dev/null || die "cargo not found"
    bench_build
else
    BUILT=$ROOT/target/release/raknet-dissect
fi
# A private copy: a concurrent `cargo build` cannot swap the binary between runs.
BIN=$TMP/raknet-dissect
cp "$BUILT" "$BIN"
REV="$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- src Cargo.toml Cargo.lock 2>/dev/null || echo '+uncommitted src changes')"
OURS=1
# (`raknet-dissect connect --help` would print the main help: FILE is positional.)
if ! "$BIN" help connect >/dev/null 2>&1; then
    OURS=""
    say "$BUILT has no \`connect\` subcommand (yet): measuring the original client only," \
        "then failing"
fi

# Our client's message: BENCH_SIZE bytes laid out as peers.py's bulk ones (serial 0).
HEX=$(python3 -c '
import sys
n = int(sys.argv[1])
fill = bytes(0x86 + (b % 122) for b in range(256)) * (n // 256 + 1)
print((b"\x86" + bytes(4) + fill)[:n].hex())' "$BENCH_SIZE")

# --- one run ------------------------------------------------------------------------------
# rcvbuf_errors: the kernel's count of UDP datagrams dropped for a full receive buffer.
rcvbuf_errors() {
    awk '/^Udp:/ { if (!n) { for (i = 1; i <= NF; i++) if ($i == "RcvbufErrors") c = i; n = 1 }
                   else print $c }' /proc/net/snmp 2>/dev/null || echo "?"
}

# run_one WHO PORT: a fresh server on PORT, then client WHO (original | ours); appends
# "WHO transfer_s wall_s rss_kb drops" to $TMP/results.
run_one() {
    local who=$1 port=$2 t0 status=0 sstatus=0 rss="?" drops0 drops="?"
    local cmd
    if [ "$who" = original ]; then
        cmd=("$PY" "$ROOT/scripts/peers.py" client --connect "127.0.0.1:$port"
            --bulk-bytes "$BENCH_BYTES" --bulk-size "$BENCH_SIZE" --timeout "$BENCH_TIMEOUT")
    else
        cmd=("$BIN" connect "127.0.0.1:$port" --send "$HEX" --repeat "$COUNT"
            --reliability reliable-ordered --channel 0 --wait 0)
    fi
    timeout $((BENCH_TIMEOUT + 15)) "$PY" "$ROOT/scripts/peers.py" server --port "$port" \
        --expect "$COUNT" --timeout $((BENCH_TIMEOUT + 5)) "${RCVBUF[@]}" \
        >"$TMP/server.out" 2>"$TMP/server.err" &
    SERVER_PID=$!
    for _ in $(seq 200); do
        grep -q '^listening ' "$TMP/server.out" && break
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.05
    done
    grep -q '^listening ' "$TMP/server.out" ||
        { cat "$TMP/server.err" >&2; die "peers.py server did not start on port $port"; }
    local rsscmd=("${RSS_TOOL[@]/RSSFILE/$TMP/rss}")
    drops0=$(rcvbuf_errors)
    t0=$(date +%s.%N)
    timeout "$BENCH_TIMEOUT" "${rsscmd[@]}" "${cmd[@]}" >"$TMP/client.out" 2>"$TMP/client.err" ||
        status=$?
    if [ "$status" != 0 ]; then kill "$SERVER_PID" 2>/dev/null || true; fi
    wait "$SERVER_PID" || sstatus=$?
    SERVER_PID=""
    if [ "$status" != 0 ]; then
        tail -n 20 "$TMP/client.err" >&2
        [ "$status" != 124 ] || say "(124: the client ran out of BENCH_TIMEOUT=$BENCH_TIMEOUT s)"
        die "$who client, port $port: exit status $status: ${cmd[*]:0:4} ..."
    fi
    if [ "$sstatus" != 0 ]; then
        tail -n 20 "$TMP/server.err" >&2
        die "peers.py server (port $port, $who client) exited with status $sstatus"
    fi
    if [ ${#RSS_TOOL[@]} -gt 0 ]; then rss=$(tail -n 1 "$TMP/rss"); fi
    local drops1
    drops1=$(rcvbuf_errors)
    if [[ $drops0 =~ ^[0-9]+$ && $drops1 =~ ^[0-9]+$ ]]; then drops=$((drops1 - drops0)); fi
    python3 - "$TMP/server.err" "$who" "$t0" "$COUNT" "$BENCH_BYTES" "$rss" "$drops" \
        >>"$TMP/results" <<'EOF' || die "$who client, port $port: see above"
import re, sys
err, who, t0, count, total, rss, drops = sys.argv[1:]
text = open(err).read()
m = re.search(r"^server: (\d+) user messages, (\d+) bytes in ([\d.]+) s", text, re.M)
e = re.search(r"^server: first user message at ([\d.]+), last at ([\d.]+)", text, re.M)
if not m or not e:
    sys.exit("bench-peer: no summary lines from peers.py server:\n" + text)
if (int(m[1]), int(m[2])) != (int(count), int(total)):
    sys.exit("bench-peer: the server got %s messages, %s bytes; expected %s, %s"
             % (m[1], m[2], count, total))
print(who, m[3], "%.6f" % (float(e[2]) - float(t0)), rss, drops)
EOF
    say "$(tail -n 1 "$TMP/results")   (client, transfer s, wall s, max RSS KB, drops)"
}

# --- the runs --------------------------------------------------------------------------------
say "$RUNS run(s) of each client: $BENCH_BYTES bytes as $COUNT messages of $BENCH_SIZE bytes," \
    "ports $BENCH_PORT..; load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
: >"$TMP/results"
port=$BENCH_PORT
for run in $(seq "$RUNS"); do
    for who in original ${OURS:+ours}; do
        say "run $run, $who client, port $port"
        run_one "$who" "$port"
        port=$((port + 1))
    done
done

# --- report ------------------------------------------------------------------------------------
echo
echo "bulk transfer over loopback: $BENCH_BYTES bytes as $COUNT RELIABLE_ORDERED messages of" \
    "$BENCH_SIZE bytes on channel 0"
echo "  server: scripts/peers.py server --expect $COUNT ${RCVBUF[*]} (PyPI raknet" \
    "$("$PY" -c 'from importlib.metadata import version; print(version("raknet"))' 2>/dev/null || echo '?'))"
echo "  original client: scripts/peers.py client --bulk-bytes $BENCH_BYTES --bulk-size $BENCH_SIZE"
echo "  our client: raknet-dissect connect --send HEX --repeat $COUNT --reliability reliable-ordered" \
    "--channel 0 --wait 0$([ -n "$OURS" ] || echo ' (missing: no connect subcommand)')"
echo "binary: raknet-dissect at $REV"
echo "machine: $(nproc) CPUs, load average now $(cut -d' ' -f1-3 /proc/loadavg)"
echo
status=0
python3 - "$TMP/results" "$BENCH_BYTES" "${OURS:-}" "${BENCH_STRICT:-}" <<'EOF' || status=$?
import statistics, sys
path, total, ours, strict = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = [line.split() for line in open(path) if line.strip()]
mb = total / 1e6
print("transfer = server's first to last user message; wall = client process start to the "
      "server's last")
print("  %-9s %4s %11s %9s %15s %11s %11s %7s" % (
    "client", "run", "transfer-s", "wall-s", "MB/s-transfer", "MB/s-wall", "maxRSS-KB", "drops"))
med = {}
for who in ("original", "ours"):
    mine = [r for r in rows if r[0] == who]
    for k, (_, xfer, wall, rss, drops) in enumerate(mine):
        print("  %-9s %4d %11.3f %9.3f %15.2f %11.2f %11s %7s" % (
            who, k + 1, float(xfer), float(wall), mb / float(xfer), mb / float(wall), rss,
            drops))
    if mine:
        x = statistics.median(float(r[1]) for r in mine)
        w = statistics.median(float(r[2]) for r in mine)
        med[who] = (x, w)
print()
print("medians:")
for who, (x, w) in med.items():
    print("  %-9s transfer %8.3f s  %8.2f MB/s    wall %8.3f s  %8.2f MB/s" % (
        who, x, mb / x, w, mb / w))
print()
if "ours" not in med:
    print("bench-peer: our client was not measured: raknet-dissect has no `connect` "
          "subcommand (yet)", file=sys.stderr)
    sys.exit(1)
ratio = med["original"][0] / med["ours"][0]      # = MB/s ours / MB/s original
ratio_wall = med["original"][1] / med["ours"][1]
print("ratio ours/original, median MB/s: %.2fx transfer (%.2fx wall)" % (ratio, ratio_wall))
verdict = "PASS" if ratio >= 1 else "MISS"
print("%s  our client vs the original's: %.2fx its MB/s (target >= 1x)" % (verdict, ratio))
sys.exit(4 if verdict == "MISS" and strict else 0)
EOF
exit "$status"
