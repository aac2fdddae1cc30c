#!/usr/bin/env bash
# test_precision.sh EDGEGRAD WORKDIR — --precision fp16|fp32 through the CLI, on the committed
# fixture (tests/data/tiny_step.*) compiled for SM8650: compile records it in the .egp
# (inspect shows it per program and per float tensor, the report and the table too); run of a
# program uses the recorded precision and --precision overrides it (an fp16 program run at
# fp32 gives exactly the fp32 program's outputs and vice versa, and run MODEL --soc
# --precision fp16 those of the fp16 program); fp16 and fp32 outputs differ; targets shows
# QNN's soc_model and the float precision; bad values exit 2 with one line.
set -u
exe=$1
work=$2
source "$(dirname "$0")/harness.sh"
data=$(cd "$(dirname "$0")/../data" && pwd)
rm -rf "$work" && mkdir -p "$work"
py=/usr/bin/python3
model=$data/tiny_step.json
inputs=()
for f in "$data"/tiny_step_inputs/*.npy; do
  inputs+=(--input "$(basename "$f" .npy)=$f")
done

# same_outputs DIR_A DIR_B [differ]: every .npy of DIR_A equal (bytes) to DIR_B's, or with
# `differ` at least one float output different.
same_outputs() {
  $py - "$@" <<'PY'
import os, sys
import numpy as np
a, b = sys.argv[1], sys.argv[2]
names = sorted(n for n in os.listdir(a) if n.endswith(".npy"))
assert names and names == sorted(n for n in os.listdir(b) if n.endswith(".npy")), names
eq = [np.array_equal(np.load(os.path.join(a, n)), np.load(os.path.join(b, n))) for n in names]
sys.exit(0 if (all(eq) if len(sys.argv) == 3 else not all(eq)) else 1)
PY
}

# help texts name the option
for cmd in compile run train; do
  if $exe $cmd --help | grep -q -- "--precision fp16|fp32"; then ok; else bad "$cmd --help"; fi
done
if $exe targets | grep -Eq "^SM8650 .* 57 +fp16 " && $exe targets | grep -Eq "^SM8350 .* 30 +none "
then ok; else bad "targets: $($exe targets)"; fi

# compile records the precision
$exe compile "$model" --soc SM8650 --precision fp16 -o "$work/p16.egp" --report "$work/r16.json" \
  >"$work/c16.txt" 2>&1 || bad "compile fp16: $(cat "$work/c16.txt")"
$exe compile "$model" --soc SM8650 -o "$work/p32.egp" >"$work/c32.txt" 2>&1 ||
  bad "compile: $(cat "$work/c32.txt")"
if grep -q "^precision: the NPU partitions' float tensors are stored in fp16$" "$work/c16.txt" &&
   grep -q "stored in fp32$" "$work/c32.txt"; then ok; else bad "compile table precision"; fi
for p in 16 32; do
  $exe inspect "$work/p$p.egp" --json >"$work/i$p.json" || bad "inspect --json p$p"
  if $exe inspect "$work/p$p.egp" | grep -q "^.*compiled for SM8650 .*, precision fp$p$"; then ok
  else bad "inspect text p$p: $($exe inspect "$work/p$p.egp" | head -1)"; fi
done
if $py - "$work/i16.json" "$work/i32.json" "$work/r16.json" <<'PY'
import json, sys
i16, i32, rep = (json.load(open(p)) for p in sys.argv[1:])
for ins, want in ((i16, "fp16"), (i32, "fp32")):
    assert ins["precision"] == want, ins["precision"]
    ts = [t for p in ins["partitions"] for t in p["tensors"]]
    assert ts and any(t["dtype"] == "float32" for t in ts)
    for t in ts:
        assert t.get("precision") == (want if t["dtype"] == "float32" else None), t
assert rep["precision"] == "fp16" and all(p["precision"] == "fp16" for p in rep["partitions"]), rep
assert rep["partitions"]
PY
then ok; else bad "inspect --json / report precision"; fi

# run uses the recorded precision; --precision overrides it
run() { local out=$1; shift; $exe run "$@" "${inputs[@]}" -o "$work/$out" -q 2>"$work/err.txt" ||
  bad "run $*: $(cat "$work/err.txt")"; }
run o16 "$work/p16.egp"
run o32 "$work/p32.egp"
run o16_as32 "$work/p16.egp" --precision fp32
run o32_as16 "$work/p32.egp" --precision fp16
run soc16 "$model" --soc SM8650 --precision fp16
if same_outputs "$work/o16" "$work/o32" differ; then ok; else bad "fp16 and fp32 runs equal"; fi
if same_outputs "$work/o16_as32" "$work/o32"; then ok; else bad "run p16 --precision fp32"; fi
if same_outputs "$work/o32_as16" "$work/o16"; then ok; else bad "run p32 --precision fp16"; fi
if same_outputs "$work/soc16" "$work/o16"; then ok; else bad "run --soc --precision fp16"; fi
# and the fp16 run is the tiny step within fp16's rounding of PyTorch's fp32 outputs
if $py - "$work/o16" "$data/tiny_step_reference" <<'PY'
import os, sys
import numpy as np
got, ref = sys.argv[1:]
for n in os.listdir(ref):
    if not n.endswith(".npy") or not os.path.exists(os.path.join(got, n)):
        continue
    g, r = np.load(os.path.join(got, n)), np.load(os.path.join(ref, n))
    if r.dtype.kind == "f" and r.size:
        err = np.max(np.abs(g.astype(np.float64) - r)) / max(np.max(np.abs(r)), 1e-30)
        assert err < 2e-2, (n, err)  # fp16 keeps 11 bits: ~5e-4 per rounding, a few ops deep
PY
then ok; else bad "fp16 run far from PyTorch's fp32 reference"; fi

# bad values: one line, exit 2
expect_fail 2 "compile: --precision fp8: must be fp16 or fp32" -- \
  $exe compile "$model" --soc SM8650 --precision fp8
expect_fail 2 "run: --precision (missing): must be fp16 or fp32" -- $exe run "$work/p16.egp" --precision
expect_fail 2 "run: --precision FP16: must be fp16 or fp32" -- \
  $exe run "$work/p16.egp" "${inputs[@]}" --precision FP16
expect_fail 2 "train: --precision half: must be fp16 or fp32" -- \
  $exe train "$work/p16.egp" --precision half

summary test_precision
