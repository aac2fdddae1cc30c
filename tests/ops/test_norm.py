"""PyTorch comparison tests for the norm family (src/ops/norm.c): native_batch_norm,
native_batch_norm_backward, native_group_norm, native_group_norm_backward.

Forward and backward ops are called directly (torch.ops.aten.*) so every output_mask, weight
None, train and eval can be reached; the training steps at the end (Conv->BatchNorm->ReLU,
Conv->GroupNorm->SiLU, InstanceNorm) go through torch.nn.functional and torch.autograd.grad the
way a model does, so they also need the ops those traces contain (convolution, relu, silu,
mse_loss, view, repeat, _reshape_alias, sum, and aten.empty.memory_format, which every
F.batch_norm trace carries).

Graphs the checks must reject and that PyTorch will not trace (ATen crashes or raises on them)
are made by editing an exported graph.

Note: native_batch_norm in training mode updates running_mean/running_var in place in ATen,
undeclared in its schema, so make_fx/functionalize in PyTorch 1.13 do not record it; edgegrad's
op is pure and never writes its inputs. The exporter makes the update explicit with separate
nodes; the cases that return running statistics check that whole chain against eager PyTorch.

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_norm.py \
        --edgegrad build/edgegrad --workdir /tmp/ops-norm
"""
import itertools
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import optest  # noqa: E402

aten = torch.ops.aten
torch.manual_seed(0)


class _OnSocs:
    """A case compiled for every SoC of test_npu_elementwise.SOCS instead of run on the CPU
    alone: the compile report must place the targets of `npu` on the NPU and those of `cpu` on
    the CPU with the given reason (its check_model), and every output must match fn's."""

    def __init__(self, fn, npu=(), cpu=None):
        self.fn, self.npu, self.cpu = fn, npu, cpu or {}

    def __call__(self, *args):
        return self.fn(*args)


class NormSuite(optest.Suite):
    def _run_case(self, exe, workdir, name, fn, args, static, expect_error):
        if not isinstance(fn, _OnSocs):
            return super()._run_case(exe, workdir, name, fn, args, static, expect_error)
        from test_npu_elementwise import SOCS, _t, check_model
        d = os.path.join(workdir, name)
        os.makedirs(d, exist_ok=True)
        names = [f"arg{i}" for i in range(len(args))]
        optest.export_function(fn.fn, args, os.path.join(d, "model"), arg_names=names)
        with torch.no_grad():
            refs = {f"out{k}": r.numpy() for k, r in enumerate(fn(*args))}
        return check_model(exe, os.path.join(d, "model.json"),
                           {nm: a.numpy() for nm, a in zip(names, args)}, refs, d, SOCS,
                           {_t(t) for t in fn.npu}, {_t(t): v for t, v in fn.cpu.items()})


suite = NormSuite("norm")
MASKS = [list(m) for m in itertools.product([False, True], repeat=3)]


def mask_name(mask):
    return "".join("T" if m else "F" for m in mask)


def present(*ts):
    """The tensors among ts (a backward's None elements dropped)."""
    return tuple(t for t in ts if t is not None)


def rand(*shape, scale=1.0, offset=0.0):
    return torch.randn(*shape) * scale + offset


def positive(*shape):
    return torch.rand(*shape) + 0.5


# ---- edited graphs: export a valid one, then edit its JSON ----------------------------------

_Edited = optest.Edited  # fn (the reference), an edit of the exported graph, a trace


node = optest.graph_node


def set_arg(target, pos, new):
    def edit(graph):
        node(graph, target)["args"][pos] = new
    return edit


# ---- native_batch_norm forward ----------------------------------------------------------------

def bn_train(eps=1e-5, momentum=0.1):
    def fn(x, w, b):
        return tuple(aten.native_batch_norm(x, w, b, None, None, True, momentum, eps))
    return fn


def bn_train_noaffine(x):
    return tuple(aten.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5))


def bn_train_running(momentum):
    def fn(x, w, b, rm, rv):
        # ATen updates the running statistics in place, undeclared; the exporter makes that
        # explicit (new nodes after the batch norm, read by everything after it, here the
        # returned copies). The copies keep fn from writing its arguments (refused).
        rm, rv = rm.clone(), rv.clone()
        out = aten.native_batch_norm(x, w, b, rm, rv, True, momentum, 1e-5)
        return (*out, rm, rv)
    return fn


def bn_eval(eps=1e-5):
    def fn(x, w, b, rm, rv):
        return tuple(aten.native_batch_norm(x, w, b, rm, rv, False, 0.1, eps))
    return fn


