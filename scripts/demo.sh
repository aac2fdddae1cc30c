#!/usr/bin/env bash
# demo.sh — the main job on the bundled example: a frozen-backbone fine-tuning step of a small
# CNN on real handwritten digits (examples/digits_step.*, exported from PyTorch by
# examples/make_demo_example.py: conv weights frozen, conv biases and the classifier head
# trainable). Compiles it for a Snapdragon 8 Gen 3 (SM8650), shows which ops the NPU runs and
# why the rest stay on the CPU, runs the step, and checks the loss and every gradient against
# PyTorch's values stored at export time. Needs no PyTorch.
set -euo pipefail
exe=${1:-build/edgegrad}
soc=${SOC:-SM8650}
cd "$(dirname "$0")/.."
model=examples/digits_step.json
inputs=examples/digits_step_inputs
ref=examples/digits_step_reference
out=build/demo
mkdir -p "$out"

echo "== edgegrad info $model"
"$exe" info "$model"
echo
echo "== edgegrad compile $model --soc $soc   (per-node report: $out/report.json)"
"$exe" compile "$model" --soc "$soc" --report "$out/report.json" -o "$out/digits_step.egp"
echo
args=()
for f in "$inputs"/*.npy; do
  args+=(--input "$(basename "$f" .npy)=$f")
done
echo "== edgegrad run $out/digits_step.egp   (outputs in $out/, compared with PyTorch's in $ref/)"
"$exe" run "$out/digits_step.egp" "${args[@]}" --output-dir "$out" --expect "$ref"
