#!/usr/bin/env bash
# test_loss_scale.sh EDGEGRAD WORKDIR — `edgegrad train --loss-scale` (loss scaling with
# torch.amp.GradScaler's rules; tests/ops/test_loss_scale.py checks the rules against PyTorch):
#   - refusals: a bad --loss-scale or --loss-scale-interval, an interval without dynamic
#     scaling, a step whose backward has no seed ones_like(loss): one line, exit 2;
#   - the default: none at fp32 (no scale in the log, weights bitwise those of --loss-scale
#     none), dynamic at fp16;
#   - a checkpoint keeps the scaler's state: a resumed run's scales and weights are an
#     uninterrupted run's;
#   - the acceptance on the bundled demo (examples/digits_step, compiled for SM8650): at fp16
#     with dynamic loss scaling, validation accuracy within 1 point of the fp32 run, and
#     without loss scaling more gradient elements are exactly 0 than with it (underflow).
set -u
exe=$1
work=$2
data=$(cd "$(dirname "$0")/../data" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "$0")/harness.sh"
py=/usr/bin/python3
model=$data/tiny_step.json
init=$data/tiny_step_inputs

# the fixture's two examples repeated 8 times
$py - "$init" "$work/d" <<'EOF'
import numpy as np, os, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
for name in ("input", "target"):
    a = np.load(os.path.join(src, name + ".npy"))
    np.save(os.path.join(dst, name + ".npy"), np.concatenate([a] * 8))
EOF
train=("$exe" train "$model" --data "$work/d" --init "$init" --epochs 2 --optimizer sgd --lr 0.1
       -q)

# ---- refusals: one line, exit 2, before any training ----
for v in bogus 0 -1 inf nan 1e39 "" 2x; do
  expect_fail 2 "train: --loss-scale $v: expected none, dynamic or a scale in (0, " -- \
    "${train[@]}" --loss-scale "$v"
done
for v in 0 -3 2.5 3000000000; do
  expect_fail 2 "train: --loss-scale-interval $v: expected an integer in [1, 2147483647]" -- \
    "${train[@]}" --loss-scale dynamic --loss-scale-interval "$v"
done
expect_fail 2 "train: --loss-scale-interval 4: loss scaling is none: the interval is dynamic" -- \
  "${train[@]}" --loss-scale-interval 4
expect_fail 2 "train: --loss-scale-interval 4: loss scaling is static" -- \
  "${train[@]}" --loss-scale 128 --loss-scale-interval 4
expect_fail 2 "train: --loss-scale needs a value" -- "${train[@]}" --loss-scale
# a step seeded by zeros_like(loss) in place of ones_like: no seed to scale
$py - "$model" "$work/zeros_seed.json" <<'EOF'
import json, sys
g = json.load(open(sys.argv[1]))
seeds = [n for n in g["nodes"] if n["target"] == "aten.ones_like.default"]
assert len(seeds) == 1, seeds
seeds[0]["target"] = "aten.zeros_like.default"
g["weights"] = g["weights"].rsplit("/", 1)[-1]
json.dump(g, open(sys.argv[2], "w"))
EOF
cp "${model%.json}.safetensors" "$work/"
expect_fail 2 "eg_optimizer_create: loss scaling: backward seed (no node ones_like(loss), no " -- \
  "$exe" train "$work/zeros_seed.json" --data "$work/d" --init "$init" --epochs 1 -q \
  --loss-scale dynamic --out "$work/zs.safetensors"
if [[ -e $work/zs.safetensors ]]; then bad "a refused run wrote --out"; else ok; fi

# ---- the default at fp32 is none: same bytes as --loss-scale none, no scale in the log ----
"${train[@]}" --out "$work/default.safetensors" --log "$work/default.jsonl" 2>"$work/err.txt" \
  && ok || bad "default run: $(cat "$work/err.txt")"
"${train[@]}" --loss-scale none --out "$work/none.safetensors" 2>"$work/err.txt" \
  && ok || bad "--loss-scale none: $(cat "$work/err.txt")"
if cmp -s "$work/default.safetensors" "$work/none.safetensors"; then ok; else
  bad "fp32 default and --loss-scale none give different weights"; fi
if grep -q loss_scale "$work/default.jsonl"; then bad "fp32 default log has a loss scale"; else ok; fi
if grep -q '"zero_grads": ' "$work/default.jsonl"; then ok; else bad "no zero_grads in the log"; fi

# ---- a checkpoint keeps the scaler's state: resumed = uninterrupted ----
ls_args=(--loss-scale dynamic --loss-scale-interval 3)
"${train[@]}" "${ls_args[@]}" --out "$work/full.safetensors" --log "$work/full.jsonl" \
  2>"$work/err.txt" && ok || bad "dynamic run: $(cat "$work/err.txt")"