def bn_eval_noaffine(x, rm, rv):
    return tuple(aten.native_batch_norm(x, None, None, rm, rv, False, 0.1, 1e-5))


for shape in [(4, 3, 5, 5), (8, 6), (2, 3, 7), (2, 3, 2, 2, 3), (1, 5, 3, 3), (16, 2, 1, 1)]:
    c, tag = shape[1], "x".join(map(str, shape))
    suite.case(f"bn_train_{tag}", bn_train(), [rand(*shape), rand(c), rand(c)])
    suite.case(f"bn_eval_{tag}", bn_eval(),
               [rand(*shape), rand(c), rand(c), rand(c), positive(c)])
suite.case("bn_train_noaffine", bn_train_noaffine, [rand(3, 4, 6, 6)])
suite.case("bn_train_eps1e-3", bn_train(eps=1e-3), [rand(4, 3, 3, 3, scale=0.01), rand(3),
                                                    rand(3)])
suite.case("bn_train_large_mean", bn_train(), [rand(4, 3, 8, 8, offset=100.0), rand(3), rand(3)])
suite.case("bn_train_running", bn_train_running(0.1),
           [rand(4, 3, 5, 5), rand(3), rand(3), rand(3), positive(3)])
suite.case("bn_train_running_momentum0.7_rank2", bn_train_running(0.7),
           [rand(6, 4), rand(4), rand(4), rand(4), positive(4)])
suite.case("bn_train_one_value", bn_train(), [rand(1, 4), rand(4), rand(4)])
suite.case("bn_eval_noaffine", bn_eval_noaffine, [rand(2, 4, 3, 3), rand(4), positive(4)])
suite.case("bn_eval_eps1e-1", bn_eval(eps=0.1),
           [rand(2, 4, 3, 3), rand(4), rand(4), rand(4), positive(4)])
# (an empty batch is covered by the C unit test only: ATen 1.13 dies of SIGFPE on it)
suite.case("bn_train_big", bn_train(), [rand(8, 32, 16, 16), rand(32), rand(32)])


# ---- native_batch_norm_backward -----------------------------------------------------------------

def bn_bwd_train(mask, weighted):
    def fn(gy, x, w, b):
        wt = w if weighted else None
        out, sm, si = aten.native_batch_norm(x, wt, b if weighted else None, None, None, True,
                                             0.1, 1e-5)
        grads = aten.native_batch_norm_backward(gy, x, wt, None, None, sm, si, True, 1e-5, mask)
        return (out, *present(*grads))
    return fn


def bn_bwd_eval(mask, weighted):
    def fn(gy, x, w, rm, rv):
        wt = w if weighted else None
        out, sm, si = aten.native_batch_norm(x, wt, None, rm, rv, False, 0.1, 1e-5)
        # eval: save_mean/save_invstd are the [0] tensors the eval forward returned
        grads = aten.native_batch_norm_backward(gy, x, wt, rm, rv, sm, si, False, 1e-5, mask)
        return (out, *present(*grads))
    return fn


def bn_bwd_train_running(gy, x, w, rm, rv):
    # the shape make_fx traces for F.batch_norm(training=True) with running stats
    rm, rv = rm.clone(), rv.clone()
    out, sm, si = aten.native_batch_norm(x, w, None, rm, rv, True, 0.1, 1e-5)
    return tuple(aten.native_batch_norm_backward(gy, x, w, rm, rv, sm, si, True, 1e-5,
                                                 [True, True, True]))


def bn_bwd_eval_nosave(gy, x, w, rm, rv):
    return tuple(aten.native_batch_norm_backward(gy, x, w, rm, rv, None, None, False, 1e-5,
                                                 [True, True, True]))


for mask in MASKS:
    for weighted in (True, False):
        wn = "w" if weighted else "now"
        shape = (4, 3, 5, 5)
        suite.case(f"bn_bwd_train_{mask_name(mask)}_{wn}", bn_bwd_train(mask, weighted),
                   [rand(*shape), rand(*shape), rand(3), rand(3)])
        suite.case(f"bn_bwd_eval_{mask_name(mask)}_{wn}", bn_bwd_eval(mask, weighted),
                   [rand(*shape), rand(*shape), rand(3), rand(3), positive(3)])
