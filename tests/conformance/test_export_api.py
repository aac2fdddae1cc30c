"""The exporter's Python API as a new user meets it, checked against PyTorch and the CLI:

    python tests/conformance/test_export_api.py --edgegrad build/edgegrad --workdir DIR

Runs under PyTorch 2.x and 1.13; the torch.export cases (export_joint) need 2.x and are
reported as "not run" (never passed) under 1.13. Cases:
- ``import_without_torch``: ``import edgegrad`` in a fresh interpreter where any import of
  torch fails (a sys.meta_path finder refuses it): __version__, FORMAT_VERSION, safetensors
  and tolerance work, torch stays unimported, and an exporter or load_state_dict names torch
  as what is missing;
- ``version``: edgegrad.__version__ is the C library's EG_VERSION_STRING, what
  `edgegrad --version` prints, and what python/pyproject.toml's package metadata reads;
- ``runtime_ops_table``: edgegrad._ops.RUNTIME_OPS is src/ir/ops.def's op list, target for
  target and family (src/ops file) for family, both ways;
- ``runtime_refusals``: reflection padding (an op the runtime lacks) and float64 models
  are refused at export with one line naming the node, the op and the module, writing no
  file; for each op family with a dtype rule, a float64 graph the exporter refuses is refused
  by `edgegrad info` too when written with check_runtime=False, and its float32 twin is taken
  by both;
- ``trainable_requires_grad``: export_training_step(trainable=None) leaves a parameter with
  requires_grad=False frozen (a static, no grad_ output, not in the init file), and the
  step's outputs, run by `edgegrad run`, match PyTorch's;
- ``load_state_dict``: edgegrad.load_state_dict of an init file gives torch tensors under
  state_dict names with their dtypes (int64 num_batches_tracked), equal to the model's, and
  load_state_dict(strict=False) misses exactly the frozen parameters;
- ``joint_dropout`` (2.x): a wrapper-with-loss around conv + BatchNorm + Dropout2d + Dropout +
  linear (conv weight frozen), train mode, through torch.export and export_joint: the masks
  are inputs ``bernoulli_<k>`` listed under random_inputs with p = 1 - dropout p; `edgegrad
  run` with the export's masks matches PyTorch's eager step with the same masks; `edgegrad
  train` (2 SGD steps, masks drawn from --seed) matches a PyTorch loop given the same masks;
  and its --out file, read by edgegrad.load_state_dict, loads into the plain model with
  strict=False missing exactly conv.weight, nothing unexpected; its roles are those of
  torch.export's graph signature (``roles``' rules);
- ``roles``: export_training_step of conv + BatchNorm + Dropout2d + Dropout + linear with
  cross_entropy (train mode) records each input's and output's role — input data, target
  label, parameters with their gradients ("of"), BatchNorm's buffers with their updates, the
  masks random, the loss — and its eval graph the same inputs' roles without gradients, its
  outputs loss and output; with mse_loss the target is data; `edgegrad info --json` reads the
  same roles back from both files;
- ``roles_function``: a hand-written SGD step through export_function with input_roles and
  output_roles trains under `edgegrad run --steps` exactly alike (losses and weights, byte for
  byte) with its gradients named grad_w / grad_b or dW / db, and as PyTorch's loop; an output
  named grad_x without a role makes no parameter (nothing to train); roles that break the
  contract are refused at export, one line, no file;
- ``joint_refusals`` (2.x): export_joint of a reflection-padded model is refused naming the node and
  op (its decomposition's first one the runtime lacks); the state_dict prefix rule (stripped
  only when one submodule holds every parameter and buffer; "" keeps torch's names).
Prints one line per case and last `export_api: N passed, M failed`; exit 1 on any failure.
"""
import argparse
import copy
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
sys.path[:0] = [HERE, PYDIR]

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import edgegrad  # noqa: E402
from edgegrad import _ops, safetensors  # noqa: E402
from edgegrad._functional import replay_draws  # noqa: E402
from edgegrad.tolerance import compare  # noqa: E402
from test_train import Masks, random_draws  # noqa: E402  (edgegrad train's mask stream)

warnings.filterwarnings("ignore", category=FutureWarning)
HAS_EXPORT = hasattr(torch, "export") and hasattr(torch.export, "ExportedProgram")


class NotRun(Exception):
    """A case this PyTorch cannot run (said as such, never counted as passed)."""


