#!/usr/bin/env bash
# test_hostile_frontend.sh EDGEGRAD WORKDIR — `edgegrad info` and `edgegrad run` on hostile
# graph, weights and input files (found by fuzzing; the reader-level cases are in
# tests/unit/test_hostile_frontend.c): a .npy header that ends inside 'descr', shapes that wrap
# to zero elements or hide behind a zero dimension, empty names, a truncated safetensors file.
# Each must exit 2 with exactly one line naming the problem and no sanitizer report. The files
# are written here, at run time, into WORKDIR.
set -u
exe=$1
work=$2
source "$(dirname "$0")/harness.sh"
data=$(cd "$(dirname "$0")/../data" && pwd)
rm -rf "$work" && mkdir -p "$work"

# npy HEADER FILE: a version 1.0 .npy file with that header dict and no data.
npy() {
  local n=${#1}
  { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $((n & 255)))\\x$(printf %02x $((n >> 8)))"
    printf '%s' "$1"; } >"$2"
}

# graph SHAPE NODE_NAME FILE: x -> relu -> out over values of SHAPE.
graph() {
  cat >"$3" <<EOF
{"format": "edgegrad.graph", "version": 1,
 "values": [{"id": 0, "kind": "tensor", "dtype": "float32", "shape": $1},
            {"id": 1, "kind": "tensor", "dtype": "float32", "shape": $1}],
 "inputs": [{"name": "x", "value": 0, "role": "data"}], "statics": [],
 "outputs": [{"name": "out", "value": 1, "role": "output"}],
 "nodes": [{"name": "$2", "target": "aten.relu.default", "args": [{"value": 0}], "output": 1}]}
EOF
}

# the graph itself loads: the failures below are the hostile parts
graph "[2, 3]" relu "$work/g.json"
if $exe info "$work/g.json" >"$work/out.txt" 2>&1; then ok; else bad "info on a good graph: $(cat "$work/out.txt")"; fi

# a zero dimension does not hide a huge shape
graph "[4611686018427387904, 4, 0]" relu "$work/g.json"
expect_fail 2 "values[0]: shape [4611686018427387904, 4, 0] too large" -- $exe info "$work/g.json"
expect_fail 2 "too large" -- $exe run "$work/g.json"
graph "[1099511627776, 1099511627776, 0]" relu "$work/g.json"
expect_fail 2 "2^40" -- $exe info "$work/g.json"

# empty names are refused at load
graph "[2, 3]" "" "$work/g.json"
expect_fail 2 "nodes[0]: 'name' is empty" -- $exe info "$work/g.json"
expect_fail 2 "nodes[0]: 'name' is empty" -- $exe run "$work/g.json"

# .npy inputs: a header ending inside 'descr' (21 bytes), shapes that wrap to zero elements
model=$data/tiny_step.json
npy "{'descr': '" "$work/input.npy"
[[ $(stat -c %s "$work/input.npy") -eq 21 ]] && ok || bad "the 'descr' file is not 21 bytes"
expect_fail 2 "'descr' is malformed" -- $exe run "$model" --input input="$work/input.npy"
npy "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }" \
  "$work/input.npy"
expect_fail 2 "shape [1099511627776, 1099511627776] too large" -- \
  $exe run "$model" --input input="$work/input.npy"

# safetensors: the size quoted is the file's
cp "$model" "$work/m.json"
printf '\xe8\x03\x00\x00\x00\x00\x00\x00%032d' 0 >"$work/tiny_step.safetensors"
expect_fail 2 "header length 1000 exceeds the file (40 bytes)" -- $exe info "$work/m.json"
# and a weight whose shape wraps to zero elements is refused
hdr='{"w":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,0]}}'
{ printf "\\x$(printf %02x ${#hdr})\\x00\\x00\\x00\\x00\\x00\\x00\\x00"; printf '%s' "$hdr"; } \
  >"$work/tiny_step.safetensors"
expect_fail 2 "tensor 'w': shape [1099511627776, 1099511627776] too large" -- $exe info "$work/m.json"

summary "hostile frontend cli"
