# harness.sh — sourced by tests/cli/test_*.sh: pass/fail counting and expect_fail. Needs $work.
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# expect_fail CODE NEEDLE -- CMD...: exit status CODE, one stderr line containing NEEDLE, no
# sanitizer report.
expect_fail() {
  local code=$1 needle=$2
  shift 3
  "$@" >"$work/out.txt" 2>"$work/err.txt"
  local rc=$? lines
  lines=$(wc -l <"$work/err.txt")
  if [[ $rc -ne $code || $lines -ne 1 ]] || ! grep -qF -- "$needle" "$work/err.txt"; then
    bad "$* -> exit $rc, stderr: $(cat "$work/err.txt") (wanted exit $code and '$needle')"
  elif grep -q "Sanitizer" "$work/err.txt"; then
    bad "$* -> sanitizer report"
  else
    ok
  fi
}
