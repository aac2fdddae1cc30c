#!/usr/bin/env bash
# test-summary.sh BUILD_DIR — after ctest, prints every suite's own count line
# ("... N passed, M failed") from ctest's log, so `make check` shows what actually ran
# (e.g. how many PyTorch conformance cases matched), not only which executables passed.
set -euo pipefail
log="$1/Testing/Temporary/LastTest.log"
[[ -f "$log" ]] || { echo "test-summary: no ctest log at $log" >&2; exit 1; }
echo "---- suite summaries ($1)"
awk '
  /^[0-9]+\/[0-9]+ Testing: / { name = $3 }
  /passed, [0-9]+ failed/ || /^(convolution_backward sweep|training steps|conformance)/ {
    printf "  %-32s %s\n", name, $0
  }' "$log"
