#!/usr/bin/env bash
# demo.sh — the main job on the bundled example: on-device fine-tuning on real data. A small CNN
# pretrained on the handwritten digits 0-4 (examples/digits_step.*, made with PyTorch by
# examples/make_demo_example.py) is fine-tuned on the digits 5-9 with its conv weights frozen
# (conv biases and a fresh classifier head train), compiled for a Snapdragon 8 Gen 3 (SM8650):
#   1. compile the step and its eval graph, with the per-op table of what the NPU runs and why
#      the rest stays on the CPU;
#   2. run the first step and check its loss and every gradient against PyTorch's values stored
#      at export time (with --precision fp32: PyTorch computes in fp32, the SoC's HTP in fp16);
#   3. train: epochs over the digits 5-9 (Debian's python3-sklearn copy of the data set), a
#      quarter held back for validation, Adam, the NPU partitions in fp16 as SM8650's HTP
#      computes them, with dynamic loss scaling; validation accuracy from ~30 % (the fresh head)
#      to >= 90 %;
#   4. draw the loss and accuracy curves (SVG) and write the trained weights (safetensors).
# Needs no PyTorch: python3 with numpy reads the data and draws the picture.
set -euo pipefail
exe=${1:-build/edgegrad}
soc=${SOC:-SM8650}
cd "$(dirname "$0")/.."
stem=examples/digits_step
out=${DEMO_OUT:-build/demo}
mkdir -p "$out"

echo "== edgegrad compile $stem.json --soc $soc   (per-node report: $out/report.json)"
"$exe" compile "$stem.json" --soc "$soc" --report "$out/report.json" -o "$out/digits_step.egp"
"$exe" compile "$stem.eval.json" --soc "$soc" -o "$out/digits_step.eval.egp" >/dev/null
echo
args=()
for f in "$stem"_inputs/*.npy; do
  args+=(--input "$(basename "$f" .npy)=$f")
done
echo "== edgegrad run $out/digits_step.egp --precision fp32   (the first step, compared with PyTorch's in ${stem}_reference/)"
"$exe" run "$out/digits_step.egp" "${args[@]}" --precision fp32 --output-dir "$out/first_step" \
  --expect "${stem}_reference"
echo
echo "== the digits 5-9 (scikit-learn's digits data set, from Debian's python3-sklearn)"
/usr/bin/python3 scripts/digits_data.py "$out/digits59"
echo
echo "== edgegrad train $out/digits_step.egp   (the SoC's precision, dynamic loss scaling; log: $out/train.jsonl)"
"$exe" train "$out/digits_step.egp" --eval "$out/digits_step.eval.egp" --data "$out/digits59" \
  --val-split 0.25 --init "$stem.init.safetensors" --epochs 5 --optimizer adam --lr 0.01 \
  --seed 1 --log "$out/train.jsonl" --out "$out/trained.safetensors"
echo
/usr/bin/python3 scripts/plot_train_log.py "$out/train.jsonl" "$out/curves.svg" --min-accuracy 0.9
echo "demo: curves in $out/curves.svg, trained weights in $out/trained.safetensors"
