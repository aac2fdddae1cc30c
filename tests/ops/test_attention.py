"""PyTorch comparison for the attention family (src/ops/attention.c):
aten._scaled_dot_product_flash_attention_for_cpu (+_backward), aten._safe_softmax, and
aten.scalar_tensor (src/ops/shape.c), which torch 2's F.scaled_dot_product_attention traces
around them.

Under PyTorch 2 each case calls F.scaled_dot_product_attention, forward and backward through
torch.autograd.grad (optest.vjp): plain, causal with L < S and L > S, float masks [L, S] and
broadcast [B, 1, L, S] / [1, H, 1, S] / [L, 1], a fully masked query row, bool masks (traced
as scalar_tensor + where into a float mask), a given scale (also 0 and negative), batch and heads
> 1, and a value head dim Ev != E (traced unfused: bmm and _safe_softmax). The fused ops are also
called directly, so that logsumexp is compared and the backward is fed an out and logsumexp of
its own (ATen's backward uses them as given). The unfused "math form" (q @ k^T * scale + mask,
softmax, @ v), written out in torch code, is checked under both PyTorch versions, with a float
mask and with a bool mask through torch.where. Refusals: dropout_p 0.1, inconsistent shapes,
a mask that does not broadcast, a bool or rank-3 mask, an infinite scale, an empty key, a
logsumexp of the wrong shape and a wrong recorded output shape, in exported graphs edited to
break the rule.

PyTorch 1.13 has neither F.scaled_dot_product_attention nor these ops: there the suite runs the
math-form, _safe_softmax-free cases and prints one "not applicable" line per case it leaves out.

    PYTHONPATH=python .venv/bin/python tests/ops/test_attention.py \
        --edgegrad build/edgegrad --workdir <dir>
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import optest  # noqa: E402
from optest import EditSuite, chain, vjp  # noqa: E402

A = torch.ops.aten
torch.manual_seed(0)
r = torch.randn
NINF = float("-inf")
FUSED = hasattr(F, "scaled_dot_product_attention") and \
    hasattr(A, "_scaled_dot_product_flash_attention_for_cpu")
SDPA = "aten._scaled_dot_product_flash_attention_for_cpu.default"
SDPA_BWD = "aten._scaled_dot_product_flash_attention_for_cpu_backward.default"

NPU_SOC = "SM8650"


class AttentionSuite(EditSuite):
    """An EditSuite whose `npu` cases also run compiled for NPU_SOC (fp32 NPU partitions,
    optest.NPU_FP32) against PyTorch, and check the compile report: the attention nodes are on
    the NPU (backends/htp/compile/builders/attention.c; tests/ops/test_npu_attention.py has its own
    cases)."""

    def __init__(self, family):
        super().__init__(family)
        self.npu = set()

    def npu_case(self, name, fn, args):
        self.case(name, fn, args)
        self.npu.add(name)

    def _run_case(self, exe, workdir, name, fn, args, static, expect_error):
        why = super()._run_case(exe, workdir, name, fn, args, static, expect_error)
        if why or name not in self.npu:
            return why
        d = os.path.join(workdir, name)
        model, soc_out = os.path.join(d, "model.json"), os.path.join(d, NPU_SOC)
        inputs = []
        for i in range(len(args)):
            inputs += ["--input", f"arg{i}={os.path.join(d, f'arg{i}.npy')}"]
        r = subprocess.run([exe, "run", model, *inputs, "--soc", NPU_SOC, *optest.NPU_FP32,
                            "--output-dir", soc_out, "-q"], capture_output=True, text=True)
        if r.returncode != 0:
            return f"{NPU_SOC}: edgegrad run exit {r.returncode}: {r.stderr.strip()}"
        with torch.no_grad():
            ref = fn(*args)
        for k, rv in enumerate(ref if isinstance(ref, (tuple, list)) else [ref]):
            why = optest.allclose_report(np.load(os.path.join(soc_out, f"out{k}.npy")),
                                         rv.detach().numpy())
            if why:
                return f"{NPU_SOC}: out{k}: {why}"
        rep = soc_out + "_report.json"
        r = subprocess.run([exe, "compile", model, "--soc", NPU_SOC, *optest.NPU_FP32,
                            "--report", rep, "-q"], capture_output=True, text=True)
        if r.returncode != 0:
            return f"{NPU_SOC}: edgegrad compile exit {r.returncode}: {r.stderr.strip()}"
        nodes = json.load(open(rep))["nodes"]
        attention = [nd for nd in nodes if nd["target"] in (SDPA, SDPA_BWD)]
        if not attention:
            return f"{NPU_SOC}: no attention node in the graph"
        for nd in attention:
            if nd["placement"] != "npu":
                return f"{NPU_SOC}: node {nd['name']} is {nd['placement']} " \
                       f"({nd['reason']!r}), expected npu"
        return None


    def main(self):
        """The cases, then `joint_step` (PyTorch 2 only)."""
        run = optest.Runner(self.family)
        for name, fn, args, static, expect_error in self.cases:
            run.record(name, lambda c=(name, fn, args, static, expect_error):
                       self._run_case(run.exe, run.workdir, *c))
        if FUSED:
            run.record("joint_step", lambda: joint_step(run.exe, run.workdir))
        run.finish()


class JointNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x).reshape(2, 6, 2, 4).transpose(1, 2)
        y = F.scaled_dot_product_attention(h, h * 0.5, h, is_causal=True)
        return ((y * y).sum(),)


def joint_step(exe, workdir):
    """torch.export's joint graph (edgegrad.joint) keeps the fused attention and its backward
    whole (core ATen's decompositions would turn the forward into arange/masks edgegrad lacks);
    the loss and parameter gradients match PyTorch's."""
    from edgegrad import joint
    d = os.path.join(workdir, "joint_step")
    os.makedirs(d, exist_ok=True)
    net, x = JointNet(), r(2, 6, 8)
    joint.export_joint(torch.export.export(net, (x,)), os.path.join(d, "model"))
    graph = json.load(open(os.path.join(d, "model.json")))
    targets = {n["target"] for n in graph["nodes"]}
    if not {SDPA, SDPA_BWD} <= targets:
        return f"joint graph lacks the fused attention ops: {sorted(targets)}"
    values = {"x": x, "lin_weight": net.lin.weight, "lin_bias": net.lin.bias}
    cmd = [exe, "run", os.path.join(d, "model.json"), "--output-dir", os.path.join(d, "out"),
           "-q"]
    for entry in graph["inputs"]:
        f = os.path.join(d, entry["name"] + ".npy")
        np.save(f, values[entry["name"]].detach().numpy())
        cmd += ["--input", f"{entry['name']}={f}"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        return f"edgegrad exit {res.returncode}: {res.stderr.strip()}"
    loss = net(x)[0]
    refs = [loss, *torch.autograd.grad(loss, [net.lin.weight, net.lin.bias])]
    for entry, ref in zip(graph["outputs"], refs):
        why = optest.allclose_report(np.load(os.path.join(d, "out", entry["name"] + ".npy")),
                                     ref.detach().numpy())
        if why:
            return f"{entry['name']}: {why}"
    return None


suite = AttentionSuite("attention")
not_applicable = []


def fused_case(name, *args, **kwargs):
    """A case that needs PyTorch 2's fused attention; listed as not applicable under 1.13."""
    if FUSED:
        suite.case(name, *args, **kwargs)
    else:
        not_applicable.append(name)


def leaf(*shape):
    return r(*shape).requires_grad_(True)


def qkv(b, h, l, s, e, ev=None):
    return leaf(b, h, l, e), leaf(b, h, s, e), leaf(b, h, s, ev or e)


def sdpa_grads(**kw):
    """(q, k, v, grad_out[, mask]) -> (y, dq, dk, dv) of F.scaled_dot_product_attention."""
    def fn(q, k, v, g, *mask):
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[0] if mask else None, **kw)
        return (y, *vjp([y], [q, k, v], [g]))
    return chain(fn)


def grad_case(name, b, h, l, s, e, ev=None, mask=None, **kw):
    q, k, v = qkv(b, h, l, s, e, ev)
    args = [q, k, v, r(b, h, l, ev or e)] + ([mask] if mask is not None else [])
    fused_case(name, sdpa_grads(**kw), args)


# ---- F.scaled_dot_product_attention, forward and backward (PyTorch 2)
grad_case("plain", 2, 3, 5, 5, 4)
grad_case("l_ne_s", 2, 3, 5, 7, 4)
grad_case("one_head_one_batch", 1, 1, 6, 3, 8)
grad_case("causal_l_lt_s", 2, 2, 4, 7, 4, is_causal=True)
grad_case("causal_l_gt_s", 2, 2, 9, 3, 4, is_causal=True)
grad_case("scale", 2, 3, 5, 7, 4, scale=0.3)
grad_case("scale_zero", 1, 2, 3, 4, 4, scale=0.0)
grad_case("scale_negative", 1, 2, 3, 4, 4, scale=-0.7)
grad_case("float_mask", 2, 3, 5, 7, 4, mask=r(5, 7))
grad_case("float_mask_4d", 2, 3, 5, 7, 4, mask=r(2, 1, 5, 7))
grad_case("float_mask_heads", 2, 3, 5, 7, 4, mask=r(1, 3, 1, 7))
grad_case("float_mask_column", 2, 3, 5, 7, 4, mask=r(5, 1))
grad_case("float_mask_causal", 2, 3, 5, 7, 4, mask=r(5, 7), is_causal=True)
masked_row = r(5, 7)
masked_row[1] = NINF
masked_row[3, ::2] = NINF
grad_case("fully_masked_row", 2, 3, 5, 7, 4, mask=masked_row)
bool_mask = torch.rand(5, 7) > 0.4
bool_mask[:, 0] = True
grad_case("bool_mask", 2, 3, 5, 7, 4, mask=bool_mask)
bool_masked_row = bool_mask.clone()
bool_masked_row[2] = False
grad_case("bool_mask_fully_masked_row", 2, 3, 5, 7, 4, mask=bool_masked_row)
grad_case("long_rows", 1, 2, 40, 37, 16, mask=r(40, 37), scale=0.2)
# another value head dim: the unfused form with _safe_softmax
grad_case("value_dim", 2, 3, 5, 7, 4, ev=6)
grad_case("value_dim_fully_masked_row", 2, 3, 5, 7, 4, ev=6, mask=masked_row)
grad_case("value_dim_bool_mask", 2, 3, 5, 7, 4, ev=6, mask=bool_masked_row)



# ---- an attention block compiled for the NPU: the projections and the attention there
def block_grads(x, wq, wk, wv, wo, g):
    b, l, d = x.shape
    heads = lambda t: t.reshape(b, l, 2, d // 2).transpose(1, 2)  # noqa: E731
    y = F.scaled_dot_product_attention(heads(x @ wq), heads(x @ wk), heads(x @ wv),
                                       is_causal=True)
    out = y.transpose(1, 2).reshape(b, l, d) @ wo
    return (out, *vjp([out], [x, wq, wk, wv, wo], [g]))


if FUSED:
    suite.npu_case("npu_block", chain(block_grads),
                   [leaf(2, 6, 8), leaf(8, 8), leaf(8, 8), leaf(8, 8), leaf(8, 8), r(2, 6, 8)])
else:
    not_applicable.append("npu_block")

# ---- the fused ops called directly: logsumexp, and a backward fed its own out and logsumexp
q0, k0, v0 = r(2, 3, 5, 4), r(2, 3, 7, 4), r(2, 3, 7, 4)
fused_case("forward_logsumexp", lambda q, k, v, m: A._scaled_dot_product_flash_attention_for_cpu(
    q, k, v, attn_mask=m), [q0, k0, v0, masked_row])
fused_case("forward_logsumexp_causal_scale",
           lambda q, k, v: A._scaled_dot_product_flash_attention_for_cpu(
               q, k, v, 0.0, True, scale=1.5), [q0, k0, v0])
fused_case("backward_given_out_lse",
           lambda g, q, k, v, o, lse, m: A._scaled_dot_product_flash_attention_for_cpu_backward(
               g, q, k, v, o, lse, 0.0, False, attn_mask=m, scale=0.4),
           [r(2, 3, 5, 4), q0, k0, v0, r(2, 3, 5, 4), r(2, 3, 5).abs() + 1.0, masked_row])
fused_case("backward_causal",
           lambda g, q, k, v, o, lse: A._scaled_dot_product_flash_attention_for_cpu_backward(
               g, q, k, v, o, lse, 0.0, True),
           [r(2, 3, 5, 4), q0, k0, v0, r(2, 3, 5, 4), r(2, 3, 5) + 2.0])

# ---- _safe_softmax and scalar_tensor
sm_in = r(3, 4, 5)
sm_in[1, 2] = NINF
sm_in[0, :, 3] = NINF
sm_in[2, 1, 1:] = NINF
fused_case("safe_softmax_last", lambda x: A._safe_softmax(x, -1), [sm_in])
fused_case("safe_softmax_dim1", lambda x: A._safe_softmax(x, 1), [sm_in])
fused_case("safe_softmax_dtype", lambda x: A._safe_softmax(x, 0, torch.float32), [sm_in])
fused_case("safe_softmax_backward", chain(lambda x, g: vjp(
    [A._safe_softmax(x, -1)], [x], [g])), [sm_in.clone().requires_grad_(True), r(3, 4, 5)])
suite.case("scalar_tensor_float", lambda x: x + A.scalar_tensor(-2.5), [r(3)])
suite.case("scalar_tensor_ninf", lambda c, x: torch.where(c, x, A.scalar_tensor(NINF)),
           [torch.rand(6) > 0.5, r(6)])
suite.case("scalar_tensor_int64", lambda x: x + A.scalar_tensor(3, dtype=torch.int64),
           [torch.arange(4)])
suite.case("scalar_tensor_float64", lambda x: x * A.scalar_tensor(0.1, dtype=torch.float64),
           [r(3).double()])


# ---- the math form, written out, under both PyTorch versions
def math_attention(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None and mask.dtype == torch.bool:
        s = torch.where(mask, s, NINF)
    elif mask is not None:
        s = s + mask
    return torch.softmax(s, -1) @ v


def math_grads(q, k, v, g, *mask):
    y = math_attention(q, k, v, *mask)
    return (y, *vjp([y], [q, k, v], [g]))


suite.case("math_form", chain(math_grads), [*qkv(2, 3, 5, 7, 4, 6), r(2, 3, 5, 6)])
suite.case("math_form_float_mask", chain(math_grads),
           [*qkv(2, 3, 5, 7, 4), r(2, 3, 5, 4), r(5, 7)])
suite.case("math_form_bool_mask", chain(math_grads),
           [*qkv(2, 3, 5, 7, 4), r(2, 3, 5, 4), bool_mask])


# ---- refused: exported graphs edited to break a rule
def node(graph, target):
    return next(n for n in graph["nodes"] if n["target"] == target)


def edit_node(target, index=None, value=None, **kwargs):
    """Sets positional argument `index` (filling make_fx's dropped defaults) and keywords."""
    def edit(graph):
        n = node(graph, target)
        if index is not None:
            defaults = [None, None, None, {"float": 0.0}, False]
            while len(n["args"]) <= index:
                n["args"].append(defaults[len(n["args"])])
            n["args"][index] = value
        n["kwargs"].update(kwargs)
    return edit


def set_input(index, dtype=None, shape=None):
    def edit(graph):
        v = graph["values"][graph["inputs"][index]["value"]]
        if dtype:
            v["dtype"] = dtype
        if shape is not None:
            v["shape"] = shape
    return edit


def set_output_shape(target, element, shape):
    def edit(graph):
        tup = graph["values"][node(graph, target)["output"]]
        graph["values"][tup["elements"][element]]["shape"] = shape
    return edit


def fwd(q, k, v, *m):
    return A._scaled_dot_product_flash_attention_for_cpu(q, k, v, attn_mask=m[0] if m else None)


def err_case(name, args, edit, text, fn=fwd):
    fused_case(name, fn, args, edit=edit, expect_error=text)


err_case("err_dropout", [q0, k0, v0], edit_node(SDPA, 3, {"float": 0.1}),
         "argument dropout_p (#3) is 0.1: edgegrad runs attention without dropout")
err_case("err_key_batch", [q0, k0, v0], set_input(1, shape=[1, 3, 7, 4]),
         "key [1, 3, 7, 4]: expected [2, 3, 7, 4]")
err_case("err_value_length", [q0, k0, v0], set_input(2, shape=[2, 3, 6, 4]),
         "value [2, 3, 6, 4]: expected [2, 3, 7, 4]")
err_case("err_value_head_dim", [q0, k0, v0], set_input(2, shape=[2, 3, 7, 6]),
         "one head dim for query, key and value")
err_case("err_query_rank", [q0, k0, v0], set_input(0, shape=[6, 5, 4]),
         "argument query (#0) [6, 5, 4] has rank 3: expected 4 dims")
err_case("err_empty_key", [q0, k0, v0],
         lambda g: (set_input(1, shape=[2, 3, 0, 4])(g), set_input(2, shape=[2, 3, 0, 4])(g)),
         "key [2, 3, 0, 4]: a key length or head dim of 0")
err_case("err_mask_broadcast", [q0, k0, v0, r(5, 7)], set_input(3, shape=[3, 7]),
         "attn_mask [3, 7] does not broadcast to the scores [B, H, L, S] = [2, 3, 5, 7]")
err_case("err_mask_rank", [q0, k0, v0, r(5, 7)], set_input(3, shape=[1, 5, 7]),
         "attn_mask [1, 5, 7] has rank 3: expected [L, S] or [B, H, L, S]")
err_case("err_mask_bool", [q0, k0, v0, r(5, 7)], set_input(3, dtype="bool"),
         "attn_mask dtype bool: the mask must be float32")
err_case("err_scale_inf", [q0, k0, v0], edit_node(SDPA, scale={"float": "inf"}),
         "argument scale is inf: expected a finite float32")
err_case("err_query_f64", [q0, k0, v0], set_input(0, dtype="float64"),
         "argument query (#0) dtype float64")
err_case("err_output_shape", [q0, k0, v0], set_output_shape(SDPA, 1, [2, 5, 3]),
         "output element 1")
bwd_args = [r(2, 3, 5, 4), q0, k0, v0, r(2, 3, 5, 4), r(2, 3, 5)]
bwd = lambda g, q, k, v, o, lse: A._scaled_dot_product_flash_attention_for_cpu_backward(  # noqa
    g, q, k, v, o, lse, 0.0, False)
err_case("err_backward_lse_shape", bwd_args, set_input(5, shape=[2, 5, 3]),
         "logsumexp [2, 5, 3]: expected [2, 3, 5]", fn=bwd)
err_case("err_backward_dropout", bwd_args, edit_node(SDPA_BWD, 6, {"float": 0.25}),
         "argument dropout_p (#6) is 0.25", fn=bwd)
err_case("err_backward_grad_shape", bwd_args, set_input(0, shape=[2, 3, 5, 6]),
         "grad_out [2, 3, 5, 6]: expected [2, 3, 5, 4]", fn=bwd)
fused_case("err_safe_softmax_dim", lambda x: A._safe_softmax(x, -1), [sm_in],
           edit=edit_node("aten._safe_softmax.default", 1, 3),
           expect_error="argument dim (#1) is 3: out of range for rank 3")

if not FUSED:
    not_applicable.append("joint_step")
if not_applicable:
    print(f"attention: {len(not_applicable)} cases not applicable under PyTorch "
          f"{torch.__version__} (F.scaled_dot_product_attention, its fused CPU ops and "
          f"_safe_softmax arrived in PyTorch 2): {', '.join(not_applicable)}")
suite.main()
