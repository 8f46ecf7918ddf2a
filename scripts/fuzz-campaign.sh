#!/usr/bin/env bash
# fuzz-campaign.sh: run every fuzz target for a number of executions (or a
# smoke run of SECONDS each with --smoke SECONDS), on the stable toolchain
# (RUSTC_BOOTSTRAP=1, no sanitizer: cargo-fuzz's libFuzzer without ASan;
# the targets are safe Rust, their assertions and panics are what is
# checked). Corpora live under target/fuzz-corpus/TARGET, seeded with
# fuzz/seeds/TARGET (scripts/fuzz-seeds.py) and samples/ for the
# capture-level targets, with a dictionary from fuzz/dict/. Prints per target the executions,
# the coverage and the time, as docs/fuzzing.md records them.
#   scripts/fuzz-campaign.sh [TARGET ...]          10,000,000 runs each (1,000,000 for pipeline)
#   scripts/fuzz-campaign.sh --smoke 15 [TARGET ...]  15 s each (CI): the
#                                                     targets built unoptimized
#                                                     (--dev, a third of the
#                                                     build time) and run JOBS
#                                                     (default 2) at a time
#   RUNS=8000000 scripts/fuzz-campaign.sh session     another count (a campaign
#                                                     resumed on its corpus)
#   MAX_LEN=1024 scripts/fuzz-campaign.sh speak       shorter inputs than the
#                                                     target's default
# Needs cargo-fuzz (`cargo install cargo-fuzz`).
set -euo pipefail
cd "$(dirname "$0")/.."
smoke=
if [ "${1:-}" = --smoke ]; then smoke=${2:-15}; shift 2; fi
export RUSTC_BOOTSTRAP=1
profile=()
[ -n "$smoke" ] && profile=(--dev)
cargo fuzz build --sanitizer none "${profile[@]}" >/dev/null 2>&1 ||
  cargo fuzz build --sanitizer none "${profile[@]}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo fuzz list)
jobs=1
[ -n "$smoke" ] && jobs=${JOBS:-2}
# One target's run; its line when it is done (exit 1 on a crash).
one() {
  local t=$1
  corpus=target/fuzz-corpus/$t
  mkdir -p "$corpus"
  # Whole captures seed the targets that read one; the others take a
  # datagram, a message or a line: small inputs.
  # The committed seeds (scripts/fuzz-seeds.py cuts them from samples/)
  # and dictionary of each target.
  seeds=()
  [ -d "fuzz/seeds/$t" ] && seeds=("fuzz/seeds/$t")
  # Inputs that once failed, kept by hand (fuzz-seeds.py remakes seeds/).
  [ -d "fuzz/regressions/$t" ] && seeds+=("fuzz/regressions/$t")
  max_len=4096
  case $t in
    capture|pipeline) seeds+=(samples); max_len=65536 ;;
    game) max_len=65536 ;;
    speak) max_len=16384 ;;
    server|session) max_len=16384 ;;
  esac
  max_len=${MAX_LEN:-$max_len}
  case $t in
    game|schema|speak) dict=fuzz/dict/bedrock.dict ;;
    filter|parsers) dict=fuzz/dict/filter.dict ;;
    *) dict=fuzz/dict/raknet.dict ;;
  esac
  if [ -n "$smoke" ]; then
    limit=(-max_total_time="$smoke")
  elif [ -n "${RUNS:-}" ]; then
    limit=(-runs="$RUNS")
  elif [ "$t" = pipeline ]; then
    limit=(-runs=1000000)
  else
    limit=(-runs=10000000)
  fi
  log=target/fuzz-corpus/$t.log
  local start=$SECONDS
  if ! cargo fuzz run --sanitizer none "${profile[@]}" "$t" "$corpus" "${seeds[@]}" -- \
      "${limit[@]}" -max_len=$max_len -dict="$dict" -print_final_stats=1 >"$log" 2>&1; then
    echo "fuzz $t: FAILED (see $log)"; tail -30 "$log"; return 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo '?')
  echo "fuzz $t: $runs executions, coverage $cov, $((SECONDS - start)) s, no crash"
}
failed=0
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  one "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
exit $failed