for shape in [(8, 6), (2, 3, 7), (2, 3, 2, 2, 3), (8, 32, 16, 16)]:
    c, tag = shape[1], "x".join(map(str, shape))
    suite.case(f"bn_bwd_train_{tag}", bn_bwd_train([True, True, True], True),
               [rand(*shape), rand(*shape), rand(c), rand(c)])
    suite.case(f"bn_bwd_eval_{tag}", bn_bwd_eval([True, True, True], True),
               [rand(*shape), rand(*shape), rand(c), rand(c), positive(c)])
suite.case("bn_bwd_train_large_mean", bn_bwd_train([True, True, True], True),
           [rand(4, 3, 6, 6), rand(4, 3, 6, 6, offset=50.0), rand(3), rand(3)])
suite.case("bn_bwd_train_running", bn_bwd_train_running,
           [rand(4, 3, 5, 5), rand(4, 3, 5, 5), rand(3), rand(3), positive(3)])
suite.case("bn_bwd_eval_nosave", bn_bwd_eval_nosave,
           [rand(4, 3, 5, 5), rand(4, 3, 5, 5), rand(3), rand(3), positive(3)])



# ---- torch 2's batch-norm forms: _native_batch_norm_legit* ----------------------------------
# torch.export traces these instead of native_batch_norm. make_fx + functionalize (the exporter)
# never keeps _native_batch_norm_legit.default (its schema writes the running statistics: it
# becomes _legit_functional), so its cases export another form and retarget the node by editing.

def _Retargeted(ref, traced, edit):
    """A case whose reference is `ref` while the graph is exported from `traced`, then edited."""
    return optest.Edited(ref, edit, trace=traced)


LEGIT = "aten._native_batch_norm_legit.default"
LEGIT_FN = "aten._native_batch_norm_legit_functional.default"
LEGIT_NT = "aten._native_batch_norm_legit_no_training.default"
LEGIT_NS = "aten._native_batch_norm_legit.no_stats"


def legit_functional(training, momentum=0.1, weighted=True):
    def fn(x, w, b, rm, rv):
        wt, bt = (w, b) if weighted else (None, None)
        return tuple(aten._native_batch_norm_legit_functional(x, wt, bt, rm, rv, training,
                                                              momentum, 1e-5))
    return fn


def legit_no_training(weighted=True, eps=1e-5):
    def fn(x, w, b, rm, rv):
        wt, bt = (w, b) if weighted else (None, None)
        return tuple(aten._native_batch_norm_legit_no_training(x, wt, bt, rm, rv, 0.1, eps))
    return fn


def legit_no_stats(x, w, b):
    return tuple(aten._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5))


def legit(training):
    def fn(x, w, b, rm, rv):  # clones: ATen writes the running statistics in training
        return tuple(aten._native_batch_norm_legit(x, w, b, rm.clone(), rv.clone(), training,
                                                   0.1, 1e-5))
    return fn


def retarget_no_training(graph):
    """_legit_no_training(x, w, b, rm, rv, momentum, eps) -> _legit(..., training=False, ...)."""
    nd = node(graph, LEGIT_NT)
    nd["target"] = LEGIT
    nd["args"].insert(5, False)


def retarget_no_stats(graph):
    """_legit.no_stats(x, w, b, True, momentum, eps) -> _legit(x, w, b, rm, rv, True, ...) with
    the graph's inputs 3 and 4 as the running statistics."""
    nd = node(graph, LEGIT_NS)
    nd["target"] = LEGIT
    nd["args"][3:3] = [{"value": graph["inputs"][i]["value"]} for i in (3, 4)]


def legit_bwd(mask, weighted=True):
    # torch.export's joint graphs: _legit_functional forward, native_batch_norm_backward
    def fn(gy, x, w, b, rm, rv):
        wt, bt = (w, b) if weighted else (None, None)
        out, sm, si, nrm, nrv = aten._native_batch_norm_legit_functional(x, wt, bt, rm, rv, True,
                                                                         0.1, 1e-5)
        grads = aten.native_batch_norm_backward(gy, x, wt, rm, rv, sm, si, True, 1e-5, mask)
        return (out, nrm, nrv, *present(*grads))
    return fn


def bn_args(shape, grad=False):
    c = shape[1]
    return ([rand(*shape)] if grad else []) + [rand(*shape), rand(c), rand(c), rand(c),
                                               positive(c)]