"${train[@]}" "${ls_args[@]}" --epochs 1 --checkpoint "$work/ck" --log "$work/part.jsonl" \
  2>"$work/err.txt" && ok || bad "first epoch: $(cat "$work/err.txt")"
"${train[@]}" "${ls_args[@]}" --checkpoint "$work/ck" --resume --out "$work/resumed.safetensors" \
  --log "$work/part.jsonl" 2>"$work/err.txt" && ok || bad "resume: $(cat "$work/err.txt")"
if cmp -s "$work/full.safetensors" "$work/resumed.safetensors"; then ok; else
  bad "resumed weights differ from the uninterrupted run's"; fi
scales() { $py -c 'import json, sys
print(" ".join(str(e["loss_scale"]) for e in map(json.loads, open(sys.argv[1])) if e["event"] == "step"))' "$1"; }
full=$(scales "$work/full.jsonl") part=$(scales "$work/part.jsonl")
if [[ $full == "$part" && $full == *131072* ]]; then ok; else
  bad "scales after each step: uninterrupted '$full', resumed '$part' (growth to 131072 expected)"; fi
expect_fail 2 "written by another run (loss_scale=dynamic in the checkpoint, loss_scale=256 in this run)" -- \
  "${train[@]}" --loss-scale 256 --checkpoint "$work/ck" --resume

# ---- acceptance: the demo fine-tune at fp16 with and without loss scaling, and at fp32 ----
stem=$root/examples/digits_step
if ! $py "$root/scripts/digits_data.py" "$work/digits59" >"$work/digits.txt" 2>&1; then
  bad "digits data: $(cat "$work/digits.txt")"
fi
for p in fp32 fp16; do
  "$exe" compile "$stem.json" --soc SM8650 --precision $p -q -o "$work/step_$p.egp" &&
    "$exe" compile "$stem.eval.json" --soc SM8650 --precision $p -q -o "$work/eval_$p.egp" \
    && ok || bad "compile at $p"
done
demo() { # TAG PRECISION ARGS...
  local tag=$1 p=$2
  shift 2
  "$exe" train "$work/step_$p.egp" --eval "$work/eval_$p.egp" --data "$work/digits59" \
    --val-split 0.25 --init "$stem.init.safetensors" --epochs 5 --optimizer adam --lr 0.01 \
    --seed 1 --log "$work/$tag.jsonl" -q "$@" 2>"$work/err.txt" && ok || bad "demo $tag: $(cat "$work/err.txt")"
}
demo fp32 fp32
demo fp16_dynamic fp16
demo fp16_none fp16 --loss-scale none
verdict=$($py - "$work" <<'EOF'
import json, sys
def epochs(tag):
    return [e for e in map(json.loads, open(f"{sys.argv[1]}/{tag}.jsonl")) if e["event"] == "epoch"]
fp32, dyn, none = epochs("fp32"), epochs("fp16_dynamic"), epochs("fp16_none")
acc32, acc16 = fp32[-1]["val_accuracy"], dyn[-1]["val_accuracy"]
z_dyn = sum(e["zero_grads"] for e in dyn) / len(dyn)
z_none = sum(e["zero_grads"] for e in none) / len(none)
why = []
if "loss_scale" not in dyn[-1]:
    why.append("the fp16 run's default is not dynamic loss scaling")
if "loss_scale" in none[-1] or "loss_scale" in fp32[-1]:
    why.append("a loss scale in the log of a run without loss scaling")
if abs(acc16 - acc32) > 0.01:
    why.append(f"fp16 val accuracy {acc16:.4f} not within 1 point of fp32's {acc32:.4f}")
if not z_none > z_dyn:
    why.append(f"zero gradients: {z_none:.4%} without loss scaling, {z_dyn:.4%} with it")
print("; ".join(why) if why else
      f"ok: val accuracy fp32 {acc32:.2%}, fp16 dynamic {acc16:.2%} (scale {dyn[-1]['loss_scale']:g}, "
      f"{dyn[-1]['skipped_steps']} skipped), fp16 none {none[-1]['val_accuracy']:.2%}; zero "
      f"gradients {z_dyn:.2%} with loss scaling, {z_none:.2%} without, {sum(e['zero_grads'] for e in fp32) / len(fp32):.2%} at fp32")
EOF
)
echo "demo: $verdict"
if [[ $verdict == ok:* ]]; then ok; else bad "demo acceptance: $verdict"; fi

summary test_loss_scale
