#!/usr/bin/env bash
# run_mutants.sh — mutation testing: does the test suite catch realistic bugs?
#
#   tests/mutants/run_mutants.sh [NAME[,NAME...]]      (make mutants [MUTANTS=a,b])
#
# Each tests/mutants/<name>.patch is one realistic bug, as header lines followed by a unified
# diff as `git diff` prints it (paths a/... b/... from the repository root; git apply skips
# the header lines):
#   # mutant: <one line: what the bug is>
#   # tests: <ctest -R regex naming the tests that must kill it>
#   # build: release | asan          (optional, default release)
#
# The runner never touches the working tree. It mirrors the repository's tracked and
# untracked-not-ignored files (git ls-files -co --exclude-standard) into
# $MUTANTS_WORK/src (default build-mutants/src; a file is rewritten only when its content
# changed, so the builds below stay incremental and a file left mutated by an interrupted run
# is restored and rebuilt), then for each build kind the chosen mutants use it builds there
# with the Makefile's flags (release: Release; asan: Debug with EG_SANITIZE=ON; the Pythons:
# /usr/bin/python3 and the repository's .venv/bin/python). Before any mutant, each named
# regex must select at least one test and its tests must PASS unmutated (otherwise their
# failing says nothing about the mutant). Then per mutant: the patch is applied (one that
# does not apply, or no longer builds, is STALE: the code it mutates has changed), the tree
# rebuilt, `ctest -R <regex>` run with check-asan's ASAN_OPTIONS / UBSAN_OPTIONS, and the
# patch reverted. KILLED when a test failed, SURVIVED when all passed.
#
# Prints a table and "mutants: N passed, M failed" (passed = killed); exits 1 when any
# mutant survived or was stale, or a regex's tests fail unmutated; 2 for bad usage. Logs of
# every build and ctest run are in $MUTANTS_WORK/logs. JOBS: parallel build jobs and tests.
# MUTANTS_TESTS=<regex> runs that regex for every mutant instead of its own: which mutants
# does a given set of tests kill (e.g. the suite before a new test)? MUTANTS_DIR: where the
# patches are (default tests/mutants).
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MUTANTS_DIR=${MUTANTS_DIR:-$ROOT/tests/mutants}
WORK=${MUTANTS_WORK:-$ROOT/build-mutants}
SRC=$WORK/src
LOGS=$WORK/logs
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
PY2=$ROOT/.venv/bin/python
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# git apply in $SRC must not find the repository around it (it would apply relative to that
# repository's root and skip every path outside $SRC).
export GIT_CEILING_DIRECTORIES=$WORK

die() { echo "mutants: $*" >&2; exit 2; }

[ $# -le 1 ] || die "usage: run_mutants.sh [NAME[,NAME...]]"
command -v git >/dev/null || die "git is needed (git ls-files, git apply)"
[ -x "$PY2" ] || die "$PY2 is missing: make test-deps creates it"

# ---- which mutants, and their headers ------------------------------------------------------
names=()
if [ -n "${1:-}" ]; then
  IFS=, read -r -a names <<<"$1"
  for n in "${names[@]}"; do
    [ -f "$MUTANTS_DIR/$n.patch" ] || die "no mutant $n ($MUTANTS_DIR/$n.patch)"
  done
else
  for f in "$MUTANTS_DIR"/*.patch; do
    [ -e "$f" ] && names+=("$(basename "$f" .patch)")
  done
fi
[ ${#names[@]} -gt 0 ] || die "no mutants in $MUTANTS_DIR"

header() { # header FILE KEY: the value of "# KEY: value" before the diff
  sed -n '/^diff --git /q; s/^# '"$2"': *//p' "$1" | head -n 1 | sed 's/[[:space:]]*$//'
}

declare -A what tests kind result
bad_header=()
for n in "${names[@]}"; do
  f=$MUTANTS_DIR/$n.patch
  what[$n]=$(header "$f" mutant)
  tests[$n]=${MUTANTS_TESTS:-$(header "$f" tests)}
  kind[$n]=$(header "$f" build)
  kind[$n]=${kind[$n]:-release}
  if [ -z "${what[$n]}" ] || [ -z "${tests[$n]}" ] ||
     { [ "${kind[$n]}" != release ] && [ "${kind[$n]}" != asan ]; }; then
    result[$n]="STALE (header: needs '# mutant:', '# tests:', build release|asan)"
    bad_header+=("$n")
  fi
done

