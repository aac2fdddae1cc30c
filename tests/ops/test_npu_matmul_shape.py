"""NPU builders for matrix products and shape ops (src/backends/htp/compile/builders/matmul.c,
shape.c) against PyTorch, through the CLI, per SoC.

Each case is exported once and, for every SoC in SOCS, run with `edgegrad run --soc SOC
--precision fp32` (optest.NPU_FP32: the NPU partitions on the QNN-modelled executor, NHWC inside,
computing in fp32 as PyTorch does) and compared with PyTorch's eager
result at the project tolerance; `edgegrad compile --soc SOC --report` must place the expected
nodes: on SM8450/SM8650/SM8850 every node on the NPU except those the case names (with the
reason it expects), on SM8350 (V68) every node on the CPU with the float-arch reason. The last
case is a whole training step (tests/data/tiny_step.json) matched against its stored reference.

NpuSuite is also the harness of test_npu_reduce.py.

    /usr/bin/python3 tests/ops/test_npu_matmul_shape.py --edgegrad build/edgegrad --workdir /tmp/w
"""
import glob
import json
import os
import subprocess
import sys
import traceback

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import optest  # noqa: E402
from optest import allclose_report, chain, export_function, vjp  # noqa: E402

NPU_SOCS = ("SM8450", "SM8650", "SM8850")
V68_SOC = "SM8350"
SOCS = NPU_SOCS + (V68_SOC,)
V68_REASON = "float ops need HTP V69+ with fp16; SM8350 is V68"