# --------------------------------------------------------------------------------------------
# helpers


def cli(exe, *args):
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=600)


def stem_files(stem):
    folder, base = os.path.split(stem)
    return sorted(f for f in os.listdir(folder) if f.startswith(base + "."))


def refused(fn, stem, *wanted):
    """fn() must raise a one-line ValueError containing each of ``wanted`` and leave no file of
    ``stem``; returns a failure or None."""
    try:
        fn()
    except ValueError as e:
        text = str(e)
        if "\n" in text:
            return f"message is not one line: {text!r}"
        missing = [w for w in wanted if w not in text]
        if missing:
            return f"message lacks {missing}: {text}"
        left = stem_files(stem)
        return f"files written although refused: {left}" if left else None
    return f"not refused (wanted {wanted})"


def run_graph(exe, json_path, inputs, folder):
    """`edgegrad run` on {name: array}: ({output name: array}, None) or (None, failure)."""
    os.makedirs(folder, exist_ok=True)
    argv = ["run", json_path, "--output-dir", os.path.join(folder, "out"), "-q"]
    for name, array in inputs.items():
        path = os.path.join(folder, name + ".npy")
        np.save(path, np.asarray(array))
        argv += ["--input", f"{name}={path}"]
    r = cli(exe, *argv)
    if r.returncode != 0:
        return None, f"edgegrad run exit {r.returncode}: {r.stderr.strip()}"
    with open(json_path) as f:
        names = [o["name"] for o in json.load(f)["outputs"]]
    return {n: np.load(os.path.join(folder, "out", n + ".npy")) for n in names}, None


def compare_all(got, want):
    """Failures of ``got`` against PyTorch's ``want`` (name -> tensor), every name."""
    bad = []
    if sorted(got) != sorted(want):
        bad.append(f"outputs {sorted(got)}, PyTorch's {sorted(want)}")
    for name in sorted(set(got) & set(want)):
        why = compare(got[name], want[name].detach().numpy())
        if why:
            bad.append(f"{name}: {why}")
    return bad


def flat(name):
    return name.replace(".", "_")


# --------------------------------------------------------------------------------------------
# models


class DropNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop2d = nn.Dropout2d(0.25)
        self.drop = nn.Dropout(0.4)
        self.fc = nn.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        h = self.drop2d(F.relu(self.bn(self.conv(x))))
        return self.fc(self.drop(torch.flatten(h, 1)))


class WithLoss(nn.Module):
    """A model-with-loss as torch.export training flows write it: the model is one submodule."""

    def __init__(self, model, loss=None):
        super().__init__()
        self.model = model
        if loss is not None:
            self.loss = loss

    def forward(self, x, y):
        out = self.model(x)
        loss = self.loss(out, y) if hasattr(self, "loss") else F.cross_entropy(out, y)
        return loss, out.detach()


class PadNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.pad = nn.ReflectionPad2d(1)
        self.fc = nn.Linear(2 * 4 * 4, 3)

    def forward(self, x):
        return self.fc(torch.flatten(self.pad(F.relu(self.conv(x))), 1))


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)
        self.fc = nn.Linear(3 * 4 * 4, 3)

    def forward(self, x):
        return self.fc(torch.flatten(F.relu(self.bn(self.conv(x))), 1))


# --------------------------------------------------------------------------------------------
# cases

_NO_TORCH = r"""
import sys

class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoTorch())
import numpy as np
import edgegrad
from edgegrad import safetensors, tolerance
assert isinstance(edgegrad.__version__, str) and edgegrad.FORMAT_VERSION == 1
blob = safetensors.encode({"w": np.arange(6, dtype=np.float32).reshape(2, 3)})
tensors, _ = safetensors.decode(blob)
assert tolerance.compare(tensors["w"], np.arange(6, dtype=np.float32).reshape(2, 3)) is None
assert "torch" not in sys.modules, "import edgegrad imported torch"
for what in ("edgegrad.export_function", "edgegrad.load_state_dict('x.safetensors')"):
    try:
        eval(what)
    except ModuleNotFoundError as e:
        assert e.name == "torch", (what, e)
    else:
        raise AssertionError(f"{what} worked without torch")
print("ok", edgegrad.__version__)
"""


