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
