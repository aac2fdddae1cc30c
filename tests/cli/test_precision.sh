#!/usr/bin/env bash
# test_precision.sh EDGEGRAD WORKDIR — --precision fp16|fp32 through the CLI, on the committed
# fixture (tests/data/tiny_step.*) compiled for SM8650: compile records it in the .egp
# (inspect shows it per program and per float tensor, the report and the table too); without
# --precision it records the SoC's own (fp16 on SM8650 and every SoC `targets` lists with an
# fp16 float path, fp32 on the others) and runs as the fp16 program; run of a
# program uses the recorded precision and --precision overrides it (an fp16 program run at
# fp32 gives exactly the fp32 program's outputs and vice versa, and run MODEL --soc
# --precision fp16 those of the fp16 program); fp16 and fp32 outputs differ; train --soc
# SM8650 picks dynamic loss scaling by default (the log carries the scale), --precision fp32
# none; targets shows QNN's soc_model and the float precision; bad values exit 2 with one
# line.
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
$exe compile "$model" --soc SM8650 --precision fp32 -o "$work/p32.egp" >"$work/c32.txt" 2>&1 ||
  bad "compile fp32: $(cat "$work/c32.txt")"
# without --precision: SM8650's own, fp16
$exe compile "$model" --soc SM8650 -o "$work/pdef.egp" --report "$work/rdef.json" \
  >"$work/cdef.txt" 2>&1 || bad "compile: $(cat "$work/cdef.txt")"
if grep -q "^precision: the NPU partitions' float tensors are stored in fp16$" "$work/c16.txt" &&
   grep -q "stored in fp32$" "$work/c32.txt"; then ok; else bad "compile table precision"; fi
if grep -q "^precision: the NPU partitions' float tensors are stored in fp16$" "$work/cdef.txt"
then ok; else bad "compile table, SM8650 default: $(grep '^precision' "$work/cdef.txt")"; fi
if $exe inspect "$work/pdef.egp" | grep -q "^.*compiled for SM8650 .*, precision fp16$"; then ok
else bad "inspect text, SM8650 default: $($exe inspect "$work/pdef.egp" | head -1)"; fi
if $py -c 'import json, sys; assert json.load(open(sys.argv[1]))["precision"] == "fp16"' \
     <($exe inspect "$work/pdef.egp" --json) &&
   $py -c 'import json, sys; r = json.load(open(sys.argv[1]))
assert r["precision"] == "fp16" and r["partitions"], r["precision"]
assert all(p["precision"] == "fp16" for p in r["partitions"])' "$work/rdef.json"
then ok; else bad "inspect --json / report, SM8650 default: not fp16"; fi
# every SoC: the report of a compile without --precision says the precision `targets` lists
# (fp16), fp32 where it lists none (no float path); one with --precision fp32 says fp32
seen=
while read -r soc fp; do
  seen+=" $soc:$fp"
  $exe compile "$model" --soc $soc --report "$work/rdef_$soc.json" -q 2>"$work/err.txt" &&
    $exe compile "$model" --soc $soc --precision fp32 --report "$work/r32_$soc.json" -q \
      2>>"$work/err.txt" || bad "compile $soc: $(cat "$work/err.txt")"
  want=$([[ $fp == fp16 ]] && echo fp16 || echo fp32)
  if $py -c 'import json, sys
assert json.load(open(sys.argv[1]))["precision"] == sys.argv[3]
assert json.load(open(sys.argv[2]))["precision"] == "fp32"' \
       "$work/rdef_$soc.json" "$work/r32_$soc.json" $want
  then ok; else bad "compile $soc without --precision: not $want (targets: $fp)"; fi