if hasattr(aten, "_native_batch_norm_legit_functional"):
    for shape in [(4, 3, 5, 5), (8, 6), (2, 3, 7), (1, 5, 3, 3), (8, 32, 16, 16)]:
        tag = "x".join(map(str, shape))
        suite.case(f"bn_legit_functional_train_{tag}", legit_functional(True), bn_args(shape))
        suite.case(f"bn_legit_functional_eval_{tag}", legit_functional(False), bn_args(shape))
        suite.case(f"bn_legit_no_training_{tag}", legit_no_training(), bn_args(shape))
        suite.case(f"bn_legit_no_stats_{tag}", legit_no_stats, bn_args(shape)[:3])
        suite.case(f"bn_legit_eval_{tag}",
                   _Retargeted(legit(False), legit_no_training(), retarget_no_training),
                   bn_args(shape))
        suite.case(f"bn_legit_train_{tag}",
                   _Retargeted(legit(True), lambda x, w, b, rm, rv: legit_no_stats(x, w, b),
                               retarget_no_stats), bn_args(shape))
    suite.case("bn_legit_functional_train_momentum0.7_noaffine",
               legit_functional(True, 0.7, weighted=False), bn_args((6, 4, 3, 3)))
    suite.case("bn_legit_functional_train_one_value", legit_functional(True), bn_args((1, 4)))
    suite.case("bn_legit_no_training_noaffine_eps1e-1", legit_no_training(False, 0.1),
               bn_args((2, 4, 3, 3)))
    for mask in MASKS:
        suite.case(f"bn_legit_bwd_{mask_name(mask)}", legit_bwd(mask),
                   bn_args((4, 3, 5, 5), grad=True))
    suite.case("bn_legit_bwd_now", legit_bwd([True, False, False], weighted=False),
               bn_args((4, 3, 5, 5), grad=True))
    suite.case("err_bn_legit_no_stats_eval",
               _Edited(legit_no_stats, set_arg(LEGIT_NS, 3, False)), bn_args((2, 3, 4))[:3],
               expect_error="training=False without running_mean")
    suite.case("err_bn_legit_functional_no_running_var",
               _Edited(legit_functional(True), set_arg(LEGIT_FN, 4, None)), bn_args((2, 3, 4)),
               expect_error="argument running_var (#4) is a None: expected a tensor")

    def input_as_running_var(graph):
        node(graph, LEGIT_NT)["args"][4] = {"value": graph["inputs"][0]["value"]}

    suite.case("err_bn_legit_no_training_var_shape",
               _Edited(legit_no_training(), input_as_running_var), bn_args((2, 3, 4)),
               expect_error="running_var shape [2, 3, 4]: expected [3] (one per channel)")
else:
    print(f"skip norm/bn_legit_*: torch {torch.__version__} has no _native_batch_norm_legit ops "
          "(torch.export's batch-norm forms, torch 2.x); run this file with torch 2 for them")

# ---- native_group_norm forward and backward -------------------------------------------------

def gn_fwd(N, C, HxW, group, weighted=True, eps=1e-5):
    def fn(x, w, b):
        return tuple(aten.native_group_norm(x, w if weighted else None, b if weighted else None,
                                            N, C, HxW, group, eps))
    return fn


def gn_bwd(N, C, HxW, group, mask, weighted=True):
    def fn(gy, x, w, b):
        wt = w if weighted else None
        out, mean, rstd = aten.native_group_norm(x, wt, b if weighted else None, N, C, HxW,
                                                 group, 1e-5)
        grads = aten.native_group_norm_backward(gy, x, mean, rstd, wt, N, C, HxW, group, mask)
        return (out, *present(*grads))
    return fn


for shape in [(2, 6, 4, 4), (3, 4, 5), (2, 8), (1, 12, 3, 3), (4, 32, 8, 8)]:
    n, c = shape[:2]
    hw = 1
    for d in shape[2:]:
        hw *= d
    tag = "x".join(map(str, shape))
    for group in sorted({1, 2, c}):
        suite.case(f"gn_{tag}_g{group}", gn_fwd(n, c, hw, group),
                   [rand(*shape), rand(c), rand(c)])
        if c // group * hw == 1:
            continue  # one value per group: grad_input is exactly 0 and ATen's is rounding noise
        suite.case(f"gn_bwd_{tag}_g{group}", gn_bwd(n, c, hw, group, [True, True, True]),
                   [rand(*shape), rand(*shape), rand(c), rand(c)])
suite.case("gn_g3_noaffine", gn_fwd(2, 6, 16, 3, weighted=False), [rand(2, 6, 4, 4), rand(6),
                                                                  rand(6)])
