#!/usr/bin/env bash
# test_hostile_program.sh EDGEGRAD WORKDIR — hostile graphs and programs through the CLI
# (issue 10): whatever `compile -o` writes, `inspect` accepts; what cannot be compiled exits 2
# with one line stating the rule.
#   - quantization scales: 1e31 and 1e-300 (a float32 0) are refused by compile with the rule
#     [1e-30, 1e30]; 1e30 and 1e-30 compile, and inspect reads the program;
#   - a dim above QNN's uint32 dims (2^32 + 1, 2^33, 2^40): compile keeps the node on the CPU
#     with the reason in the report, the program passes inspect;
#   - a graph value [2^40, 2^40, 0] (a zero dim hiding a huge product) is refused by compile,
#     not written into a program inspect refuses;
#   - a program whose value shape multiplies past 2^64 ([2^40, 2^40] wrapping to 0) is refused
#     by inspect with the shape and the 2^40 rule.
set -u
exe=$1
work=$2
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "$0")/harness.sh"
py=/usr/bin/python3

# compiles_and_inspects NAME: compile NAME.json for SM8650 to NAME.egp (exit 0), inspect it.
compiles_and_inspects() {
  if $exe compile "$work/$1.json" --soc SM8650 -o "$work/$1.egp" --report "$work/$1.rep.json" \
      >"$work/compile.txt" 2>&1 && [[ -s $work/$1.egp ]] && ! sanitizer "$work/compile.txt"; then ok
  else bad "compile $1: $(cat "$work/compile.txt")"; return 1; fi
  if $exe inspect "$work/$1.egp" >"$work/inspect.txt" 2>&1 && ! sanitizer "$work/inspect.txt"
  then ok; else bad "compile wrote $1.egp but inspect refuses it: $(cat "$work/inspect.txt")"; fi
}

# quant_graph NAME SCALE: quantize_per_tensor(x, SCALE, 3, uint8) -> dequantize.
quant_graph() {
  cat >"$work/$1.json" <<EOF
{"format": "edgegrad.graph", "version": 1,
 "values": [{"id": 0, "kind": "tensor", "dtype": "float32", "shape": [2, 3]},
            {"id": 1, "kind": "tensor", "dtype": "uint8", "shape": [2, 3]},
            {"id": 2, "kind": "tensor", "dtype": "float32", "shape": [2, 3]}],
 "inputs": [{"name": "x", "value": 0, "role": "data"}], "statics": [],
 "nodes": [{"name": "q", "target": "aten.quantize_per_tensor.default",
            "args": [{"value": 0}, {"float": $2}, 3, {"dtype": "uint8"}], "kwargs": {}, "output": 1},
           {"name": "dq", "target": "aten.dequantize.self", "args": [{"value": 1}], "kwargs": {},
            "output": 2}],
 "outputs": [{"name": "out", "value": 2, "role": "output"}]}
EOF
}

rule="must be finite and in [1e-30, 1e30]"
quant_graph q_big 1e31
expect_fail 2 "node q: scale (1e+31): $rule" -- $exe compile "$work/q_big.json" --soc SM8650 -o "$work/q_big.egp"
if [[ -e $work/q_big.egp ]]; then bad "a refused compile wrote q_big.egp"; else ok; fi
quant_graph q_tiny 1e-300
expect_fail 2 "node q: scale (1e-300): $rule" -- $exe compile "$work/q_tiny.json" --soc SM8650 -o "$work/q_tiny.egp"
if [[ -e $work/q_tiny.egp ]]; then bad "a refused compile wrote q_tiny.egp"; else ok; fi
quant_graph q_max 1e30
compiles_and_inspects q_max
quant_graph q_min 1e-30
compiles_and_inspects q_min

# relu_graph NAME DIM: relu over float32 [DIM].
relu_graph() {
  cat >"$work/$1.json" <<EOF
{"format": "edgegrad.graph", "version": 1,
 "values": [{"id": 0, "kind": "tensor", "dtype": "float32", "shape": [$2]},
            {"id": 1, "kind": "tensor", "dtype": "float32", "shape": [$2]}],
 "inputs": [{"name": "x", "value": 0, "role": "data"}], "statics": [],
 "nodes": [{"name": "relu", "target": "aten.relu.default", "args": [{"value": 0}], "kwargs": {},
            "output": 1}],
 "outputs": [{"name": "out", "value": 1, "role": "output"}]}
EOF
}

for dim in 4294967297 8589934592 1099511627776; do
  relu_graph "relu_$dim" $dim
  compiles_and_inspects "relu_$dim" || continue
  if $py - "$work/relu_$dim.rep.json" $dim <<'EOF'
import json, sys
rep, dim = json.load(open(sys.argv[1])), sys.argv[2]
(node,) = [n for n in rep["nodes"] if n["name"] == "relu"]
assert node["placement"] == "cpu", node
assert "dimension %s of x exceeds QNN's 32-bit dims" % dim in node["reason"], node
EOF
  then ok; else bad "relu [$dim]: not on the CPU with the dims reason: $(cat "$work/relu_$dim.rep.json")"; fi
done
# 2^32 - 1 fits: the relu stays on the NPU, and the program still reads back
relu_graph relu_u32max 4294967295
compiles_and_inspects relu_u32max
if $py -c '
import json, sys
(n,) = [n for n in json.load(open(sys.argv[1]))["nodes"] if n["name"] == "relu"]
assert n["placement"] == "npu", n' "$work/relu_u32max.rep.json"; then ok
else bad "relu [2^32-1] left the NPU: $(cat "$work/relu_u32max.rep.json")"; fi

# a zero dim hides [2^40, 2^40] from a plain product: the shape breaks the 2^40 rule, so compile
# refuses it (one line naming the shape, no file) instead of writing what inspect refuses
relu_graph relu_zero_hides "1099511627776, 1099511627776, 0"
expect_fail 2 "1099511627776, 1099511627776, 0" -- $exe compile "$work/relu_zero_hides.json" --soc SM8650 -o "$work/relu_zero_hides.egp"
if [[ -e $work/relu_zero_hides.egp ]]; then bad "a refused compile wrote relu_zero_hides.egp"; else ok; fi

# a value shape that multiplies past 2^64: relu over [1024, 1024] compiled, then the GRAPH
# section's first value (kind u8, dtype u8, rank u8, rank x i64 dim) patched to [2^40, 2^40],
# whose product wraps to 0 in 64 bits
relu_graph relu_2d "1024, 1024"
compiles_and_inspects relu_2d
$py - "$work/relu_2d.egp" "$work/wrapped.egp" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
o = [struct.unpack_from("<IIQQ", b, 32 + 24 * i) for i in range(6)]
o = [e[2] for e in o if e[0] == 2][0] + 4  # GRAPH: after n_values, values[0]
assert (b[o], b[o + 2]) == (0, 2) and struct.unpack_from("<qq", b, o + 3) == (1024, 1024)
struct.pack_into("<qq", b, o + 3, 1 << 40, 1 << 40)
open(sys.argv[2], "wb").write(b)
EOF
expect_fail 2 "wrapped.egp: GRAPH: values[0]: shape [1099511627776, 1099511627776]: every dim must be >= 0 and the product of the non-zero dims at most 2^40" -- $exe inspect "$work/wrapped.egp"

summary "hostile program cli"