done < <($exe targets | sed -En 's/^([A-Z0-9]+) .* (yes|no) +[0-9]+ +([a-z0-9]+)( .*)?$/\1 \3/p')
if [[ $seen == *" SM8650:fp16"* && $seen == *" SM8350:none"* ]]; then ok
else bad "targets: SM8650 (fp16) or SM8350 (none) missing from '$seen'"; fi
# SM8350 has no float path: a program compiled for it without --precision records fp32
$exe compile "$model" --soc SM8350 -o "$work/p8350.egp" >"$work/c8350.txt" 2>&1 ||
  bad "compile SM8350: $(cat "$work/c8350.txt")"
if $exe inspect "$work/p8350.egp" | grep -q "^.*compiled for SM8350 .*, precision fp32$"; then ok
else bad "SM8350 default: $($exe inspect "$work/p8350.egp" | head -1)"; fi
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
run odef "$work/pdef.egp"
run socdef "$model" --soc SM8650
if same_outputs "$work/o16" "$work/o32" differ; then ok; else bad "fp16 and fp32 runs equal"; fi
if same_outputs "$work/o16_as32" "$work/o32"; then ok; else bad "run p16 --precision fp32"; fi
if same_outputs "$work/o32_as16" "$work/o16"; then ok; else bad "run p32 --precision fp16"; fi
if same_outputs "$work/soc16" "$work/o16"; then ok; else bad "run --soc --precision fp16"; fi
# without --precision, SM8650's program and run --soc compute as the fp16 program
if same_outputs "$work/odef" "$work/o16"; then ok; else bad "SM8650's default program"; fi
if same_outputs "$work/socdef" "$work/o16"; then ok; else bad "run --soc SM8650 default"; fi
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

# train --soc: loss scaling by the precision compiled for, dynamic at SM8650's default (fp16,
# every step's log line carries the scale), none at --precision fp32 or on SM8350 (fp32)
tr() { # TAG MODEL ARGS...: trains 2 steps, logging to $work/TAG.jsonl
  local tag=$1 m=$2
  shift 2
  $exe train "$m" --data "$data/tiny_step_inputs" --init "$data/tiny_step_inputs" --epochs 2 \
    --optimizer sgd --lr 0.1 -q --log "$work/$tag.jsonl" "$@" 2>"$work/err.txt" ||
    bad "train $tag: $(cat "$work/err.txt")"
}
# scaled TAG: every step line of TAG's log has a loss scale, the first dynamic scaling's initial
# 65536 (--loss-scale in train --help); scaled TAG none: none has one
scaled() {
  $py - "$work/$1.jsonl" "${2:-}" <<'PY'
import json, sys
steps = [e for e in map(json.loads, open(sys.argv[1])) if e["event"] == "step"]
assert len(steps) == 2, steps
assert all(("loss_scale" in e) == (sys.argv[2] != "none") for e in steps), steps
assert sys.argv[2] == "none" or steps[0]["loss_scale"] == 65536, steps
PY
}
tr tdef "$model" --soc SM8650
tr t32 "$model" --soc SM8650 --precision fp32
tr t8350 "$model" --soc SM8350
tr tpdef "$work/pdef.egp"
if scaled tdef; then ok; else bad "train --soc SM8650: not dynamic loss scaling by default"; fi
if scaled t32 none; then ok; else bad "train --soc SM8650 --precision fp32: loss scaling"; fi
if scaled t8350 none; then ok; else bad "train --soc SM8350: loss scaling"; fi
if scaled tpdef; then ok; else bad "train of SM8650's default program: no loss scaling"; fi

# bad values: one line, exit 2
expect_fail 2 "compile: --precision fp8: expected fp16 or fp32" -- \
  $exe compile "$model" --soc SM8650 --precision fp8
expect_fail 2 "run: --precision needs a value (fp16|fp32)" -- $exe run "$work/p16.egp" --precision
expect_fail 2 "run: --precision FP16: expected fp16 or fp32" -- \
  $exe run "$work/p16.egp" "${inputs[@]}" --precision FP16
expect_fail 2 "train: --precision half: expected fp16 or fp32" -- \
  $exe train "$work/p16.egp" --precision half

summary test_precision
