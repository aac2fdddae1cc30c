"""PyTorch comparison for the loss family: aten._log_softmax, aten._log_softmax_backward_data,
aten._softmax, aten._softmax_backward_data, aten.nll_loss_forward, aten.nll_loss_backward,
aten.nll_loss2d_forward, aten.nll_loss2d_backward, aten.mse_loss, aten.mse_loss_backward
(src/ops/loss.c).

Each op is called directly (every argument combination: dims, 1-D/2-D inputs, weights,
ignore_index, the three reductions, broadcasting) and through the chains make_fx traces for a
training step: cross_entropy and mse_loss with torch.autograd.grad. Refusals: unsupported
arguments, exported graphs edited to break a rule, and a target class out of range found while
running (exit 1, a runtime error naming the class and C).
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import optest  # noqa: E402
from optest import Suite  # noqa: E402

A = torch.ops.aten


class LossSuite(Suite):
    """A Suite with two extra kinds of case: `edit(graph)` changes the exported graph JSON
    before it runs (graphs PyTorch would never trace), and `runtime_error` runs the export on
    `bad_inputs` instead of the example inputs and expects exit 1 with that text."""

    def __init__(self, family):
        super().__init__(family)
        self.edits, self.runtime = {}, {}

    def case(self, name, fn, args, static=(), expect_error=None, edit=None,
             bad_inputs=None, runtime_error=None):
        super().case(name, fn, args, static, expect_error)
        if edit:
            self.edits[name] = edit
        if runtime_error:
            self.runtime[name] = (bad_inputs, runtime_error)

    def _run_case(self, exe, workdir, name, fn, args, static, expect_error):
        if name in self.runtime:
            return self._run_runtime_error(exe, workdir, name, fn, args, *self.runtime[name])
        edit = self.edits.get(name)
        if edit is None:
            return super()._run_case(exe, workdir, name, fn, args, static, expect_error)
        export = optest.export_function

        def export_and_edit(*a, **kw):
            result = export(*a, **kw)
            with open(result.json_path) as f:
                graph = json.load(f)
            edit(graph)
            with open(result.json_path, "w") as f:
                json.dump(graph, f)
            return result

        optest.export_function = export_and_edit
        try:
            return super()._run_case(exe, workdir, name, fn, args, static, expect_error)
        finally:
            optest.export_function = export

    @staticmethod
    def _run_runtime_error(exe, workdir, name, fn, args, bad_inputs, text):
        d = os.path.join(workdir, name)
        os.makedirs(d, exist_ok=True)
        names = [f"arg{i}" for i in range(len(args))]
        path = os.path.join(d, "model")
        optest.export_function(fn, args, path, arg_names=names)
        cmd = [exe, "run", path + ".json", "--output-dir", os.path.join(d, "out"), "-q"]
        for nm, a in zip(names, bad_inputs):
            f = os.path.join(d, nm + ".npy")
            np.save(f, a.detach().numpy())
            cmd += ["--input", f"{nm}={f}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 1 or len(lines) != 1 or text not in lines[0]:
            return f"expected exit 1 with one line containing {text!r}; got {r.returncode}: " \
                   f"{r.stderr.strip()!r}"
        return None


def node(graph, target):
    return next(n for n in graph["nodes"] if n["target"] == target)


def set_arg(target, index, value):
    def edit(graph):
        node(graph, target)["args"][index] = value
    return edit


def set_input(index, dtype=None, shape=None):
    def edit(graph):
        v = graph["values"][graph["inputs"][index]["value"]]
        if dtype:
            v["dtype"] = dtype
        if shape is not None:
            v["shape"] = shape
    return edit


def grads(f, n_wrt=1):
    """fn(*args) -> (f(*args), *d f / d args[:n_wrt]); the loss must be a scalar."""
    def fn(*args):
        with torch.enable_grad():
            loss = f(*args)
            return (loss, *torch.autograd.grad(loss, list(args[:n_wrt])))
    return fn


def leaf(*shape):
    return torch.randn(*shape).requires_grad_(True)


torch.manual_seed(0)
suite = LossSuite("loss")
r = torch.randn
inf = float("inf")
REDUCTIONS = ("none", "mean", "sum")

# ---- _log_softmax / _log_softmax_backward_data
suite.case("log_softmax_last", lambda x: torch.log_softmax(x, -1), [r(4, 10) * 5])
suite.case("log_softmax_dim0", lambda x: torch.log_softmax(x, 0), [r(4, 10)])
suite.case("log_softmax_nchw_c", lambda x: torch.log_softmax(x, 1), [r(2, 3, 4, 5)])
suite.case("log_softmax_nchw_w", lambda x: torch.log_softmax(x, 3), [r(2, 3, 4, 5)])
suite.case("log_softmax_wide", lambda x: torch.log_softmax(x, 1), [r(8, 1000) * 10])
suite.case("log_softmax_tall", lambda x: torch.log_softmax(x, 0), [r(1000, 40)])
suite.case("log_softmax_1d", lambda x: torch.log_softmax(x, 0), [r(7)])
suite.case("log_softmax_0d", lambda x: A._log_softmax(x, 0, False), [r(())])
suite.case("log_softmax_large_logits", lambda x: torch.log_softmax(x, 1),
           [torch.tensor([[1000.0, 1001.0, 999.0], [-500.0, 0.0, 20.0]])])
suite.case("log_softmax_empty", lambda x: torch.log_softmax(x, 1), [r(0, 4)])
def log_softmax_backward_case(dim, shape):
    suite.case(f"log_softmax_backward_{dim}_{len(shape)}d",
               lambda g, y: A._log_softmax_backward_data(g, y, dim, torch.float32),
               [r(*shape), torch.log_softmax(r(*shape), dim)])


for dim, shape in ((1, (6, 9)), (0, (6, 9)), (1, (2, 5, 3, 3)), (-1, (3, 4, 17))):
    log_softmax_backward_case(dim, shape)
suite.case("log_softmax_grad", grads(lambda x, w: (torch.log_softmax(x, 1) * w).sum()),
           [leaf(5, 7), r(5, 7)])

# ---- _softmax / _softmax_backward_data
def softmax_cases(dim, shape):
    tag = f"{dim}_{'x'.join(map(str, shape))}"
    suite.case(f"softmax_{tag}", lambda x: torch.softmax(x, dim), [r(*shape) * 5])
    suite.case(f"softmax_backward_{tag}",
               lambda g, y: A._softmax_backward_data(g, y, dim, torch.float32),
               [r(*shape), torch.softmax(r(*shape), dim)])


for dim, shape in ((-1, (4, 10)), (0, (4, 10)), (1, (2, 3, 4, 5)), (3, (2, 3, 4, 5)),
                   (1, (8, 1000)), (0, (1000, 40)), (0, (7,)), (2, (2, 37, 20))):
    softmax_cases(dim, shape)
suite.case("softmax_0d", lambda x: A._softmax(x, 0, False), [r(())])
suite.case("softmax_large_logits", lambda x: torch.softmax(x, 1),
           [torch.tensor([[1000.0, 1001.0, 999.0], [-500.0, 0.0, 20.0], [-inf, 0.0, 1.0]])])
suite.case("softmax_empty", lambda x: torch.softmax(x, 1), [r(0, 4)])
suite.case("softmax_grad", grads(lambda x, w: (torch.softmax(x, 1) * w).sum()),
           [leaf(5, 7), r(5, 7)])
suite.case("softmax_grad_nchw", grads(lambda x, w: (torch.softmax(x, 1) * w).sum()),
           [leaf(2, 6, 3, 4), r(2, 6, 3, 4)])


def attention_step(q, k, v, t):  # softmax(q k^T / sqrt(d)) v, the common use
    with torch.enable_grad():
        a = torch.softmax(q @ k.t() / 4.0, -1)
        loss = F.mse_loss(a @ v, t)
        return (loss, *torch.autograd.grad(loss, [q, k, v]))


suite.case("softmax_attention_step", attention_step, [leaf(6, 16), leaf(5, 16), leaf(5, 8),
                                                      r(6, 8)])

# ---- nll_loss_forward / nll_loss_backward, called directly
scores = torch.log_softmax(r(6, 5), 1)
targets = torch.tensor([0, 4, 2, 2, 1, 3])
weight = torch.rand(5) + 0.5


def nll_cases(red):
    suite.case(f"nll_forward_{REDUCTIONS[red]}",
               lambda x, t: A.nll_loss_forward(x, t, None, red, -100),
               [scores, targets])
    suite.case(f"nll_forward_{REDUCTIONS[red]}_weight_ignore",
               lambda x, t, w: A.nll_loss_forward(x, t, w, red, 2),
               [scores, targets, weight])
    suite.case(f"nll_forward_{REDUCTIONS[red]}_1d",
               lambda x, t: A.nll_loss_forward(x, t, None, red, -100),
               [scores[0], torch.tensor(3)])
    suite.case(f"nll_forward_{REDUCTIONS[red]}_1d_weight",
               lambda x, t, w: A.nll_loss_forward(x, t, w, red, -100),
               [scores[0], torch.tensor(3), weight])
    suite.case(f"nll_forward_{REDUCTIONS[red]}_1d_ignored",  # mean: 0 / 0 = NaN
               lambda x, t: A.nll_loss_forward(x, t, None, red, 3),
               [scores[0], torch.tensor(3)])
    suite.case(f"nll_forward_{REDUCTIONS[red]}_all_ignored",
               lambda x, t: A.nll_loss_forward(x, t, None, red, 1),
               [scores, torch.ones(6, dtype=torch.int64)])
    gy = r(6) if red == 0 else r(())
    tw = torch.tensor(float(weight[targets[targets != 2]].sum()))
    suite.case(f"nll_backward_{REDUCTIONS[red]}",
               lambda g, x, t, w, tw: A.nll_loss_backward(g, x, t, w, red, 2, tw),
               [gy, scores, targets, weight, tw])
    suite.case(f"nll_backward_{REDUCTIONS[red]}_noweight",
               lambda g, x, t, tw: A.nll_loss_backward(g, x, t, None, red, -100, tw),
               [gy, scores, targets, torch.tensor(6.0)])
    suite.case(f"nll_backward_{REDUCTIONS[red]}_1d",
               lambda g, x, t, tw: A.nll_loss_backward(g, x, t, None, red, -100, tw),
               [r(()), scores[0], torch.tensor(1), torch.tensor(1.0)])


for red in range(3):
    nll_cases(red)
suite.case("nll_forward_weight_static", lambda x, t, w: A.nll_loss_forward(x, t, w, 1, -100),
           [scores, targets, weight], static=("arg2",))
suite.case("nll_forward_neg_ignore_present",
           lambda x, t: A.nll_loss_forward(x, t, None, 1, -1),
           [scores, torch.tensor([0, -1, 2, -1, 1, 3])])
suite.case("nll_forward_empty_sum", lambda x, t: A.nll_loss_forward(x, t, None, 2, -100),
           [r(0, 5), torch.zeros(0, dtype=torch.int64)])
suite.case("nll_forward_empty_mean", lambda x, t: A.nll_loss_forward(x, t, None, 1, -100),
           [r(0, 5), torch.zeros(0, dtype=torch.int64)])
suite.case("nll_backward_mean_zero_weight",  # total weight 0: the gradient is NaN where used
           lambda g, x, t, w, tw: A.nll_loss_backward(g, x, t, w, 1, -100, tw),
           [r(()), scores, targets, torch.zeros(5), torch.tensor(0.0)])
suite.case("cross_entropy_all_ignored", grads(lambda x, t: F.cross_entropy(x, t, ignore_index=2)),
           [leaf(3, 4), torch.tensor([2, 2, 2])])
suite.case("nll_forward_big", lambda x, t, w: A.nll_loss_forward(x, t, w, 1, -100),
           [r(4096, 100), torch.randint(0, 100, (4096,)), torch.rand(100)])

# ---- nll_loss2d_forward / nll_loss2d_backward (segmentation: [N, C, H, W] scores)
seg = torch.log_softmax(r(2, 4, 5, 6), 1)
seg_t = torch.randint(0, 4, (2, 5, 6))
seg_w = torch.rand(4) + 0.5


def nll2d_cases(red):
    name = REDUCTIONS[red]
    suite.case(f"nll2d_forward_{name}", lambda x, t: A.nll_loss2d_forward(x, t, None, red, -100),
               [seg, seg_t])
    suite.case(f"nll2d_forward_{name}_weight_ignore",
               lambda x, t, w: A.nll_loss2d_forward(x, t, w, red, 1), [seg, seg_t, seg_w])
    suite.case(f"nll2d_forward_{name}_all_ignored",
               lambda x, t: A.nll_loss2d_forward(x, t, None, red, 2),
               [seg, torch.full((2, 5, 6), 2)])
    gy = r(2, 5, 6) if red == 0 else r(())
    tw = torch.tensor(float(seg_w[seg_t[seg_t != 1]].sum()))
    suite.case(f"nll2d_backward_{name}",
               lambda g, x, t, w, tw: A.nll_loss2d_backward(g, x, t, w, red, 1, tw),
               [gy, seg, seg_t, seg_w, tw])
    suite.case(f"nll2d_backward_{name}_noweight",
               lambda g, x, t, tw: A.nll_loss2d_backward(g, x, t, None, red, -100, tw),
               [gy, seg, seg_t, torch.tensor(60.0)])


for red in range(3):
    nll2d_cases(red)
suite.case("nll2d_forward_empty_mean", lambda x, t: A.nll_loss2d_forward(x, t, None, 1, -100),
           [r(2, 3, 0, 4), torch.zeros(2, 0, 4, dtype=torch.int64)])
suite.case("nll2d_forward_big", lambda x, t, w: A.nll_loss2d_forward(x, t, w, 1, 255),
           [r(2, 21, 32, 32), torch.randint(0, 21, (2, 32, 32)).masked_fill(
               torch.rand(2, 32, 32) < 0.1, 255), torch.rand(21)])
def segmentation_case(red):
    suite.case(f"segmentation_cross_entropy_{red}",
               grads(lambda x, t, w: F.cross_entropy(x, t, weight=w, ignore_index=255,
                                                     reduction=red).sum()),
               [leaf(2, 5, 6, 7), torch.randint(0, 5, (2, 6, 7)).masked_fill(
                   torch.rand(2, 6, 7) < 0.2, 255), torch.rand(5) + 0.5])


for red in REDUCTIONS:
    segmentation_case(red)


def seg_step(x, t, w):  # a 1x1 conv head, then per-pixel cross entropy
    with torch.enable_grad():
        loss = F.cross_entropy(F.conv2d(x, w), t)
        return (loss, *torch.autograd.grad(loss, [x, w]))


suite.case("segmentation_step", seg_step, [leaf(2, 3, 8, 8), torch.randint(0, 6, (2, 8, 8)),
                                           leaf(6, 3, 1, 1)])

# ---- the chains make_fx traces for a classifier's training step
def cross_entropy_cases(red):
    suite.case(f"cross_entropy_{red}",
               grads(lambda x, t: F.cross_entropy(x, t, reduction=red)),
               [leaf(8, 5), torch.randint(0, 5, (8,))])
    suite.case(f"cross_entropy_{red}_weight_ignore",
               grads(lambda x, t, w: F.cross_entropy(x, t, weight=w, reduction=red,
                                                              ignore_index=1)),
               [leaf(8, 5), torch.tensor([0, 1, 2, 3, 4, 1, 1, 2]), torch.rand(5) + 0.5])
    suite.case(f"cross_entropy_{red}_1d",
               grads(lambda x, t: F.cross_entropy(x, t, reduction=red)),
               [leaf(5), torch.tensor(2)])


for red in ("mean", "sum"):
    cross_entropy_cases(red)
suite.case("cross_entropy_none_weight_ignore",
           grads(lambda x, t, w: F.cross_entropy(x, t, weight=w, reduction="none",
                                                 ignore_index=0).sum()),
           [leaf(8, 5), torch.tensor([0, 1, 2, 3, 4, 0, 1, 2]), torch.rand(5) + 0.5])
suite.case("cross_entropy_none", lambda x, t: F.cross_entropy(x, t, reduction="none"),
           [r(8, 5), torch.randint(0, 5, (8,))])
suite.case("cross_entropy_weight_static",
           grads(lambda x, t, w: F.cross_entropy(x, t, weight=w, ignore_index=2)),
           [leaf(16, 10), torch.randint(0, 10, (16,)), torch.rand(10)], static=("arg2",))
suite.case("nll_of_log_softmax_grad",
           grads(lambda x, t: F.nll_loss(F.log_softmax(x, 1), t, ignore_index=-1)),
           [leaf(6, 4), torch.tensor([0, -1, 3, 2, -1, 1])])

# ---- mse_loss / mse_loss_backward
def mse_cases(red):
    name = REDUCTIONS[red]
    suite.case(f"mse_{name}", lambda x, t: A.mse_loss(x, t, red), [r(3, 4), r(3, 4)])
    suite.case(f"mse_{name}_bcast", lambda x, t: A.mse_loss(x, t, red),
               [r(4), r(3, 4)])
    suite.case(f"mse_{name}_bcast2", lambda x, t: A.mse_loss(x, t, red),
               [r(2, 1, 5), r(3, 1)])
    suite.case(f"mse_{name}_0d", lambda x, t: A.mse_loss(x, t, red), [r(()), r(())])
    suite.case(f"mse_{name}_nchw", lambda x, t: A.mse_loss(x, t, red),
               [r(4, 3, 16, 16), r(4, 3, 16, 16)])
    suite.case(f"mse_backward_{name}",
               lambda g, x, t: A.mse_loss_backward(g, x, t, red),
               [r(3, 4) if red == 0 else r(()), r(3, 4), r(3, 4)])
    suite.case(f"mse_backward_{name}_bcast",
               lambda g, x, t: A.mse_loss_backward(g, x, t, red),
               [r(3, 4) if red == 0 else r(()), r(3, 4), r(3, 1)])
    suite.case(f"mse_grad_{name}",
               grads(lambda x, t: F.mse_loss(x, t, reduction=REDUCTIONS[red]).sum()
                     if red == 0 else F.mse_loss(x, t, reduction=REDUCTIONS[red])),
               [leaf(5, 6), r(5, 6)])


for red in range(3):
    mse_cases(red)
suite.case("mse_default_reduction", lambda x, t: A.mse_loss(x, t), [r(3, 4), r(3, 4)])
suite.case("mse_empty_sum", lambda x, t: A.mse_loss(x, t, 2), [r(0, 4), r(0, 4)])
suite.case("mse_empty_mean", lambda x, t: A.mse_loss(x, t, 1), [r(0, 4), r(0, 4)])
suite.case("mse_inf", lambda x, t: A.mse_loss(x, t, 0),  # inf - inf: NaN
           [torch.tensor([1.0, inf, inf]), torch.tensor([2.0, 0.0, inf])])
suite.case("mse_grad_both", grads(lambda x, t: F.mse_loss(x, t), n_wrt=2),
           [leaf(4, 3), leaf(4, 3)])

# ---- refused: unsupported arguments PyTorch accepts
suite.case("err_log_softmax_f64", lambda x: torch.log_softmax(x, 1),
           [r(2, 3, dtype=torch.float64)], expect_error="supports float32 only")
suite.case("err_nll_uint8_target", lambda x, t: A.nll_loss_forward(x, t, None, 1, -100),
           [scores, targets.to(torch.uint8)], expect_error="class indices must be int64")

# ---- refused: graphs edited to break a rule
LSM, NLL, NLLB, MSE = ("aten._log_softmax.default", "aten.nll_loss_forward.default",
                       "aten.nll_loss_backward.default", "aten.mse_loss.default")
suite.case("err_log_softmax_dim", lambda x: torch.log_softmax(x, 1), [r(2, 3)],
           edit=set_arg(LSM, 1, 2), expect_error="argument dim (#1) is 2: out of range")
suite.case("err_half_to_float", lambda x: torch.log_softmax(x, 1), [r(2, 3)],
           edit=set_arg(LSM, 2, True), expect_error="half_to_float")
SM, SMB = "aten._softmax.default", "aten._softmax_backward_data.default"
suite.case("err_softmax_dim", lambda x: torch.softmax(x, 1), [r(2, 3)],
           edit=set_arg(SM, 1, -3), expect_error="argument dim (#1) is -3: out of range")
suite.case("err_softmax_f64", lambda x: torch.softmax(x, 1), [r(2, 3, dtype=torch.float64)],
           expect_error="supports float32 only")
suite.case("err_softmax_backward_shapes",
           lambda g, y: A._softmax_backward_data(g, y, 1, torch.float32), [r(2, 3), r(2, 3)],
           edit=set_input(1, shape=[3, 2]),
           expect_error="grad_output [2, 3] and output [3, 2]: the shapes must be equal")
suite.case("err_nll_reduction", lambda x, t: A.nll_loss_forward(x, t, None, 1, -100),
           [scores, targets], edit=set_arg(NLL, 3, 3),
           expect_error="reduction (#3) is 3: expected 0 (none), 1 (mean) or 2 (sum)")
suite.case("err_nll_target_shape", lambda x, t: A.nll_loss_forward(x, t, None, 1, -100),
           [scores, targets], edit=set_input(1, shape=[5]),
           expect_error="self [6, 5] and target [5]")
suite.case("err_nll_target_dtype", lambda x, t: A.nll_loss_forward(x, t, None, 1, -100),
           [scores, targets], edit=set_input(1, dtype="int32"),
           expect_error="class indices must be int64")
suite.case("err_nll_3d", lambda x, t: A.nll_loss_forward(x, t, None, 1, -100),
           [scores, targets], edit=set_input(0, shape=[6, 5, 1]),
           expect_error="[6, 5, 1]: nll_loss takes [N, C] or [C] scores")
suite.case("err_nll_weight_shape", lambda x, t, w: A.nll_loss_forward(x, t, w, 1, -100),
           [scores, targets, weight], edit=set_input(2, shape=[4]),
           expect_error="weight [4] for 5 classes")
suite.case("err_nll_backward_grad_shape",
           lambda g, x, t, tw: A.nll_loss_backward(g, x, t, None, 0, -100, tw),
           [r(6), scores, targets, torch.tensor(0.0)], edit=set_input(0, shape=[5]),
           expect_error="grad_output [5]: reduction none on 6 rows needs [6]")
suite.case("err_mse_shapes", lambda x, t: A.mse_loss(x, t, 0), [r(3, 4), r(3, 4)],
           edit=set_input(1, shape=[2, 4]),
           expect_error="self [3, 4], target [2, 4]: the shapes do not broadcast")
suite.case("err_mse_reduction", lambda x, t: A.mse_loss(x, t, 2), [r(3, 4), r(3, 4)],
           edit=set_arg(MSE, 2, -1), expect_error="reduction (#2) is -1")

suite.case("err_nll2d_target_shape", lambda x, t: A.nll_loss2d_forward(x, t, None, 1, -100),
           [seg, seg_t], edit=set_input(1, shape=[2, 6, 5]),
           expect_error="self [2, 4, 5, 6] and target [2, 6, 5]: the target must be [N, H, W]")
suite.case("err_nll2d_3d", lambda x, t: A.nll_loss2d_forward(x, t, None, 1, -100),
           [seg, seg_t], edit=set_input(0, shape=[2, 4, 30]),
           expect_error="[2, 4, 30]: nll_loss2d takes [N, C, H, W] scores")
suite.case("err_nll2d_weight_shape", lambda x, t, w: A.nll_loss2d_forward(x, t, w, 1, -100),
           [seg, seg_t, seg_w], edit=set_input(2, shape=[5]),
           expect_error="weight [5] for 4 classes")
suite.case("err_nll2d_backward_grad_shape",
           lambda g, x, t, tw: A.nll_loss2d_backward(g, x, t, None, 0, -100, tw),
           [r(2, 5, 6), seg, seg_t, torch.tensor(0.0)], edit=set_input(0, shape=[2, 30]),
           expect_error="grad_output [2, 30]: reduction none on 2 rows needs [2, 5, 6]")

# ---- a target class out of range is found while running
def bad_target_case(red):
    suite.case(f"runtime_nll_bad_target_{REDUCTIONS[red]}",
               lambda x, t: A.nll_loss_forward(x, t, None, red, -100),
               [scores, targets],
               bad_inputs=[scores, torch.tensor([0, 4, 2, 7, 1, 3])],
               runtime_error="target[3] is class 7: out of range [0, C=5)")


for red in range(3):
    bad_target_case(red)
suite.case("runtime_nll_backward_bad_target",
           lambda g, x, t, tw: A.nll_loss_backward(g, x, t, None, 1, -100, tw),
           [r(()), scores, targets, torch.tensor(6.0)],
           bad_inputs=[r(()), scores, torch.tensor([0, -3, 2, 2, 1, 3]), torch.tensor(6.0)],
           runtime_error="target[1] is class -3: out of range [0, C=5)")
bad_seg_t = seg_t.clone()
bad_seg_t[1, 2, 3] = 4
suite.case("runtime_nll2d_bad_target", lambda x, t: A.nll_loss2d_forward(x, t, None, 1, -100),
           [seg, seg_t], bad_inputs=[seg, bad_seg_t],
           runtime_error="target[45] is class 4: out of range [0, C=4)")
suite.case("runtime_cross_entropy_bad_target", grads(lambda x, t: F.cross_entropy(x, t)),
           [leaf(4, 3), torch.tensor([0, 1, 2, 1])],
           bad_inputs=[r(4, 3), torch.tensor([0, 1, 3, 1])],
           runtime_error="class 3: out of range [0, C=3)")

if __name__ == "__main__":
    suite.main()
