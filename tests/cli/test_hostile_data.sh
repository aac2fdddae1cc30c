#!/usr/bin/env bash
# test_hostile_data.sh EDGEGRAD WORKDIR — the CLI's file readers and writers against hostile
# files: damaged safetensors given to `train --init` and `train --resume` (the message names the
# tensor; no sanitizer report), an .npz decompression bomb under --max-memory (refused from its
# stated size, before it is inflated), data arrays read once (no second copy), a FIFO, folder
# or device where a file is read (refused at once, never waited on), and outputs written
# through a symbolic link or under a umask. Each failure exits 2 with exactly one line on stderr.
# The files are made here, at run time, with python3 and numpy, into WORKDIR.
set -u
exe=$1
work=$2
source "$(dirname "$0")/harness.sh"
data=$(cd "$(dirname "$0")/../data" && pwd)
rm -rf "$work" && mkdir -p "$work"
py=/usr/bin/python3
model=$data/tiny_step.json
tinit=$data/tiny_step_inputs
mkdir -p "$work/tdata"
cp "$tinit/input.npy" "$tinit/target.npy" "$work/tdata/"

# measure CMD...: runs CMD (stdout to $work/out.txt, stderr to $work/err.txt); sets `rc` to its
# exit status and `rss` to its peak resident memory in KiB.
measure() {
  local res
  res=$($py - "$work" "$@" <<'EOF'
import resource, subprocess, sys
work = sys.argv[1]
with open(work + "/out.txt", "wb") as out, open(work + "/err.txt", "wb") as err:
    rc = subprocess.run(sys.argv[2:], stdout=out, stderr=err).returncode
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
EOF
)
  read -r rc rss <<<"$res"
}

# safetensors FILE HEADER_JSON DATA_BYTES: a safetensors file with that header and zero data.
safetensors() {
  $py - "$@" <<'EOF'
import struct, sys
path, header, n = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
open(path, "wb").write(struct.pack("<Q", len(header)) + header + b"\0" * n)
EOF
}

# --- damaged safetensors: each refusal (the library's codec, src/api/safetensors.c, its message
# behind "not a safetensors file edgegrad can read") names the tensor or key at fault, with the
# values and the rule, for --init and --resume alike ---
bias='"2_bias": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}'
cases=(
  'past_end|{"2_bias": {"dtype": "F32", "shape": [4], "data_offsets": [0, 1000]}}|tensor '"'2_bias'"': data_offsets [0, 1000] outside the 16-byte buffer: 0 <= begin <= end <= 16'
  'dtype|{"4_weight": {"dtype": "Q7", "shape": [4], "data_offsets": [0, 16]}}|tensor '"'4_weight'"': dtype '"'Q7'"' unknown to edgegrad: it reads F32, F64, F16, I64, I32, I8, U8 and BOOL'
  'fields|{"0_bias_missing_offsets": {"dtype": "F32", "shape": [4]}}|tensor '"'0_bias_missing_offsets'"': an entry needs a dtype string, a shape array and data_offsets [begin, end]'
  "metadata|{$bias, \"__metadata__\": {\"format_key_x\": 7}}|__metadata__ 'format_key_x' is not a string: metadata values are strings"
  'size|{"2_bias": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}}|tensor '"'2_bias'"': data_offsets [0, 16] hold 16 bytes but F32 [3] takes 12'
  'json|{"2_bias": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}, "2_bias": {}}|header JSON, line 1, column 76: duplicate object key near '"'\"2_bias\"'"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name header needle <<<"$c"
  safetensors "$work/$name.safetensors" "$header" 16
  expect_fail 2 "train: --init $work/$name.safetensors: not a safetensors file edgegrad can read ($needle)" -- \
    "$exe" train "$model" --data "$work/tdata" --init "$work/$name.safetensors" --epochs 1
  mkdir -p "$work/ck_$name"
  cp "$work/$name.safetensors" "$work/ck_$name/checkpoint.safetensors"
  expect_fail 2 "checkpoint.safetensors: not a safetensors file edgegrad can read ($needle)" -- \
    "$exe" train "$model" --data "$work/tdata" --epochs 1 --checkpoint "$work/ck_$name" --resume
done

# --- an .npz bomb: 256 MiB of zeros in a ~256 KiB archive; --max-memory 64M refuses it from
# the member's stated size before inflating anything: peak memory stays far below 256 MiB ---
# bomb NPZ TARGET: prints the stated (uncompressed) size of NPZ's input.npy
bomb() {
  $py - "$@" <<'EOF'
import sys, zipfile
import numpy as np
n = (256 << 20) // 576  # examples of [1, 12, 12] float32
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED, allowZip64=True) as z:
    with z.open("input.npy", "w", force_zip64=True) as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f4", "fortran_order": False, "shape": (n, 1, 12, 12)})
        left, chunk = n * 576, bytes(1 << 20)
        while left:
            f.write(chunk[:min(left, len(chunk))])
            left -= min(left, len(chunk))
    z.write(sys.argv[2], "target.npy")
    print(z.getinfo("input.npy").file_size)
EOF
}
stated=$(bomb "$work/bomb.npz" "$work/tdata/target.npy")
bomb_size=$(stat -c %s "$work/bomb.npz")
[[ $bomb_size -lt $((4 << 20)) && $stated -gt $((255 << 20)) ]] && ok ||
  bad "the bomb is $bomb_size bytes stating $stated: not a small archive of a large member"