def case_import_without_torch(exe, work):
    env = dict(os.environ, PYTHONPATH=PYDIR)
    r = subprocess.run([sys.executable, "-c", _NO_TORCH], capture_output=True, text=True,
                       env=env, cwd=work, timeout=120)
    if r.returncode != 0 or not r.stdout.startswith("ok"):
        tail = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        return [f"import edgegrad without torch: exit {r.returncode}: {tail}"]
    return []


def case_version(exe, work):
    with open(os.path.join(ROOT, "include", "edgegrad.h")) as f:
        header = re.search(r'^#define EG_VERSION_STRING "([^"]+)"', f.read(), re.M).group(1)
    bad = []
    if edgegrad.__version__ != header:
        bad.append(f"edgegrad.__version__ {edgegrad.__version__}, EG_VERSION_STRING {header}")
    r = cli(exe, "--version")
    if r.stdout.split() != ["edgegrad", edgegrad.__version__]:
        bad.append(f"edgegrad --version says {r.stdout.strip()!r}")
    with open(os.path.join(PYDIR, "pyproject.toml")) as f:
        meta = f.read()
    if not re.search(r'^dynamic = \["version"\]$', meta, re.M) or \
            'version = {attr = "edgegrad._version.__version__"}' not in meta:
        bad.append("pyproject.toml does not read the version from edgegrad._version")
    return bad


def ops_def():
    """{target: family} of src/ir/ops.def, the family the src/ops file of its group."""
    table, family = {}, None
    with open(os.path.join(ROOT, "src", "ir", "ops.def")) as f:
        for line in f:
            m = re.match(r"/\*.*\(src/ops/(\w+)\.c\)\s*\*/", line)
            if m or line.startswith("/* tuples"):
                family = m.group(1) if m else "tuple"
            m = re.match(r'EG_OP\(\w+,\s*"([^"]+)"\)', line)
            if m:
                table[m.group(1)] = family
    return table


def case_runtime_ops_table(exe, work):
    want, have = ops_def(), _ops.RUNTIME_OPS
    bad = [f"{t} ({f}) is in src/ir/ops.def, not in edgegrad._ops.RUNTIME_OPS"
           for t, f in want.items() if t not in have]
    bad += [f"{t} is in edgegrad._ops.RUNTIME_OPS, not in src/ir/ops.def"
            for t in have if t not in want]
    bad += [f"{t}: family {have[t]} in edgegrad._ops, {want[t]} in ops.def"
            for t in have if t in want and have[t] != want[t]]
    if len(want) < 100:
        bad.append(f"only {len(want)} ops read from ops.def: the parse is broken")
    return bad


# One op of each family with a dtype rule (and where.self's narrower one): f(*args) in float32.
_DTYPE_PROBES = [
    ("conv", lambda x, w: F.conv2d(x, w), lambda: (torch.randn(1, 2, 5, 5),
                                                   torch.randn(3, 2, 3, 3))),
    ("matmul", lambda a, b: a @ b, lambda: (torch.randn(3, 4), torch.randn(4, 2))),
    ("norm", lambda x: F.layer_norm(x, [4]), lambda: (torch.randn(2, 4),)),
    ("pool", lambda x: F.max_pool2d(x, 2), lambda: (torch.randn(1, 2, 4, 4),)),
    ("resize", lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
     lambda: (torch.randn(1, 2, 3, 4),)),
    ("loss", lambda x: F.log_softmax(x, 1), lambda: (torch.randn(2, 5),)),
    ("activation", lambda x: torch.sigmoid(x), lambda: (torch.randn(2, 5),)),
    ("where", lambda c, a, b: torch.where(c, a, b),
     lambda: (torch.randn(3) > 0, torch.randn(3), torch.randn(3))),
]


