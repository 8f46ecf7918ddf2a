# Shared by the benchmark scripts (sourced, not run). The caller defines ROOT,
# BENCH_DIR, TMP, CAPTURE_PID, die() and say().

# bench_python: sets PY to a Python with the PyPI package raknet
# ($RAKNET_PYTHON, or target/venv, made if missing).
bench_python() {
    if [ -n "${RAKNET_PYTHON:-}" ]; then
        PY=$RAKNET_PYTHON
    else
        PY=$ROOT/target/venv/bin/python
        if ! [ -x "$PY" ] || ! "$PY" -c 'import raknet' 2>/dev/null; then
            say "creating target/venv with the PyPI package raknet"
            python3 -m venv "$ROOT/target/venv"
            timeout 300 "$ROOT/target/venv/bin/pip" install --quiet 'raknet==0.3.0'
        fi
    fi
    "$PY" -c 'import raknet' 2>/dev/null || die "$PY cannot import raknet"
}

# bench_capture FILE PORT MESSAGES SECONDS: two real peers (peers.py --scenario
# bulk) on PORT and PORT+1, captured with tcpdump on lo into FILE, the whole
# bounded by SECONDS. Sets DROPPED to tcpdump's count of packets the kernel
# dropped ("" when it printed none); tcpdump's report is in $TMP/tcpdump.err.
bench_capture() {
    local file=$1 p=$2 messages=$3 limit=$4
    command -v tcpdump >/dev/null ||
        die "tcpdump not found (apt-get install tcpdump), or give a CAPTURE file"
    [ "$(id -u)" = 0 ] || die "making the capture needs root (tcpdump on lo), or give a CAPTURE file"
    bench_python
    say "capturing $file: peers.py --scenario bulk --messages $messages on port $p"
    rm -f "$file"
    # -B (KB): tens of thousands of packets in seconds overflow tcpdump's
    # default 2 MB buffer, and the kernel then drops packets.
    timeout $((limit + 60)) tcpdump -i lo -Z root -B 131072 --immediate-mode -U -n -w "$file" \
        "udp port $p or udp port $((p + 1))" 2>"$TMP/tcpdump.err" &
    CAPTURE_PID=$!
    local started=""
    for _ in $(seq 100); do
        if grep -q 'listening on' "$TMP/tcpdump.err" 2>/dev/null; then started=1; break; fi
        kill -0 "$CAPTURE_PID" 2>/dev/null || break
        sleep 0.05
    done
    [ -n "$started" ] || { cat "$TMP/tcpdump.err" >&2; die "tcpdump did not start"; }
    sleep 0.2   # the filter is attached just before "listening on" is printed
    local status=0 t0 t1
    t0=$(date +%s.%N)
    timeout "$limit" "$PY" "$ROOT/scripts/peers.py" session --port "$p" --client-port $((p + 1)) \
        --scenario bulk --messages "$messages" --seed 1 --timeout $((limit - 20)) || status=$?
    t1=$(date +%s.%N)
    sleep 1.2   # let the last packets be written
    kill -INT "$CAPTURE_PID" 2>/dev/null || true
    wait "$CAPTURE_PID" 2>/dev/null || true
    CAPTURE_PID=""
    [ "$status" = 0 ] || die "peers.py --scenario bulk failed (exit $status)"
    say "peers.py took $(python3 -c "print('%.1f' % ($t1 - $t0))") s; tcpdump: $(grep -E 'captured|received|dropped' "$TMP/tcpdump.err" | tr '\n' ';')"
    DROPPED=$(sed -n 's/^\([0-9]*\) packets dropped by kernel.*/\1/p' "$TMP/tcpdump.err")
}

# bench_build: cargo build --release; sets BUILT to the binary.
bench_build() {
    say "cargo build --release"
    cargo build --release --quiet ||
        die "cargo build --release failed (src/ mid-edit? retry in a minute)"
    local target
    target=$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' ||
        echo "$ROOT/target")
    BUILT=$target/release/raknet-dissect
    [ -x "$BUILT" ] || die "$BUILT not built"
}

# bench_port BIN CAPTURE: the RakNet server port, from the first packet's direction.
bench_port() {
    "$1" "$2" --json -c 1 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    p = json.loads(line)
    end = p["dst"] if p.get("dir") == "c2s" else p["src"]
    print(end.rsplit(":", 1)[1].strip("[]"))
    break' || true
}

# bench WARM RUNS CMD...: WARM (0 or 1) warm-up runs, then RUNS runs with stdin,
# stdout and stderr on /dev/null (stderr of the last run kept in $TMP/stderr);
# prints "median_wall min_wall median_cpu max_rss_kb exit_status" (seconds, KB).
cat > "$TMP/bench.py" <<'PY'
import os, statistics, sys, time
warm, runs, err, cmd = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
null = os.open(os.devnull, os.O_RDWR)
def one():
    e = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    fa = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1),
          (os.POSIX_SPAWN_DUP2, e, 2)]
    t = time.perf_counter()
    pid = os.posix_spawnp(cmd[0], cmd, os.environ, file_actions=fa)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t
    os.close(e)
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, os.waitstatus_to_exitcode(status)
for _ in range(warm):
    one()
r = [one() for _ in range(runs)]
print("%.6f %.6f %.6f %d %d" % (statistics.median(x[0] for x in r), min(x[0] for x in r),
      statistics.median(x[1] for x in r), max(x[2] for x in r), max(x[3] for x in r)))
PY
bench() {
    local out
    out=$(python3 "$TMP/bench.py" "$1" "$2" "$TMP/stderr" "${@:3}") || die "timing ${*:3} failed"
    if [ "${out##* }" != 0 ]; then
        cat "$TMP/stderr" >&2
        die "${*:3} exited with status ${out##* }"
    fi
    echo "$out"
}
maxrss() { # CMD...: max RSS in KB of one run, by /usr/bin/time -f %M
    /usr/bin/time -o "$TMP/rss" -f %M "$@" >/dev/null 2>"$TMP/stderr" ||
        { cat "$TMP/stderr" >&2; die "$* failed"; }
    tail -n 1 "$TMP/rss"
}
fdiv() { python3 -c "import sys; a, b = map(float, sys.argv[1:]); print('%.6g' % (a / b) if b > 0 else 'nan')" "$1" "$2"; }
