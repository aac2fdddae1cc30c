#!/usr/bin/env bash
# test_outputs.sh EDGEGRAD WORKDIR — what `edgegrad run` writes, against hostile models and
# limits: output names are data, never paths (nothing is written outside --output-dir); a failed
# run leaves the output folder exactly as it was (absent stays absent, existing files unchanged);
# --max-memory refuses a runtime before it reserves memory, and wrong inputs are refused before
# that. Each failure must exit 2 with one line on stderr naming the problem.
set -u
exe=$1
work=$2
data=$(cd "$(dirname "$0")/../data" && pwd)
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "$0")/harness.sh"

# snapshot DIR: every entry below DIR (hidden ones too) with its checksum; "absent" if none.
snapshot() {
  if [[ ! -e $1 ]]; then echo absent; return; fi
  (cd "$1" && find . -print0 | LC_ALL=C sort -z | while IFS= read -r -d '' f; do
    if [[ -f $f ]]; then echo "$f $(md5sum <"$f")"; else echo "$f"; fi
  done)
}

# same_as BEFORE DIR WHAT: DIR's snapshot still equals BEFORE.
same_as() {
  local now
  now=$(snapshot "$2")
  if [[ "$now" == "$1" ]]; then ok; else bad "$3: output folder changed: was [$1] now [$now]"; fi
}