def case_runtime_refusals(exe, work):
    bad = []
    x, y = torch.randn(2, 1, 4, 4), torch.randint(0, 3, (2,))

    def check(label, fn, stem, *wanted):
        why = refused(fn, stem, *wanted)
        if why:
            bad.append(f"{label}: {why}")

    stem = os.path.join(work, "reflection_pad_step")
    check("reflection pad step", lambda: edgegrad.export_training_step(
        PadNet(), F.cross_entropy, (x, y), stem), stem, "node reflection_pad2d",
        "aten.reflection_pad2d", "module pad (ReflectionPad2d)", "runtime")
    stem = os.path.join(work, "reflection_pad_fn")
    check("reflection pad function", lambda: edgegrad.export_function(
        lambda t: F.pad(t, (1, 1, 1, 1), mode="reflect"), (x,), stem), stem,
        "aten.reflection_pad2d")
    stem = os.path.join(work, "float64_step")
    check("float64 step", lambda: edgegrad.export_training_step(
        SmallNet().double(), F.cross_entropy, (x.double(), y), stem),
        stem, "node convolution in module conv (Conv2d)", "aten.convolution.default",
        "float64", "float32 only")
    for family, fn, make in _DTYPE_PROBES:
        args32 = make()
        args64 = [a.double() if a.is_floating_point() else a for a in args32]
        stem = os.path.join(work, f"{family}_float64")
        check(f"{family} float64", lambda: edgegrad.export_function(fn, args64, stem), stem,
              "float64", "float32 only")
        # written anyway, the runtime refuses it: the exporter's rule is the runtime's
        edgegrad.export_function(fn, args64, stem, check_runtime=False)
        r = cli(exe, "info", stem + ".json")
        if r.returncode != 2 or "float64" not in r.stderr:
            bad.append(f"{family} float64: edgegrad info exit {r.returncode} "
                       f"{r.stderr.strip()!r}, the exporter refused it")
        stem = os.path.join(work, f"{family}_float32")
        edgegrad.export_function(fn, args32, stem)
        r = cli(exe, "info", stem + ".json")
        if r.returncode != 0:
            bad.append(f"{family} float32: edgegrad info exit {r.returncode} "
                       f"{r.stderr.strip()!r}, the exporter took it")
    # float64 arithmetic is the runtime's: not refused
    stem = os.path.join(work, "add_float64")
    edgegrad.export_function(lambda a, b: a + b * 2, (torch.randn(3).double(),
                                                        torch.randn(3).double()), stem)
    r = cli(exe, "info", stem + ".json")
    if r.returncode != 0:
        bad.append(f"float64 add: edgegrad info exit {r.returncode} {r.stderr.strip()!r}")
    return bad


def eager_step(model, x, y, masks=(), trained=None):
    """PyTorch's step on a deep copy: loss, grad_<param> per trained parameter, new_<buffer>
    per buffer that changed (prefix: the graph's name of the model's tensors)."""
    model = copy.deepcopy(model)
    names = [n for n, p in model.named_parameters() if p.requires_grad] \
        if trained is None else trained
    before = {n: b.clone() for n, b in model.named_buffers()}
    params = dict(model.named_parameters())
    loss = replay_draws(lambda a, b: F.cross_entropy(model(a), b), list(masks))(x, y)
    grads = torch.autograd.grad(loss, [params[n] for n in names])
    want = {"loss": loss.detach()}
    want.update({"grad_" + flat(n): g for n, g in zip(names, grads)})
    for n, b in model.named_buffers():
        if not torch.equal(b, before[n]):
            want["new_" + flat(n)] = b.detach()
    return want


def case_trainable_requires_grad(exe, work):
    torch.manual_seed(1)
    model = SmallNet().train()
    model.conv.weight.requires_grad_(False)
    x, y = torch.randn(4, 1, 4, 4), torch.randint(0, 3, (4,))
    stem = os.path.join(work, "step")
    result = edgegrad.export_training_step(model, F.cross_entropy, (x, y), stem)
    graph, bad = result.graph, []
    inputs = [e["name"] for e in graph["inputs"]]
    outputs = [o["name"] for o in graph["outputs"]]
    if "conv_weight" in inputs or "grad_conv_weight" in outputs:
        bad.append(f"conv.weight (requires_grad=False) trained: inputs {inputs}")
    if "conv.weight" not in [s["name"] for s in graph["statics"]]:
        bad.append("conv.weight is not a static")
    init, _ = safetensors.load(result.init_path)
    if "conv.weight" in init:
        bad.append(f"init file holds the frozen conv.weight: {sorted(init)}")
    state = {flat(n): t for n, t in list(model.named_parameters()) +
             list(model.named_buffers())}
    feed = {"input": x, "target": y}
    got, failure = run_graph(exe, result.json_path,
                             {n: (feed.get(n) if n in feed else state[n]).detach().numpy()
                              for n in inputs}, os.path.join(work, "run"))
    if failure:
        return bad + [failure]
    return bad + compare_all(got, eager_step(model, x, y))