suite.case("gn_eps1e-2", gn_fwd(2, 6, 16, 3, eps=1e-2), [rand(2, 6, 4, 4), rand(6), rand(6)])
suite.case("gn_large_mean", gn_fwd(2, 6, 16, 2), [rand(2, 6, 4, 4, offset=100.0), rand(6),
                                                  rand(6)])
for mask in MASKS:
    suite.case(f"gn_bwd_{mask_name(mask)}", gn_bwd(2, 6, 16, 3, mask),
               [rand(2, 6, 4, 4), rand(2, 6, 4, 4), rand(6), rand(6)])
for mask in ([False, False, False], [True, False, False]):
    suite.case(f"gn_bwd_{mask_name(mask)}_now", gn_bwd(2, 6, 16, 3, mask, weighted=False),
               [rand(2, 6, 4, 4), rand(2, 6, 4, 4), rand(6), rand(6)])
suite.case("gn_bwd_large_mean", gn_bwd(2, 6, 16, 2, [True, True, True]),
           [rand(2, 6, 4, 4), rand(2, 6, 4, 4, offset=50.0), rand(6), rand(6)])



# ---- native_layer_norm forward and backward -------------------------------------------------

def ln_fwd(normalized_shape, weighted=True, biased=True, eps=1e-5):
    def fn(x, w, b):
        return tuple(aten.native_layer_norm(x, normalized_shape, w if weighted else None,
                                            b if biased else None, eps))
    return fn


def ln_bwd(normalized_shape, mask, weighted=True, biased=True):
    def fn(gy, x, w, b):
        wt, bt = w if weighted else None, b if biased else None
        out, mean, rstd = aten.native_layer_norm(x, normalized_shape, wt, bt, 1e-5)
        grads = aten.native_layer_norm_backward(gy, x, normalized_shape, mean, rstd, wt, bt,
                                                mask)
        return (out, mean, rstd, *present(*grads))
    return fn


def ln_args(shape, k, backward=False):
    ns = shape[len(shape) - k:]
    return ([rand(*shape)] if backward else []) + [rand(*shape), rand(*ns), rand(*ns)]


# every k for a rank-4 input; ConvNeXt's channels-last LayerNorm ([N, H, W, C] over C) and its
# classifier's [N, C] one
for shape, ks in [((2, 3, 4, 5), (1, 2, 3, 4)), ((2, 7, 7, 96), (1,)), ((4, 768), (1,)),
                  ((3, 10), (1, 2)), ((5, 1), (1,)), ((4, 14, 14, 96), (1,))]:
    tag = "x".join(map(str, shape))
    for k in ks:
        ns = list(shape[len(shape) - k:])
        suite.case(f"ln_{tag}_k{k}", ln_fwd(ns), ln_args(shape, k))
        if shape[-1] > 1:  # one value per row: against float64 below (ATen's fp32 is noise)
            suite.case(f"ln_bwd_{tag}_k{k}", ln_bwd(ns, [True, True, True]),
                       ln_args(shape, k, backward=True))
suite.case("ln_noweight", ln_fwd([6], weighted=False), ln_args((3, 4, 6), 1))
suite.case("ln_nobias", ln_fwd([6], biased=False), ln_args((3, 4, 6), 1))
suite.case("ln_noaffine", ln_fwd([4, 6], weighted=False, biased=False), ln_args((3, 4, 6), 2))
suite.case("ln_eps1e-1", ln_fwd([6], eps=0.1), ln_args((3, 4, 6), 1))
suite.case("ln_large_mean", ln_fwd([32]), [rand(4, 5, 32, offset=100.0), rand(32), rand(32)])
suite.case("ln_empty_rows", ln_fwd([6]), [rand(0, 6), rand(6), rand(6)])
for mask in MASKS:
    suite.case(f"ln_bwd_{mask_name(mask)}", ln_bwd([5, 6], mask), ln_args((3, 4, 5, 6), 2, True))
for mask in ([False, False, False], [True, False, False]):
    suite.case(f"ln_bwd_{mask_name(mask)}_noaffine",
               ln_bwd([6], mask, weighted=False, biased=False), ln_args((3, 4, 6), 1, True))
suite.case("ln_bwd_TTF_nobias", ln_bwd([6], [True, True, False], biased=False),
           ln_args((3, 4, 6), 1, True))
suite.case("ln_bwd_large_mean", ln_bwd([16], [True, True, True]),
           [rand(4, 16), rand(4, 16, offset=50.0), rand(16), rand(16)])


