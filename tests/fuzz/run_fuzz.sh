#!/usr/bin/env bash
# run_fuzz.sh — runs each libFuzzer target of a build made with -DEG_FUZZ=ON (make fuzz).
#
#   tests/fuzz/run_fuzz.sh BUILD_DIR SECONDS [JOBS]
#
# Each target BUILD_DIR/fuzz_<t> (the names CMake wrote to BUILD_DIR/fuzz-targets.txt, or those
# of FUZZ_TARGETS in the environment, space-separated) runs for SECONDS (JOBS targets at a
# time, default 1) over a working corpus BUILD_DIR/fuzz-work/<t> (new inputs go there) and the
# seeds BUILD_DIR/fuzz-corpus/<t>, with one thread, a 25 s per-input timeout, a 2 GiB RSS limit
# and its stdout discarded (the CLI's targets print what the CLI prints; reports go to stderr).
# A crash, leak, timeout or out-of-memory input is saved as tests/fuzz/crashes/<t>/<kind>-<sha1>
# (libFuzzer's -artifact_prefix), where ctest's fuzz/replay_<t> replays it from then on.
# Prints per target the executed inputs, the final coverage (cov: edges, ft: features) and any
# artifact; the log is BUILD_DIR/fuzz-work/<t>.log. Exit status 1 when any target found one.
# FUZZ_FLAGS (environment) adds libFuzzer flags, e.g. "-fork=1 -ignore_crashes=1" to keep
# going past a crash.
set -uo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 BUILD_DIR SECONDS [JOBS]" >&2; exit 2; }
build=$1
seconds=$2
jobs=${3:-1}
root=$(cd "$(dirname "$0")/../.." && pwd)
if [[ -n ${FUZZ_TARGETS:-} ]]; then
  read -r -a targets <<<"$FUZZ_TARGETS"
elif [[ -f $build/fuzz-targets.txt ]]; then
  read -r -a targets <"$build/fuzz-targets.txt"
else
  echo "run_fuzz: $build/fuzz-targets.txt missing (configure with -DEG_FUZZ=ON)" >&2
  exit 2
fi

run_one() {
  local t=$1 work="$build/fuzz-work/$t" crashes="$root/tests/fuzz/crashes/$t"
  mkdir -p "$work" "$crashes"
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$build/fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=25 \
    -rss_limit_mb=2048 -close_fd_mask=1 -artifact_prefix="$crashes/" ${FUZZ_FLAGS:-} "$work" \
    "$build/fuzz-corpus/$t" \
    >"$work.log" 2>&1
  echo $? >"$work.rc"
}

summary() {
  local t=$1 log="$build/fuzz-work/$t.log" rc
  rc=$(cat "$build/fuzz-work/$t.rc" 2>/dev/null || echo 1)
  local execs cov ft artifact
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
  artifact=$(sed -n 's/.*Test unit written to //p' "$log" | tail -n 1)
  printf 'fuzz_%-12s %8s execs  cov %6s  ft %6s  %s\n' "$t" "${execs:-?}" "${cov:-?}" \
    "${ft:-?}" "$([[ $rc -eq 0 ]] && echo ok || echo "FOUND: ${artifact:-see $log}")"
  [[ $rc -eq 0 ]]
}

running=0
for t in "${targets[@]}"; do
  [[ -x "$build/fuzz_$t" ]] || { echo "run_fuzz: $build/fuzz_$t missing (configure with -DEG_FUZZ=ON)" >&2; exit 2; }
  echo "run_fuzz: fuzz_$t for ${seconds}s"
  run_one "$t" &
  running=$((running + 1))
  if [[ $running -ge $jobs ]]; then wait -n; running=$((running - 1)); fi
done
wait
status=0
for t in "${targets[@]}"; do summary "$t" || status=1; done
exit $status
