#!/usr/bin/env bash
# test_python_package.sh EDGEGRAD WORKDIR — the Python package installed: a virtual
# environment made from /usr/bin/python3 (--system-site-packages: Debian's PyTorch and numpy)
# installs python/ offline with pip (--no-build-isolation --no-deps --no-index: setuptools and
# wheel come from Debian's python3-setuptools / python3-wheel); the installed metadata carries
# EG_VERSION_STRING and requires numpy, never torch; then, from a folder outside the source tree
# and without PYTHONPATH, it imports edgegrad from the environment, exports a small function and
# `EDGEGRAD run --expect` matches PyTorch's result; then, with the build installed into the same
# prefix (`cmake --install`), edgegrad.load finds libedgegrad.so there and runs the graph.
set -u
exe=$1
work=$2
source "$(dirname "$0")/harness.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work/outside"
unset PYTHONPATH

# pip builds in the folder it installs from: build a copy so the source tree stays untouched.
cp -r "$repo/python" "$work/src"
rm -rf "$work/src/build" "$work/src"/*.egg-info
find "$work/src" -name __pycache__ -prune -exec rm -rf {} +

venv=$work/venv
if /usr/bin/python3 -m venv --system-site-packages "$venv" >"$work/venv.txt" 2>&1; then ok; else
  bad "python3 -m venv: $(tail -n 3 "$work/venv.txt")"
fi
py=$venv/bin/python
if "$py" -m pip install --no-build-isolation --no-deps --no-index "$work/src" \
     >"$work/pip.txt" 2>&1; then
  ok
else
  bad "pip install python/ failed: $(tail -n 5 "$work/pip.txt")"
fi

version=$(sed -n 's/^#define EG_VERSION_STRING "\(.*\)"$/\1/p' "$repo/include/edgegrad.h")
"$py" -m pip show edgegrad >"$work/show.txt" 2>&1
if grep -qx "Version: $version" "$work/show.txt" && [[ -n $version ]]; then ok; else
  bad "installed version is not EG_VERSION_STRING ($version): $(head -c 500 "$work/show.txt")"
fi
if grep -qx "Requires: numpy" "$work/show.txt"; then ok; else
  bad "installed package should require numpy only: $(grep '^Requires' "$work/show.txt")"
fi

# export from outside the tree: edgegrad must come from the environment's site-packages
(cd "$work/outside" && "$py" - "$venv" <<'PYEOF') >"$work/export.txt" 2>&1
import os, sys
import numpy as np
import torch
import edgegrad
from edgegrad import export_function
from edgegrad.tolerance import compare

venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(edgegrad.__file__)
assert where.startswith(venv + os.sep), f"edgegrad imported from {where}, not from {venv}"

def fn(x, y):
    return torch.relu(x) * y + 1

x, y = torch.randn(2, 3), torch.randn(2, 3)
export_function(fn, (x, y), "tiny", arg_names=("x", "y"), output_names=("z",))
os.makedirs("ref", exist_ok=True)
np.save("x.npy", x.numpy())
np.save("y.npy", y.numpy())
np.save("ref/z.npy", fn(x, y).numpy())
assert compare(fn(x, y).numpy(), np.load("ref/z.npy")) is None
print("exported", where)
PYEOF
if [[ $? -eq 0 && -f $work/outside/tiny.json ]]; then ok; else
  bad "export with the installed package: $(tail -n 5 "$work/export.txt")"
fi

if (cd "$work/outside" && "$exe" run tiny.json --input x=x.npy --input y=y.npy --output-dir out \
      --expect ref) >"$work/run.txt" 2>&1 && grep -q "^ok: 1 outputs compared" "$work/run.txt"; then
  ok
else
  bad "edgegrad run --expect on the exported graph: $(tail -n 5 "$work/run.txt")"
fi

# The runtime from the installed package: `cmake --install` into the environment's prefix puts
# libedgegrad.so in $venv/lib, where the package looks for it (no EDGEGRAD_LIB, no PYTHONPATH,
# no LD_LIBRARY_PATH); edgegrad.load runs the exported graph as `edgegrad run` did. Not in a
# sanitizer build (its library needs the sanitizer runtime loaded first) nor a cross build.
if [[ -n ${EG_SANITIZED:-} || -n ${EG_CROSS_BUILD:-} ]]; then
  echo "test_python_package: edgegrad.load from the installed package skipped: ${EG_SANITIZED:+sanitizer}${EG_CROSS_BUILD:+cross} build"
else
  build=$(cd "$(dirname "$exe")" && pwd)
  if cmake --install "$build" --prefix "$venv" >"$work/install.txt" 2>&1; then ok; else
    bad "cmake --install into the environment: $(tail -n 5 "$work/install.txt")"
  fi
  (cd "$work/outside" && env -u EDGEGRAD_LIB -u LD_LIBRARY_PATH "$py" - "$venv" <<'PYEOF') >"$work/load.txt" 2>&1
import os, sys
import numpy as np
import edgegrad
from edgegrad.tolerance import compare

want = os.path.join(os.path.realpath(sys.argv[1]), "lib", "libedgegrad.so")
assert os.path.realpath(os.path.dirname(edgegrad.library_path())) == os.path.dirname(want), \
    f"library {edgegrad.library_path()}, want {want}"
with edgegrad.load("tiny.json") as rt:
    z = rt.run(x=np.load("x.npy"), y=np.load("y.npy"))["z"]
assert z.tobytes() == np.load("out/z.npy").tobytes(), "not the bits edgegrad run wrote"
print("loaded", edgegrad.library_path())
PYEOF
  if [[ $? -eq 0 ]]; then ok; else
    bad "edgegrad.load with the installed package and library: $(tail -n 5 "$work/load.txt")"
  fi
fi

summary test_python_package
