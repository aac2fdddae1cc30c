#!/usr/bin/env bash
# test_dump_partitions.sh EDGEGRAD WORKDIR — `edgegrad run --dump-partitions DIR`: every NPU
# partition's boundary tensors as DIR/<partition>/<name>.npy, checked by dump_partitions.py
# against `edgegrad inspect --json` (a file per APP_WRITE / APP_READ tensor, named by the export
# naming rule, NCHW), the graph (the IR value's dtype and shape) and PyTorch (its value), a
# tensor passed from one partition to a later one byte-identical in both, and a dumped graph
# output equal to the run's own file. Programs are compiled with --precision fp32, the precision
# PyTorch's values are computed in. On examples/digits_step (values held NHWC between
# partitions), tests/data/quant_net (a value held quantized: the float on file) and an exported
# function with an int64 rank-4 input narrowed to int32 on the NPU. Then: the in-memory compile
# (--soc) dumps the same bytes as the .egp; a later run (--steps) overwrites the dump; and the
# refusals: DIR's parent missing, DIR a file, a run without NPU partitions, a folder in the way.
set -u
exe=$1
work=$2
source "$(dirname "$0")/harness.sh"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rm -rf "$work" && mkdir -p "$work"
py=/usr/bin/python3
export PYTHONPATH=$root/python PYTHONWARNINGS=ignore

