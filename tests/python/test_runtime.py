"""edgegrad's Python runtime (edgegrad.load, edgegrad.Runtime: ctypes over the shared library)
against PyTorch, the CLI and the header:

    python tests/python/test_runtime.py --edgegrad build/edgegrad --abi-layout build/eg_abi_layout
                                        --workdir DIR [--filter S]

The library is the one EDGEGRAD_LIB names (CMake sets it to the build's libedgegrad.so), else
the package's own search. Runs under PyTorch 2.x and 1.13. Cases:
- ``abi_layout``: every structure python/edgegrad/_capi.py mirrors has the size, and each of
  its fields the offset and size, that the C compiler gives them (tests/python/abi_layout.c);
  and the struct size rules hold on the Python side: every structure the library reads (one
  with a struct_size, but the library's own eg_trainer_event) is made with struct_size = its
  size, and every function the header's size-passing macros wrap (those that fill a caller's
  structure) is declared with its trailing size argument;
- ``torch_step/<model>/<where>``: a training step exported with export_training_step, loaded
  from its JSON on the CPU kernels, compiled for SM8650 (fp32) in memory, and as an .egp that
  edgegrad.compile wrote (byte for byte the CLI's `edgegrad compile -o`), run once: its loss,
  gradients and buffer updates match PyTorch's eager step at the project tolerance, and the
  .egp's match `edgegrad run`'s output files bit for bit; models: BNConvNet trained whole (its
  BatchNorm buffers updated), SmallConvNet with BatchNorm fine-tuned (conv1 bias and head);
- ``describe``: inputs and outputs with name, dtype, shape, role, pair and state_dict as
  `edgegrad info --json` lists them;
- ``arrays``: a C-contiguous array of the input's dtype goes to the library as it is (no
  copy), a float64 Fortran-ordered image and int32 labels are converted once and give the same
  bits; outputs are copies: a second run and close() leave them as they were;
- ``errors``: each failing call raises the edgegrad.Error subclass of its status with the
  library's one-line message (a missing file: the CLI's message word for word), the status as
  ``e.status``: FileError, FormatError, ArgumentError (shape, dtype, unknown SoC, unknown
  input), StateError (output before a run, a closed runtime), LimitError (max_memory),
  RunError (a label out of range at run time);
- ``discovery``: in fresh interpreters without EDGEGRAD_LIB, the library is found in a source
  tree's build/ and in an install prefix's lib/ beside a pip-installed package; EDGEGRAD_LIB
  (a file or a folder) overrides both; with none, one line names every path looked at;
- ``runtime_library``: with EDGEGRAD_LIB at libedgegrad_rt.so, an .egp loads and runs and a
  Trainer takes a step on it (bit for bit as with libedgegrad), and a graph JSON is refused,
  saying that libedgegrad loads it;
- ``no_torch``: a fresh interpreter in which importing torch fails loads and runs a step, and
  (when the library has the trainer) trains it with edgegrad.Trainer; torch stays unimported.
Prints one line per case and `python_runtime: N passed, M failed`; exit 1 on any failure.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PYDIR = os.path.join(ROOT, "python")
sys.path[:0] = [os.path.join(ROOT, "tests", "conformance"), PYDIR]

import ctypes  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import edgegrad  # noqa: E402
import harness  # noqa: E402
import zoo  # noqa: E402
from edgegrad import _capi, export_training_step, runtime  # noqa: E402
from edgegrad.tolerance import compare  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)
B = 4


def case_abi_layout(a, work):
    r = subprocess.run([a.abi_layout], capture_output=True, text=True, timeout=60)
    if r.returncode:
        return f"{a.abi_layout} exit {r.returncode}: {r.stderr.strip()}"
    seen, bad = set(), []
    for line in r.stdout.splitlines():
        name, *nums = line.split()
        if "." in name:
            struct, field = name.split(".")
            d = getattr(_capi.STRUCTS[struct], field, None)
            got = (d.offset, d.size) if d else None
            seen.add(name)
        else:
            got = (ctypes.sizeof(_capi.STRUCTS[name]),)
        if got != tuple(int(n) for n in nums):
            bad.append(f"{name}: ctypes {got}, C {tuple(int(n) for n in nums)}")
    for struct, cls in _capi.STRUCTS.items():
        for field, _ in cls._fields_:
            if f"{struct}.{field}" not in seen:
                bad.append(f"{struct}.{field}: not printed by abi_layout.c")
        if f"{struct}.struct_size" in seen and struct != "eg_trainer_event":
            made = cls()
            if not isinstance(made, _capi.Sized) or made.struct_size != ctypes.sizeof(cls):
                bad.append(f"{struct}: made with struct_size {made.struct_size}, its size is "
                           f"{ctypes.sizeof(cls)}: a structure the library reads is a Sized")
    with open(os.path.join(ROOT, "include", "edgegrad.h")) as f:
        header = f.read().replace("\\\n", " ")  # continuation lines joined
    filling = re.findall(r"^#define (eg_\w+)\(.*sizeof \*\(out\)\)$", header, re.M)
    if len(filling) < 10:
        bad.append(f"edgegrad.h: found {len(filling)} size-passing macros, expected >= 10")
    for name in filling:
        proto = _capi.PROTOTYPES.get(name)
        if proto and proto[1][-1] is not ctypes.c_size_t:
            bad.append(f"{name}: fills a caller's structure, so it takes its size last (the "
                       f"header's macro passes sizeof); _capi declares {proto[1]}")
    return "; ".join(bad) or None


# ---- a step against PyTorch ----


def export_step(work, name):
    """(model, stem, inputs by name, PyTorch's outputs) of one small exported step."""
    torch.manual_seed(3)
    if name == "bnconv":
        model, trainable, shape = zoo.BNConvNet().train(), None, (3, 8, 8)
    else:
        model, shape = zoo.SmallConvNet(bn=True).train(), (3, 16, 16)
        trainable = ["conv1.bias", "fc.weight", "fc.bias"]
    x, t = torch.randn(B, *shape), torch.randint(0, 5, (B,))
    stem = os.path.join(work, name)
    export_training_step(model, F.cross_entropy, (x, t), stem, trainable=trainable)
    graph = json.load(open(stem + ".json"))
    names = trainable or [n for n, _ in model.named_parameters()]
    want, _, _ = zoo.eager(model, F.cross_entropy, x, t, names)
    return stem, zoo.runtime_inputs(graph, model, x, t), want


def case_torch_step(a, work, name, where):
    stem, inputs, want = export_step(work, name)
    if where == "cpu":
        rt = edgegrad.load(stem + ".json")
    elif where == "SM8650":
        rt = edgegrad.load(stem + ".json", soc="SM8650", precision="fp32")
    else:
        egp = edgegrad.compile(stem + ".json", stem + ".egp", "SM8650", precision="fp32")
        cli = stem + "_cli.egp"
        r = subprocess.run([a.edgegrad, "compile", stem + ".json", "--soc", "SM8650",
                            "--precision", "fp32", "-o", cli], capture_output=True, text=True)
        if r.returncode:
            return f"edgegrad compile: {r.stderr.strip()}"
        if open(egp, "rb").read() != open(cli, "rb").read():
            return "edgegrad.compile wrote other bytes than `edgegrad compile -o`"
        rt = edgegrad.load(egp, threads=2)
    with rt:
        if [t.name for t in rt.outputs] != list(want):
            return f"outputs {[t.name for t in rt.outputs]}, PyTorch's {list(want)}"
        got = rt.run(inputs)
        for k, v in want.items():
            bad = compare(got[k], v)
            if bad:
                return f"{k}: {bad}"
        if where == "egp":  # the CLI's run of the same program, bit for bit
            folder = os.path.join(work, "in")
            os.makedirs(folder)
            args = []
            for k, v in inputs.items():
                np.save(os.path.join(folder, k + ".npy"), v)
                args += ["--input", f"{k}={os.path.join(folder, k + '.npy')}"]
            out = os.path.join(work, "cli_out")
            r = subprocess.run([a.edgegrad, "run", rt.path, *args, "--output-dir", out],
                               capture_output=True, text=True)
            if r.returncode:
                return f"edgegrad run: {r.stderr.strip()}"
            for k, v in got.items():
                cli = np.load(os.path.join(out, k + ".npy"))
                if cli.dtype != v.dtype or cli.shape != v.shape or cli.tobytes() != v.tobytes():
                    return f"{k}: not the bits `edgegrad run` wrote"
    return None


def case_describe(a, work):
    stem, _, _ = export_step(work, "small")
    r = subprocess.run([a.edgegrad, "info", stem + ".json", "--json"], capture_output=True,
                       text=True)
    if r.returncode:
        return f"edgegrad info --json: {r.stderr.strip()}"
    info = json.loads(r.stdout)
    with edgegrad.load(stem + ".json") as rt:
        for kind, infos in (("inputs", rt.inputs), ("outputs", rt.outputs)):
            cli = info[kind]
            if [e["name"] for e in cli] != [t.name for t in infos]:
                return f"{kind}: {[t.name for t in infos]}, info lists {[e['name'] for e in cli]}"
            for e, t in zip(cli, infos):
                if e["dtype"] != str(t.dtype) or tuple(e["shape"]) != t.shape:
                    return f"{t.name}: {t.dtype} {t.shape}, info says {e['dtype']} {e['shape']}"
        roles = {t.name: (t.role, t.pair, t.state_dict) for t in rt.inputs + rt.outputs}
        want = {"input": ("data", None, None), "target": ("label", None, None),
                "conv1_bias": ("parameter", "grad_conv1_bias", "conv1.bias"),
                "fc_weight": ("parameter", "grad_fc_weight", "fc.weight"),
                "bn2_running_mean": ("buffer", "new_bn2_running_mean", "bn2.running_mean"),
                "bn2_num_batches_tracked": ("buffer", "new_bn2_num_batches_tracked",
                                            "bn2.num_batches_tracked"),
                "loss": ("loss", None, None),
                "grad_fc_bias": ("gradient", "fc_bias", None),
                "new_bn2_running_var": ("buffer_update", "bn2_running_var", None)}
        for k, v in want.items():
            if roles.get(k) != v:
                return f"{k}: (role, pair, state_dict) {roles.get(k)}, want {v}"
        if rt.input_classes("target") != (5, -100):
            return f"input_classes(target) {rt.input_classes('target')}, want (5, -100)"
    return None


def case_arrays(a, work):
    stem, inputs, _ = export_step(work, "small")
    with edgegrad.load(stem + ".json") as rt:
        x = inputs["input"]
        if runtime.as_input(x, np.dtype(np.float32), "input") is not x:
            return "a C-contiguous float32 array was copied before the library saw it"
        first = rt.run(inputs)
        again = rt.run(input=np.asfortranarray(x.astype(np.float64)),
                       target=inputs["target"].astype(np.int32))
        for k, v in first.items():
            if v.tobytes() != again[k].tobytes():
                return f"{k}: converted inputs gave other bits"
        keep = {k: v.copy() for k, v in first.items()}
        rt.run(input=x * 2)
        for k, v in first.items():
            if v.tobytes() != keep[k].tobytes():
                return f"{k}: an output returned earlier changed with the next run"
        loss = rt.output("loss")
    if loss.shape != () or loss.dtype != np.float32 or first["loss"].tobytes() != keep[
            "loss"].tobytes():
        return "outputs after close()"
    return None


# ---- errors ----


def case_errors(a, work):
    stem, inputs, _ = export_step(work, "small")
    missing = os.path.join(work, "missing.json")
    r = subprocess.run([a.edgegrad, "info", missing], capture_output=True, text=True)
    try:
        edgegrad.load(missing)
        return "loading a missing file raised nothing"
    except edgegrad.FileError as e:
        if r.stderr.strip() != f"edgegrad: {e}":
            return f"message {str(e)!r}, the CLI says {r.stderr.strip()!r}"
        if not isinstance(e, OSError) or e.status != edgegrad.Status.IO:
            return "FileError is no OSError or has no IO status"
    junk = os.path.join(work, "junk.json")
    open(junk, "w").write('{"format_version": 1, "nodes": [}')
    rt = edgegrad.load(stem + ".json")
    bad_label = dict(inputs, target=np.full(B, 7, np.int64))
    checks = [
        ("format", lambda: edgegrad.load(junk), edgegrad.FormatError, "junk.json"),
        ("shape", lambda: rt.set_input("input", np.zeros((2, 3), np.float32)),
         edgegrad.ArgumentError, "the model expects float32 [4, 3, 16, 16]"),
        ("dtype", lambda: rt.set_input("target", np.zeros(B, np.float32)),
         edgegrad.ArgumentError, "int64"),
        ("unknown input", lambda: rt.set_input("nope", np.zeros(1)), edgegrad.ArgumentError,
         "no input called 'nope'"),
        ("output before run", lambda: rt.output("loss"), edgegrad.StateError, "no successful run"),
        ("run without inputs", lambda: rt.run(), edgegrad.ArgumentError, "not set"),
        ("label", lambda: rt.run(bad_label), edgegrad.RunError, "7"),
        ("soc", lambda: edgegrad.load(stem + ".json", soc="SM0000"), edgegrad.ArgumentError,
         "SM8650"),
        ("max_memory", lambda: edgegrad.load(stem + ".json", max_memory="4K"),
         edgegrad.LimitError, "exceeds max_memory_bytes (4096 bytes)"),
        ("threads", lambda: edgegrad.load(stem + ".json", threads=0), edgegrad.ArgumentError,
         "threads 0"),
    ]
    for label, fn, cls, needle in checks:
        bad = harness.raises(fn, cls, needle)
        if bad:
            return f"{label}: {bad}"
    rt.close()
    return harness.raises(lambda: rt.run(inputs), edgegrad.StateError, "closed")


# ---- finding the library ----

_PROBE = """
import sys, edgegrad
try:
    print(edgegrad.library_path())
except edgegrad.LibraryNotFoundError as e:
    print("NOTFOUND", e)
"""


def _probe(pypath, lib=None):
    env = {k: v for k, v in os.environ.items()
           if k not in ("EDGEGRAD_LIB", "LD_LIBRARY_PATH", "PYTHONPATH")}
    env["PYTHONPATH"] = pypath
    if lib:
        env["EDGEGRAD_LIB"] = lib
    r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env,
                       cwd="/", timeout=120)
    return (r.stdout.strip() or r.stderr.strip()).splitlines()


