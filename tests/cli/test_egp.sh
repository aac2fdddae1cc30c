#!/usr/bin/env bash
# test_egp.sh EDGEGRAD WORKDIR — compiled program files (.egp) through the CLI, on the committed
# fixture (tests/data/tiny_step.*): `compile -o --precision fp32` for SM8650 (NPU partitions,
# computing in fp32 as PyTorch's stored outputs do) and SM8350 (none: V68 has no float path),
# `inspect` as text and as --json (valid JSON, consistent with the placement report), `run
# PROGRAM.egp` against PyTorch's stored outputs (and identical to `run MODEL.json --soc
# --precision fp32`), `info` on a program, and corrupted files — truncated, bad offsets, bad
# counts, bad ids, not a program at all — each exiting 2 with exactly one line.
set -u
exe=$1
work=$2
source "$(dirname "$0")/harness.sh"
data=$(cd "$(dirname "$0")/../data" && pwd)
rm -rf "$work" && mkdir -p "$work"
py=/usr/bin/python3

inputs=()
for f in "$data"/tiny_step_inputs/*.npy; do
  inputs+=(--input "$(basename "$f" .npy)=$f")
done
model=$data/tiny_step.json

# help
if $exe compile --help | grep -q -- "-o, --output PROGRAM.egp"; then ok; else bad "compile --help lacks -o"; fi
if $exe inspect --help | grep -q "usage: edgegrad inspect PROGRAM.egp"; then ok; else bad "inspect --help"; fi
if $exe --help | grep -q "^  inspect "; then ok; else bad "edgegrad --help does not list inspect"; fi

# check_inspect JSON REPORT SOC: the inspect JSON is valid and agrees with the placement report.
check_inspect() {
  $py - "$1" "$2" "$3" "$4" <<'EOF'
import json, os, sys
ins, rep, soc, egp = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4]
assert ins["soc"] == soc and ins["htp_arch"] == rep["htp_arch"], (ins["soc"], ins["htp_arch"])
npu = [n for n in rep["nodes"] if n["placement"] == "npu"]
assert ins["nodes"] == len(rep["nodes"]) and ins["npu_nodes"] == len(npu), ins
assert ins["cpu_nodes"] == len(rep["nodes"]) - len(npu)
assert ins["steps"] == ins["cpu_nodes"] + len(ins["partitions"])
assert len(ins["partitions"]) == len(rep["partitions"]), (len(ins["partitions"]), len(rep["partitions"]))
assert ins["file_bytes"] == os.path.getsize(egp), ins["file_bytes"]
assert 0 <= ins["static_bytes"] < ins["file_bytes"]
size = {"float32": 4, "int32": 4, "uint32": 4, "bool8": 1, "int8": 1, "uint8": 1, "float16": 2}
for k, p in enumerate(ins["partitions"]):
    assert p["name"] == "partition_%d" % k and p["nodes"] == len(rep["partitions"][k]["nodes"]), p["name"]
    names = {t["name"] for t in p["tensors"]}
    assert len(names) == len(p["tensors"]), "tensor names are unique"
    for t in p["tensors"]:
        assert t["type"] in ("APP_WRITE", "APP_READ", "NATIVE", "STATIC"), t
        n = 1
        for d in t["shape"]:
            n *= d
        assert t["bytes"] == n * size[t["dtype"]], t
    assert sum(t["type"] == "APP_WRITE" for t in p["tensors"]) == p["inputs"], p["name"]
    assert p["ops"], p["name"]
    for o in p["ops"]:
        assert o["type"] and isinstance(o["params"], dict), o
        for x in o["inputs"] + o["outputs"]:
            assert x is None or x in names, (o, x)
EOF
}

for soc in SM8650 SM8350; do
  egp=$work/tiny_$soc.egp
  if $exe compile "$model" --soc $soc --precision fp32 -o "$egp" --report "$work/rep_$soc.json" >"$work/compile.txt" 2>&1 &&
      grep -q "^wrote .*tiny_$soc.egp ([0-9]* bytes)" "$work/compile.txt" && [[ -s $egp ]] &&
      [[ $(head -c 4 "$egp") == EGP1 ]]; then ok
  else bad "compile --soc $soc -o: $(cat "$work/compile.txt")"; continue; fi
  # no temporary file is left behind (the write is atomic)
  if ls "$work" | grep -q "\.tmp\."; then bad "temporary file left: $(ls "$work")"; else ok; fi
  # inspect as text
  if $exe inspect "$egp" >"$work/inspect.txt" 2>"$work/err.txt" &&
      grep -q "compiled for $soc" "$work/inspect.txt" &&
      grep -q "^totals: static weight bytes [0-9]*, file bytes $(stat -c %s "$egp")$" "$work/inspect.txt"
  then ok; else bad "inspect $soc: $(cat "$work/inspect.txt" "$work/err.txt")"; fi
  # inspect --json: valid JSON consistent with the placement report
  if $exe inspect "$egp" --json >"$work/inspect.json" 2>"$work/err.txt" &&
      check_inspect "$work/inspect.json" "$work/rep_$soc.json" $soc "$egp"; then ok
  else bad "inspect --json $soc: $(cat "$work/err.txt")"; fi
  # run the program against PyTorch's outputs, and against the in-memory compile, bit for bit
  if $exe run "$egp" "${inputs[@]}" --expect "$data/tiny_step_reference" \
      --output-dir "$work/out_egp_$soc" >"$work/run.txt" 2>&1 &&
      grep -q "^ok: 6 outputs compared" "$work/run.txt"; then ok
  else bad "run $soc .egp: $(cat "$work/run.txt")"; fi
  if $exe run "$model" --soc $soc --precision fp32 "${inputs[@]}" --output-dir "$work/out_mem_$soc" -q &&
      cmp -s <(cat "$work/out_egp_$soc"/*.npy) <(cat "$work/out_mem_$soc"/*.npy); then ok
  else bad "run $soc: the .egp's outputs differ from the in-memory compile's"; fi
  # info reads a program like a graph: the compiled graph's nodes, which the report lists, and
  # the graph's inputs and outputs with their roles (and a gradient's "of") as the JSON has them
  if $exe info "$egp" --json | $py -c '
import json, subprocess, sys
d, rep = json.load(sys.stdin), json.load(open(sys.argv[1]))
assert d["nodes"] == len(rep["nodes"]) > 0, (d["nodes"], len(rep["nodes"]))
src = json.loads(subprocess.run([sys.argv[2], "info", sys.argv[3], "--json"], check=True,
                                capture_output=True, text=True).stdout)
for key in ("inputs", "outputs"):
    assert d[key] == src[key], (key, d[key], src[key])
assert [i["role"] for i in d["inputs"]][:3] == ["data", "label", "parameter"], d["inputs"]
assert d["outputs"][1]["role"] == "gradient" and d["outputs"][1]["of"] == "0_bias", d["outputs"]
' "$work/rep_$soc.json" "$exe" "$model"
  then ok; else bad "info $soc .egp"; fi
  $exe info "$egp" | grep -q "^  grad_0_bias  *float32  *\[4\]  *gradient (0_bias)$" && ok ||
    bad "info $soc .egp: the text lacks a gradient's role and parameter"
done

egp=$work/tiny_SM8650.egp
# SM8650 has NPU partitions (the fixture's conv/relu/... have builders), SM8350 none
if $py -c 'import json,sys; assert len(json.load(open(sys.argv[1]))["partitions"]) >= 1' \
    <($exe inspect "$egp" --json); then ok; else bad "SM8650: no partition"; fi
if $py -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["partitions"] == [] and d["npu_nodes"] == 0' \
    <($exe inspect "$work/tiny_SM8350.egp" --json); then ok; else bad "SM8350: partitions"; fi
# training steps on a program
if $exe run "$egp" "${inputs[@]}" --steps 3 --lr 0.1 --output-dir "$work/train" -q &&
    [[ -s $work/train/losses.npy ]]; then ok; else bad "run .egp --steps"; fi
# the format is told by content: a program under any name
cp "$egp" "$work/program.bin"
if $exe run "$work/program.bin" "${inputs[@]}" -q; then ok; else bad "run program.bin"; fi

# usage errors
expect_fail 2 "compile: -o needs a value (PROGRAM.egp)" -- $exe compile "$model" --soc SM8650 -o
expect_fail 2 "already" -- $exe run "$egp" --soc SM8650 "${inputs[@]}"
expect_fail 2 "is a graph file, not a compiled program" -- $exe inspect "$model"
expect_fail 2 "inspect: no program given" -- $exe inspect
expect_fail 2 "inspect: option --bogus unknown" -- $exe inspect "$egp" --bogus
expect_fail 2 "cannot open" -- $exe inspect "$work/missing.egp"
expect_fail 2 "cannot create" -- $exe compile "$model" --soc SM8650 -o "$work/no/such/dir/x.egp" -q
# --no-fallback failing writes no program
$exe compile "$model" --soc SM8350 --no-fallback -o "$work/nofallback.egp" >/dev/null 2>&1
if [[ $? -eq 1 && ! -e $work/nofallback.egp ]]; then ok; else bad "--no-fallback wrote a program"; fi

# corrupted files: each exits 2 with one line naming the file and what is wrong
size=$(stat -c %s "$egp")
corrupt() { # corrupt NAME PYTHON-STATEMENT-ON-b: writes $work/NAME.egp
  $py - "$egp" "$work/$1.egp" "$2" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
sec = {}
for i in range(6):
    k, _, o, s = struct.unpack_from("<IIQQ", b, 32 + 24 * i)
    sec[k] = (o, s, 32 + 24 * i)
exec(sys.argv[3])
open(sys.argv[2], "wb").write(b)
EOF
}
for n in 0 3 31 100 $((size / 2)) $((size - 1)); do
  head -c $n "$egp" >"$work/trunc.egp"
  expect_fail 2 "trunc.egp: " -- $exe inspect "$work/trunc.egp"
  expect_fail 2 "trunc.egp: " -- $exe run "$work/trunc.egp" "${inputs[@]}"
done
corrupt trunc_patched 'b = b[:len(b) - 1]; struct.pack_into("<Q", b, 8, len(b))'
expect_fail 2 "section table: STATIC" -- $exe inspect "$work/trunc_patched.egp"
corrupt bad_version 'struct.pack_into("<I", b, 4, 1)' # version 1: before the value annotations
expect_fail 2 "header: version (1): written by an older edgegrad" -- $exe inspect "$work/bad_version.egp"
corrupt v12 'struct.pack_into("<I", b, 4, 12)' # version 12: the last before the fused reductions
expect_fail 2 "header: version (12): written by an older edgegrad; this one reads version 13, which records how the NPU executor runs each partition's layout Transposes and Reshapes and which values stay NHWC between partitions: compile the graph again" \
  -- $exe run "$work/v12.egp" "${inputs[@]}"
corrupt bad_offset 'o, s, e = sec[2]; struct.pack_into("<Q", b, e + 8, o + 8)'
expect_fail 2 "section table: GRAPH" -- $exe inspect "$work/bad_offset.egp"
corrupt huge_offset 'o, s, e = sec[4]; struct.pack_into("<Q", b, e + 8, (1 << 63) + 8)'
expect_fail 2 "section table: NPU" -- $exe run "$work/huge_offset.egp" "${inputs[@]}"
corrupt overlap 'o, s, e = sec[3]; struct.pack_into("<Q", b, e + 16, s + 64)'
expect_fail 2 "overlaps" -- $exe inspect "$work/overlap.egp"
corrupt bad_count 'o, s, e = sec[2]; struct.pack_into("<I", b, o, 0x7fffffff)'
expect_fail 2 "GRAPH: n_values (2147483647)" -- $exe inspect "$work/bad_count.egp"
n=$($py -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["nodes"]))' "$work/rep_SM8650.json")
corrupt bad_nodes "o, s, e = sec[3]; struct.pack_into('<I', b, o, $((n - 1)))"
expect_fail 2 "PLACEMENT: n_nodes ($((n - 1))): must equal the graph's $n" -- $exe inspect "$work/bad_nodes.egp"
corrupt bad_parts 'o, s, e = sec[4]; n = struct.unpack_from("<I", b, o)[0]; struct.pack_into("<I", b, o, n + 1)'
expect_fail 2 "NPU: n_partitions" -- $exe inspect "$work/bad_parts.egp"
# the one partition's htp record ends with its executor plan (u32 n, then n entries of 14 bytes
# { u32 op; u8 how; u8 filter_read; i32 filter_src; i32 y_dst }), then come its boundaries'
# held bytes (0/1), which end the NPU section; the plan's first entry's how -> 7
corrupt bad_plan 'o, s, e = sec[4]; end = o + s
def plan_at(r):  # entries: ops strictly ascending, how codes 0..4, filter_read 0..2
    return [n for n in range(1, 64) if r - 4 - 14 * n >= o and
            struct.unpack_from("<I", b, r - 4 - 14 * n)[0] == n and
            all(b[r - 14 * n + 14 * i + 4] < 5 and b[r - 14 * n + 14 * i + 5] < 3 for i in range(n))
            and all(struct.unpack_from("<I", b, r - 14 * n + 14 * i)[0] <
                    struct.unpack_from("<I", b, r - 14 * n + 14 * i + 14)[0] for i in range(n - 1))]
r = next(r for r in range(end, o, -1) if all(x in (0, 1) for x in b[r:end]) and plan_at(r))
b[r - 14 * plan_at(r)[0] + 4] = 7'
expect_fail 2 "NPU: partition 0: executor plan: op " -- $exe run "$work/bad_plan.egp" "${inputs[@]}"
corrupt bad_step 'o, s, e = sec[5]; struct.pack_into("<ii", b, o + 9, 9999, -1)'  # soc, precision, n_steps
expect_fail 2 "PROGRAM: steps[0] (node 9999, partition -1)" -- $exe run "$work/bad_step.egp" "${inputs[@]}"
corrupt bad_padding 'o, s, e = sec[6]; b[o - 1] = 7'
expect_fail 2 "padding is zero" -- $exe inspect "$work/bad_padding.egp"
printf 'EGP1 but not really' >"$work/short.egp"
expect_fail 2 "short.egp: header: file (19 bytes)" -- $exe inspect "$work/short.egp"
expect_fail 2 "short.egp: header" -- $exe info "$work/short.egp"

summary "egp cli"
