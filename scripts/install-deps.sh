#!/usr/bin/env bash
# install-deps.sh — installs the Debian packages edgegrad needs, if any are missing.
#
#   scripts/install-deps.sh build   compiler, CMake, jansson (JSON), OpenBLAS built for OpenMP
#                                   (CBLAS sgemm sharing the OpenMP thread pool)
#   scripts/install-deps.sh test    the above plus Debian's python3-torch and numpy (the oracle)
#
# Idempotent and silent when everything is present. Installing needs root (apt-get); run as
# another user with everything missing, it says what to install and fails.
set -euo pipefail

build_pkgs=(gcc make cmake pkg-config libjansson-dev libopenblas-openmp-dev)
test_pkgs=(python3 python3-torch python3-numpy)

case "${1:-build}" in
  build) want=("${build_pkgs[@]}") ;;
  test) want=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
  *) echo "usage: $0 [build|test]" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing Debian packages: ${missing[*]} (run as root: apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq "${missing[@]}" >/dev/null
