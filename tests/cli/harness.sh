# harness.sh — sourced by every tests/cli/test_*.sh after it sets $work: pass/fail counting,
# expect_fail and the closing summary, defined once so every script checks the same things.
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# Whether FILE holds an AddressSanitizer/UndefinedBehaviorSanitizer report.
sanitizer() { grep -q "Sanitizer\|runtime error" "$@"; }

# expect_fail CODE NEEDLE -- CMD...: exit status CODE, one stderr line containing NEEDLE, no
# sanitizer report.
expect_fail() {
  local code=$1 needle=$2
  shift 3
  "$@" >"$work/out.txt" 2>"$work/err.txt"
  local rc=$? lines
  lines=$(wc -l <"$work/err.txt")
  if [[ $rc -ne $code || $lines -ne 1 ]] || ! grep -qF -- "$needle" "$work/err.txt"; then
    bad "$* -> exit $rc, stderr: $(head -c 2000 "$work/err.txt") (wanted exit $code and '$needle')"
  elif sanitizer "$work/err.txt"; then
    bad "$* -> sanitizer report"
  else
    ok
  fi
}

# summary NAME: prints the counts; the script's exit status (fails when nothing was checked).
summary() {
  echo "$1: $passed passed, $failed failed"
  [[ $failed -eq 0 && $passed -gt 0 ]]
}

# ---- a compiled program and the CLI's run of it, for tests of apps that run .egp files ----
# compile_and_run_egp EXE DATA: compiles DATA/tiny_step.json for SM8650 into $work/step.egp and
# runs it with `EXE run` into $work/cli_out; sets `pairs` (NAME=FILE.npy, as the apps take the
# inputs) and `cli_outputs` (the files the CLI wrote, at least 5 or a failure).
compile_and_run_egp() {
  local exe=$1 data=$2 f inputs=()
  pairs=()
  for f in "$data"/tiny_step_inputs/*.npy; do
    pairs+=("$(basename "$f" .npy)=$f")
    inputs+=(--input "$(basename "$f" .npy)=$f")
  done
  if $exe compile "$data/tiny_step.json" --soc SM8650 -o "$work/step.egp" >"$work/compile.txt" 2>&1; then
    ok; else bad "compile: $(cat "$work/compile.txt")"; fi
  if $exe run "$work/step.egp" "${inputs[@]}" --output-dir "$work/cli_out" --quiet >"$work/cli.log" 2>&1; then
    ok; else bad "run: $(cat "$work/cli.log")"; fi
  cli_outputs=("$work"/cli_out/*.npy)
  if [[ ${#cli_outputs[@]} -ge 5 && -e ${cli_outputs[0]} ]]; then ok; else
    bad "edgegrad run wrote ${#cli_outputs[@]} outputs"; fi
}

# same_as_cli NAME DIR: every file of cli_outputs has a byte-identical twin in DIR.
same_as_cli() {
  local f
  for f in "${cli_outputs[@]}"; do
    if cmp -s "$f" "$2/$(basename "$f")"; then ok; else bad "$1's $(basename "$f") differs from edgegrad run's"; fi
  done
}

# ---- trained weights ----
# same_weights NAME A B: the safetensors files A and B hold the same tensors (names, dtypes,
# shapes) with the same bytes; their metadata (the producer) may differ.
same_weights() {
  local why
  why=$(/usr/bin/python3 - "$2" "$3" <<'PY'
import json, struct, sys
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    head.pop("__metadata__", None)
    data = b[8 + n:]
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in head.items()}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
if sorted(a) != sorted(b):
    print("names differ: %s / %s" % (sorted(a), sorted(b)))
elif not a:
    print("no tensors")
else:
    for k in sorted(a):
        if a[k] != b[k]:
            print("%s differs" % k)
            break
PY
)
  if [[ -z $why ]]; then ok; else bad "$1: $2 and $3: $why"; fi
}
