#!/usr/bin/env bash
# test_compile.sh EDGEGRAD WORKDIR — `edgegrad compile` end to end on the committed fixture
# (tests/data/tiny_step.json): the per-op table and the placement report for several SoCs
# (consistent placements and reasons; nothing on the NPU of SM8350, which has no float path),
# --no-fallback listing every CPU node, skip-list warnings, skip lists keeping a node from being
# decomposed (tests/data/pass_mse_step.json), and usage errors. The report lists the compiled
# graph's nodes (after the pass pipeline), so counts come from the report, and the report is
# checked against the exported graph by tests/conformance/placement.py. The compiled program
# file (-o) is tested by test_egp.sh.
set -u
exe=$1
work=$2
source "$(dirname "$0")/harness.sh"
data=$(cd "$(dirname "$0")/../data" && pwd)
conformance=$(cd "$(dirname "$0")/../conformance" && pwd)
rm -rf "$work" && mkdir -p "$work"
py=/usr/bin/python3

model=$data/tiny_step.json

# help
if $exe compile --help >"$work/help.txt" && grep -q "usage: edgegrad compile" "$work/help.txt"; then ok
else bad "compile --help"; fi
if $exe --help | grep -q "^  compile "; then ok; else bad "edgegrad --help does not list compile"; fi

# check_report REPORT SOC ARCH [MODEL]: the report of MODEL (default the fixture) for SOC passes
# tests/conformance/placement.py's checks: format and keys; every node of the compiled graph,
# each a node as traced or one a pass made from a traced node ("source"), every traced node
# accounted for, in order; a CPU node has a reason and no partition, an NPU node a partition
# and no reason; partitions list exactly the NPU nodes; without a float path everything is on
# the CPU with the float-gate reason or "no NPU lowering"; a getitem follows its producer.
check_report() {
  PYTHONPATH="$conformance" $py - "$1" "${4:-$model}" "$2" "$3" <<'EOF'
import json, sys
import placement
rep, graph = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
soc, arch = sys.argv[3], int(sys.argv[4])
assert placement.SOCS[soc][0] == arch, (soc, arch)
failures, _ = placement.check_report(graph, rep, soc)
assert not failures, "\n".join(failures[:5])
EOF
}

# report_nodes REPORT: the number of nodes the report lists (the compiled graph's).
report_nodes() { $py -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["nodes"]))' "$1"; }

# compile for several SoCs: table on stdout, report written atomically
declare -A arch=([SM8450]=69 [SM8650]=75 [SM8850]=81 [SM8350]=68 [SM8635]=73)
for soc in SM8450 SM8650 SM8850 SM8350 SM8635; do
  if $exe compile "$model" --soc "$soc" --report "$work/$soc.json" >"$work/$soc.txt" 2>"$work/$soc.err"
  then ok; else bad "compile --soc $soc: $(cat "$work/$soc.err")"; continue; fi
  [[ -s "$work/$soc.err" ]] && bad "compile --soc $soc wrote to stderr: $(cat "$work/$soc.err")" || ok
  if check_report "$work/$soc.json" "$soc" "${arch[$soc]}" 2>"$work/check.txt"; then ok
  else bad "report for $soc: $(tail -3 "$work/check.txt")"; fi
  grep -q "for $soc (.*HTP V${arch[$soc]}" "$work/$soc.txt" && ok || bad "$soc: no header line"
  grep -Eq '^getitem +[0-9]+ +[0-9]+' "$work/$soc.txt" && ok || bad "$soc: getitem row"
  n=$(report_nodes "$work/$soc.json")
  grep -Eq "^total: $n nodes, [0-9]+ on the NPU in [0-9]+ partitions?, [0-9]+ on the CPU$" "$work/$soc.txt" &&
    ok || bad "$soc: total line (report: $n nodes): $(cat "$work/$soc.txt")"
  # the FLOPs footer gives the report's NPU share
  share=$($py -c 'import json, sys; print("%.1f" % (100 * json.load(open(sys.argv[1]))["flops"]["npu_share"]))' "$work/$soc.json")
  grep -Eq "^flops: .* per step \(estimated\), $share % on the NPU \(" "$work/$soc.txt" && ok ||
    bad "$soc: flops line (report share $share %): $(grep flops "$work/$soc.txt")"
done
n=$(report_nodes "$work/SM8350.json")
grep -q "^total: $n nodes, 0 on the NPU in 0 partitions, $n on the CPU$" "$work/SM8350.txt" &&
  grep -q "^flops: .*, 0.0 % on the NPU (0 " "$work/SM8350.txt" && ok ||
  bad "SM8350 placed something on the NPU: $(cat "$work/SM8350.txt")"
if ls "$work" | grep -q "\.tmp\."; then bad "temporary report files left behind"; else ok; fi
# SoC names are case-insensitive; -q prints no table
if $exe compile "$model" --soc sm8650 -q >"$work/q.txt" 2>&1 && [[ ! -s "$work/q.txt" ]]; then ok
else bad "compile --soc sm8650 -q: $(cat "$work/q.txt")"; fi

