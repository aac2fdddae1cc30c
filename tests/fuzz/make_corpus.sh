#!/usr/bin/env bash
# make_corpus.sh — the fuzz targets' seed corpus, made from the repository's own test files.
#
#   tests/fuzz/make_corpus.sh EDGEGRAD OUT_DIR
#
# EDGEGRAD is a built CLI (build/edgegrad); OUT_DIR gets one folder per target:
# The graphs are the tests/data/*.json files that name a weights file (other JSON there, such as
# tolerance_cases.json, is test data of another kind).
#   graph_json/   each tests/data/*.json graph with "weights" renamed to weights.safetensors, a
#                 NUL byte, then its safetensors file (the input layout fuzz_graph_json.c reads)
#   safetensors/  tests/data/*.safetensors
#   npy/          tests/data/tiny_step_inputs/*.npy and tests/data/tiny_step_reference/*.npy
#   egp/          every tests/data/*.json graph compiled with `EDGEGRAD compile` for SM8650
#                 (fp16 NPU) and SM8350 (V68: float nodes fall back)
#   npz/          .npz archives of those .npy files (a zip of deflated <name>.npy members, as
#                 numpy.savez_compressed writes; made with `cmake -E tar --format=zip`)
#   checkpoint/   the checkpoints `EDGEGRAD train` writes for tests/data/tiny_step.json over
#                 tests/data/tiny_step_inputs (its data and first weights), with SGD (momentum)
#                 and with Adam, after epoch 1 of 1 and epoch 2 of 2: the runs
#                 fuzz_checkpoint.c resumes
#   train_args/   `edgegrad train` argument lists, each argument followed by a NUL byte (the
#                 input layout fuzz_train_args.c reads)
# The seeds are made at build time (CMake target fuzz_corpus), never committed. CMAKE (in the
# environment) names the cmake to run, by default the one on PATH.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 EDGEGRAD OUT_DIR" >&2; exit 2; }
edgegrad=$1
out=$2
data=$(cd "$(dirname "$0")/../data" && pwd)
cmake=${CMAKE:-cmake}

rm -rf "$out"
mkdir -p "$out"/{graph_json,safetensors,npy,egp,npz,checkpoint,train_args}
out=$(cd "$out" && pwd)
for json in "$data"/*.json; do
  name=$(basename "$json" .json)
  weights=$(sed -n 's/.*"weights": *"\([^"]*\)".*/\1/p' "$json" | head -n 1)
  [[ -n $weights ]] || continue
  { sed 's/"weights": *"[^"]*"/"weights": "weights.safetensors"/' "$json"
    printf '\0'
    cat "$data/$weights"; } > "$out/graph_json/$name"
  for soc in SM8650 SM8350; do
    "$edgegrad" compile "$json" --soc "$soc" -o "$out/egp/$name-$soc.egp" >/dev/null
  done
done
cp "$data"/*.safetensors "$out/safetensors/"
for f in "$data"/tiny_step_inputs/*.npy "$data"/tiny_step_reference/*.npy; do
  cp "$f" "$out/npy/$(basename "$(dirname "$f")")-$(basename "$f")"
done

# npz NAME DIR FILE...: the archive npz/NAME of DIR's FILEs, each a member under its own name.
npz() {
  local name=$1 dir=$2
  shift 2
  (cd "$dir" && "$cmake" -E tar cf "$out/npz/$name" --format=zip "$@")
}
npz data.npz "$data/tiny_step_inputs" input.npy target.npy
npz inputs.npz "$data/tiny_step_inputs" $(cd "$data/tiny_step_inputs" && ls -- *.npy)
npz reference.npz "$data/tiny_step_reference" loss.npy grad_4_bias.npy

# The runs fuzz_checkpoint.c resumes: its options and these must stay the same.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for run in sgd adam; do
  case $run in
    sgd) opts=(--optimizer sgd --momentum 0.9) ;;
    adam) opts=(--optimizer adam --betas 0.8,0.99) ;;
  esac
  for epochs in 1 2; do
    OMP_NUM_THREADS=1 "$edgegrad" train "$data/tiny_step.json" --data "$data/tiny_step_inputs" \
      --init "$data/tiny_step_inputs" --epochs "$epochs" --checkpoint "$work/$run-$epochs" \
      --threads 1 -q "${opts[@]}"
    cp "$work/$run-$epochs/checkpoint.safetensors" "$out/checkpoint/$run-epoch$epochs-of-$epochs"
  done
done

# One argument list a line, split at spaces.
n=0
while read -r -a words; do
  n=$((n + 1))
  printf '%s\0' "${words[@]}" > "$out/train_args/$n"
done <<'ARGS'
model.json --data data --init w.safetensors --epochs 3
model.egp --data d.npz --init init --epochs 1 --optimizer adam --lr 1e-4 --betas 0.9,0.999 --eps 1e-7 --weight-decay 0.01
model.json --data d --init w --epochs 2 --optimizer sgd --momentum 0.9 --dampening 0 --nesterov --lr-schedule step --lr-step 2 --lr-gamma 0.5
model.json --data d --resume --checkpoint ck --checkpoint-every 10 --epochs 5 --no-shuffle --seed 42 --normalize 0.5,0.25
model.json --data d --init w --epochs 1 --eval eval.json --val-split 0.2 --lr-schedule cosine --optimizer adamw --shuffle
model.json --data d --init w --epochs 1 --eval eval.json --val-data v --out out.safetensors --log log.jsonl --threads 2 --max-memory 512M -q --soc SM8650
--help
model.json --data d --init w --epochs 1 --optimizer adam --betas 1,2 --quiet
ARGS