def case_load_state_dict(exe, work):
    torch.manual_seed(2)
    model = SmallNet().train()
    model.fc.bias.requires_grad_(False)
    x, y = torch.randn(4, 1, 4, 4), torch.randint(0, 3, (4,))
    result = edgegrad.export_training_step(model, F.cross_entropy, (x, y),
                                           os.path.join(work, "step"))
    loaded = edgegrad.load_state_dict(result.init_path)
    bad = []
    want = model.state_dict()
    for name, t in loaded.items():
        if not isinstance(t, torch.Tensor):
            bad.append(f"{name} is a {type(t).__name__}, not a torch tensor")
        elif name not in want:
            bad.append(f"{name} is not a state_dict name")
        elif t.dtype != want[name].dtype or not torch.equal(t, want[name]):
            bad.append(f"{name}: {t.dtype}{list(t.shape)} differs from the model's "
                       f"{want[name].dtype}{list(want[name].shape)}")
    if loaded.get("bn.num_batches_tracked", torch.empty(0)).dtype != torch.int64:
        bad.append("bn.num_batches_tracked not read back as int64")
    fresh = SmallNet()
    res = fresh.load_state_dict(loaded, strict=False)
    if res.unexpected_keys or sorted(res.missing_keys) != ["fc.bias"]:
        bad.append(f"load_state_dict(strict=False): missing {res.missing_keys}, unexpected "
                   f"{res.unexpected_keys}; want missing ['fc.bias'] only")
    return bad


def roles_of(graph):
    """({input name: role}, {output name: (role, of)}) of a graph dict."""
    return ({e["name"]: e["role"] for e in graph["inputs"]},
            {e["name"]: (e["role"], e.get("of")) for e in graph["outputs"]})


def step_roles(model, prefix="", labels=("target",), data=("input",), draws=(), trained=None,
               gradients=True):
    """The roles export_training_step / export_joint record for ``model`` (its graph names
    are ``prefix`` + the flat state_dict names; its buffers state in train mode, statics in
    eval mode): {input: role}, {output: (role, of)}."""
    params = [flat(n) for n, p in model.named_parameters()
              if (p.requires_grad if trained is None else n in trained)]
    buffers = [flat(n) for n, _ in model.named_buffers()] if model.training else []
    inputs = {**{n: "data" for n in data}, **{n: "label" for n in labels}}
    inputs.update({prefix + n: "parameter" for n in params})
    inputs.update({prefix + n: "buffer" for n in buffers})
    inputs.update({n: "random" for n in draws})
    outputs = {"loss": ("loss", None)}
    if gradients:
        outputs.update({"grad_" + prefix + n: ("gradient", prefix + n) for n in params})
        outputs.update({"new_" + prefix + n: ("buffer_update", prefix + n) for n in buffers})
    else:
        outputs["output"] = ("output", None)
    return inputs, outputs


def info_roles(exe, path):
    """The roles `edgegrad info --json` reads from ``path``, as roles_of gives them."""
    r = cli(exe, "info", path, "--json")
    if r.returncode != 0:
        raise AssertionError(f"edgegrad info {path}: exit {r.returncode}: {r.stderr.strip()}")
    return roles_of(json.loads(r.stdout))


def case_roles(exe, work):
    torch.manual_seed(4)
    model = DropNet().train()
    x, y = torch.randn(4, 3, 6, 6), torch.randint(0, 5, (4,))
    result = edgegrad.export_training_step(model, F.cross_entropy, (x, y),
                                           os.path.join(work, "step"))
    bad = []
    want = step_roles(model, draws=sorted(result.draws))
    if len(result.draws) != 2:
        bad.append(f"draws {sorted(result.draws)}: Dropout2d's and Dropout's masks expected")
    got = roles_of(result.graph)
    if got != want:
        bad.append(f"step roles {got}, want {want}")
    if info_roles(exe, result.json_path) != got:
        bad.append(f"edgegrad info reads other roles: {info_roles(exe, result.json_path)}")
    with open(result.eval_path) as f:
        evaluation = json.load(f)
    want = step_roles(model, gradients=False)
    got = roles_of(evaluation)
    if got != want:
        bad.append(f"eval graph roles {got}, want {want}")
    if info_roles(exe, result.eval_path) != got:
        bad.append(f"edgegrad info reads other eval roles: {info_roles(exe, result.eval_path)}")
    # a target that is no class label (mse_loss's) is data
    model = SmallNet().eval()
    result = edgegrad.export_training_step(model, F.mse_loss, (torch.randn(2, 1, 4, 4),
                                                                torch.randn(2, 3)),
                                           os.path.join(work, "mse"), eval_graph=False)
    got, want = roles_of(result.graph), step_roles(model, labels=(), data=("input", "target"))
    if got != want:
        bad.append(f"mse step roles {got}, want {want}")
    return bad