# ---- layer norm over few values, against PyTorch in float64 ---------------------------------
# Over one value (normalized_shape [1], [1, 1]) x - mean is 0 and the exact grad_input and
# grad_weight are 0, while ATen's fp32 backward is the rounding noise of two terms of size
# rstd*|w*gy| that cancel (rstd = 1/sqrt(eps) ~ 316): about 1e-4. So these cases take PyTorch's
# float64 result (rounded to float32) as the reference, at the project tolerance: over one
# value edgegrad must give the exact answer. Over 2 and 3 values grad_input is as
# ill-conditioned where a row's variance is small (its terms of size rstd*|w*gy| cancel to a
# fraction eps*rstd^2), beyond what float32 mean/rstd can carry (ATen's fp32 and edgegrad
# both miss by up to 1e-4 there): those rows keep a spread of at least 1.


def _Float64Ref(fn):
    """A case traced in float32 whose reference is the same function in float64, rounded."""
    def f64(*args):
        return tuple(t.float() for t in fn(*[a.double() for a in args]))
    return optest.Edited(f64, trace=fn)


def spread_rows(shape, k):
    """x of `shape` whose rows over the last k dims hold c + s * (a permutation of m values
    evenly spaced in [-1, 1]) + small noise, s in [1, 2): variance of at least about 1/3."""
    m = 1
    for d in shape[len(shape) - k:]:
        m *= d
    rows = 1
    for d in shape[:len(shape) - k]:
        rows *= d
    grid = torch.linspace(-1.0, 1.0, m) if m > 1 else torch.zeros(1)
    perm = torch.stack([grid[torch.randperm(m)] for _ in range(rows)])
    x = rand(rows, 1) * 3 + (torch.rand(rows, 1) + 1) * perm + rand(rows, m) * 0.05
    return x.reshape(shape)


def ln_few_args(shape, k, backward):
    ns = shape[len(shape) - k:]
    return ([rand(*shape) * 3] if backward else []) + [spread_rows(shape, k), rand(*ns) * 2,
                                                       rand(*ns)]


LN_FEW = [((6, 1), 1), ((3, 4, 1, 1), 2), ((5, 2, 1), 1), ((8, 2), 1), ((8, 3), 1),
          ((2, 4, 3), 1), ((6, 64), 1), ((4, 2, 8, 8), 2)]
for shape, k in LN_FEW:
    ns = list(shape[len(shape) - k:])
    tag = "x".join(map(str, shape)) + f"_k{k}"
    suite.case(f"ln_f64_{tag}", _Float64Ref(ln_fwd(ns)), ln_few_args(shape, k, False))
    suite.case(f"ln_f64_bwd_{tag}", _Float64Ref(ln_bwd(ns, [True, True, True])),
               ln_few_args(shape, k, True))
for mask in ([True, False, False], [True, True, False]):
    suite.case(f"ln_f64_bwd_one_{mask_name(mask)}", _Float64Ref(ln_bwd([1], mask)),
               ln_few_args((7, 1), 1, True))
suite.case("ln_f64_bwd_one_noaffine",
           _Float64Ref(ln_bwd([1], [True, False, False], weighted=False, biased=False)),
           ln_few_args((7, 1), 1, True))


# The same compiled for SoCs: layer norm and its backward run on the NPU of V69+ (with the
# scaling before them) and must give the same; on V68 everything stays on the CPU.
def ln_scaled_bwd(ns):
    inner = ln_bwd(ns, [True, True, True])

    def fn(gy, x, w, b):
        return inner(gy, x * 2.0, w, b)
    return fn


for shape, k in [((6, 1), 1), ((3, 4, 1, 1), 2), ((8, 2), 1), ((8, 3), 1), ((6, 64), 1)]:
    ns = list(shape[len(shape) - k:])
    tag = "x".join(map(str, shape)) + f"_k{k}"
    suite.case(f"ln_f64_npu_bwd_{tag}",
               _OnSocs(_Float64Ref(ln_scaled_bwd(ns)),
                       npu=["mul.Tensor", "native_layer_norm", "native_layer_norm_backward"]),
               ln_few_args(shape, k, True))

# ---- invalid graphs -------------------------------------------------------------------------

BN, BN_BWD = "aten.native_batch_norm.default", "aten.native_batch_norm_backward.default"
GN, GN_BWD = "aten.native_group_norm.default", "aten.native_group_norm_backward.default"
bn_args = [rand(2, 3, 4), rand(3), rand(3), rand(3), positive(3)]
suite.case("err_bn_eval_no_running_var", _Edited(bn_eval(), set_arg(BN, 4, None)), bn_args,
           expect_error="training=False without running_var")