class NpuSuite:
    """Cases: fn(*args) exported with export_function. `cpu` maps a traced target (e.g.
    "aten.expand.default") to a substring its nodes' CPU reason must contain on the NPU SoCs;
    every other node (but getitem, which follows its producer) must be on the NPU there.
    `partitions`: the expected partition count on the NPU SoCs (None: not checked). `edit`,
    when given, edits the exported graph dict before it runs (for ops make_fx never traces,
    e.g. aten.alias)."""

    def __init__(self, family):
        self.family = family
        self.cases = []

    def case(self, name, fn, args, static=(), cpu=None, partitions=None, edit=None):
        self.cases.append(dict(name=name, fn=fn, args=args, static=tuple(static), cpu=cpu or {},
                               partitions=partitions, edit=edit))

    # ---- one case ----

    @staticmethod
    def check_report(path, soc, cpu, partitions):
        rep = json.load(open(path))
        if rep["soc"] != soc:
            return f"report is for {rep['soc']}"
        parts = set()
        for nd in rep["nodes"]:
            where, why, tgt = nd["placement"], nd["reason"], nd["target"]
            if tgt == "getitem":
                continue
            if soc == V68_SOC:
                # every float node falls back at the float gate; a node without float tensors
                # (the int64 cases) keeps its builder's reason
                ok = V68_REASON in (why or "") or (tgt in cpu and cpu[tgt] in (why or ""))
                if where != "cpu" or not ok:
                    return f"{soc}: node {nd['name']} ({tgt}) is {where} ({why!r}), " \
                           f"expected cpu with {V68_REASON!r}"
                continue
            if tgt in cpu:
                if where != "cpu" or cpu[tgt] not in (why or ""):
                    return f"{soc}: node {nd['name']} ({tgt}) is {where} ({why!r}), expected " \
                           f"cpu with {cpu[tgt]!r}"
            elif where != "npu":
                return f"{soc}: node {nd['name']} ({tgt}) is on the cpu: {why}"
            else:
                parts.add(nd["partition"])
        if soc != V68_SOC and partitions is not None and len(parts) != partitions:
            return f"{soc}: {len(parts)} partitions, expected {partitions}"
        return None

    def run_case(self, exe, workdir, c):
        d = os.path.join(workdir, c["name"])
        os.makedirs(d, exist_ok=True)
        args = c["args"]
        names = [f"arg{i}" for i in range(len(args))]
        model = os.path.join(d, "model")
        export_function(c["fn"], args, model, arg_names=names, static_args=c["static"])
        if c.get("edit"):
            with open(model + ".json") as f:
                graph = json.load(f)
            c["edit"](graph)
            with open(model + ".json", "w") as f:
                json.dump(graph, f)
        inputs = []
        for nm, a in zip(names, args):
            if nm in c["static"]:
                continue
            f = os.path.join(d, nm + ".npy")
            np.save(f, a.detach().numpy())
            inputs += ["--input", f"{nm}={f}"]
        with torch.no_grad():
            # fresh leaves: a backward case (optest.chain) differentiates with respect to them
            ref = c["fn"](*[a.detach().clone().requires_grad_(a.requires_grad) for a in args])
        refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        for soc in SOCS:
            out = os.path.join(d, soc)
            r = subprocess.run([exe, "run", model + ".json", *inputs, "--soc", soc,
                                *optest.NPU_FP32, "--output-dir", out, "-q"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                return f"{soc}: edgegrad run exit {r.returncode}: {r.stderr.strip()}"
            for k, rv in enumerate(refs):
                got = np.load(os.path.join(out, f"out{k}.npy"))
                why = allclose_report(got, rv.detach().numpy())
                if why:
                    return f"{soc}: out{k}: {why}"
            why = self.compile_and_check(exe, model + ".json", soc, out, c["cpu"],
                                         c["partitions"])
            if why:
                return why
        return None

    def compile_and_check(self, exe, model_json, soc, out, cpu, partitions):
        rep = out + "_report.json"
        r = subprocess.run([exe, "compile", model_json, "--soc", soc, *optest.NPU_FP32,
                            "--report", rep, "-q"], capture_output=True, text=True)
        if r.returncode != 0:
            return f"{soc}: edgegrad compile exit {r.returncode}: {r.stderr.strip()}"
        return self.check_report(rep, soc, cpu, partitions)

    # ---- the suite ----

    def main(self, extra=()):
        """Runs the cases, then each extra(exe, workdir, filter) -> list of (name, reason or
        None)."""
        run = optest.Runner(self.family)
        for c in self.cases:
            run.record(c["name"], lambda c=c: self.run_case(run.exe, run.workdir, c))
        for fn in extra:
            try:
                results = fn(run.exe, run.workdir, run.filter)
            except Exception:  # a harness or export failure is a failed case, never a skip
                results = [(fn.__name__, traceback.format_exc().strip().splitlines()[-1])]
            for name, why in results:
                run.report(name, why)
        run.finish()


# ---- the whole training step ----

def tiny_step(exe, workdir, filt):
    """tests/data/tiny_step.json (conv -> relu -> conv -> flatten -> linear, cross-entropy) on
    every SoC against tests/data/tiny_step_reference; on the NPU SoCs the flatten, its backward
    unflatten, the linear layer and its gradients, log_softmax and the bias-gradient sum must be
    on the NPU."""
    if filt not in "tiny_step":
        return []
    data = os.path.join(HERE, "..", "data")
    model = os.path.join(data, "tiny_step.json")
    inputs = []
    for f in sorted(glob.glob(os.path.join(data, "tiny_step_inputs", "*.npy"))):
        inputs += ["--input", f"{os.path.basename(f)[:-4]}={f}"]
    on_npu = {"aten._reshape_alias.default", "aten.t.default", "aten.addmm.default",
              "aten.mm.default", "aten._log_softmax.default", "aten.sum.dim_IntList",
              "aten.view.default", "aten.detach.default"}
    results = []
    for soc in SOCS:
        name = f"tiny_step_{soc}"
        out = os.path.join(workdir, name)
        r = subprocess.run([exe, "run", model, *inputs, "--soc", soc, *optest.NPU_FP32,
                            "--output-dir", out, "--expect",
                            os.path.join(data, "tiny_step_reference"), "-q"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            results.append((name, f"edgegrad run exit {r.returncode}: "
                                  f"{(r.stdout + r.stderr).strip()}"))
            continue
        rep = out + "_report.json"
        r = subprocess.run([exe, "compile", model, "--soc", soc, *optest.NPU_FP32, "--report",
                            rep, "-q"], capture_output=True, text=True)
        if r.returncode != 0:
            results.append((name, f"compile exit {r.returncode}: {r.stderr.strip()}"))
            continue
        why = None
        for nd in json.load(open(rep))["nodes"]:
            if nd["target"] not in on_npu:
                continue
            want = "cpu" if soc == V68_SOC else "npu"
            if nd["placement"] != want or (want == "cpu" and V68_REASON not in nd["reason"]):
                why = f"node {nd['name']} ({nd['target']}) is {nd['placement']} " \
                      f"({nd['reason']!r}), expected {want}"
                break
        results.append((name, why))
    return results


# ---- cases ----

def build():
    torch.manual_seed(0)
    r = torch.randn
    s = NpuSuite("npu_matmul_shape")

    # matrix products
    s.case("mm", lambda a, b: a @ b, [r(5, 7), r(7, 3)], partitions=1)
    s.case("mm_static_t", lambda a, w: a @ w.t(), [r(5, 7), r(3, 7)], static=("arg1",))
    s.case("linear", lambda x, w, b: F.linear(x, w, b), [r(4, 6), r(3, 6), r(3)])
    s.case("linear_static", lambda x, w, b: F.linear(x, w, b), [r(4, 6), r(3, 6), r(3)],
           static=("arg1", "arg2"))
    s.case("addmm_alpha_beta", lambda b, x, w: torch.addmm(b, x, w, beta=0.5, alpha=2.0),
           [r(4, 3), r(4, 6), r(6, 3)])
    s.case("addmm_alpha", lambda b, x, w: torch.addmm(b, x, w, alpha=-1.5),
           [r(3), r(4, 6), r(6, 3)])
    s.case("addmm_beta", lambda b, x, w: torch.addmm(b, x, w, beta=3.0),
           [r(1, 3), r(4, 6), r(6, 3)])
    s.case("addmm_beta0_nan_self", lambda b, x, w: torch.addmm(b, x, w, beta=0),
           [torch.full((4, 3), float("nan")), r(4, 6), r(6, 3)])
    s.case("addmm_beta0_alpha", lambda b, x, w: torch.addmm(b, x, w, beta=0, alpha=0.25),
           [r(4, 3), r(4, 6), r(6, 3)])
    s.case("addmm_bias_row", lambda b, x, w: torch.addmm(b, x, w), [r(1, 3), r(4, 6), r(6, 3)])
    s.case("addmm_bias_col", lambda b, x, w: torch.addmm(b, x, w), [r(4, 1), r(4, 6), r(6, 3)])
    s.case("addmm_bias_full", lambda b, x, w: torch.addmm(b, x, w), [r(4, 3), r(4, 6), r(6, 3)])
    s.case("addmm_bias_scalar", lambda b, x, w: torch.addmm(b, x, w), [r(()), r(4, 6), r(6, 3)])
    s.case("mm_chain_relu", lambda a, b, c: torch.relu(a @ b) @ c, [r(5, 7), r(7, 4), r(4, 2)])

    # t
    s.case("t_2d", lambda x: x.t(), [r(3, 5)])
    s.case("t_col", lambda x: torch.relu(x).t(), [r(4, 1)])
    s.case("t_1d", lambda x: torch.relu(x.t()), [r(5)])

    # views of rank-4 (NHWC inside the NPU) values: the classic flatten trap and its inverse
    s.case("flatten_conv_output", lambda x: torch.flatten(x, 1), [r(2, 4, 3, 5)])
    s.case("flatten_after_relu", lambda x: torch.relu(torch.relu(x).flatten(1)),
           [r(2, 4, 3, 5)], partitions=1)
    s.case("flatten_pooled", lambda x: torch.relu(x).flatten(1), [r(2, 8, 1, 1)])
    s.case("flatten_one_channel", lambda x: torch.relu(x).flatten(1), [r(2, 1, 3, 5)])
    s.case("flatten_all", lambda x: torch.relu(x).reshape(-1), [r(2, 4, 3, 5)])
    s.case("unflatten", lambda x: torch.relu(x.view(2, 4, 3, 5)), [r(2, 60)])
    s.case("unflatten_then_flatten",
           lambda x: torch.relu(torch.relu(x.view(2, 4, 3, 5)).view(2, 60)) * 1.0, [r(2, 60)])
    s.case("view_4d_to_4d", lambda x: torch.relu(x).view(2, 2, 6, 5), [r(2, 4, 3, 5)])
    s.case("view_4d_same", lambda x: torch.relu(torch.relu(x).view(2, 4, 3, 5)), [r(2, 4, 3, 5)])
    s.case("view_4d_to_3d", lambda x: torch.relu(x).view(8, 3, 5), [r(2, 4, 3, 5)])
    s.case("view_3d_to_4d", lambda x: torch.relu(x.reshape(2, 3, 2, 5)), [r(6, 2, 5)])
    s.case("view_2d_to_2d", lambda x: torch.relu(x).view(4, 6), [r(3, 8)])
    s.case("view_to_scalar", lambda x: torch.relu(x).view(()), [r(1, 1)])
    s.case("view_4d_unit_channels", lambda x: torch.relu(x.view(2, 3, 1, 1)), [r(2, 3)])

    # slice: of a traced value, of an NHWC one's channels (a concatenation's backward, as in
    # SqueezeNet's Fire modules: conv -> relu -> channel slices), with a step, a negative start
    # and an open end
    s.case("slice_2d_step", lambda x: torch.relu(x)[:, 1:7:3], [r(3, 9)])
    s.case("slice_tail", lambda x: torch.relu(x)[..., -3:], [r(2, 3, 4, 5)])
    s.case("slice_channels_conv", lambda x, w: torch.relu(F.conv2d(x, w))[:, 2:5] * 2.0,
           [r(2, 3, 5, 5), r(6, 3, 1, 1)], partitions=1)
    s.case("slice_channels_both", lambda x: torch.relu(torch.relu(x)[:, :2] +
                                                       torch.relu(x)[:, 3:5]), [r(2, 6, 3, 3)],
           partitions=1)
    s.case("slice_rows_step", lambda x: torch.relu(x)[:, :, 1::2], [r(2, 3, 7, 4)])
    # split: ShuffleNetV2's channel split of an NHWC value (conv -> chunk), uneven pieces,
    # sizes, and a piece nothing reads
    s.case("split_channels_conv", lambda x, w: [torch.relu(p) for p in
                                                F.conv2d(x, w).chunk(2, 1)],
           [r(2, 3, 4, 4), r(6, 3, 1, 1)], partitions=1)
    s.case("split_uneven", lambda x: [p * 2.0 for p in torch.relu(x).split(3, 1)],
           [r(2, 7, 3, 3)])
    s.case("split_sizes_rows", lambda x: [p + 1.0 for p in torch.relu(x).split([1, 4], -2)],
           [r(2, 3, 5, 4)])
    # select (a ViT's class token, MultiheadAttention's q/k/v unbind) and the backward ops of
    # select and slice (zeros but the selected block: a Pad)
    s.case("select_class_token", lambda x: torch.relu(x)[:, 0] * 2.0, [r(2, 5, 6)])
    s.case("select_neg", lambda x: torch.relu(x).select(-1, -2), [r(3, 2, 4, 5)])
    s.case("select_grad", chain(lambda x, g: vjp([torch.relu(x)[:, 1]], [x], [g])),
           [r(2, 5, 6).requires_grad_(True), r(2, 6)])
    s.case("slice_grad_channels",
           chain(lambda x, g: vjp([torch.relu(x)[:, 2:5]], [x], [g])),
           [r(2, 7, 3, 3).requires_grad_(True), r(2, 3, 3, 3)])
    s.case("selects_grad", chain(lambda x, g: vjp([x[0] + x[1] * 2.0 + x[2] * 3.0], [x], [g])),
           [r(3, 4, 5).requires_grad_(True), r(4, 5)])
    s.case("split_unread_piece", lambda x: torch.relu(x).split(2, 0)[1] * 3.0, [r(5, 3)])

    # permute
    s.case("permute_to_nhwc", lambda x: torch.relu(x).permute(0, 2, 3, 1), [r(2, 4, 3, 5)])
    s.case("permute_to_nchw", lambda x: torch.relu(x.permute(0, 3, 1, 2)), [r(2, 3, 5, 4)])
    s.case("permute_4d_swap", lambda x: torch.relu(x.permute(1, 0, 3, 2)), [r(2, 4, 3, 5)])
    s.case("permute_4d_identity", lambda x: torch.relu(torch.relu(x).permute(0, 1, 2, 3)),
           [r(2, 4, 3, 5)])
    s.case("permute_3d", lambda x: torch.relu(x).permute(2, 0, 1), [r(2, 3, 4)])
    s.case("permute_unit_dims", lambda x: torch.relu(x).permute(0, 2, 3, 1), [r(2, 1, 1, 6)])

    # transpose.int, and ShuffleNetV2's channel shuffle (view -> transpose -> clone -> view)
    def shuffle(x, groups=2):
        n, c, h, w = x.shape
        return x.view(n, groups, c // groups, h, w).transpose(1, 2).contiguous().view(n, c, h, w)

    s.case("transpose_2d", lambda x: torch.relu(x).transpose(0, 1), [r(3, 5)])
    s.case("transpose_3d_neg", lambda x: torch.relu(x.transpose(-1, 0)), [r(2, 3, 4)])
    s.case("transpose_4d", lambda x: torch.relu(torch.relu(x).transpose(1, 3)), [r(2, 4, 3, 5)])
    s.case("transpose_same", lambda x: torch.relu(x).transpose(1, 1), [r(2, 3)])
    s.case("channel_shuffle", lambda x: torch.relu(shuffle(torch.relu(x))), [r(2, 6, 4, 4)],
           partitions=1)
    s.case("channel_shuffle_g3", lambda x: shuffle(x, 3) * 2.0, [r(1, 9, 3, 5)])
    s.case("channel_shuffle_grad",
           chain(lambda x, g: vjp([torch.relu(shuffle(x))], [x], [g])),
           [r(2, 8, 3, 3).requires_grad_(True), r(2, 8, 3, 3)])

    # copies
    s.case("detach_output", lambda x: torch.relu(x).detach(), [r(3, 4)])
    s.case("clone_input", lambda x: torch.relu(x.clone()), [r(2, 4, 3, 5)])
    s.case("clone_between", lambda x: torch.relu(torch.relu(x).clone()), [r(2, 4, 3, 5)],
           partitions=1)
    s.case("clone_only", lambda x: x.clone(), [r(2, 4, 3, 5)])
    s.case("alias", lambda x: torch.relu(torch.relu(x).detach()), [r(3, 4)], partitions=1,
           edit=lambda g: next(n for n in g["nodes"] if n["target"] == "aten.detach.default")
           .update(target="aten.alias.default"))
    s.case("detach_two_uses", lambda x: (torch.relu(x).detach(), torch.relu(x).detach().t()),
           [r(3, 4)])
    s.case("to_copy_float64", lambda x: torch.relu(x).to(torch.float64), [r(3, 4)],
           cpu={"aten._to_copy.default": "dtype conversion float32 -> float64"})

    # expand
    s.case("expand_no_broadcast", lambda x: torch.relu(x.expand(1, 3, 4)), [r(3, 4)])
    s.case("expand_broadcast", lambda x: torch.relu(x.expand(3, 4)), [r(3, 1)])
    # rank 4 to rank 4 after a conv: held NHWC, a Tile of [n, 1, 1, c] over the plane (the SE
    # block's mean backward), and one adding no element
    s.case("expand_plane_nhwc",
           lambda x, w: (F.conv2d(x, w).mean((2, 3), keepdim=True).expand(2, 4, 5, 5) *
                         F.conv2d(x, w)), [r(2, 3, 7, 7), r(4, 3, 3, 3)])
    s.case("expand_same_nhwc", lambda x, w: torch.relu(F.conv2d(x, w).expand(2, 4, 5, 5)),
           [r(2, 3, 7, 7), r(4, 3, 3, 3)])
    s.case("expand_channels_nhwc",
           lambda x, w: F.conv2d(x, w)[:, :1].expand(2, 4, 5, 5) + F.conv2d(x, w),
           [r(2, 3, 7, 7), r(4, 3, 3, 3)])

    # dtype gates: int64 views run on the NPU as int32 (tests/ops/test_npu_int64.py), but not
    # an int64 constant outside int32
    s.case("view_int64_static_outside_int32", lambda i: i.view(-1),
           [torch.tensor([[1, 2**40, 3]])], static=("arg0",),
           cpu={"aten.view.default": "is outside int32"})

    # cat
    s.case("cat_channels", lambda a, b: torch.cat([torch.relu(a), b], 1),
           [r(2, 3, 4, 5), r(2, 2, 4, 5)])
    s.case("cat_batch", lambda a, b: torch.cat([a, b], 0), [r(1, 3, 4, 5), r(2, 3, 4, 5)])
    s.case("cat_width_neg", lambda a, b, c: torch.cat([a, b, c], -1),
           [r(2, 3, 4, 1), r(2, 3, 4, 2), r(2, 3, 4, 3)])
    s.case("cat_2d", lambda a, b: torch.cat([a, b], 1), [r(4, 2), r(4, 5)])
    s.case("cat_same_twice", lambda a: torch.cat([a, a], 1), [r(2, 3, 2, 2)])
    s.case("cat_static", lambda a, w: torch.cat([a, w], 1), [r(2, 3, 2, 2), r(2, 1, 2, 2)],
           static=("arg1",))

    # stack: Reshape each input + Concat
    s.case("stack_dim0", lambda a, b: torch.stack([torch.relu(a), b]), [r(2, 3), r(2, 3)])
    s.case("stack_last", lambda a, b, c: torch.relu(torch.stack([a, b, c], -1)),
           [r(2, 3, 4), r(2, 3, 4), r(2, 3, 4)])
    s.case("stack_4d_inputs", lambda a, b: torch.stack([torch.relu(a), torch.relu(b)], 1),
           [r(2, 3, 4, 5), r(2, 3, 4, 5)])
    s.case("stack_to_4d", lambda a, b: torch.relu(torch.stack([a, b], 2)) * 1.0,
           [r(2, 3, 5), r(2, 3, 5)])
    s.case("stack_empty", lambda a, b: torch.stack([a, b]), [r(0, 3), r(0, 3)],
           cpu={"aten.stack.default": "empty tensor"})

    # bmm -> MatMul with batch dims; mv and dot have no NPU lowering; constant_pad_nd lowers
    # (Pad, tests/ops/test_npu_pad.py)
    s.case("bmm", lambda a, b: torch.relu(torch.bmm(a, b)), [r(3, 4, 5), r(3, 5, 2)],
           partitions=1)
    s.case("bmm_grad", chain(lambda a, b, g: vjp([torch.bmm(a, b)], [a, b], [g])),
           [r(2, 3, 4).requires_grad_(True), r(2, 4, 5).requires_grad_(True), r(2, 3, 5)])
    s.case("bmm_empty", lambda a, b: torch.bmm(a, b), [r(2, 3, 0), r(2, 0, 4)],
           cpu={"aten.bmm.default": "empty"})
    s.case("mv", lambda a, v: torch.mv(torch.relu(a), v), [r(3, 4), r(4)],
           cpu={"aten.mv.default": "no NPU lowering for aten.mv"})
    s.case("dot", lambda a, b: torch.dot(torch.relu(a), b), [r(5), r(5)],
           cpu={"aten.dot.default": "no NPU lowering for aten.dot"})
    s.case("constant_pad", lambda x: F.pad(torch.relu(x), (1, 1, 2, 0)), [r(2, 3, 4, 4)])
    return s


if __name__ == "__main__":
    build().main(extra=(tiny_step,))