# inputs_of DIR: the --input arguments for every DIR/<name>.npy
inputs_of() {
  local f
  ins=()
  for f in "$1"/*.npy; do ins+=(--input "$(basename "$f" .npy)=$f"); done
}

# dump_check NAME MODEL.json INPUTS PROGRAM.egp [dump_partitions.py options]: runs the program
# with -o $work/NAME/out --dump-partitions $work/NAME/dump and checks the dump.
dump_check() {
  local name=$1 model=$2 in=$3 egp=$4 d=$work/$1
  shift 4
  mkdir -p "$d"
  inputs_of "$in"
  if $exe run "$egp" "${ins[@]}" -q -o "$d/out" --dump-partitions "$d/dump" >"$d/run.txt" 2>&1
  then ok; else bad "$name: run: $(cat "$d/run.txt")"; return; fi
  if $exe inspect "$egp" --json >"$d/inspect.json"; then ok; else bad "$name: inspect"; return; fi
  if $py "$here/dump_partitions.py" "$d/inspect.json" "$model" "$in" "$d/dump" "$d/out" "$@" \
       >"$d/check.txt" 2>&1; then ok
  else bad "$name: $(grep -v '^\[W' "$d/check.txt" | tail -5)"; fi
}

if $exe run --help | grep -q -- "--dump-partitions DIR"; then ok; else bad "run --help: no --dump-partitions"; fi

# ---- digits: 4 partitions, values held NHWC between them (detach_4, detach_5), t_1 passed on ----
# (the loss and its backward kept on the CPU, where the NPU would run the whole step as one)
digits=$root/examples/digits_step.json
digits_in=$root/examples/digits_step_inputs
split=(--skip-op aten.nll_loss_forward --skip-op aten.nll_loss_backward
       --skip-op aten._log_softmax_backward_data)
if $exe compile "$digits" --soc SM8650 --precision fp32 "${split[@]}" -o "$work/digits.egp" \
     >"$work/compile.txt" 2>&1; then ok
else bad "compile digits: $(cat "$work/compile.txt")"; fi
dump_check digits "$digits" "$digits_in" "$work/digits.egp" --min-shared 1 --min-outputs 1
for t in t_1 detach_4 detach_5; do
  if cmp -s "$work/digits/dump/partition_0/$t.npy" "$work/digits/dump/partition_1/$t.npy"; then ok
  else bad "digits: $t differs between partition_0 (its output) and partition_1 (its input)"; fi
done

# the same run compiled in memory (--soc) dumps the same bytes
inputs_of "$digits_in"
if $exe run "$digits" --soc SM8650 --precision fp32 "${split[@]}" "${ins[@]}" -q \
     --dump-partitions "$work/digits_soc" \
     >"$work/soc.txt" 2>&1 && diff -r "$work/digits/dump" "$work/digits_soc" >"$work/diff.txt"
then ok; else bad "digits --soc: $(cat "$work/soc.txt" "$work/diff.txt" | head -5)"; fi

# a later run overwrites: after --steps 2, conv1_bias (an input of partition_0) is the second
# step's, i.e. the final value plus lr times the last step's gradient; no temporary is left
lr=0.5
if $exe run "$work/digits.egp" "${ins[@]}" -q --steps 2 --lr $lr -o "$work/steps" \
     --dump-partitions "$work/digits/dump" >"$work/steps.txt" 2>&1; then ok
else bad "digits --steps 2: $(cat "$work/steps.txt")"; fi
if $py - "$work/digits/dump/partition_0/conv1_bias.npy" "$work/steps" $lr "$digits_in" <<'EOF'
import sys, numpy as np
dumped, out, lr = np.load(sys.argv[1]), sys.argv[2], float(sys.argv[3])
first = np.load(sys.argv[4] + "/conv1_bias.npy")
second = np.load(out + "/final/conv1_bias.npy") + lr * np.load(out + "/grad_conv1_bias.npy")
assert not np.allclose(dumped, first), "the dump is still the first step's"
assert np.allclose(dumped, second, rtol=1e-6, atol=1e-7), (dumped, second)
EOF
then ok; else bad "digits --steps 2: partition_0/conv1_bias.npy is not the second step's input"; fi
if [[ -z $(find "$work/digits/dump" -name '*.tmp.*') ]]; then ok; else bad "temporaries left in the dump"; fi

# ---- quant_net: a value held quantized on the NPU is dumped as the float the CPU has ----
mkdir -p "$work/quant"
$py - "$root/tests/data/quant_net.json" "$work/quant/in" <<'EOF'
import json, os, sys, numpy as np
g, d = json.load(open(sys.argv[1])), sys.argv[2]
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(0)
for e in g["inputs"]:
    v = g["values"][e["value"]]
    np.save(f"{d}/{e['name']}.npy", rng.standard_normal(v["shape"]).astype(v["dtype"]))
EOF
if $exe compile "$root/tests/data/quant_net.json" --soc SM8650 --precision fp32 -o "$work/quant.egp" \
     >"$work/compile.txt" 2>&1; then ok; else bad "compile quant_net: $(cat "$work/compile.txt")"; fi
if $exe inspect "$work/quant.egp" | grep -Eq "APP_(WRITE|READ) +[us]fixed_point"; then ok
else bad "quant_net: no quantized boundary tensor in the program (the case tests nothing)"; fi
dump_check quant "$root/tests/data/quant_net.json" "$work/quant/in" "$work/quant.egp"

# ---- int64: a rank-4 int64 input the NPU holds as int32 is dumped as int64 ----
mkdir -p "$work/i64"
$py - "$work/i64" <<'EOF' >"$work/i64/export.txt" 2>&1 || bad "export i64: $(tail -3 "$work/i64/export.txt")"
import os, sys, numpy as np, torch
import torch.nn.functional as F
from edgegrad.export import export_function

def f(x, w, q):
    return F.relu(F.conv2d(x, w, padding=1)), q.permute(0, 2, 3, 1), torch.cat([q, q], 1)

d = sys.argv[1]
torch.manual_seed(0)
args = [torch.randn(2, 3, 5, 4), torch.randn(4, 3, 3, 3),
        torch.randint(-2**31, 2**31 - 1, (2, 3, 5, 4), dtype=torch.int64)]
export_function(f, args, d + "/i64", static_args=("w",))
os.makedirs(d + "/in", exist_ok=True)
np.save(d + "/in/x.npy", args[0].numpy())
np.save(d + "/in/q.npy", args[2].numpy())
EOF
if $exe compile "$work/i64/i64.json" --soc SM8650 --precision fp32 -o "$work/i64.egp" >"$work/compile.txt" 2>&1
then ok; else bad "compile i64: $(cat "$work/compile.txt")"; fi
if $exe inspect "$work/i64.egp" | grep -q "APP_WRITE int32"; then ok
else bad "i64: no int32 boundary tensor in the program (the case tests nothing)"; fi
dump_check i64 "$work/i64/i64.json" "$work/i64/in" "$work/i64.egp" --min-outputs 1

# ---- refusals: one line, exit 2, nothing left behind ----
inputs_of "$digits_in"
expect_fail 2 "run: --dump-partitions $work/none/dump: cannot create (folder $work/none does not exist)" -- \
  $exe run "$work/digits.egp" "${ins[@]}" --dump-partitions "$work/none/dump"
[[ -e $work/none ]] && bad "a missing parent was created" || ok
echo "not a folder" >"$work/file"
expect_fail 2 "run: --dump-partitions $work/file: exists and is not a folder" -- \
  $exe run "$work/digits.egp" "${ins[@]}" --dump-partitions "$work/file"
[[ $(cat "$work/file") == "not a folder" ]] && ok || bad "the file given as DIR changed"
expect_fail 2 "runs on the CPU only (no --soc)" -- \
  $exe run "$digits" "${ins[@]}" --dump-partitions "$work/cpu_dump"
[[ -e $work/cpu_dump ]] && bad "a CPU-only run made DIR" || ok
expect_fail 2 "run: --dump-partitions needs a value (DIR)" -- $exe run "$work/digits.egp" --dump-partitions
# a program with no NPU partition (SM8350 has no float path): the runtime refuses
if $exe compile "$digits" --soc SM8350 -o "$work/cpu.egp" >"$work/compile.txt" 2>&1; then ok
else bad "compile for SM8350: $(cat "$work/compile.txt")"; fi
expect_fail 2 "dump_partitions_dir $work/cpu_dump: the runtime runs no NPU partition (compiled for SM8350" -- \
  $exe run "$work/cpu.egp" "${ins[@]}" --dump-partitions "$work/cpu_dump"
[[ -e $work/cpu_dump ]] && bad "a run without NPU partitions made DIR" || ok
# a file where a partition's folder goes: the run fails naming it, and writes no outputs
mkdir -p "$work/blocked" && echo x >"$work/blocked/partition_1"
expect_fail 2 "$work/blocked/partition_1: cannot create the folder (something else is in the way)" -- \
  $exe run "$work/digits.egp" "${ins[@]}" -o "$work/blocked_out" --dump-partitions "$work/blocked"
[[ -e $work/blocked_out ]] && bad "a failed run left its --output-dir" || ok
[[ -f $work/blocked/partition_0/input.npy ]] && ok || bad "the partition before the failure was not dumped"

summary test_dump_partitions