measure "$exe" train "$model" --data "$work/bomb.npz" --init "$tinit" --epochs 1 --max-memory 64M
if [[ $rc -eq 2 && $(wc -l <"$work/err.txt") -eq 1 ]] && ! sanitizer "$work/err.txt" &&
    grep -qF "train: data $work/bomb.npz[input.npy]: $stated bytes uncompressed, and --max-memory has 67108864 bytes left" "$work/err.txt"; then
  ok
else bad "the bomb: exit $rc, stderr: $(head -c 2000 "$work/err.txt")"; fi
[[ $rss -gt 0 && $rss -lt $((128 << 10)) ]] && ok || bad "the bomb's refusal peaked at $rss KiB"
# the budget is shared: data that fits leaves the runtime less, and the runtime's refusal says so
expect_fail 2 "train: --max-memory 3K, less the data's bytes:" -- \
  "$exe" train "$model" --data "$work/tdata" --init "$tinit" --epochs 1 --max-memory 3K
if "$exe" train "$model" --data "$work/tdata" --init "$tinit" --epochs 1 --max-memory 64M -q \
    >"$work/out.txt" 2>&1; then ok; else bad "train under --max-memory 64M: $(cat "$work/out.txt")"; fi

# --- arrays are read once, straight into their buffers: loading 128 MiB of input (then refusing
# the labels) peaks at less than 1.5 times that above a small data set's peak ---
# big DIR N LABEL: DIR/input.npy of N examples of ones, DIR/target.npy of N labels LABEL, and
# DIR.npz (stored) with both.
big() {
  $py - "$@" <<'EOF'
import sys, os
import numpy as np
d, n, label = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
x, t = np.ones((n, 1, 12, 12), np.float32), np.full(n, label, np.int64)
np.save(d + "/input.npy", x); np.save(d + "/target.npy", t)
np.savez(d + ".npz", input=x, target=t)
EOF
}
# peak DATA: sets `rss` to the peak KiB of `train` on DATA, which must refuse its labels
peak() {
  measure "$exe" train "$model" --data "$1" --init "$tinit" --epochs 1
  if [[ $rc -eq 2 ]] && grep -q "label -1" "$work/err.txt"; then ok
  else bad "train $1: exit $rc, $(cat "$work/err.txt")"; fi
}
big "$work/small" 2 -1
big "$work/large" $(((128 << 20) / 576)) -1
for kind in "" .npz; do
  peak "$work/small$kind"
  base=$rss
  peak "$work/large$kind"
  if [[ $((rss - base)) -lt $((192 << 10)) ]]; then ok
  else bad "loading 128 MiB from large$kind peaked $((rss - base)) KiB above the small set's"; fi
done
rm -rf "$work/large" "$work/large.npz" "$work/bomb.npz" # 256 MiB not worth keeping