def _sgd_step(x, y, w, b):
    """A hand-written training step: linear + MSE loss and its gradients."""
    loss = F.mse_loss(x @ w.t() + b, y)
    gw, gb = torch.autograd.grad(loss, [w, b])
    return loss, gw, gb


def case_roles_function(exe, work):
    torch.manual_seed(5)
    x, y = torch.randn(6, 4), torch.randn(6, 3)
    w, b = torch.randn(3, 4), torch.randn(3)
    args = (x, y, w.clone().requires_grad_(), b.clone().requires_grad_())
    bad, runs = [], {}
    roles = {"w": "parameter", "b": "parameter"}
    for names in (("loss", "grad_w", "grad_b"), ("objective", "dW", "db")):
        stem = os.path.join(work, names[1])
        edgegrad.export_function(
            _sgd_step, args, stem, arg_names=("x", "y", "w", "b"), output_names=names,
            input_roles=roles, output_roles={names[0]: "loss", names[1]: ("gradient", "w"),
                                             names[2]: ("gradient", "b")})
        feed = {"x": x, "y": y, "w": w, "b": b}
        argv = ["run", stem + ".json", "--steps", "4", "--lr", "0.1", "-q",
                "--output-dir", stem + "_out"]
        for name, t in feed.items():
            np.save(stem + f"_{name}.npy", t.numpy())
            argv += ["--input", f"{name}={stem}_{name}.npy"]
        r = cli(exe, *argv)
        if r.returncode != 0:
            return bad + [f"{names}: edgegrad run --steps exit {r.returncode}: {r.stderr.strip()}"]
        runs[names[1]] = {f: open(os.path.join(stem + "_out", f), "rb").read()
                          for f in ("losses.npy", "final/w.npy", "final/b.npy")}
    if runs["grad_w"] != runs["dW"]:
        bad.append("the step with gradients dW, db trained otherwise than with grad_w, grad_b")
    # PyTorch's loop: plain SGD, lr 0.1, 4 steps
    pw, pb = w.clone().requires_grad_(), b.clone().requires_grad_()
    opt, losses = torch.optim.SGD([pw, pb], lr=0.1), []
    for _ in range(4):
        loss = F.mse_loss(x @ pw.t() + pb, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    out = os.path.join(work, "dW_out")
    for name, want in (("losses", np.array(losses, np.float32)), ("final/w", pw.detach().numpy()),
                       ("final/b", pb.detach().numpy())):
        why = compare(np.load(os.path.join(out, name + ".npy")), want)
        if why:
            bad.append(f"dW step's {name} against PyTorch's loop: {why}")
    # an output named like a gradient but without a role trains nothing
    stem = os.path.join(work, "grad_x")
    edgegrad.export_function(lambda x, w: (x * w).sum(), (x, w[0].clone()), stem,
                             arg_names=("x", "w"), output_names=("grad_x",))
    got = info_roles(exe, stem + ".json")
    if got != ({"x": "data", "w": "data"}, {"grad_x": ("output", None)}):
        bad.append(f"grad_x without roles: {got}")
    np.save(stem + "_x.npy", x.numpy())
    np.save(stem + "_w.npy", w[0].numpy())
    r = cli(exe, "run", stem + ".json", "--input", f"x={stem}_x.npy", "--input",
            f"w={stem}_w.npy", "--steps", "2", "--lr", "0.1", "--output-dir", stem + "_out")
    if r.returncode != 2 or "nothing to train" not in r.stderr:
        bad.append(f"run --steps of a graph with only an output named grad_x: exit "
                   f"{r.returncode} {r.stderr.strip()!r}")
    # roles against the contract: refused at export
    stem = os.path.join(work, "bad_roles")
    base = dict(arg_names=("x", "y", "w", "b"), output_names=("loss", "gw", "gb"))
    for label, kw, wanted in (
            ("unknown role", dict(input_roles={"w": "weight"}), ("input w", "'weight'")),
            ("gradient of data", dict(output_roles={"gw": ("gradient", "x")}),
             ("output gw", "'x' is not a parameter input")),
            ("gradient without its input", dict(input_roles=roles, output_roles={"gw": "gradient"}),
             ("output gw", "names its input")),
            ("parameter without gradient", dict(input_roles=roles, output_roles={
                "loss": "loss", "gw": ("gradient", "w")}), ("input b", "without its gradient")),
            ("unknown output", dict(output_roles={"gx": "output"}), ("output_roles", "gx")),
            ("shape", dict(input_roles=roles, output_roles={"gw": ("gradient", "b"),
                                                             "gb": ("gradient", "w")}),
             ("output gw", "it has its input's dtype and shape")),
            ("two losses", dict(output_roles={"loss": "loss", "gw": "loss"}),
             ("a graph has one loss",)),
            ("random", dict(input_roles={"x": "random"}), ("input x", "'random'"))):
        why = refused(lambda: edgegrad.export_function(_sgd_step, args, stem, **base, **kw),
                      stem, *wanted)
        if why:
            bad.append(f"{label}: {why}")
    return bad


def _export_joint(module, args, stem, **kw):
    ep = torch.export.export(module, args, strict=False)
    return edgegrad.export_joint(ep, stem, **kw)


def case_joint_dropout(exe, work):
    if not HAS_EXPORT:
        raise NotRun(f"torch {torch.__version__} has no torch.export")
    torch.manual_seed(3)
    B = 4
    model = DropNet().train()
    model.conv.weight.requires_grad_(False)
    x, y = torch.randn(2 * B, 3, 6, 6), torch.randint(0, 5, (2 * B,))
    stem = os.path.join(work, "step")
    result = _export_joint(WithLoss(copy.deepcopy(model)), (x[:B], y[:B]), stem)
    graph, bad = result.graph, []
    rnd = {r["input"]: r["p"] for r in graph.get("random_inputs", [])}
    if rnd != {"bernoulli_0": 0.75, "bernoulli_1": 0.6}:
        return [f"random_inputs {rnd}, want bernoulli_0 p 0.75 (Dropout2d), bernoulli_1 "
                "p 0.6 (Dropout)"]
    if sorted(result.draws) != sorted(rnd):
        return [f"ExportResult.draws {sorted(result.draws)}, want {sorted(rnd)}"]
    want = step_roles(model, prefix="model_", labels=("y",), data=("x",), draws=sorted(rnd))
    got = roles_of(graph)
    want[1].update({k: v for k, v in got[1].items() if k.startswith("out")})
    if got != want or got[1].get("out0") != ("output", None):
        bad.append(f"joint roles {got}, want {want} and out0 an output")
    # one step with the export's masks, against PyTorch's eager step with the same masks
    masks = [result.draws[f"bernoulli_{k}"] for k in range(len(result.draws))]
    want = {("loss" if n == "loss" else n.replace("_", "_model_", 1)): t
            for n, t in eager_step(model, x[:B], y[:B], masks).items()}
    state = {"model_" + flat(n): t for n, t in list(model.named_parameters()) +
             list(model.named_buffers())}
    feed = {"x": x[:B], "y": y[:B], **result.draws, **state}
    got, failure = run_graph(exe, result.json_path,
                             {e["name"]: feed[e["name"]].detach().numpy()
                              for e in graph["inputs"]}, os.path.join(work, "run"))
    if failure:
        return bad + [failure]
    got.pop("out0", None)
    bad += compare_all(got, want)
    # edgegrad train: 2 SGD steps, masks drawn from --seed, against a PyTorch loop
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "x.npy"), x.numpy())
    np.save(os.path.join(data, "y.npy"), y.numpy())
    out, log = os.path.join(work, "trained.safetensors"), os.path.join(work, "log.jsonl")
    for path in (out, log):
        if os.path.exists(path):
            os.unlink(path)
    r = cli(exe, "train", result.json_path, "--data", data, "--init", result.init_path,
            "--epochs", "1", "--no-shuffle", "--seed", "5", "--optimizer", "sgd", "--lr", "0.1",
            "--out", out, "--log", log, "-q")
    if r.returncode != 0:
        return bad + [f"edgegrad train exit {r.returncode}: {r.stderr.strip()}"]
    ref = copy.deepcopy(model)
    opt = torch.optim.SGD([p for p in ref.parameters() if p.requires_grad], lr=0.1)
    stream, losses = Masks(5, random_draws(stem)), []
    for s in range(2):
        step = replay_draws(lambda a, b: F.cross_entropy(ref(a), b), stream.step())
        loss = step(x[s * B:(s + 1) * B], y[s * B:(s + 1) * B])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    with open(log) as f:
        logged = [json.loads(line)["loss"] for line in f if '"step"' in line]
    why = compare(np.array(logged, np.float32), np.array(losses, np.float32))
    if why:
        bad.append(f"per-step losses {logged} vs PyTorch's {losses}: {why}")
    # --out under the plain model's names: loads with strict=False, nothing silently dropped
    trained = edgegrad.load_state_dict(out)
    fresh = DropNet()
    res = fresh.load_state_dict(trained, strict=False)
    if res.unexpected_keys or sorted(res.missing_keys) != ["conv.weight"]:
        bad.append(f"--out into the plain model: missing {res.missing_keys}, unexpected "
                   f"{res.unexpected_keys}; want missing ['conv.weight'] only")
    for name, t in trained.items():
        if name in ref.state_dict():
            why = compare(t.numpy(), ref.state_dict()[name].numpy())
            if why:
                bad.append(f"--out {name} after 2 steps: {why}")
    return bad