suite.case("err_bn_float64", bn_train(), [rand(2, 3, 4).double(), rand(3).double(),
                                          rand(3).double()],
           expect_error="input dtype float64: normalisation runs in float32")


def bad_weight_shape(graph):
    weight = graph["inputs"][1]["value"]
    graph["values"][weight]["shape"] = [4]


suite.case("err_bn_weight_shape", _Edited(bn_train(), bad_weight_shape),
           [rand(2, 3, 4), rand(3), rand(3)], expect_error="weight shape [4]: expected [3]")
suite.case("err_bn_bwd_train_no_save",
           _Edited(bn_bwd_train([True, True, True], True), set_arg(BN_BWD, 5, None)),
           [rand(2, 3, 4), rand(2, 3, 4), rand(3), rand(3)],
           expect_error="train=True without save_mean")
suite.case("err_bn_bwd_eval_no_running",
           _Edited(bn_bwd_eval([True, True, True], True), set_arg(BN_BWD, 3, None)),
           [rand(2, 3, 4), rand(2, 3, 4), rand(3), rand(3), positive(3)],
           expect_error="train=False without running_mean")
suite.case("err_gn_group", _Edited(gn_fwd(2, 6, 4, 3), set_arg(GN, 6, 4)),
           [rand(2, 6, 4), rand(6), rand(6)], expect_error="group 4 with C 6")
suite.case("err_gn_numel", _Edited(gn_fwd(2, 6, 4, 3), set_arg(GN, 5, 5)),
           [rand(2, 6, 4), rand(6), rand(6)], expect_error="N*C*HxW is 2*6*5")
suite.case("err_gn_bwd_grad_weight_without_weight",
           _Edited(gn_bwd(2, 6, 4, 3, [True, True, True]), set_arg(GN_BWD, 4, None)),
           [rand(2, 6, 4), rand(2, 6, 4), rand(6), rand(6)],
           expect_error="asks for grad_weight without weight")

LN, LN_BWD = "aten.native_layer_norm.default", "aten.native_layer_norm_backward.default"
suite.case("err_ln_normalized_shape", _Edited(ln_fwd([5]), set_arg(LN, 1, [4])),
           ln_args((2, 3, 5), 1), expect_error="normalized_shape [4] with input [2, 3, 5]")
suite.case("err_ln_weight_shape", _Edited(ln_fwd([5]), bad_weight_shape),
           ln_args((2, 3, 5), 1), expect_error="weight shape [4]: expected normalized_shape [5]")
suite.case("err_ln_float64", ln_fwd([5]), [t.double() for t in ln_args((2, 3, 5), 1)],
           expect_error="input dtype float64: normalisation runs in float32")
suite.case("err_ln_bwd_grad_bias_without_bias",
           _Edited(ln_bwd([5], [True, True, True]), set_arg(LN_BWD, 6, None)),
           ln_args((2, 3, 5), 1, True), expect_error="asks for grad_bias without bias")


def ln_bwd_bad_rstd(graph):
    bwd = node(graph, LN_BWD)
    bwd["args"][4] = bwd["args"][0]  # grad_out [2, 3, 5] as rstd


suite.case("err_ln_bwd_rstd_numel", _Edited(ln_bwd([5], [True, True, True]), ln_bwd_bad_rstd),
           ln_args((2, 3, 5), 1, True), expect_error="has 30 elements: expected one per "
           "normalised row (6)")


# ---- training steps through torch.nn.functional and autograd --------------------------------
# optest computes the eager reference under torch.no_grad(); each step re-enables grad itself
# (a no-op while make_fx traces it).

def with_grad(step):
    def fn(*args):
        with torch.enable_grad():
            return step(*args)
    return fn


def conv_bn_relu_step(train_bn):
    def step(x, target, cw, cb, w, b, rm, rv):
        rm, rv = rm.clone(), rv.clone()  # the step may not write its arguments (see above)
        y = F.conv2d(x, cw, cb, padding=1)
        y = F.batch_norm(y, rm, rv, w, b, training=train_bn, momentum=0.1, eps=1e-5)
        y = F.relu(y)
        loss = F.mse_loss(y, target)
        # rm, rv: the running statistics after the step (updated in training, kept in eval)
        return (loss, *torch.autograd.grad(loss, [x, cw, cb, w, b]), rm, rv)
    return with_grad(step)


