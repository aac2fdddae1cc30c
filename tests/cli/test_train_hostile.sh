#!/usr/bin/env bash
# test_train_hostile.sh EDGEGRAD WORKDIR — the train, run and compile commands against hostile
# checkpoints (positions past the run or wrapping, flipped bytes), labels outside the loss's
# classes, random inputs that name a parameter, output paths that cannot be written, and files
# that are no model (that each command's --help lists what its parser accepts:
# unit/test_cli_options). Every refusal is one line and exit 2, before any training; what a
# refused run would have written is absent.
set -u
exe=$1
work=$2
data=$(cd "$(dirname "$0")/../data" && pwd)
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "$0")/harness.sh"
py=/usr/bin/python3
model=$data/tiny_step.json
init=$data/tiny_step_inputs

# the fixture's two examples repeated: DIR with N examples (input and target)
examples() { # DIR N
  $py - "$init" "$1" "$2" <<'EOF'
import numpy as np, os, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(dst, exist_ok=True)
for name in ("input", "target"):
    a = np.load(os.path.join(src, name + ".npy"))
    np.save(os.path.join(dst, name + ".npy"), np.concatenate([a] * (n // len(a) + 1))[:n])
EOF
}
# set_label DIR K VALUE: example K of DIR/target.npy becomes VALUE
set_label() {
  $py -c 'import numpy as np, sys
p = sys.argv[1] + "/target.npy"; t = np.load(p); t[int(sys.argv[2])] = int(sys.argv[3]); np.save(p, t)' "$@"
}
# ckedit FILE KEY=VALUE...: rewrites the checkpoint's metadata (VALUE "-": the key removed)
ckedit() {
  $py - "$@" <<'EOF'
import json, struct, sys
path, edits = sys.argv[1], sys.argv[2:]
b = open(path, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
head = json.loads(b[8:8 + n])
meta = head["__metadata__"]
for e in edits:
    k, v = e.split("=", 1)
    if v == "-":
        meta.pop(k, None)
    else:
        meta[k] = v
t = json.dumps(head).encode()
t += b" " * (-len(t) % 8)
open(path, "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
EOF
}
ckmeta() { # FILE KEY: the metadata value
  $py -c 'import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]
print(json.loads(b[8:8 + n])["__metadata__"].get(sys.argv[2], ""))' "$@"
}
absent() { # PATH WHY
  if [[ -e $1 ]]; then bad "$2: $1 exists"; else ok; fi
}

examples "$work/d8" 8
train=($exe train "$model" --data "$work/d8" --init "$init")

# ---- checkpoint positions: epoch past --epochs (2^62: epoch * steps wraps), a finished run's
# step, global_step, a count that is not digits; each refused by the field's name ----
if "${train[@]}" --epochs 1 --checkpoint "$work/ck" >"$work/base.txt" 2>&1; then ok
else bad "checkpoint run: $(cat "$work/base.txt")"; fi
steps=$(sed -n 's/^train: .* \([0-9]*\) steps per epoch.*/\1/p' "$work/base.txt")
[[ $steps == 4 ]] && ok || bad "the fixture repeated to 8 examples should run 4 steps, not '$steps'"
wrapped=$($py -c "print(((2**62 * $steps + 2**63) % 2**64) - 2**63)") # what a signed product wraps to
position() { # NEEDLE KEY=VALUE...: a version-2 checkpoint (no checksum) of that position, refused
  local needle=$1
  shift
  rm -rf "$work/ckp" && mkdir "$work/ckp" && cp "$work/ck/checkpoint.safetensors" "$work/ckp/"
  ckedit "$work/ckp/checkpoint.safetensors" version=2 checksum=- "$@"
  expect_fail 2 "$needle" -- "${train[@]}" --epochs 3 --checkpoint "$work/ckp" --resume \
    --out "$work/never.safetensors"
  absent "$work/never.safetensors" "--out of a refused resume ($*)"
}
position "epoch 4611686018427387904 (epochs done): beyond this run's 3 epochs" \
  epoch=4611686018427387904 step=0 global_step="$wrapped"
position "epoch 5 (epochs done): beyond this run's 3 epochs" epoch=5 step=0 \
  global_step=$((5 * steps))
position "step 1 (after epoch 3): past the last epoch" epoch=3 step=1 global_step=$((3 * steps + 1))
position "step $steps (after epoch 1): not a step of an epoch" epoch=1 step="$steps" \
  global_step=$((2 * steps))
position "global_step 99: epoch 1 and step 1 of $steps steps per epoch make $((steps + 1))" \
  epoch=1 step=1 global_step=99
position 'epoch "+1": expected a count' epoch=+1
# a newline in a metadata value the message shows: still one line (the control character as '?')
position 'epoch "1 2": expected a count' epoch=$'1\n2'
# and in the checksum itself (shown only when it has the written form)
mkdir -p "$work/cknl" && cp "$work/ck/checkpoint.safetensors" "$work/cknl/"
ckedit "$work/cknl/checkpoint.safetensors" checksum=$'0000\n0000'
expect_fail 2 "checksum mismatch (stored (not 8 hex digits), contents " -- "${train[@]}" \
  --epochs 2 --checkpoint "$work/cknl" --resume

# ---- checksums: a flipped data byte, or metadata edited without the checksum, is refused by
# name; a sound checkpoint (and one of version 2, written before checksums) resumes bit for bit
# like a run never interrupted ----
sum=$(ckmeta "$work/ck/checkpoint.safetensors" checksum)
[[ $sum =~ ^[0-9a-f]{8}$ ]] && ok || bad "the checkpoint's checksum is '$sum', not 8 hex digits"
mkdir -p "$work/ckflip" && cp "$work/ck/checkpoint.safetensors" "$work/ckflip/"
$py -c 'import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[-3] ^= 0x40; open(p, "wb").write(bytes(b))' \
  "$work/ckflip/checkpoint.safetensors"
expect_fail 2 "$work/ckflip/checkpoint.safetensors: checksum mismatch (stored $sum, contents " -- \
  "${train[@]}" --epochs 2 --checkpoint "$work/ckflip" --resume --out "$work/never.safetensors"
grep -qF "the file is damaged" "$work/err.txt" && ok || bad "damage not said: $(cat "$work/err.txt")"
absent "$work/never.safetensors" "--out of a resume from a damaged checkpoint"
mkdir -p "$work/ckmeta" && cp "$work/ck/checkpoint.safetensors" "$work/ckmeta/"
ckedit "$work/ckmeta/checkpoint.safetensors" epoch=0 step=2 global_step=2
expect_fail 2 "checksum mismatch (stored $sum" -- "${train[@]}" --epochs 2 \
  --checkpoint "$work/ckmeta" --resume
"${train[@]}" --epochs 2 --out "$work/whole.safetensors" -q 2>"$work/err.txt" && ok ||
  bad "uninterrupted run: $(cat "$work/err.txt")"
for v in 3 2; do
  rm -rf "$work/ckv" && mkdir "$work/ckv" && cp "$work/ck/checkpoint.safetensors" "$work/ckv/"
  [[ $v == 2 ]] && ckedit "$work/ckv/checkpoint.safetensors" version=2 checksum=-
  if "${train[@]}" --epochs 2 --checkpoint "$work/ckv" --resume --out "$work/resumed$v.safetensors" \
      -q 2>"$work/err.txt" && cmp -s "$work/whole.safetensors" "$work/resumed$v.safetensors"; then ok
  else bad "resumed from a version $v checkpoint: not the uninterrupted run's weights: $(cat "$work/err.txt")"; fi
done
# a finished run (epoch = --epochs): nothing trained, --out written from the checkpoint
if "${train[@]}" --epochs 2 --checkpoint "$work/ckdone" --out "$work/done.safetensors" -q &&
    "${train[@]}" --epochs 2 --checkpoint "$work/ckdone" --resume --log "$work/done.jsonl" \
      --out "$work/again.safetensors" >"$work/done.txt" 2>&1 &&
    grep -q "finished run (2 epochs): nothing left to train" "$work/done.txt" &&
    cmp -s "$work/done.safetensors" "$work/again.safetensors" &&
    ! grep -q '"event": "step"' "$work/done.jsonl"; then ok
else bad "resuming a finished run: $(cat "$work/done.txt")"; fi

# ---- labels: every example, the dropped remainder (N mod B) included, against the classes of
# the loss (C of the nll_loss's [N, C] scores, read from the graph), before the first step ----
classes=$($py -c 'import json, sys
g = json.load(open(sys.argv[1]))
n = next(n for n in g["nodes"] if n["target"] == "aten.nll_loss_forward.default")
print(g["values"][n["args"][0]["value"]]["shape"][1])' "$model")
examples "$work/d5" 5
set_label "$work/d5" 4 "$classes"
expect_fail 2 "train: data $work/d5/target.npy: label $classes at example 4: the model has $classes classes" \
  -- $exe train "$model" --data "$work/d5" --init "$init" --epochs 1 --log "$work/never.jsonl"
absent "$work/never.jsonl" "--log of a run refused for its labels"
set_label "$work/d5" 4 $((classes - 1))
"$exe" train "$model" --data "$work/d5" --init "$init" --epochs 1 -q 2>"$work/err.txt" && ok ||
  bad "label $((classes - 1)) of $classes classes refused: $(cat "$work/err.txt")"
examples "$work/d2" 2
set_label "$work/d2" 1 $((classes + 3))
expect_fail 2 "train: data $work/d2/target.npy: label $((classes + 3)) at example 1" -- \
  $exe train "$model" --data "$work/d2" --init "$init" --epochs 1
$py -c 'import numpy as np, sys
np.savez(sys.argv[1], input=np.load(sys.argv[2] + "/input.npy"), target=np.load(sys.argv[2] + "/target.npy"))' \
  "$work/d2.npz" "$work/d2"
expect_fail 2 "train: data $work/d2.npz[target.npy]: label $((classes + 3)) at example 1" -- \
  $exe train "$model" --data "$work/d2.npz" --init "$init" --epochs 1

# ---- a random input (Dropout mask) may not be a trainable parameter: refused on loading ----
sed 's/"nodes":/"random_inputs": [{"input": "0_bias", "distribution": "bernoulli", "p": 0.5}], "nodes":/' \
  "$model" >"$work/rp.json"
cp "$data/tiny_step.safetensors" "$work/"
grep -q random_inputs "$work/rp.json" && ok || bad "test edit of random_inputs did not apply"
needle='inputs[2] "0_bias": role "parameter" (a random draw): an input holds a random draw (a Dropout mask, listed in the graph'"'"'s "random_inputs") exactly when its role is "random"'
expect_fail 2 "$needle" -- $exe info "$work/rp.json"
expect_fail 2 "$needle" -- $exe train "$work/rp.json" --data "$work/d8" --init "$init" --epochs 1 \
  --out "$work/never.safetensors"
absent "$work/never.safetensors" "--out of a model whose mask is a parameter"

# ---- output paths: checked before any work (no log, no checkpoint folder left behind) ----
touch "$work/afile"
expect_fail 2 "train: --out $work/nodir/w.safetensors: cannot create (folder $work/nodir does not exist)" -- \
  "${train[@]}" --epochs 1 --out "$work/nodir/w.safetensors" --log "$work/never.jsonl"
absent "$work/never.jsonl" "--log of a run whose --out cannot be written"
expect_fail 2 "train: --out $work/afile/w.safetensors: cannot create ($work/afile is not a folder)" -- \
  "${train[@]}" --epochs 1 --out "$work/afile/w.safetensors"
expect_fail 2 "train: --checkpoint $work/nodir/ck: cannot create (folder $work/nodir does not exist)" -- \
  "${train[@]}" --epochs 1 --checkpoint "$work/nodir/ck" --log "$work/never.jsonl"
absent "$work/never.jsonl" "--log of a run whose --checkpoint cannot be made"
expect_fail 2 "train: --log \"$work\": a folder, not a file name" -- \
  "${train[@]}" --epochs 1 --log "$work"
expect_fail 2 "train: --checkpoint $work/afile: exists and is not a folder" -- \
  "${train[@]}" --epochs 1 --checkpoint "$work/afile"
expect_fail 2 "nothing to resume" -- "${train[@]}" --epochs 1 --checkpoint "$work/newck" --resume
absent "$work/newck" "--checkpoint folder made by a run that failed"
inputs=(--input "input=$init/input.npy" --input "target=$init/target.npy")
expect_fail 2 "run: --output-dir $work/nodir/out: cannot create (folder $work/nodir does not exist)" -- \
  $exe run "$model" "${inputs[@]}" --init "$init" --output-dir "$work/nodir/out"
expect_fail 2 "run: --output-dir $work/afile: exists and is not a folder" -- \
  $exe run "$model" "${inputs[@]}" --init "$init" --output-dir "$work/afile"
expect_fail 2 "run: --profile-trace $work/nodir/t.json: cannot create (folder $work/nodir does not exist)" -- \
  $exe run "$model" "${inputs[@]}" --init "$init" --profile-trace "$work/nodir/t.json"
expect_fail 2 "compile: -o $work/nodir/s.egp: cannot create (folder $work/nodir does not exist)" -- \
  $exe compile "$model" --soc SM8650 -o "$work/nodir/s.egp"
expect_fail 2 "compile: --report \"$work\": a folder, not a file name" -- \
  $exe compile "$model" --soc SM8650 --report "$work"

# ---- compile refuses a compiled program (it crashed); info names what a non-model file is ----
$exe compile "$model" --soc SM8650 -o "$work/step.egp" -q && ok || bad "compile -o step.egp"
expect_fail 2 "compile: $work/step.egp: a program compiled for SM8650 already: compile takes a graph JSON" \
  -- $exe compile "$work/step.egp" --soc SM8650 -o "$work/again.egp"
absent "$work/again.egp" "compile of a compiled program"
expect_fail 2 "info: $data/tiny_step.safetensors: a safetensors file" -- $exe info "$data/tiny_step.safetensors"
expect_fail 2 "info: $init/input.npy: a .npy array" -- $exe info "$init/input.npy"
expect_fail 2 "info: $work/d2.npz: a zip archive" -- $exe info "$work/d2.npz"
head -c 64 /dev/urandom | tr '{[ \t\r\n' 'xxxxxx' >"$work/noise.bin"
expect_fail 2 "info: $work/noise.bin: neither a graph JSON nor a compiled program (it begins with bytes" \
  -- $exe info "$work/noise.bin"
expect_fail 2 "inspect: $data/tiny_step.safetensors: a safetensors file" -- \
  $exe inspect "$data/tiny_step.safetensors"

# ---- run --init and --threads, as train has them ----
if $exe run "$model" "${inputs[@]}" --init "$init" --threads 1 --expect "$data/tiny_step_reference" \
    >"$work/run.txt" 2>&1 && grep -q "^ok: 6 outputs compared" "$work/run.txt"; then ok
else bad "run --init --threads: $(cat "$work/run.txt")"; fi
expect_fail 2 "run: --threads 0: expected an integer in [1, 1024]" -- \
  $exe run "$model" "${inputs[@]}" --init "$init" --threads 0

# ---- train's lines reach a file as they are printed: stopped mid-run (SIGSTOP, so what it
# wrote holds still), the file holds a line for every epoch its --log (flushed per line, and
# written after the epoch's line) holds. Three stops: a block-buffered stdout is caught unless
# its flushes end exactly after the last logged epoch's line at every one of them ----
"${train[@]}" --epochs 1000000 --log "$work/live.jsonl" >"$work/live.txt" 2>&1 &
pid=$!
lag=""
for round in 1 2 3; do
  for _ in $(seq 600); do
    [[ $(grep -c '"event": "epoch"' "$work/live.jsonl" 2>/dev/null) -ge $((3 * round)) ]] && break
    sleep 0.05
  done
  kill -STOP "$pid" 2>/dev/null
  logged=$(grep -c '"event": "epoch"' "$work/live.jsonl" 2>/dev/null)
  printed=$(grep -c "^epoch [0-9]*/1000000  train loss" "$work/live.txt")
  [[ $logged -ge $((3 * round)) && $printed -ge $logged ]] ||
    lag+=" stop $round: $printed epoch lines printed, ${logged:-0} epochs logged;"
  kill -CONT "$pid" 2>/dev/null
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
if [[ -z $lag ]] && grep -q "^train: 8 examples" "$work/live.txt"; then ok
else bad "stdout to a file lags:$lag"; fi

summary "train_hostile"