def case_joint_refusals(exe, work):
    if not HAS_EXPORT:
        raise NotRun(f"torch {torch.__version__} has no torch.export")
    bad = []
    x, y = torch.randn(2, 1, 4, 4), torch.randint(0, 3, (2,))
    stem = os.path.join(work, "reflection_pad")
    # torch's decomposition of the padding keeps no module in its nodes' metadata
    why = refused(lambda: _export_joint(WithLoss(PadNet()), (x, y), stem), stem,
                  "op aten.", "is not one edgegrad's runtime implements")
    if why:
        bad.append(f"reflection pad: {why}")
    xs, ys = torch.randn(2, 1, 4, 4), torch.randint(0, 3, (2,))

    def names(module, **kw):
        result = _export_joint(module, (xs, ys), os.path.join(work, "names"), **kw)
        return sorted(e["state_dict"] for e in result.graph["inputs"] if "state_dict" in e)

    plain = sorted(n for n, _ in SmallNet().named_parameters()) + \
        ["bn.num_batches_tracked", "bn.running_mean", "bn.running_var"]
    got = names(WithLoss(SmallNet()))
    if got != sorted(plain):
        bad.append(f"one submodule: state_dict names {got}, want the plain model's")
    got = names(WithLoss(SmallNet()), state_dict_prefix="")
    if got != sorted("model." + n for n in plain):
        bad.append(f"state_dict_prefix='': names {got}, want torch's FQNs")
    weighted = WithLoss(SmallNet(), nn.CrossEntropyLoss(weight=torch.rand(3)))
    got = names(weighted)
    if not all(n.startswith("model.") for n in got):
        bad.append(f"wrapper with a buffer of its own (loss.weight): names {got} stripped")
    return bad