# --no-fallback on SM8350 (its NPU runs no float): exit 1, one summary line then every CPU node
# with its reason; the report is still written
$exe compile "$model" --soc SM8350 --no-fallback --report "$work/nf.json" >"$work/nf.txt" 2>"$work/nf.err"
rc=$?
[[ $rc -eq 1 ]] && ok || bad "--no-fallback exit $rc, wanted 1"
n=$(report_nodes "$work/nf.json")
head -1 "$work/nf.err" | grep -q "^edgegrad: compile for SM8350: $n of $n nodes would run on the CPU (" &&
  ok || bad "--no-fallback summary line: $(head -1 "$work/nf.err")"
if $py - "$work/nf.err" "$work/nf.json" <<'EOF'
import json, re, sys
lines = open(sys.argv[1]).read().splitlines()[1:]
names = [n["name"] for n in json.load(open(sys.argv[2]))["nodes"]]
assert len(lines) == len(names), (len(lines), len(names))
for line, name in zip(lines, names):
    f = line.split()
    assert f[0] == name and ("no NPU lowering for aten." in line or "follows its producer" in line
                             or "float ops need HTP V69+ with fp16; SM8350 is V68" in line), line
EOF
then ok; else bad "--no-fallback does not list every node with its reason: $(cat "$work/nf.err")"; fi
check_report "$work/nf.json" SM8350 68 2>/dev/null && ok || bad "--no-fallback: report not written"

# skip lists: a name matching nothing warns on stderr; a matching one does not
$exe compile "$model" --soc SM8650 --skip-op aten.relu --skip-node relu --skip-node nosuch \
  --skip-op aten.nosuch --report "$work/skip.json" >"$work/skip.txt" 2>"$work/skip.err"
rc=$?
[[ $rc -eq 0 ]] && ok || bad "compile with skips: exit $rc"
grep -qx "edgegrad: warning: --skip-node nosuch: no node has this name" "$work/skip.err" && ok ||
  bad "no warning for --skip-node nosuch: $(cat "$work/skip.err")"
grep -q "^edgegrad: warning: --skip-op aten.nosuch: no node has this op" "$work/skip.err" && ok ||
  bad "no warning for --skip-op aten.nosuch: $(cat "$work/skip.err")"
[[ $(wc -l <"$work/skip.err") -eq 2 ]] && ok || bad "unexpected warnings: $(cat "$work/skip.err")"
$py -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["warnings"]) == 2 and r["warnings"][0].startswith("--skip-op aten.nosuch"), r["warnings"]
' "$work/skip.json" && ok || bad "report warnings"

# a skip list keeps the node it selects as traced (pass decompose leaves it alone): one CPU node
# aten.mse_loss_backward.default, no entry made from it, no warning. Its reason is the
# partitioner's first failing gate, which for an op without an NPU lowering is that (the skip
# lists are gate d, after a). Without a skip list the node is decomposed (the control).
mse=$data/pass_mse_step.json
check_mse() { # LABEL SKIPPED(0/1) COMPILE-ARGS...
  local label=$1 skipped=$2
  shift 2
  if ! $exe compile "$mse" --soc SM8650 --report "$work/mse.json" -q "$@" 2>"$work/mse.err"; then
    bad "$label: compile failed: $(cat "$work/mse.err")"
    return
  fi
  [[ -s "$work/mse.err" ]] && bad "$label: stderr: $(cat "$work/mse.err")" || ok
  check_report "$work/mse.json" SM8650 75 "$mse" 2>"$work/check.txt" && ok ||
    bad "$label: report: $(tail -3 "$work/check.txt")"
  $py - "$work/mse.json" "$skipped" <<'EOF' && ok || bad "$label: mse_loss_backward entries"
import json, sys
r, skipped = json.load(open(sys.argv[1])), sys.argv[2] == "1"
kept = [n for n in r["nodes"] if n["target"] == "aten.mse_loss_backward.default"]
made = [n for n in r["nodes"] if n.get("source") == "mse_loss_backward"]
assert r["warnings"] == [], r["warnings"]
if skipped:
    assert len(kept) == 1 and not made, (kept, made)
    k = kept[0]
    assert k["name"] == "mse_loss_backward" and "source" not in k and k["placement"] == "cpu", k
    assert k["reason"] == "no NPU lowering for aten.mse_loss_backward", k
else:
    assert not kept and made, (kept, made)
EOF
}
check_mse "no skip list" 0
check_mse "--skip-node mse_loss_backward" 1 --skip-node mse_loss_backward
check_mse "--skip-op aten.mse_loss_backward" 1 --skip-op aten.mse_loss_backward

# usage errors: each exit 2 with one line
expect_fail 2 "unknown SoC: choose one of SM8350, SM8450, SM8475, SM7675, SM8550, SM8635, SM8650, SM8750, SM8850" \
  -- $exe compile "$model" --soc SM9999
expect_fail 2 "no --soc given: choose one of SM8350" -- $exe compile "$model"
expect_fail 2 "option --bogus unknown" -- $exe compile "$model" --soc SM8650 --bogus
expect_fail 2 "--skip-op needs a value" -- $exe compile "$model" --soc SM8650 --skip-op
expect_fail 2 "no model given" -- $exe compile --soc SM8650
expect_fail 2 "a second model" -- $exe compile "$model" "$model" --soc SM8650
expect_fail 2 "cannot open" -- $exe compile "$work/nope.json" --soc SM8650
expect_fail 2 "cannot create" -- $exe compile "$model" --soc SM8650 -q --report "$work/no/such/dir/r.json"

summary "compile"