# ---- the scratch copy ------------------------------------------------------------------------
mkdir -p "$SRC" "$LOGS"
sync_copy() {
  local list=$WORK/files.txt f
  (cd "$ROOT" && git ls-files -co --exclude-standard -z) >"$list" || die "git ls-files failed"
  declare -A keep=()
  while IFS= read -r -d '' f; do
    [ -f "$ROOT/$f" ] || continue # tracked but deleted in the working tree
    keep[$f]=1
    if ! cmp -s "$ROOT/$f" "$SRC/$f"; then
      mkdir -p "$(dirname "$SRC/$f")"
      cp -p "$ROOT/$f" "$SRC/$f" && touch "$SRC/$f" # new content: a new mtime, rebuilt
    fi
  done <"$list"
  # what the tree no longer has goes too (CMake globs tests/unit/test_*.c, tests/ops/*.py)
  while IFS= read -r -d '' f; do
    f=${f#"$SRC"/}
    [ -n "${keep[$f]:-}" ] || rm -f "$SRC/$f"
  done < <(find "$SRC" -type f -print0)
}
echo "mutants: copying the tree to $SRC"
sync_copy

# a patch that does not apply to the unmutated copy is stale: said before any build
for n in "${names[@]}"; do
  [ -z "${result[$n]:-}" ] || continue
  if ! (cd "$SRC" && git apply --check "$MUTANTS_DIR/$n.patch") >"$LOGS/$n.log" 2>&1; then
    result[$n]="STALE (does not apply: $LOGS/$n.log)"
  fi
done

build() { # build KIND: configure and build $WORK/build-KIND; log in $LOGS/build-KIND*.log
  local k=$1 dir=$WORK/build-$1 log=$LOGS/build-$1.log
  local flags=(-DCMAKE_BUILD_TYPE=Release)
  [ "$k" = asan ] && flags=(-DCMAKE_BUILD_TYPE=Debug -DEG_SANITIZE=ON)
  cmake -S "$SRC" -B "$dir" "${flags[@]}" -DEG_PYTHON=/usr/bin/python3 -DEG_PYTHON2="$PY2" \
    >"$log" 2>&1 && cmake --build "$dir" -j "$JOBS" >>"$log" 2>&1
}

run_tests() { # run_tests KIND REGEX LOG: 0 when every selected test passes
  (cd "$WORK/build-$1" && ctest -R "$2" -j "$JOBS" --timeout 900 --output-on-failure) >"$3" 2>&1
}

count_tests() { # count_tests KIND REGEX: how many tests the regex selects
  (cd "$WORK/build-$1" && ctest -N -R "$2") 2>/dev/null | sed -n 's/^Total Tests: *//p'
}

# ---- unmutated: each kind builds, each regex selects tests that pass -----------------------
declare -A base_ok
kinds=$(for n in "${names[@]}"; do [ -z "${result[$n]:-}" ] && echo "${kind[$n]}"; done | sort -u)
for k in $kinds; do
  echo "mutants: building $k (unmutated)"
  build "$k" || die "the unmutated $k build fails: see $LOGS/build-$k.log"
  for n in "${names[@]}"; do
    [ -z "${result[$n]:-}" ] && [ "${kind[$n]}" = "$k" ] || continue
    key="$k ${tests[$n]}"
    [ -n "${base_ok[$key]:-}" ] && continue
    cnt=$(count_tests "$k" "${tests[$n]}")
    if [ "${cnt:-0}" -eq 0 ]; then
      base_ok[$key]="no test matches"
    elif run_tests "$k" "${tests[$n]}" "$LOGS/baseline-$n.log"; then
      base_ok[$key]=ok
      echo "mutants: unmutated $k, -R '${tests[$n]}': $cnt tests pass"
    else
      base_ok[$key]="fails unmutated: $LOGS/baseline-$n.log"
    fi
  done
done

# ---- each mutant -----------------------------------------------------------------------------
for n in "${names[@]}"; do
  [ -z "${result[$n]:-}" ] || continue
  k=${kind[$n]} patch=$MUTANTS_DIR/$n.patch log=$LOGS/$n.log
  if [ "${base_ok["$k ${tests[$n]}"]}" != ok ]; then
    result[$n]="BASELINE (${base_ok["$k ${tests[$n]}"]})"
    continue
  fi
  (cd "$SRC" && git apply "$patch") >>"$log" 2>&1 || die "$n: git apply failed after --check"
  echo "mutants: $n ($k): building"
  if ! build "$k" >>"$log" 2>&1; then
    result[$n]="STALE (does not build: $LOGS/build-$k.log)"
    cp "$LOGS/build-$k.log" "$LOGS/$n.build.log"
  else
    echo "mutants: $n ($k): ctest -R '${tests[$n]}'"
    if run_tests "$k" "${tests[$n]}" "$log"; then
      result[$n]="SURVIVED"
    else
      result[$n]="killed"
    fi
  fi
  (cd "$SRC" && git apply -R "$patch") >>"$log" 2>&1 ||
    die "$n: could not revert the patch in $SRC (remove $WORK to start afresh)"
done

# ---- the table ---------------------------------------------------------------------------
passed=0 failed=0
echo
printf '%-34s %-7s %-9s %s\n' MUTANT BUILD RESULT TESTS
for n in "${names[@]}"; do
  r=${result[$n]}
  if [ "$r" = killed ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  printf '%-34s %-7s %-9s %s\n' "$n" "${kind[$n]}" "${r%% *}" "${tests[$n]}"
  [ "$r" = killed ] || echo "    ${what[$n]:-?}: ${r}"
done
echo "mutants: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
