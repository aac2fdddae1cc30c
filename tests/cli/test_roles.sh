#!/usr/bin/env bash
# test_roles.sh EDGEGRAD WORKDIR — the roles of a training step's inputs and outputs, as the
# graph records them ("role", "of": docs/export.md), are what training reads, never names:
#   - the fixture (tests/data/tiny_step.json) with its loss and gradients renamed ("objective",
#     dW0...) trains exactly as the original, on the CPU and compiled for SM8650 (`run --steps`:
#     the same losses and final weights, byte for byte), and a compiled program keeps the roles;
#   - an output named like a gradient (grad_input, grad_0_bias) with role "output" makes no
#     parameter: the input it seems to name stays as it was;
#   - a graph without roles (an older exporter's) loads as data and plain outputs, and training
#     it is refused with a word to export it again;
#   - every rule of the roles (src/ir/io_role.h, the loader's own) refused with exit 2 and one
#     line that names the entry, its role and the rule.
set -u
exe=$1
work=$2
data=$(cd "$(dirname "$0")/../data" && pwd)
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "$0")/harness.sh"
py=/usr/bin/python3
model=$data/tiny_step.json
cp "$data/tiny_step.safetensors" "$work/"

inputs=()
for f in "$data"/tiny_step_inputs/*.npy; do
  inputs+=(--input "$(basename "$f" .npy)=$f")
done

# edit NAME 'PYTHON': the fixture with PYTHON run on its graph g into $work/NAME.json; inp(n)
# and out(n) are the input and the output named n.
edit() {
  $py - "$model" "$work/$1.json" "$2" <<'EOF'
import json, sys
g = json.load(open(sys.argv[1]))
inp = lambda n: next(e for e in g["inputs"] if e["name"] == n)
out = lambda n: next(e for e in g["outputs"] if e["name"] == n)
exec(sys.argv[3])
json.dump(g, open(sys.argv[2], "w"), indent=1)
EOF
}

# ---- (a) names are not roles: renamed loss and gradients train the same ----
edit renamed 'out("loss")["name"] = "objective"
for k, o in enumerate(g["outputs"][1:]):
    o["name"] = f"dW{k}"'
for soc in cpu SM8650; do
  flags=()
  [[ $soc == cpu ]] || flags=(--soc $soc --precision fp32)
  for m in tiny_step renamed; do
    src=$model
    [[ $m == tiny_step ]] || src=$work/$m.json
    rm -rf "$work/steps_${m}_$soc"
    if $exe run "$src" "${flags[@]}" "${inputs[@]}" --steps 3 --lr 0.1 \
        --output-dir "$work/steps_${m}_$soc" >"$work/log_${m}_$soc.txt" 2>&1; then ok
    else bad "run --steps $m $soc: $(cat "$work/log_${m}_$soc.txt")"; fi
  done
  a=$work/steps_tiny_step_$soc b=$work/steps_renamed_$soc
  if cmp -s <(grep "^step" "$work/log_tiny_step_$soc.txt") <(grep "^step" "$work/log_renamed_$soc.txt") &&
      grep -q "^step 3  loss " "$work/log_renamed_$soc.txt"; then ok
  else bad "$soc: the renamed step printed other losses: $(paste -d'|' "$work/log_tiny_step_$soc.txt" "$work/log_renamed_$soc.txt")"; fi
  same=0
  for f in losses.npy final/0_bias.npy final/2_weight.npy final/2_bias.npy final/4_weight.npy \
      final/4_bias.npy; do
    cmp -s "$a/$f" "$b/$f" && same=$((same + 1)) || bad "$soc: $f differs with renamed gradients"
  done
  [[ $same -eq 6 ]] && ok
  # the weights moved (the test can fail): the final bias is not the first
  cmp -s "$b/final/4_bias.npy" "$data/tiny_step_inputs/4_bias.npy" &&
    bad "$soc: 4_bias did not train" || ok
  cmp -s "$a/grad_0_bias.npy" "$b/dW0.npy" && cmp -s "$a/loss.npy" "$b/objective.npy" && ok ||
    bad "$soc: the renamed outputs hold other values"
done
# a compiled program keeps the recorded roles (info shows them as for the graph)
if $exe compile "$work/renamed.json" --soc SM8650 -o "$work/renamed.egp" >/dev/null 2>&1 &&
    $exe info "$work/renamed.egp" >"$work/info_egp.txt" &&
    grep -q "^  objective  *float32  *\[\]  *loss$" "$work/info_egp.txt" &&
    grep -q "^  dW0  *float32  *\[4\]  *gradient (0_bias)$" "$work/info_egp.txt" &&
    grep -q "^  0_bias  *float32  *\[4\]  *parameter (dW0)$" "$work/info_egp.txt" &&
    grep -q "^  target  *int64  *\[2\]  *label$" "$work/info_egp.txt"; then ok
else bad "info of the compiled renamed step: $(cat "$work/info_egp.txt" 2>&1 | head -20)"; fi

# ---- (b) an output named like a gradient with role "output" makes no parameter ----
edit asout 'g["outputs"].append({"name": "grad_input", "value": inp("input")["value"], "role": "output"})
o = out("grad_0_bias")
o["role"] = "output"
del o["of"]
inp("0_bias")["role"] = "data"'
$exe info "$work/asout.json" >"$work/info.txt" 2>&1
grep -q "^  input  *float32  *\[2, 1, 12, 12\]  *data$" "$work/info.txt" &&
  grep -q "^  0_bias  *float32  *\[4\]  *data$" "$work/info.txt" &&
  grep -q "^  grad_0_bias  *float32  *\[4\]  *output$" "$work/info.txt" &&
  grep -q "^  grad_input  *float32  *\[2, 1, 12, 12\]  *output$" "$work/info.txt" && ok ||
  bad "info of outputs named like gradients: $(cat "$work/info.txt")"
rm -rf "$work/asout"
if $exe run "$work/asout.json" "${inputs[@]}" --steps 2 --lr 0.1 --output-dir "$work/asout" -q \
    2>"$work/err.txt"; then ok; else bad "run --steps: $(cat "$work/err.txt")"; fi
[[ ! -e $work/asout/final/input.npy && ! -e $work/asout/final/0_bias.npy ]] && ok ||
  bad "input or 0_bias was trained by an output of role output: $(ls "$work/asout/final")"
$py -c 'import numpy as np, sys
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(0 if a.dtype == b.dtype and a.shape == b.shape and (a == b).all() else 1)' \
  "$work/asout/grad_input.npy" "$data/tiny_step_inputs/input.npy" && ok ||
  bad "input changed over the steps"
[[ -e $work/asout/final/2_bias.npy ]] && ok || bad "2_bias (a parameter) not in DIR/final"

# ---- a graph without roles: data and outputs, nothing to train ----
edit legacy 'for e in g["inputs"] + g["outputs"]:
    e.pop("role"); e.pop("of", None)'
$exe info "$work/legacy.json" >"$work/info.txt" 2>&1
[[ $(grep -c "  data$" "$work/info.txt") -eq 7 && $(grep -c "  output$" "$work/info.txt") -eq 6 ]] &&
  ok || bad "info of a graph without roles: $(cat "$work/info.txt")"
expect_fail 2 "has no input of role parameter or buffer (see edgegrad info): nothing to train; a graph exported before edgegrad recorded roles has none: export the training step again with this edgegrad's exporter" \
  -- $exe run "$work/legacy.json" "${inputs[@]}" --steps 2 --lr 0.1 --output-dir "$work/never"
$exe run "$work/legacy.json" "${inputs[@]}" -q && ok || bad "run of a graph without roles"

# ---- (c) the rules, each refused on loading ----
# refused NAME NEEDLE 'PYTHON': the fixture edited by PYTHON, refused by info and by compile
refused() {
  edit "$1" "$3"
  expect_fail 2 "$work/$1.json: $2" -- $exe info "$work/$1.json"
  expect_fail 2 "$2" -- $exe compile "$work/$1.json" --soc SM8650 -o "$work/never.egp"
}
refused in_unknown 'inputs[0] "input": role "weights" unknown: the roles of an input are data, label, parameter, buffer, random' \
  'inp("input")["role"] = "weights"'
refused in_output_role 'inputs[0] "input": role "loss" unknown: the roles of an input are' \
  'inp("input")["role"] = "loss"'
refused out_input_role 'outputs[0] "loss": role "parameter" unknown: the roles of an output are loss, gradient, buffer_update, output' \
  'out("loss")["role"] = "parameter"'
refused not_string 'inputs[0] "input": "role" is not a string' 'inp("input")["role"] = 3'
refused missing 'inputs[1] "target": no "role": a graph that records roles records one for every input and output' \
  'del inp("target")["role"]'
refused of_on_input 'inputs[2] "0_bias": role "parameter" with "of": only outputs name an input' \
  'inp("0_bias")["of"] = "input"'
refused of_not_string 'outputs[1] "grad_0_bias": role "gradient": "of" is not a string' \
  'out("grad_0_bias")["of"] = 2'
refused of_unknown 'outputs[1] "grad_0_bias": role "gradient" of "nope": no input nope' \
  'out("grad_0_bias")["of"] = "nope"'
refused no_of 'outputs[1] "grad_0_bias": role "gradient" without "of": a gradient names the parameter input it belongs to' \
  'del out("grad_0_bias")["of"]'
refused of_on_loss 'outputs[0] "loss": role "loss" of "input": only a gradient or a buffer_update names an input ("of")' \
  'out("loss")["of"] = "input"'
refused grad_of_data 'outputs[1] "grad_0_bias": role "gradient" of "input": input input is not a parameter (its role: "data")' \
  'out("grad_0_bias")["of"] = "input"'
refused grad_shape 'outputs[1] "grad_0_bias": role "gradient" of "4_bias" (float32[4], input 4_bias float32[3]): a gradient has its parameter'"'"'s dtype and shape' \
  'out("grad_0_bias")["of"] = "4_bias"'
refused int_param 'inputs[1] "target": role "parameter" (int64[2]): parameters are float32' \
  'inp("target")["role"] = "parameter"'
refused two_grads 'outputs[3] "grad_2_bias": role "gradient" of "0_bias": outputs[1] "grad_0_bias" is its gradient already: each parameter has one' \
  'out("grad_2_bias")["of"] = "0_bias"'
refused no_grad 'inputs[2] "0_bias": role "parameter": no output is its gradient: in a training step (a graph with gradient outputs) each parameter has exactly one' \
  'o = out("grad_0_bias"); o["role"] = "output"; del o["of"]'
refused update_of_param 'outputs[1] "grad_0_bias": role "buffer_update" of "0_bias": input 0_bias is not a buffer (its role: "parameter")' \
  'out("grad_0_bias")["role"] = "buffer_update"'
refused no_update 'inputs[4] "2_bias": role "buffer": no output is its update (a buffer_update): in a training step (a graph with gradient outputs) each buffer has exactly one' \
  'inp("2_bias")["role"] = "buffer"; o = out("grad_2_bias"); o["role"] = "output"; del o["of"]'
refused two_losses 'outputs[6] "loss2": role "loss": outputs[0] "loss" is the loss already: a graph has at most one loss' \
  'g["outputs"].append({"name": "loss2", "value": out("loss")["value"], "role": "loss"})'
refused loss_shape 'outputs[1] "grad_0_bias": role "loss" (float32[4]): the loss is a float32 scalar (one element)' \
  'o = out("grad_0_bias"); o["role"] = "loss"; del o["of"]'
refused random_unlisted 'inputs[0] "input": role "random" (no random draw): an input holds a random draw (a Dropout mask, listed in the graph'"'"'s "random_inputs") exactly when its role is "random"' \
  'inp("input")["role"] = "random"'
refused listed_not_random 'inputs[0] "input": role "data" (a random draw): an input holds a random draw' \
  'g["random_inputs"] = [{"input": "input", "distribution": "bernoulli", "p": 0.5}]'
refused of_without_role 'outputs[1] "grad_0_bias": "of" without "role"' \
  'for e in g["inputs"] + g["outputs"]:
    e.pop("role")
out("grad_0_bias")["of"] = "0_bias"'
# a buffer with its update loads; a step takes the update as the buffer's new value
edit buffer 'inp("0_bias")["role"] = "buffer"; out("grad_0_bias")["role"] = "buffer_update"'
$exe info "$work/buffer.json" | grep -q "^  0_bias  *float32  *\[4\]  *buffer (grad_0_bias)$" &&
  ok || bad "info of a buffer: $($exe info "$work/buffer.json" 2>&1 | head -5)"
rm -rf "$work/buf"
if $exe run "$work/buffer.json" "${inputs[@]}" --steps 2 --lr 0.1 --output-dir "$work/buf" -q &&
    cmp -s "$work/buf/final/0_bias.npy" "$work/buf/grad_0_bias.npy"; then ok
else bad "a buffer does not take its update"; fi

summary "roles"
