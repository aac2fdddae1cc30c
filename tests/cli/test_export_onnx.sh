#!/usr/bin/env bash
# test_export_onnx.sh EDGEGRAD WORKDIR — `edgegrad export-onnx PROGRAM.egp DIR`: the files it
# writes (one DIR/<partition>.onnx per NPU partition of `edgegrad inspect --json`, nothing
# else: no staging folder left), and its refusals, each one line with its exit status and DIR
# left as it was: no arguments, one argument, an unknown option, a graph file instead of a
# program, DIR a file, DIR's parent missing, a quantized partition (all or nothing: no file
# of the program's other partitions either). A program with no NPU partition writes nothing
# and says so. What the models compute is checked by tests/htp (ONNX Runtime and QNN HTP).
set -u
exe=$1
work=$2
source "$(dirname "$0")/harness.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work"

$exe compile "$root/examples/digits_step.json" --soc SM8650 -o "$work/digits.egp" -q || bad "compile digits"
if $exe export-onnx "$work/digits.egp" "$work/onnx" >"$work/out.txt" 2>"$work/err.txt"; then ok; else
  bad "export-onnx digits: $(cat "$work/err.txt")"; fi
parts=$($exe inspect "$work/digits.egp" --json | /usr/bin/python3 -c \
  'import json, sys; print(" ".join(p["name"] + ".onnx" for p in json.load(sys.stdin)["partitions"]))')
files=$(cd "$work/onnx" && ls -A | tr '\n' ' ' | sed 's/ $//')
want=$(echo "$parts" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')
if [[ -n "$parts" && "$files" == "$want" ]]; then ok; else bad "DIR holds '$files', want '$want'"; fi
if [[ $(grep -c '^wrote ' "$work/out.txt") -eq $(echo "$parts" | wc -w) ]]; then ok; else
  bad "stdout: $(cat "$work/out.txt")"; fi
for f in "$work"/onnx/*.onnx; do  # a protobuf naming its producer (tests/htp parses them)
  if grep -qa 'edgegrad' "$f"; then ok; else bad "$f: no producer"; fi
done
# exporting again over the same DIR replaces the files (same bytes: the export is deterministic)
cp -r "$work/onnx" "$work/onnx_first"
if $exe export-onnx "$work/digits.egp" "$work/onnx" >/dev/null 2>&1 && diff -r "$work/onnx" "$work/onnx_first" >/dev/null
then ok; else bad "a second export differs from the first"; fi

expect_fail 2 "give PROGRAM.egp DIR" -- $exe export-onnx
expect_fail 2 "no DIR" -- $exe export-onnx "$work/digits.egp"
expect_fail 2 "a third argument" -- $exe export-onnx "$work/digits.egp" "$work/a" "$work/b"
expect_fail 2 "option --json unknown" -- $exe export-onnx --json "$work/digits.egp" "$work/a"
expect_fail 2 "not a compiled program" -- $exe export-onnx "$root/examples/digits_step.json" "$work/g"
[[ ! -e "$work/g" ]] && ok || bad "a refused graph file left $work/g"
touch "$work/file"
expect_fail 2 "exists and is not a folder" -- $exe export-onnx "$work/digits.egp" "$work/file"
expect_fail 2 "does not exist" -- $exe export-onnx "$work/digits.egp" "$work/missing/onnx"
[[ ! -e "$work/missing" ]] && ok || bad "a missing parent was created"

# quantized partitions are refused by tensor name, and DIR gets none of the program's files
$exe compile "$root/tests/data/quant_net.json" --soc SM8650 -o "$work/quant.egp" -q || bad "compile quant_net"
mkdir "$work/q"
expect_fail 2 "quantized tensors are not exported" -- $exe export-onnx "$work/quant.egp" "$work/q"
[[ -z "$(ls -A "$work/q")" ]] && ok || bad "a refused export left $(ls -A "$work/q") in DIR"

# an op with more inputs than most (DenseNet's torch.cat of a block's feature maps): a Concat of
# 12 inputs, every one of them in the ONNX node (the relu's output named 12 times there)
/usr/bin/python3 - "$work/cat12.json" <<'PY'
import json, sys
t = lambda c: {"kind": "tensor", "dtype": "float32", "shape": [1, c, 3, 3]}
json.dump({"format": "edgegrad.graph", "version": 1,
           "producer": {"name": "edgegrad.export", "torch": "2.13.0"},
           "values": [dict(t(2), id=0), dict(t(2), id=1), dict(t(24), id=2)],
           "inputs": [{"name": "x", "value": 0, "role": "data"}], "statics": [],
           "nodes": [{"name": "relu", "target": "aten.relu.default", "args": [{"value": 0}],
                      "kwargs": {}, "output": 1},
                     {"name": "cat", "target": "aten.cat.default",
                      "args": [[{"value": 1}] * 12, 1], "kwargs": {}, "output": 2}],
           "outputs": [{"name": "y", "value": 2, "role": "output"}]}, open(sys.argv[1], "w"))
PY
$exe compile "$work/cat12.json" --soc SM8650 -o "$work/cat12.egp" -q || bad "compile cat12"
if $exe export-onnx "$work/cat12.egp" "$work/cat12" >/dev/null 2>"$work/err.txt" &&
   /usr/bin/python3 -c 'import sys; d = open(sys.argv[1], "rb").read()
assert d.count(b"\x0a\x04relu") >= 12, d.count(b"\x0a\x04relu")' "$work/cat12/partition_0.onnx"
then ok; else bad "export of a 12-input Concat: $(cat "$work/err.txt")"; fi

# SM8350 (V68) has no float path: nothing on the NPU, nothing written, exit 0 with a note
$exe compile "$root/examples/digits_step.json" --soc SM8350 -o "$work/v68.egp" -q || bad "compile SM8350"
if $exe export-onnx "$work/v68.egp" "$work/v68" >/dev/null 2>"$work/err.txt" &&
   grep -q "no NPU partition" "$work/err.txt" && [[ ! -e "$work/v68" ]]; then ok; else
  bad "SM8350 export: $(cat "$work/err.txt")"; fi
summary test_export_onnx
