#!/usr/bin/env bash
# test_bench_step.sh EDGEGRAD WORKDIR — the whole-step benchmark driver (bench/bench_step.c, run
# by `make bench-steps`) on the committed fixture tests/data/tiny_step.*, so it cannot rot: one
# rep on the graph JSON and on its SM8650 .egp prints one JSON line with min_ms > 0, a peak RSS
# and the OpenBLAS core; --serve (the interleaved rounds' worker) answers counts 2 and 1 read from
# stdin with that many step times after its ready line; --blas names the core; a missing input
# file, a missing argument or a bad count on stdin exits 2 with one line on stderr.
# $EG_BENCH_STEP (set by CMake) is the driver.
set -u
exe=$1
work=$2
source "$(dirname "$0")/harness.sh"
data=$(cd "$(dirname "$0")/../data" && pwd)
rm -rf "$work" && mkdir -p "$work"
bench=${EG_BENCH_STEP:?EG_BENCH_STEP names the bench_step driver}
py=/usr/bin/python3

# check_json FILE: one line, a JSON object with min_ms > 0, median_ms >= min_ms, peak_rss_kb > 0
# and a non-empty blas_core.
check_json() {
  $py - "$1" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
r = json.loads(lines[0])
assert r["min_ms"] > 0 and r["median_ms"] >= r["min_ms"] and r["peak_rss_kb"] > 0, r
assert r["reps"] == 1 and r["threads"] == 1 and r["blas_core"], r
PY
}

# check_serve FILE: a ready line (threads 1, warmup_ms > 0, a blas_core), then 2 and 1 times > 0.
check_serve() {
  $py - "$1" <<'PY'
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1]).read().splitlines()]
assert len(lines) == 3, lines
ready, *answers = lines
assert ready["ready"] is True and ready["threads"] == 1 and ready["warmup_ms"] > 0, ready
assert ready["blas_core"] and ready["peak_rss_kb"] > 0, ready
assert [len(a["times_ms"]) for a in answers] == [2, 1], answers
assert all(t > 0 for a in answers for t in a["times_ms"]) and answers[-1]["peak_rss_kb"] > 0, answers
PY
}

for model in "$data/tiny_step.json" egp; do
  if [[ $model == egp ]]; then
    model=$work/step.egp
    if $exe compile "$data/tiny_step.json" --soc SM8650 -o "$model" >"$work/compile.txt" 2>&1; then
      ok; else bad "compile: $(cat "$work/compile.txt")"; fi
  fi
  if $bench "$model" "$data/tiny_step_inputs" --threads 1 --reps 1 >"$work/out.json" 2>"$work/err.txt" \
     && check_json "$work/out.json" 2>>"$work/err.txt"; then ok; else
    bad "bench_step $(basename "$model"): $(cat "$work/out.json" "$work/err.txt")"; fi
  if printf '2\n1\nq\n' | $bench "$model" "$data/tiny_step_inputs" --threads 1 --serve \
       >"$work/serve.json" 2>"$work/err.txt" && check_serve "$work/serve.json" 2>>"$work/err.txt"; then
    ok; else bad "bench_step --serve $(basename "$model"): $(cat "$work/serve.json" "$work/err.txt")"; fi
done

if $bench --blas >"$work/blas.json" 2>"$work/err.txt" && $py -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["blas_core"] and r["blas_config"].startswith("OpenBLAS"), r' "$work/blas.json" 2>>"$work/err.txt"
then ok; else bad "bench_step --blas: $(cat "$work/blas.json" "$work/err.txt")"; fi

# a folder lacking one input: one line naming the file, exit 2
mkdir -p "$work/partial"
cp "$data"/tiny_step_inputs/*.npy "$work/partial/"
rm "$work/partial/target.npy"
expect_fail 2 "target.npy" -- $bench "$data/tiny_step.json" "$work/partial" --reps 1
expect_fail 2 "usage: bench_step" -- $bench "$data/tiny_step.json"
expect_fail 2 "--reps 0" -- $bench "$data/tiny_step.json" "$data/tiny_step_inputs" --reps 0
expect_fail 2 "stdin count 0" -- $bench "$data/tiny_step.json" "$data/tiny_step_inputs" --serve <<<0

summary test_bench_step