def case_discovery(a, work):
    real = os.path.realpath(edgegrad.library_path())
    folder = os.path.dirname(real)
    full = os.path.join(folder, "libedgegrad.so")
    if not os.path.exists(full):
        return f"no libedgegrad.so beside {real}"
    # a source tree: REPO/python/edgegrad and REPO/build/libedgegrad.so
    tree = os.path.join(work, "tree")
    shutil.copytree(os.path.join(PYDIR, "edgegrad"), os.path.join(tree, "python", "edgegrad"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    os.makedirs(os.path.join(tree, "include"))
    open(os.path.join(tree, "include", "edgegrad.h"), "w").close()
    os.makedirs(os.path.join(tree, "build"))
    os.symlink(full, os.path.join(tree, "build", "libedgegrad.so"))
    # an install: PREFIX/lib/pythonX.Y/site-packages/edgegrad and PREFIX/lib/libedgegrad.so
    prefix = os.path.join(work, "prefix")
    site = os.path.join(prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}",
                        "site-packages")
    shutil.copytree(os.path.join(PYDIR, "edgegrad"), os.path.join(site, "edgegrad"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    os.symlink(full, os.path.join(prefix, "lib", "libedgegrad.so"))
    # a package with no library anywhere near it
    lone = os.path.join(work, "lone")
    shutil.copytree(os.path.join(PYDIR, "edgegrad"), os.path.join(lone, "edgegrad"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    other = os.path.join(work, "other")
    os.makedirs(other)
    os.symlink(full, os.path.join(other, "libedgegrad.so"))
    cases = [
        ("source tree", os.path.join(tree, "python"), None,
         os.path.join(tree, "build", "libedgegrad.so")),
        ("install prefix", site, None, os.path.join(prefix, "lib", "libedgegrad.so")),
        ("EDGEGRAD_LIB folder", os.path.join(tree, "python"), other,
         os.path.join(other, "libedgegrad.so")),
        ("EDGEGRAD_LIB file", site, full, full),
    ]
    for label, pypath, lib, want in cases:
        got = _probe(pypath, lib)
        if got != [want]:
            return f"{label}: found {got}, want {want}"
    got = _probe(lone)
    looked = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(lone))), "lib",
                          "libedgegrad.so")
    if (len(got) != 1 or not got[0].startswith("NOTFOUND") or looked not in got[0]
            or "EDGEGRAD_LIB" not in got[0] or "libedgegrad.so.0" not in got[0]):
        return f"no library: {got}, want one line naming {looked}, the soname and EDGEGRAD_LIB"
    got = _probe(lone, os.path.join(work, "nowhere.so"))
    if len(got) != 1 or not got[0].startswith("NOTFOUND") or "nowhere.so" not in got[0]:
        return f"EDGEGRAD_LIB at a missing file: {got}"
    return None


_RT_ONLY = """
import sys, numpy as np, edgegrad
egp, json_path, inputs = sys.argv[1], sys.argv[2], dict(np.load(sys.argv[3]))
assert edgegrad.library_path().endswith("libedgegrad_rt.so"), edgegrad.library_path()
with edgegrad.load(egp) as rt:
    out = rt.run(inputs)
batch = {k: inputs[k] for k in ("input", "target")}
with edgegrad.Trainer(egp, optimizer="sgd", lr=0.01) as tr:  # egp's STEM.init.safetensors
    out["step_loss"] = np.float64(tr.step(batch))
np.savez(sys.argv[4], **out)
try:
    edgegrad.load(json_path)
except edgegrad.FormatError as e:
    print(e)
"""


def case_runtime_library(a, work):
    stem, inputs, _ = export_step(work, "small")
    egp = edgegrad.compile(stem + ".json", stem + ".egp", "SM8650")
    with edgegrad.load(egp) as rt:
        want = rt.run(inputs)
    with edgegrad.Trainer(egp, optimizer="sgd", lr=0.01) as tr:
        want["step_loss"] = np.float64(tr.step({k: inputs[k] for k in ("input", "target")}))
    rt_lib = os.path.join(os.path.dirname(os.path.realpath(edgegrad.library_path())),
                          "libedgegrad_rt.so")
    np.savez(os.path.join(work, "in.npz"), **inputs)
    env = dict(os.environ, EDGEGRAD_LIB=rt_lib, PYTHONPATH=PYDIR)
    r = subprocess.run([sys.executable, "-c", _RT_ONLY, egp, stem + ".json",
                        os.path.join(work, "in.npz"), os.path.join(work, "out.npz")],
                       capture_output=True, text=True, env=env, timeout=300)
    if r.returncode:
        return f"with libedgegrad_rt: {r.stderr.strip().splitlines()[-1:]}"
    got = np.load(os.path.join(work, "out.npz"))
    for k, v in want.items():
        if got[k].tobytes() != v.tobytes():
            return f"{k}: libedgegrad_rt's run differs from libedgegrad's"
    msg = r.stdout.strip()
    if "libedgegrad_rt" not in msg or "compiled programs" not in msg or "\n" in msg:
        return f"a graph JSON with libedgegrad_rt: {msg!r}, want one line naming the library"
    return None


_NO_TORCH = """
import importlib.abc, sys
class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError("No module named 'torch' (blocked)", name="torch")
sys.meta_path.insert(0, NoTorch())
import numpy as np
import edgegrad
stem, data = sys.argv[1], dict(np.load(sys.argv[2]))
with edgegrad.load(stem + ".json") as rt:
    if edgegrad._capi.library().has("eg_runtime_load_weights"):
        rt.load_weights(stem + ".init.safetensors")
    else:
        rt.set_inputs(dict(np.load(sys.argv[3])))
    loss = rt.run(input=data["input"][:4], target=data["target"][:4])["loss"]
assert np.isfinite(loss), loss
trained = "no trainer"
if edgegrad._capi.library().has("eg_trainer_create"):
    with edgegrad.Trainer(stem + ".json", optimizer="sgd", lr=0.05) as tr:
        history = tr.fit(data, epochs=2)
        assert len(history) == 2 and history[-1]["train_loss"] < history[0]["train_loss"] * 2
        trained = f"trained {history[-1]['train_loss']:.4f}"
assert "torch" not in sys.modules, "edgegrad imported torch"
print("ok", trained)
"""


def case_no_torch(a, work):
    stem, inputs, _ = export_step(work, "small")
    rng = np.random.default_rng(0)
    np.savez(os.path.join(work, "data.npz"), input=rng.standard_normal((12, 3, 16, 16),
                                                                       dtype=np.float32),
             target=rng.integers(0, 5, 12))
    np.savez(os.path.join(work, "weights.npz"),
             **{k: v for k, v in inputs.items() if k not in ("input", "target")})
    env = dict(os.environ, PYTHONPATH=PYDIR)
    r = subprocess.run([sys.executable, "-c", _NO_TORCH, stem, os.path.join(work, "data.npz"),
                        os.path.join(work, "weights.npz")], capture_output=True, text=True,
                       env=env, cwd=work, timeout=300)
    if r.returncode or not r.stdout.startswith("ok"):
        return f"without torch: {(r.stderr.strip().splitlines() or ['(no output)'])[-1]}"
    if _capi.library().has("eg_trainer_create") and "trained" not in r.stdout:
        return f"without torch: the Trainer did not run: {r.stdout.strip()}"
    return None


def main():
    jobs = [("abi_layout", case_abi_layout)]
    jobs += [(f"torch_step/{m}/{w}", lambda a, work, m=m, w=w: case_torch_step(a, work, m, w))
             for m in ("bnconv", "small") for w in ("cpu", "SM8650", "egp")]
    jobs += [("describe", case_describe), ("arrays", case_arrays), ("errors", case_errors),
             ("discovery", case_discovery), ("runtime_library", case_runtime_library),
             ("no_torch", case_no_torch)]
    harness.main(__doc__, "python_runtime", jobs, required=("--abi-layout",))


if __name__ == "__main__":
    main()
