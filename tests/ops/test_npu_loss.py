"""NPU builders for the loss end of a classifier's backward
(src/backends/htp/compile/builders/loss.c: _log_softmax_backward_data, nll_loss_forward,
nll_loss_backward) and for expand that broadcasts (builders/shape.c: Tile), against PyTorch, through
the CLI, on SM8450/SM8650/SM8850 (NPU placement asserted from the compile report) and SM8350 (every
node on the CPU with the float-arch reason). Harness: NpuSuite of test_npu_matmul_shape.py
(--precision fp32).

The nll cases cover reduction mean and sum, class weights (static and a graph input), targets
equal to ignore_index (PyTorch's -100, and an ignore_index that is a class), and the forms the
NPU lowering declines (reduction none, the unbatched [C] form), and a constant
grad_output (a training step's backward seed, on the NPU too). A target that is
neither a class nor ignore_index stops the CPU kernel with an error; on the NPU, which cannot
stop, the loss and total_weight come out NaN (invalid_target below). nll_loss2d (the per-pixel
form) has its cases in test_npu_seg_loss_pool.py.

    /usr/bin/python3 tests/ops/test_npu_loss.py --edgegrad build/edgegrad --workdir /tmp/w
"""
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import optest  # noqa: E402
from optest import chain, export_function, vjp  # noqa: E402
from test_npu_matmul_shape import NpuSuite  # noqa: E402

aten = torch.ops.aten
MEAN, SUM, NONE = 1, 2, 0


def log_softmax_backward(dim):
    """(g, x) -> _log_softmax_backward_data(g, log_softmax(x, dim), dim): the log-softmax of
    the last dim runs on the NPU too; of another dim it stays on the CPU."""
    def fn(g, x):
        return aten._log_softmax_backward_data(g, F.log_softmax(x, dim), dim, torch.float32)
    return fn


def nll_forward(reduction, ignore_index=-100, weighted=False):
    """(x, t[, w]) -> nll_loss_forward(log_softmax(x), t, w, reduction, ignore_index):
    (output, total_weight)."""
    def fn(x, t, *w):
        return aten.nll_loss_forward(F.log_softmax(x, 1), t, w[0] if weighted else None,
                                     reduction, ignore_index)
    return fn


def nll_forward_backward(reduction, ignore_index=-100, weighted=False):
    """(x, t, gy[, w]) -> nll_loss_backward(gy, x, t, w, reduction, ignore_index,
    total_weight of the forward), with the forward's loss too."""
    def fn(x, t, gy, *w):
        weight = w[0] if weighted else None
        out, tw = aten.nll_loss_forward(x, t, weight, reduction, ignore_index)
        return out, aten.nll_loss_backward(gy, x, t, weight, reduction, ignore_index, tw)
    return fn


def cross_entropy_grad(x, t, gy):
    """The whole loss end of a training step: cross_entropy and its gradient by autograd
    (log_softmax, nll_loss_forward, nll_loss_backward, _log_softmax_backward_data)."""
    loss = F.cross_entropy(x, t)
    return (loss,) + tuple(vjp([loss], [x], [gy]))


