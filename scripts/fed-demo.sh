#!/usr/bin/env bash
# fed-demo.sh — federated fine-tuning on Flower, edgegrad training every client (docs/federated.md):
#   1. a small conv net with BatchNorm pretrained on the digits 0-4 with PyTorch, its step
#      exported whole for the digits 5-9 with batch 4 (scripts/fed_demo_step.py; 672 digits to
#      train on, 224 held back for the global model's validation);
#   2. python -m edgegrad.federated: FED_CLIENTS (20) virtual clients on Flower's simulation
#      engine, the data split over them by class with Dirichlet(0.5), half of them on the CPU
#      kernels and half compiled for SM8650 (fp16 on the NPU partitions, dynamic loss scaling),
#      FED_ROUNDS (5) rounds of FedAvg, each sampled client training one local epoch of SGD with
#      momentum; a line per round: clients, train loss, global val loss and accuracy (climbing
#      from the fresh head's 25 % to over 90 %), time, peak client memory, bytes moved;
#   3. the global weights (safetensors, PyTorch names) and the curves (SVG).
# Needs the .venv of scripts/install-deps.sh test (PyTorch to export, flwr[simulation]).
# FED_MIN_ACCURACY (default 0.85): exit 1 unless the last round's val accuracy reaches it.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
out=${FED_OUT:-build/fed-demo}
mkdir -p "$out"
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}

echo "== the step and the data (scripts/fed_demo_step.py)"
"$py" scripts/fed_demo_step.py "$out"
echo
echo "== python -m edgegrad.federated   (Flower's simulation; log: $out/rounds.jsonl)"
"$py" -m edgegrad.federated --program "$out/step.json" --eval "$out/step.eval.json" \
  --data "$out/train.npz" --val-data "$out/val.npz" --clients "${FED_CLIENTS:-20}" \
  --partition dirichlet:0.5 --soc-mix cpu,SM8650 --rounds "${FED_ROUNDS:-5}" --local-epochs 1 \
  --optimizer sgd --lr 0.03 --momentum 0.9 --seed 1 --log "$out/rounds.jsonl" \
  --out "$out/global.safetensors" --curves "$out/curves.svg"
"$py" - "$out/rounds.jsonl" "${FED_MIN_ACCURACY:-0.85}" <<'PY'
import json, sys
rounds = [json.loads(line) for line in open(sys.argv[1])]
acc = [r["val_accuracy"] for r in rounds]
print("fed-demo: global val accuracy by round: " + " -> ".join(f"{a:.1%}" for a in acc))
if acc[-1] < float(sys.argv[2]):
    sys.exit(f"fed-demo: the last round's val accuracy {acc[-1]:.3f} is below {sys.argv[2]}")
PY
