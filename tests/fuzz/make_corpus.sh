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
# The seeds are made at build time (CMake target fuzz_corpus), never committed.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 EDGEGRAD OUT_DIR" >&2; exit 2; }
edgegrad=$1
out=$2
data=$(cd "$(dirname "$0")/../data" && pwd)

rm -rf "$out"
mkdir -p "$out"/{graph_json,safetensors,npy,egp}
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