# --- a FIFO, folder or device where edgegrad reads a file: refused at once (exit 2, one line),
# never waited on (a blocking open of a FIFO without a writer would hang: timeout exits 124) ---
mkfifo "$work/fifo.npz" "$work/fifo.safetensors" "$work/fifo.json" "$work/fifo.egp" "$work/fifo.npy"
mkdir -p "$work/fifodata" "$work/fifock" "$work/fifow" "$work/dir.json"
cp "$tinit/target.npy" "$work/fifodata/"
mkfifo "$work/fifodata/input.npy" "$work/fifock/checkpoint.safetensors" "$work/fifow/tiny_step.safetensors"
cp "$model" "$work/fifow/"
t() { timeout 10 "$exe" "$@"; }
train=(train "$model" --epochs 1)
expect_fail 2 "$work/fifo.npz: not a regular file (fifo)" -- t "${train[@]}" --data "$work/fifo.npz" --init "$tinit"
expect_fail 2 "$work/fifodata/input.npy: not a regular file (fifo)" -- t "${train[@]}" --data "$work/fifodata" --init "$tinit"
expect_fail 2 "$work/fifo.safetensors: not a regular file (fifo)" -- t "${train[@]}" --data "$work/tdata" --init "$work/fifo.safetensors"
expect_fail 2 "checkpoint.safetensors: not a regular file (fifo)" -- t "${train[@]}" --data "$work/tdata" --checkpoint "$work/fifock" --resume
expect_fail 2 "$work/fifo.json: not a regular file (fifo)" -- t train "$work/fifo.json" --data "$work/tdata" --init "$tinit" --epochs 1
expect_fail 2 "$work/fifo.json: not a regular file (fifo)" -- t info "$work/fifo.json"
expect_fail 2 "$work/fifo.json: not a regular file (fifo)" -- t run "$work/fifo.json" --input input="$tinit/input.npy"
expect_fail 2 "$work/fifo.json: not a regular file (fifo)" -- t compile "$work/fifo.json" --soc SM8650 -o "$work/never.egp"
expect_fail 2 "tiny_step.safetensors: not a regular file (fifo)" -- t info "$work/fifow/tiny_step.json"
expect_fail 2 "$work/fifo.npy: not a regular file (fifo)" -- t run "$model" --input input="$work/fifo.npy"
expect_fail 2 "$work/fifo.egp: not a regular file (fifo)" -- t inspect "$work/fifo.egp"
expect_fail 2 "$work/fifo.egp: not a regular file (fifo)" -- t run "$work/fifo.egp" --input input="$tinit/input.npy"
expect_fail 2 "$work/dir.json: not a regular file (folder)" -- t info "$work/dir.json"
expect_fail 2 "/dev/zero: not a regular file (character device)" -- t "${train[@]}" --data /dev/zero --init "$tinit"
expect_fail 2 "/dev/zero: not a regular file (character device)" -- t run "$model" --input input=/dev/zero
[[ -e $work/never.egp ]] && bad "compile of a FIFO wrote its output" || ok

# --- outputs: a symbolic link at the output path is replaced, its target left alone; new files
# get 0666 less the umask (safetensors written by train too), and no temporary is left ---
echo "precious" >"$work/victim.egp"
ln -s "$work/victim.egp" "$work/linked.egp"
if "$exe" compile "$model" --soc SM8650 -o "$work/linked.egp" -q >"$work/out.txt" 2>&1; then ok
else bad "compile -o a symbolic link: $(cat "$work/out.txt")"; fi
[[ ! -L $work/linked.egp && -f $work/linked.egp ]] && ok || bad "the link at -o was not replaced"
[[ $(cat "$work/victim.egp") == precious ]] && ok || bad "compile -o wrote through the symbolic link"
if "$exe" inspect "$work/linked.egp" >/dev/null 2>&1; then ok; else bad "the program written over the link does not load"; fi
mkdir -p "$work/masked"
if (umask 077 && "$exe" train "$model" --data "$work/tdata" --init "$tinit" --epochs 1 -q \
      --out "$work/masked/w.safetensors" &&
    "$exe" compile "$model" --soc SM8650 -o "$work/masked/p.egp" -q) >"$work/out.txt" 2>&1; then ok
else bad "train/compile under umask 077: $(cat "$work/out.txt")"; fi
for f in w.safetensors p.egp; do
  mode=$(stat -c %a "$work/masked/$f" 2>/dev/null)
  [[ $mode == 600 ]] && ok || bad "$f under umask 077 has mode $mode, not 600"
done
if (umask 022 && "$exe" train "$model" --data "$work/tdata" --init "$tinit" --epochs 1 -q \
      --out "$work/masked/w2.safetensors") >"$work/out.txt" 2>&1 &&
    [[ $(stat -c %a "$work/masked/w2.safetensors") == 644 ]]; then ok
else bad "--out under umask 022: mode $(stat -c %a "$work/masked/w2.safetensors" 2>&1)"; fi
leftovers=$(ls -A "$work" "$work/masked" | grep -c '\.tmp\.')
[[ $leftovers -eq 0 ]] && ok || bad "temporary files left behind: $(ls -A "$work" "$work/masked")"

summary "hostile data cli"
