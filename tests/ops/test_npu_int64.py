"""int64 values through NPU partitions (pass i64_to_i32, src/compiler/passes/i64_to_i32.c) against
PyTorch, through the CLI.

The NPU has no int64: views, permutes, copies and cat of int64 tensors are placed on the NPU,
held there as int32 (the executor moves 4-byte elements), narrowed when staged in and widened
back to int64 when read out, so graph outputs keep dtype int64. Each case is exported once and
run with `edgegrad run --soc SOC --precision fp32` (optest.NPU_FP32) for SM8450, SM8650, SM8850
and SM8350 (V68: no float, but the int-only nodes run there too); the outputs must equal
PyTorch's exactly for int64 (values include -1 and INT32_MIN/MAX, which are NaN or extreme bit
patterns as float) and at the project tolerance for float. The compile report must place every
int64 node on the NPU (float nodes too on the float SoCs). Then, for SM8650, the compiled .egp
(`compile -o`) must run to the same outputs (int64 constants stored narrowed, every boundary
tensor int32), and a label outside int32 at run time must fail with a one-line error naming the
input (in memory and from the .egp), while the CPU-only path keeps the full int64 value.

    /usr/bin/python3 tests/ops/test_npu_int64.py --edgegrad build/edgegrad --workdir /tmp/w
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import optest  # noqa: E402
from optest import allclose_report, export_function  # noqa: E402

FLOAT_SOCS = ("SM8450", "SM8650", "SM8850")
V68_SOC = "SM8350"
EGP_SOC = "SM8650"
I32_MIN, I32_MAX = -2**31, 2**31 - 1
OUTSIDE = "is outside int32: int64 values are held as int32 inside NPU partitions"

# ---- the cases ----

def labels_moves(lab):
    """int64 only: view, t + reshape, permute, cat (Reshape, Transpose, Concat on INT_32)."""
    flat = lab.view(-1)
    tr = lab.t().reshape(-1)
    return torch.cat([flat, tr]), lab.permute(1, 0)


def loss_with_labels(x, w, lab):
    """A forward loss: logits on the NPU, the labels' view on the NPU (int32) read by nll_loss
    (on the NPU too on the float SoCs: it compares the int32 labels with the class indices),
    and the labels joined into an int64 graph output."""
    logp = F.log_softmax(x @ w.t(), dim=1)
    flat = lab.view(-1)
    return F.nll_loss(logp, flat), torch.cat([flat, flat]).view(2, -1)


def rank4_moves(q):
    """Rank-4 int64: NHWC inside the NPU graph, so the boundaries permute and narrow / widen;
    the view permutes to NCHW order first (INT_32 temporaries)."""
    return q.permute(0, 2, 3, 1), q.view(2, 3, 20), torch.cat([q, q], 1)


def big_ints(*shape):
    """int64 values over the whole int32 range (many are NaN bit patterns as float32)."""
    return torch.randint(I32_MIN, I32_MAX, shape, dtype=torch.int64)


def labels():
    return torch.tensor([[3, -1, 0], [I32_MAX, I32_MIN, 2]], dtype=torch.int64)


CASES = [
    dict(name="labels_moves", fn=labels_moves, args=[labels()], names=["lab"], npu_float=False),
    dict(name="labels_moves_large", fn=labels_moves, args=[big_ints(24, 40)], names=["lab"],
         npu_float=False),
    dict(name="labels_expand", fn=lambda lab: lab.view(-1, 1).expand(6, 4).reshape(-1),
         args=[labels()], names=["lab"], npu_float=False),  # a broadcast: Tile on INT_32
    dict(name="rank4_moves", fn=rank4_moves, args=[big_ints(2, 3, 4, 5)],
         names=["q"], npu_float=False),
    dict(name="labels_and_constant", fn=lambda lab, c: torch.cat([lab.view(-1), c.t().reshape(-1)]),
         args=[labels(), torch.tensor([[-3, I32_MIN], [I32_MAX, 9]])], names=["lab", "c"],
         static=("c",), npu_float=False),
    dict(name="loss_with_labels", fn=loss_with_labels,
         args=[torch.randn(4, 5), torch.randn(3, 5), torch.tensor([[0, 2], [1, 1]])],
         names=["x", "w", "lab"], npu_float=True),
]


# ---- helpers ----

def sh(*cmd):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True)


def save_inputs(d, names, args):
    out = []
    for nm, a in zip(names, args):
        f = os.path.join(d, nm + ".npy")
        np.save(f, a.numpy())
        out += ["--input", f"{nm}={f}"]
    return out


def compare(out_dir, refs):
    for k, ref in enumerate(refs):
        got = np.load(os.path.join(out_dir, f"out{k}.npy"))
        r = ref.detach().numpy()
        if r.dtype == np.int64 and got.dtype != np.int64:
            return f"out{k}: dtype {got.dtype}, PyTorch int64"
        why = allclose_report(got, r)
        if why:
            return f"out{k}: {why}"
    return None


def check_placement(report, soc, npu_float, int_nodes):
    """Every int64 node on the NPU; on SM8350 every other node on the CPU (float); on the float
    SoCs, when npu_float, every other node on the NPU (nll_loss may be on either side: its
    placement is tests/ops/test_npu_loss.py's)."""
    rep = json.load(open(report))
    for nd in rep["nodes"]:
        tgt, where, why = nd["target"], nd["placement"], nd["reason"]
        if tgt == "getitem":
            continue
        if nd["name"] in int_nodes:
            if where != "npu":
                return f"{soc}: int64 node {nd['name']} ({tgt}) is on the cpu: {why}"
        elif soc == V68_SOC:
            if where != "cpu":
                return f"{soc}: float node {nd['name']} ({tgt}) is on the npu"
        elif npu_float and not tgt.startswith("aten.nll_loss") and where != "npu":
            return f"{soc}: node {nd['name']} ({tgt}) is on the cpu: {why}"
    return None


def int64_nodes(model_json):
    """Names of the nodes whose output is an int64 tensor."""
    g = json.load(open(model_json))
    int_values = {v["id"] for v in g["values"] if v.get("dtype") == "int64"}
    return {n["name"] for n in g["nodes"] if n.get("output") in int_values}


def run_case(exe, workdir, c):
    d = os.path.join(workdir, c["name"])
    os.makedirs(d, exist_ok=True)
    model = os.path.join(d, "model")
    static = c.get("static", ())
    export_function(c["fn"], c["args"], model, arg_names=c["names"], static_args=static)
    int_nodes = int64_nodes(model + ".json")
    if not int_nodes:
        return "the export holds no int64 node"
    inputs = save_inputs(d, *zip(*[(n, a) for n, a in zip(c["names"], c["args"])
                                   if n not in static]))
    with torch.no_grad():
        ref = c["fn"](*[a.clone() for a in c["args"]])
    refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    if not any(r.dtype == torch.int64 for r in refs):
        return "no int64 graph output"
    for soc in FLOAT_SOCS + (V68_SOC,):
        out = os.path.join(d, soc)
        r = sh(exe, "run", model + ".json", *inputs, "--soc", soc, *optest.NPU_FP32,
               "--output-dir", out, "-q")
        if r.returncode != 0:
            return f"{soc}: edgegrad run exit {r.returncode}: {r.stderr.strip()}"
        why = compare(out, refs)
        if why:
            return f"{soc}: {why}"
        rep = os.path.join(d, soc + "_report.json")
        r = sh(exe, "compile", model + ".json", "--soc", soc, *optest.NPU_FP32, "--report", rep,
               "-q")
        if r.returncode != 0:
            return f"{soc}: edgegrad compile exit {r.returncode}: {r.stderr.strip()}"
        why = check_placement(rep, soc, c["npu_float"], int_nodes)
        if why:
            return why
    # the compiled program file: same outputs
    egp = os.path.join(d, "model.egp")
    r = sh(exe, "compile", model + ".json", "--soc", EGP_SOC, *optest.NPU_FP32, "-o", egp, "-q")
    if r.returncode != 0:
        return f"compile -o: exit {r.returncode}: {r.stderr.strip()}"
    out = os.path.join(d, "egp_out")
    r = sh(exe, "run", egp, *inputs, "--output-dir", out, "-q")
    if r.returncode != 0:
        return f".egp run exit {r.returncode}: {r.stderr.strip()}"
    why = compare(out, refs)
    if why:
        return f".egp: {why}"
    info = sh(exe, "inspect", egp, "--json")
    if info.returncode != 0:
        return f".egp inspect exit {info.returncode}: {info.stderr.strip()}"
    bounds = [t["dtype"] for p in json.loads(info.stdout)["partitions"] for t in p["tensors"]
              if t["type"] in ("APP_WRITE", "APP_READ")]
    if "int32" not in bounds or "int64" in bounds:
        return f".egp: boundary tensor dtypes {bounds}: int64 crosses as int32"
    return None


def out_of_range(exe, workdir):
    """A label of 2^40 (and one of INT32_MAX + 1) at run time: the NPU runs (in memory and from
    the .egp) fail with the value's name; the CPU path keeps the int64 value exactly."""
    c = CASES[0]
    d = os.path.join(workdir, c["name"])
    model = os.path.join(d, "model.json")
    egp = os.path.join(d, "model.egp")
    for big in (2**40, I32_MAX + 1, I32_MIN - 1):
        lab = labels()
        lab[1, 1] = big
        bd = os.path.join(d, f"big_{big}")
        os.makedirs(bd, exist_ok=True)
        inputs = save_inputs(bd, ["lab"], [lab])
        for what, cmd in (("in memory", [model, "--soc", EGP_SOC]), (".egp", [egp])):
            r = sh(exe, "run", *cmd, *inputs, "--output-dir", os.path.join(bd, "o"), "-q")
            msg = r.stderr.strip()
            if r.returncode == 0:
                return f"{big} ({what}): the run succeeded"
            if f"value lab: element 4 = {big} {OUTSIDE}" not in msg or "\n" in msg:
                return f"{big} ({what}): exit {r.returncode}, message {msg!r}"
        out = os.path.join(bd, "cpu")
        r = sh(exe, "run", model, *inputs, "--output-dir", out, "-q")
        if r.returncode != 0:
            return f"{big}: CPU run exit {r.returncode}: {r.stderr.strip()}"
        why = compare(out, list(labels_moves(lab)))
        if why:
            return f"{big}: CPU run: {why}"
    return None


def main():
    run = optest.Runner("int64")
    torch.manual_seed(0)
    for c in CASES:
        run.record(c["name"], lambda c=c: run_case(run.exe, run.workdir, c))
    run.record("out_of_range", lambda: out_of_range(run.exe, run.workdir))
    run.finish()


if __name__ == "__main__":
    main()
