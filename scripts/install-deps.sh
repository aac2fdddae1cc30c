#!/usr/bin/env bash
# install-deps.sh — installs what edgegrad needs, if anything is missing.
#
#   scripts/install-deps.sh build   compiler, CMake, jansson (JSON), OpenBLAS built for OpenMP
#                                   (CBLAS sgemm sharing the OpenMP thread pool), libzip (the
#                                   CLI's .npz data sets) and zlib (its checkpoints' CRC-32)
#   scripts/install-deps.sh demo    the build packages plus python3 with numpy and Debian's
#                                   python3-sklearn, which ships the digits data set `make demo`
#                                   fine-tunes on (no PyTorch)
#   scripts/install-deps.sh test    the above, plus both PyTorch versions the tests compare with:
#                                   Debian's python3-torch 1.13 with numpy and torchvision 0.14
#                                   (/usr/bin/python3), setuptools and wheel (the offline
#                                   `pip install ./python` of tests/cli/test_python_package.sh),
#                                   PyTorch 2.13.0 (CPU build) with numpy and Pillow
#                                   (torchvision's model files import it) from PyPI in the
#                                   virtual environment .venv, and there too Qualcomm's HTP
#                                   stack the NPU partitions are checked on (tests/htp):
#                                   onnxruntime-qnn 2.7.0 (QNN's HTP backend as x86 emulation
#                                   behind ONNX Runtime's QNN execution provider),
#                                   onnxruntime 1.32.0 and onnx 1.23.2, and Flower
#                                   (flwr[simulation] 1.42.0, with Ray) for edgegrad.federated
#                                   and `make fed-demo` — test dependencies only: neither the C
#                                   build nor `make demo` uses them
#   scripts/install-deps.sh fuzz    the build packages plus clang with libFuzzer (libclang-rt-dev)
#                                   and its OpenMP runtime (libomp-dev), for `make fuzz` and
#                                   `make fuzz-smoke` (CI)
#   scripts/install-deps.sh aarch64 the build packages plus the ARM64 cross toolchain
#                                   (gcc-aarch64-linux-gnu), jansson, OpenBLAS and libzip for arm64
#                                   (Debian multiarch: adds the arm64 architecture to dpkg) and
#                                   qemu-user, which runs the tests, for `make check-aarch64`
#
# Idempotent and silent when everything is present. Installing Debian packages needs root
# (apt-get); run as another user with packages missing, it says what to install and fails.
# The .venv is made with the first Python 3.11 found (python3.11, python3 on PATH, then
# /usr/bin/python3, for which python3-venv is installed); `pip install torch==2.13.0` takes the
# CPU build (README, "PyTorch versions"). A .venv whose torch is right but whose QNN packages
# are missing or at other versions gets just those (pip install of the three pins); so does one
# without flwr at its pin.
set -euo pipefail
cd "$(dirname "$0")/.."

build_pkgs=(gcc make cmake pkg-config libjansson-dev libopenblas-openmp-dev libzip-dev zlib1g-dev)
demo_pkgs=(python3 python3-numpy python3-sklearn)
fuzz_pkgs=(clang libclang-rt-dev libomp-dev)
aarch64_pkgs=(gcc-aarch64-linux-gnu qemu-user libjansson-dev:arm64 libopenblas-openmp-dev:arm64
              libzip-dev:arm64 zlib1g-dev:arm64)
test_pkgs=(python3 python3-torch python3-numpy python3-torchvision python3-venv python3-pip
           python3-setuptools python3-wheel)
TORCH2=2.13.0
QNN_PINS=(onnxruntime-qnn==2.7.0 onnxruntime==1.32.0 onnx==1.23.2)
FLWR_PIN="flwr[simulation]==1.42.0"
VENV=.venv

case "${1:-build}" in
  build) want=("${build_pkgs[@]}") ;;
  demo) want=("${build_pkgs[@]}" "${demo_pkgs[@]}") ;;
  test) want=("${build_pkgs[@]}" "${test_pkgs[@]}" "${demo_pkgs[@]}") ;;
  fuzz) want=("${build_pkgs[@]}" "${fuzz_pkgs[@]}") ;;
  aarch64) want=("${build_pkgs[@]}" "${aarch64_pkgs[@]}") ;;
  *) echo "usage: $0 [build|demo|test|fuzz|aarch64]" >&2; exit 2 ;;
esac

# installed PKG[:ARCH]: PKG is installed for ARCH (default: the host's; "all" packages count).
# With a foreign architecture added (aarch64), dpkg lists a library once per architecture.
native=$(dpkg --print-architecture)
installed() {
  local name=${1%%:*} arch=$native
  [[ $1 == *:* ]] && arch=${1#*:}
  dpkg-query -W -f='${Status} ${Architecture}\n' "$name" 2>/dev/null |
    grep -Eq "^install ok installed ($arch|all)\$"
}
missing=()
for p in "${want[@]}"; do
  installed "$p" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-deps: missing Debian packages: ${missing[*]} (run as root: apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  # arm64 packages (the aarch64 group) come from Debian's multiarch archive.
  if [[ " ${missing[*]}" == *:arm64* ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
[[ "${1:-build}" == test ]] || exit 0

# PyTorch 2.x in .venv: present and importable with the pinned version, else (re)made.
# qnn_ok: the QNN_PINS distributions are installed at exactly those versions and import.
torch_ok() {
  "$VENV/bin/python" -c "import torch, numpy, PIL, sys; sys.exit(torch.__version__.split('+')[0] != '$TORCH2')" 2>/dev/null
}
qnn_ok() {
  "$VENV/bin/python" - "${QNN_PINS[@]}" 2>/dev/null <<'PY'
import importlib.metadata as md, sys
import onnx, onnxruntime, onnxruntime_qnn
sys.exit(any(md.version(n) != v for n, v in (p.split("==") for p in sys.argv[1:])))
PY
}
install_qnn() {
  echo "install-deps: installing ${QNN_PINS[*]} in $VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${QNN_PINS[@]}"
  qnn_ok || { echo "install-deps: $VENV: ${QNN_PINS[*]} do not import after pip install" >&2; exit 1; }
}
# flwr_ok: Flower at the pinned version, with its simulation engine (Ray), imports.
flwr_ok() {
  "$VENV/bin/python" -c "import flwr, ray, sys; sys.exit(flwr.__version__ != '${FLWR_PIN##*==}')" 2>/dev/null
}
install_flwr() {
  echo "install-deps: installing $FLWR_PIN in $VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$FLWR_PIN"
  flwr_ok || { echo "install-deps: $VENV: $FLWR_PIN does not import after pip install" >&2; exit 1; }
}
if torch_ok; then
  qnn_ok || install_qnn
  flwr_ok || install_flwr
  exit 0
fi
base=""
for py in python3.11 python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import sys, venv; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    base=$(command -v "$py"); break
  fi
done
[[ -n "$base" ]] || { echo "install-deps: no Python 3.11 with venv found (PyTorch $TORCH2's CPU build is for 3.11)" >&2; exit 1; }
echo "install-deps: making $VENV with $base and installing torch==$TORCH2 (CPU), numpy, pillow"
rm -rf "$VENV"
"$base" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "torch==$TORCH2" numpy pillow
"$VENV/bin/python" -c "import torch, sys; v = torch.__version__; print('install-deps: torch', v, 'in $VENV'); sys.exit(not v.startswith('$TORCH2') or torch.version.cuda is not None)" || {
  echo "install-deps: $VENV has torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)') — want the $TORCH2 CPU build" >&2; exit 1; }
install_qnn
install_flwr