CASES = [
    ("import_without_torch", case_import_without_torch),
    ("version", case_version),
    ("runtime_ops_table", case_runtime_ops_table),
    ("runtime_refusals", case_runtime_refusals),
    ("trainable_requires_grad", case_trainable_requires_grad),
    ("load_state_dict", case_load_state_dict),
    ("roles", case_roles),
    ("roles_function", case_roles_function),
    ("joint_dropout", case_joint_dropout),
    ("joint_refusals", case_joint_refusals),
]


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edgegrad", required=True, help="the edgegrad CLI binary")
    p.add_argument("--workdir", required=True, help="folder for the cases' files")
    p.add_argument("--filter", default="", help="run only cases whose name contains SUBSTR")
    args = p.parse_args(argv)
    exe = os.path.abspath(args.edgegrad)
    torch.set_num_threads(1)
    passed = failed = 0
    for name, case in CASES:
        if args.filter not in name:
            continue
        work = os.path.join(args.workdir, name)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        try:
            bad = case(exe, work)
        except NotRun as e:
            print(f"NOT RUN {name}: {e}")
            continue
        except Exception as e:  # a harness or export error fails this case only
            first = (str(e).strip().splitlines() or [""])[0]
            bad = [f"{type(e).__name__}: {first}"]
        if bad:
            failed += 1
            print(f"FAIL {name}: " + " | ".join(bad[:6]))
        else:
            passed += 1
            print(f"PASS {name}")
        sys.stdout.flush()
    print(f"export_api: {passed} passed, {failed} failed")
    return 0 if passed and not failed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