inputs=()
for f in "$data"/tiny_step_inputs/*.npy; do
  inputs+=(--input "$(basename "$f" .npy)=$f")
done

# with_output NAME OLD NEW: a copy of the fixture whose output OLD is called NEW.
models=$work/models
mkdir -p "$models"
cp "$data/tiny_step.safetensors" "$models/"
with_output() {
  /usr/bin/python3 - "$data/tiny_step.json" "$models/$1.json" "$2" "$3" <<'EOF'
import json, sys
src, dst, old, new = sys.argv[1:]
g = json.load(open(src))
hits = [o for o in g["outputs"] if o["name"] == old]
assert hits, old
hits[0]["name"] = new
json.dump(g, open(dst, "w"), indent=1)
EOF
  echo "$models/$1.json"
}

# --- names are data: nothing outside DIR, nothing in DIR ---
escaped=$(with_output escaped grad_2_bias ../escaped)
box=$work/box
mkdir -p "$box"
before=$(snapshot "$work/box")
expect_fail 2 'output 3 "../escaped": not usable as a file name' -- \
  "$exe" run "$escaped" "${inputs[@]}" --output-dir "$box/out"
[[ -e $box/escaped.npy || -e $box/out ]] && bad "../escaped wrote $(ls -A "$box")" || ok
same_as "$before" "$box" "../escaped"

# (an empty name is refused earlier, by the graph loader: names are non-empty)
for name in nosuchdir/x 'back\slash' . .. ''; do
  m=$(with_output "hostile$RANDOM" grad_2_bias "$name")
  why="not usable as a file name"
  [[ -z $name ]] && why="'name' is empty: names are non-empty"
  # an output folder that did not exist must not exist afterwards
  rm -rf "$work/fresh"
  expect_fail 2 "$why" -- "$exe" run "$m" "${inputs[@]}" --output-dir "$work/fresh"
  [[ -e $work/fresh ]] && bad "'$name': $work/fresh created: $(ls -A "$work/fresh")" || ok
  # an existing folder keeps exactly its files
  rm -rf "$work/kept" && mkdir -p "$work/kept/final" && echo old >"$work/kept/loss.npy" &&
    echo mine >"$work/kept/notes.txt" && echo w >"$work/kept/final/0_bias.npy"
  before=$(snapshot "$work/kept")
  expect_fail 2 "$why" -- "$exe" run "$m" "${inputs[@]}" --output-dir "$work/kept"
  same_as "$before" "$work/kept" "'$name'"
  # --expect joins names too: refused the same way, without --output-dir
  expect_fail 2 "$why" -- "$exe" run "$m" "${inputs[@]}" --expect "$work/kept"
done

# torch names keep their dots and leading dots are plain file names
dotted=$(with_output dotted grad_2_bias grad_conv1.weight)
rm -rf "$work/dots"
if "$exe" run "$dotted" "${inputs[@]}" --output-dir "$work/dots" -q 2>"$work/err.txt" &&
    [[ -f $work/dots/grad_conv1.weight.npy && -f $work/dots/loss.npy ]]; then ok
else bad "dotted output name: $(cat "$work/err.txt"); wrote $(ls -A "$work/dots" 2>&1)"; fi

# --- a failure while writing: staging is removed, DIR unchanged ---
# a folder where an output goes: refused before any file moves
rm -rf "$work/blocked" && mkdir -p "$work/blocked/grad_2_bias.npy" && echo old >"$work/blocked/loss.npy"
before=$(snapshot "$work/blocked")
expect_fail 2 "a folder is in the way" -- "$exe" run "$data/tiny_step.json" "${inputs[@]}" \
  --output-dir "$work/blocked"
same_as "$before" "$work/blocked" "folder in the way"
# a name the file system refuses (too long) fails in the middle of writing
long=$(with_output long grad_2_bias "$(printf 'n%.0s' $(seq 300))")
rm -rf "$work/fresh"
expect_fail 2 "File name too long" -- "$exe" run "$long" "${inputs[@]}" --output-dir "$work/fresh"
[[ -e $work/fresh ]] && bad "long name: $work/fresh created: $(ls -A "$work/fresh")" || ok
rm -rf "$work/kept" && mkdir -p "$work/kept" && echo old >"$work/kept/loss.npy"
before=$(snapshot "$work/kept")
expect_fail 2 "File name too long" -- "$exe" run "$long" "${inputs[@]}" --output-dir "$work/kept"
same_as "$before" "$work/kept" "long name"
# a run that fails (a class index out of range: exit 1) leaves DIR as it was too
bad_target=$work/bad_target.npy
/usr/bin/python3 -c '
import struct, sys
raw = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(raw[:-16] + struct.pack("<qq", 0, 99))
' "$data/tiny_step_inputs/target.npy" "$bad_target"
badin=()
for a in "${inputs[@]}"; do [[ $a == target=* ]] && a="target=$bad_target"; badin+=("$a"); done
rm -rf "$work/fresh"
expect_fail 1 "out of range" -- "$exe" run "$data/tiny_step.json" "${badin[@]}" --output-dir "$work/fresh"
[[ -e $work/fresh ]] && bad "failed run: $work/fresh created: $(ls -A "$work/fresh")" || ok
rm -rf "$work/kept" && mkdir -p "$work/kept" && echo old >"$work/kept/loss.npy"
before=$(snapshot "$work/kept")
expect_fail 1 "out of range" -- "$exe" run "$data/tiny_step.json" "${badin[@]}" --output-dir "$work/kept" \
  --steps 2 --lr 0.1
same_as "$before" "$work/kept" "failed run"
# an output folder whose parent is missing
expect_fail 2 "cannot create" -- "$exe" run "$data/tiny_step.json" "${inputs[@]}" \
  --output-dir "$work/no/such/parent"
[[ -e $work/no ]] && bad "missing parent created" || ok

# --- success still writes every output, replacing old files, keeping others ---
rm -rf "$work/kept" && mkdir -p "$work/kept" && echo old >"$work/kept/loss.npy" && echo mine >"$work/kept/notes.txt"
if "$exe" run "$data/tiny_step.json" "${inputs[@]}" --output-dir "$work/kept" \
    --expect "$data/tiny_step_reference" >"$work/run.txt" 2>&1 &&
    grep -q "^ok: 6 outputs compared" "$work/run.txt"; then ok
else bad "run: $(cat "$work/run.txt")"; fi
for f in "$data"/tiny_step_reference/*.npy; do
  [[ -f $work/kept/$(basename "$f") ]] && ok || bad "output $(basename "$f") not written"
done
[[ "$(cat "$work/kept/notes.txt")" == mine ]] && ok || bad "a file of the user's changed"
[[ "$(head -c 6 "$work/kept/loss.npy" | tail -c 5)" == NUMPY ]] && ok || bad "loss.npy not replaced"
ls -A "$work/kept" | grep -q edgegrad-tmp && bad "staging folder left: $(ls -A "$work/kept")" || ok
# --steps: losses and final parameters are staged with the outputs
rm -rf "$work/train"
if "$exe" run "$data/tiny_step.json" "${inputs[@]}" --output-dir "$work/train" --steps 2 --lr 0.1 -q \
    2>"$work/err.txt" && [[ -f $work/train/losses.npy && -f $work/train/final/2_weight.npy &&
    -f $work/train/loss.npy ]]; then ok
else bad "--steps outputs: $(cat "$work/err.txt"); $(ls -AR "$work/train" 2>&1)"; fi
rm -rf "$work/fresh"
expect_fail 2 "not usable as a file name" -- "$exe" run "$escaped" "${inputs[@]}" \
  --output-dir "$work/fresh" --steps 2 --lr 0.1
[[ -e $work/fresh ]] && bad "--steps with ../escaped created $work/fresh" || ok

# an input written to DIR/final/<name>.npy is checked the same way (".." has its gradient)
/usr/bin/python3 - "$data/tiny_step.json" "$models/dots_in.json" <<'EOF'
import json, sys
g = json.load(open(sys.argv[1]))
[i for i in g["inputs"] if i["name"] == "2_bias"][0]["name"] = ".."
[o for o in g["outputs"] if o["name"] == "grad_2_bias"][0]["of"] = ".."
json.dump(g, open(sys.argv[2], "w"), indent=1)
EOF
dots_in=()
for a in "${inputs[@]}"; do [[ $a == 2_bias=* ]] && a="..=${a#2_bias=}"; dots_in+=("$a"); done
rm -rf "$work/fresh"
expect_fail 2 'input 4 "..": not usable as a file name (DIR/final/<name>.npy)' -- \
  "$exe" run "$models/dots_in.json" "${dots_in[@]}" --output-dir "$work/fresh" --steps 2 --lr 0.1
[[ -e $work/fresh ]] && bad "input named ..: $work/fresh created" || ok
"$exe" run "$models/dots_in.json" "${dots_in[@]}" --output-dir "$work/fresh" -q && ok ||
  bad "input named .. without --steps (nothing of it is written)"

# --- --max-memory ---
rm -rf "$work/lim"
expect_fail 2 "run: --max-memory 1K: eg_runtime_create: memory needed (" -- \
  "$exe" run "$data/tiny_step.json" "${inputs[@]}" --output-dir "$work/lim" --max-memory 1K
grep -q "exceeds max_memory_bytes (1024 bytes)" "$work/err.txt" && ok || bad "limit message: $(cat "$work/err.txt")"
[[ -e $work/lim ]] && bad "--max-memory refusal wrote $work/lim" || ok
for size in 64M 1G 2g 1048576 512k; do
  if "$exe" run "$data/tiny_step.json" "${inputs[@]}" --max-memory "$size" -q 2>"$work/err.txt"; then ok
  else bad "--max-memory $size: $(cat "$work/err.txt")"; fi
done
for size in 0 -1 1.5G 12KB G "" " 5" 5T 99999999999999999999 18014398509481984G; do
  expect_fail 2 "run: --max-memory $size: expected a positive whole number of bytes" -- \
    "$exe" run "$data/tiny_step.json" "${inputs[@]}" --max-memory "$size"
done
expect_fail 2 "run: --max-memory needs a value (SIZE)" -- "$exe" run "$data/tiny_step.json" --max-memory
"$exe" run --help | grep -q -- "--max-memory SIZE" && ok || bad "--max-memory not in run --help"

# the compiled paths honour the limit: --soc, and a compiled program
expect_fail 2 "exceeds max_memory_bytes (1024 bytes)" -- \
  "$exe" run "$data/tiny_step.json" "${inputs[@]}" --soc SM8650 --max-memory 1K
if "$exe" compile "$data/tiny_step.json" --soc SM8650 -o "$work/tiny.egp" -q 2>"$work/err.txt"; then
  expect_fail 2 "exceeds max_memory_bytes (1024 bytes)" -- \
    "$exe" run "$work/tiny.egp" "${inputs[@]}" --max-memory 1K --output-dir "$work/lim"
  [[ -e $work/lim ]] && bad "--max-memory refusal of a program wrote $work/lim" || ok
  "$exe" run "$work/tiny.egp" "${inputs[@]}" --max-memory 64M -q && ok || bad "program under 64M"
else bad "compile: $(cat "$work/err.txt")"; fi

# wrong inputs are refused before the runtime reserves memory: the input error comes first
wrong=()
for a in "${inputs[@]}"; do
  [[ $a == input=* ]] && a="input=$data/tiny_step_inputs/target.npy"
  wrong+=("$a")
done
expect_fail 2 "input input: given int64 [2]: the model expects float32 [2, 1, 12, 12]" -- \
  "$exe" run "$data/tiny_step.json" "${wrong[@]}" --max-memory 1
expect_fail 2 "input target (int64 [2]) missing" -- \
  "$exe" run "$data/tiny_step.json" --input "input=$data/tiny_step_inputs/input.npy" --max-memory 1

summary "test_outputs"
