#!/usr/bin/env bash
# test_passes.sh EDGEGRAD WORKDIR — `edgegrad compile --dump-after=PASS`: the text IR after the
# decompose pass (tests/data/pass_fills.json: its fills become statics, squeeze/unsqueeze
# views; tiny_step: convolution_backward kept) with the usual table and exit 0; "all"; the
# separate-argument form; an unknown pass name exits 2 naming the valid ones; --help documents it.
set -u
exe=$1
work=$2
source "$(dirname "$0")/harness.sh"
data=$(cd "$(dirname "$0")/../data" && pwd)
rm -rf "$work" && mkdir -p "$work"

# has FILE LINE: FILE contains LINE as a whole line.
has() { grep -qxF -- "$2" "$1"; }

out=$work/fills.txt
$exe compile "$data/pass_fills.json" --soc SM8650 --dump-after=decompose >"$out" 2>"$work/err.txt"
rc=$?
if [[ $rc -eq 0 ]]; then ok; else bad "--dump-after=decompose exited $rc: $(cat "$work/err.txt")"; fi
for line in "# after decompose" \
            "graph: 1 input, 6 statics, 9 nodes, 1 output" \
            "input x: %0 float32[2, 3]" \
            "static full: %3 float32[3] (12 bytes)" \
            "node squeeze: %14 float32[2, 3] = aten.view.default(%13, [2, 3])" \
            "output out0: %15"; do
  if has "$out" "$line"; then ok; else bad "dump lacks '$line': $(cat "$out")"; fi
done
if grep "^node " "$out" | grep -q "aten.full.default\|aten.squeeze"; then bad "a decomposed op is still in the dump"
else ok; fi
if grep -q "placement only" "$out"; then ok; else bad "the placement table is missing"; fi

# tiny_step: convolution_backward survives, ones_like is a static; the separate-argument form
out=$work/tiny.txt
if $exe compile "$data/tiny_step.json" --soc SM8650 -q --dump-after decompose >"$out"; then ok
else bad "--dump-after decompose (two arguments) failed"; fi
n=$(grep -c "= aten.convolution_backward.default(" "$out")
if [[ $n -eq 2 ]]; then ok; else bad "tiny_step: $n convolution_backward nodes after decompose"; fi
if grep -q "^static ones_like: " "$out"; then ok; else bad "tiny_step: ones_like not folded"; fi

# unknown pass: exit 2, one line naming the valid passes (the pipeline's, in order, then "all")
$exe compile "$data/tiny_step.json" --soc SM8650 --dump-after=decompse >"$out" 2>"$work/err.txt"
rc=$?
if [[ $rc -eq 2 && $(wc -l <"$work/err.txt") -eq 1 ]] &&
   grep -q "decompse" "$work/err.txt" && grep -Eq "valid names are ([a-z0-9_]+, )*decompose, ([a-z0-9_]+, )*all$" "$work/err.txt"
then ok; else bad "unknown pass: exit $rc, stderr: $(cat "$work/err.txt")"; fi
if [[ ! -s $out ]]; then ok; else bad "unknown pass printed: $(cat "$out")"; fi
passes=$(sed -n 's/.*valid names are \(.*\), all$/\1/p' "$work/err.txt" | sed 's/, /\n/g')

# all: one dump per pass, in the pipeline's order
if $exe compile "$data/tiny_step.json" --soc SM8650 -q --dump-after=all >"$out" &&
   [[ -n $passes && "$(sed -n 's/^# after //p' "$out")" == "$passes" ]]; then ok
else bad "--dump-after=all: dumps $(grep "^# after " "$out" | tr '\n' ' '), passes: $passes"; fi
$exe compile "$data/tiny_step.json" --soc SM8650 --dump-after >/dev/null 2>"$work/err.txt"
if [[ $? -eq 2 ]]; then ok; else bad "--dump-after without a value"; fi

if $exe compile --help | grep -q -- "--dump-after=PASS"; then ok; else bad "--help lacks --dump-after"; fi

summary "passes cli"
