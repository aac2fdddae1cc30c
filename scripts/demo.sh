#!/usr/bin/env bash
# demo.sh — the main job on the bundled example: a CNN training step on the digits dataset
# (examples/digits_step.*, exported from PyTorch by examples/make_demo_example.py). Shows what
# the model is, runs one step, and compares the loss and every gradient with PyTorch's values
# stored at export time. Needs no PyTorch.
set -euo pipefail
exe=${1:-build/edgegrad}
cd "$(dirname "$0")/.."
model=examples/digits_step.json
inputs=examples/digits_step_inputs
ref=examples/digits_step_reference
out=build/demo

echo "== edgegrad info $model"
"$exe" info "$model"
echo
args=()
for f in "$inputs"/*.npy; do
  name=$(basename "$f" .npy)
  args+=(--input "$name=$f")
done
echo "== edgegrad run $model  (outputs in $out/, compared with PyTorch's in $ref/)"
"$exe" run "$model" "${args[@]}" --output-dir "$out" --expect "$ref"
