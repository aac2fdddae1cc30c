#!/usr/bin/env bash
# test_profile.sh EDGEGRAD WORKDIR — `edgegrad run --profile` and `--profile-trace`: the table
# (one row per step up to 30, slowest first, with the total beside the wall time), the Chrome
# trace (valid JSON, one complete event per node on the CPU path, one per step compiled for a
# SoC with each NPU partition's QNN ops nested in it), on a graph, with --soc, on a .egp and
# with --steps; a trace
# path that cannot be written is one line on stderr, exit 2, and no file.
set -u
exe=$1
work=$2
data=$(cd "$(dirname "$0")/../data" && pwd)
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "$0")/harness.sh"

inputs=()
for f in "$data"/tiny_step_inputs/*.npy; do inputs+=(--input "$(basename "$f" .npy)=$f"); done
nodes=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['nodes']))" "$data/tiny_step.json")

# events TRACE: the number of complete events, after checking the file is JSON of that form.
events() {
  python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
assert all(e["ph"] == "X" and e["dur"] >= 0 and e["cat"] in ("cpu", "npu", "qnn") for e in ev)
steps = [e for e in ev if e["cat"] != "qnn"]
assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-3 for a, b in zip(steps, steps[1:])), "overlapping steps"
# each QNN op lies inside the NPU step before it
inside = None
for e in ev:
    if e["cat"] == "npu":
        inside = e
    elif e["cat"] == "cpu":
        inside = None
    else:
        assert inside and inside["ts"] - 1e-3 <= e["ts"] and e["ts"] + e["dur"] <= inside["ts"] + inside["dur"] + 1e-3, e
print(len(steps), sum(e["cat"] == "npu" for e in ev), sum(e["cat"] == "qnn" for e in ev))
PY
}

# the CPU path: a table, and one event per node
if $exe run "$data/tiny_step.json" "${inputs[@]}" --profile --profile-trace "$work/cpu.json" \
    >"$work/cpu.txt" 2>&1; then ok; else bad "run --profile: $(cat "$work/cpu.txt")"; fi
if grep -q "^profile of the one run: $nodes steps" "$work/cpu.txt"; then ok; else
  bad "no profile header for $nodes steps: $(cat "$work/cpu.txt")"; fi
rows=$(grep -c " cpu  " "$work/cpu.txt")
if [[ $rows -eq $(( nodes < 30 ? nodes : 30 )) ]]; then ok; else bad "$rows table rows for $nodes nodes"; fi
# slowest first
if grep " cpu  " "$work/cpu.txt" | awk '{print $1}' | sort -g -r -c; then ok; else bad "rows not sorted by time"; fi
read -r n npu ops < <(events "$work/cpu.json")
if [[ $n -eq $nodes && $npu -eq 0 && $ops -eq 0 ]]; then ok; else bad "CPU trace: $n events ($npu npu) for $nodes nodes"; fi

# compiled for SM8650, in memory and from a .egp: NPU partitions appear
if $exe run "$data/tiny_step.json" --soc SM8650 "${inputs[@]}" -q --profile-trace "$work/soc.json" \
    >"$work/soc.txt" 2>&1; then ok; else bad "run --soc --profile-trace: $(cat "$work/soc.txt")"; fi
if [[ ! -s $work/soc.txt ]]; then ok; else bad "-q with only --profile-trace printed: $(cat "$work/soc.txt")"; fi
read -r n npu ops < <(events "$work/soc.json")
if [[ $n -gt 0 && $n -lt $nodes && $npu -ge 1 && $ops -ge $npu ]]; then ok; else
  bad "SM8650 trace: $n steps, $npu npu, $ops QNN ops"; fi
$exe compile "$data/tiny_step.json" --soc SM8650 -o "$work/step.egp" -q
if $exe run "$work/step.egp" "${inputs[@]}" --steps 3 --lr 0.01 --output-dir "$work/out" -q --profile \
    --profile-trace "$work/egp.json" >"$work/egp.txt" 2>&1; then ok; else bad "egp --profile: $(cat "$work/egp.txt")"; fi
if grep -q "^profile of the last run: $n steps" "$work/egp.txt" && grep -q " npu  " "$work/egp.txt"; then ok; else
  bad ".egp profile: $(cat "$work/egp.txt")"; fi
read -r n2 npu2 ops2 < <(events "$work/egp.json")
if [[ $n2 -eq $n && $npu2 -eq $npu && $ops2 -eq $ops ]]; then ok; else
  bad ".egp trace: $n2 steps ($npu2 npu, $ops2 ops), in memory $n ($npu, $ops)"; fi

# an unwritable trace: one line, exit 2, nothing written
expect_fail 2 "$work/none/t.json" -- $exe run "$data/tiny_step.json" "${inputs[@]}" -q \
  --profile-trace "$work/none/t.json"
if [[ ! -e $work/none ]]; then ok; else bad "a failed trace left $work/none"; fi
expect_fail 2 "run: --profile-trace needs a value (FILE)" -- $exe run "$data/tiny_step.json" --profile-trace

summary test_profile