def step_args(cin, cout, hw):
    return [rand(2, cin, hw, hw).requires_grad_(), rand(2, cout, hw, hw),
            (rand(cout, cin, 3, 3) * 0.3).requires_grad_(), rand(cout).requires_grad_(),
            positive(cout).requires_grad_(), rand(cout).requires_grad_(), rand(cout),
            positive(cout)]


suite.case("step_conv_bn_relu_train", conv_bn_relu_step(True), step_args(3, 8, 6))
suite.case("step_conv_bn_relu_eval", conv_bn_relu_step(False), step_args(3, 8, 6))


def conv_gn_step(groups, act):
    def step(x, target, cw, cb, w, b):
        y = F.conv2d(x, cw, cb, padding=1)
        y = F.group_norm(y, groups, w, b, eps=1e-5)
        y = act(y)
        loss = F.mse_loss(y, target)
        return (loss, *torch.autograd.grad(loss, [x, cw, cb, w, b]))
    return with_grad(step)


# (F.silu's backward traces as sigmoid, empty_like, fill_, sub_, ... in 1.13: the in-place ops
# reach the graph functionalized)
for groups in (1, 2, 8):
    for act in (F.silu, F.relu):
        suite.case(f"step_conv_gn{groups}_{act.__name__}", conv_gn_step(groups, act),
                   step_args(3, 8, 6)[:6])


def instance_norm_step(x, target, w, b):
    y = F.instance_norm(x, weight=w, bias=b, eps=1e-5)
    loss = F.mse_loss(y, target)
    return (loss, *torch.autograd.grad(loss, [x, w, b]))


suite.case("step_instance_norm", with_grad(instance_norm_step),
           [rand(2, 3, 5, 5).requires_grad_(), rand(2, 3, 5, 5), positive(3).requires_grad_(),
            rand(3).requires_grad_()])

# InstanceNorm2d as a module (affine parameters become traced constants, i.e. statics; no
# running statistics): view -> repeat(weight), repeat(bias) -> native_batch_norm -> view
_inorm = torch.nn.InstanceNorm2d(4, affine=True)
with torch.no_grad():
    _inorm.weight.copy_(positive(4))
    _inorm.bias.copy_(rand(4))
suite.case("instance_norm2d_module", lambda x: _inorm(x), [rand(3, 4, 6, 5)])
suite.case("instance_norm2d_plain", lambda x: F.instance_norm(x), [rand(2, 4, 6, 5)])


# ConvNeXt (torchvision): its block's LayerNorm runs channels-last after a permute, and its
# downsampling LayerNorm2d is permute -> layer_norm -> permute back
def convnext_block_step(x, target, dw, dwb, lw, lb, pw, pb, g2w, g2b):
    y = F.conv2d(x, dw, dwb, padding=3, groups=x.shape[1])
    y = y.permute(0, 2, 3, 1)
    y = F.layer_norm(y, [y.shape[-1]], lw, lb, eps=1e-6)
    y = F.relu(F.linear(y, pw, pb))  # (ConvNeXt has GELU: another family's op)
    y = y.permute(0, 3, 1, 2)
    # LayerNorm2d
    y = F.layer_norm(y.permute(0, 2, 3, 1), [y.shape[1]], g2w, g2b, 1e-6).permute(0, 3, 1, 2)
    loss = F.mse_loss(y + x, target)
    return (loss, *torch.autograd.grad(loss, [x, dw, dwb, lw, lb, pw, pb, g2w, g2b]))


suite.case("step_convnext_block_layer_norm", with_grad(convnext_block_step),
           [t.requires_grad_() if i != 1 else t for i, t in enumerate(
               [rand(2, 8, 7, 7), rand(2, 8, 7, 7), rand(8, 1, 7, 7) * 0.2, rand(8),
                positive(8), rand(8), rand(8, 8) * 0.3, rand(8), positive(8), rand(8)])])


def layer_norm_step(x, target, w, b):
    y = F.layer_norm(x, x.shape[2:], w, b, eps=1e-5)
    loss = F.mse_loss(y, target)
    return (loss, *torch.autograd.grad(loss, [x, w, b]))


suite.case("step_layer_norm_2dims", with_grad(layer_norm_step),
           [rand(2, 3, 4, 5).requires_grad_(), rand(2, 3, 4, 5), positive(4, 5).requires_grad_(),
            rand(4, 5).requires_grad_()])

if __name__ == "__main__":
    suite.main()