def build():
    torch.manual_seed(3)
    r = torch.randn
    s = NpuSuite("npu_loss")
    n, c = 6, 10  # distinct sizes: a wrong axis cannot pass
    t = torch.tensor([3, 0, 9, 3, 7, 1])
    t_ignored = torch.tensor([3, -100, 9, -100, 7, 1])
    t_class_ignored = torch.tensor([3, 2, 9, 2, 7, 1])
    w = torch.rand(c) + 0.5

    # _log_softmax_backward_data: ReduceSum + Exp + Multiply + Subtract over any dim
    s.case("log_softmax_backward_nc", log_softmax_backward(1), [r(n, c), r(n, c) * 3])
    s.case("log_softmax_backward_nc_neg", log_softmax_backward(-1), [r(n, c), r(n, c)])
    s.case("log_softmax_backward_dim0", lambda g, y: aten._log_softmax_backward_data(
        g, y, 0, torch.float32), [r(n, c), F.log_softmax(r(n, c), 0)])
    s.case("log_softmax_backward_rank4_c", lambda g, y: aten._log_softmax_backward_data(
        g, y, 1, torch.float32), [r(2, 3, 4, 5), F.log_softmax(r(2, 3, 4, 5), 1)])

    # nll_loss_forward and its backward
    s.case("nll_forward_mean", nll_forward(MEAN), [r(n, c), t])
    s.case("nll_forward_sum", nll_forward(SUM), [r(n, c), t])
    s.case("nll_forward_mean_ignored", nll_forward(MEAN), [r(n, c), t_ignored])
    s.case("nll_forward_sum_ignored", nll_forward(SUM), [r(n, c), t_ignored])
    s.case("nll_forward_mean_class_ignored", nll_forward(MEAN, ignore_index=2),
           [r(n, c), t_class_ignored])
    s.case("nll_forward_mean_all_ignored", nll_forward(MEAN), [r(n, c), torch.full((n,), -100)])
    s.case("nll_forward_weight_static", nll_forward(MEAN, weighted=True), [r(n, c), t, w],
           static=("arg2",))
    s.case("nll_forward_weight_static_class_ignored",
           nll_forward(MEAN, ignore_index=2, weighted=True), [r(n, c), t_class_ignored, w],
           static=("arg2",))
    s.case("nll_forward_weight_input", nll_forward(SUM, weighted=True), [r(n, c), t_ignored, w])
    s.case("nll_forward_weight_input_class_ignored",
           nll_forward(MEAN, ignore_index=9, weighted=True), [r(n, c), t, w])
    s.case("nll_forward_many_classes", nll_forward(MEAN), [r(5, 3000),
           torch.tensor([2049, 2048, 2999, -100, 0])])
    s.case("nll_backward_mean", nll_forward_backward(MEAN), [r(n, c), t, r(())])
    s.case("nll_backward_sum", nll_forward_backward(SUM), [r(n, c), t, r(())])
    s.case("nll_backward_mean_ignored", nll_forward_backward(MEAN), [r(n, c), t_ignored, r(())])
    s.case("nll_backward_mean_class_ignored", nll_forward_backward(MEAN, ignore_index=2),
           [r(n, c), t_class_ignored, r(())])
    s.case("nll_backward_weight_static", nll_forward_backward(MEAN, weighted=True),
           [r(n, c), t_ignored, r(()), w], static=("arg3",))
    # a constant grad_output, as a training step's backward seed is: on the NPU (the step's
    # seed as a partition input loss scaling writes: tests/unit/test_loss_seed_npu.c)
    s.case("nll_backward_constant_seed", nll_forward_backward(MEAN), [r(n, c), t, torch.ones(())],
           static=("arg2",))
    s.case("cross_entropy_grad", chain(cross_entropy_grad),
           [r(n, c).requires_grad_(), t_ignored, torch.ones(())])

    # declined forms stay on the CPU with their reason
    s.case("nll_forward_none", nll_forward(NONE), [r(n, c), t],
           cpu={"aten.nll_loss_forward.default": "reduction 0 (none)"})
    s.case("nll_forward_unbatched", lambda x, t: aten.nll_loss_forward(x, t, None, MEAN, -100),
           [F.log_softmax(r(c), 0), torch.tensor(4)],
           cpu={"aten.nll_loss_forward.default": "rank-1 scores"})

    # expand that broadcasts: [Reshape] + Tile
    s.case("expand_hw", lambda x: torch.relu(x.expand(2, 6, 3, 4)), [r(2, 6, 1, 1)])
    s.case("expand_rows", lambda x: torch.relu(x.expand(3, 4)), [r(3, 1)])
    s.case("expand_new_dims", lambda x: torch.relu(x.expand(2, 5, 3, 4)), [r(3, 1)])
    s.case("expand_scalar", lambda x: torch.relu(x.expand(2, 3)), [r(())])
    s.case("expand_middle", lambda x: torch.relu(x.expand(2, 5, 3)), [r(2, 1, 3)])
    # the backward of a mean over H, W: expand [N, C, 1, 1] over the map, then a divide
    s.case("mean_hw_backward", chain(lambda x, g: vjp([x.mean((2, 3), keepdim=True)], [x], [g])),
           [r(2, 6, 3, 4).requires_grad_(), r(2, 6, 1, 1)])
    return s


def invalid_target(exe, workdir, filt):
    """A target that is neither a class nor ignore_index: the CPU kernel (SM8350) stops the run
    with a one-line error naming it, the NPU (SM8650) gives a NaN loss and total_weight."""
    name = "invalid_target"
    if filt not in name:
        return []
    d = os.path.join(workdir, name)
    os.makedirs(d, exist_ok=True)
    model = os.path.join(d, "model")
    x, t = torch.randn(3, 5), torch.tensor([1, 7, -100])  # 7: no class of 5
    export_function(nll_forward(MEAN), [x, torch.tensor([1, 4, -100])], model,
                    arg_names=["x", "t"])
    inputs = []
    for nm, a in (("x", x), ("t", t)):
        np.save(os.path.join(d, nm + ".npy"), a.numpy())
        inputs += ["--input", f"{nm}={os.path.join(d, nm + '.npy')}"]
    results = []
    for soc, fails in (("SM8350", True), ("SM8650", False)):
        out = os.path.join(d, soc)
        p = subprocess.run([exe, "run", model + ".json", *inputs, "--soc", soc, *optest.NPU_FP32,
                            "--output-dir", out, "-q"], capture_output=True, text=True)
        err = p.stderr.strip()
        if fails:
            ok = p.returncode == 1 and len(err.splitlines()) == 1 and "out of range" in err
            why = None if ok else f"exit {p.returncode}, stderr {err!r}: expected exit 1 and " \
                                  "one line naming the target out of range"
        elif p.returncode != 0:
            why = f"edgegrad run exit {p.returncode}: {err}"
        else:
            got = [np.load(os.path.join(out, f"out{k}.npy")) for k in (0, 1)]
            why = None if all(np.isnan(g).all() for g in got) else \
                f"loss {got[0]}, total_weight {got[1]}: expected NaN for the invalid target"
        results.append((f"{name}_{soc}", why))
    return results


if __name__ == "__main__":
    build().main(extra=(invalid_target,))
