"""PyTorch comparison tests for the upsampling family (src/ops/resize.c):
aten.upsample_bilinear2d(+_backward) and aten.upsample_nearest2d(+_backward), both the
.default overloads (PyTorch 2's make_fx) and the .vec ones (PyTorch 1.13's).

Forward cases call each overload directly (PyTorch 2 traces a .vec call as .default, with the
sizes it computes) and through F.interpolate; backward cases call the backward ops with a random
grad_output and run whole chains through torch.autograd.grad. Covered: integer and non-integer
ratios up and down, output size 1, align_corners both ways, scales given beside sizes they do
not reproduce (F.interpolate's recompute_scale_factor false and true, and edited .default
nodes: the coordinates then use 1/scale), nearest's exact cases (out == in, out == 2 * in
whatever the scale), batches > 1, an empty batch, and gradients of many outputs accumulating
into one input. Case `targets_covered` checks that the cases traced every target this PyTorch
traces. Then graphs edgegrad must refuse (each with its error text) and a bilinear upsample
between convolutions compiled for SM8650: the convolutions and the upsampling on the NPU
(tests/ops/test_npu_resize.py has the NPU lowering's own cases), every output as PyTorch's.

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_resize.py \
        --edgegrad build/edgegrad --workdir /tmp/ops-resize
"""
import glob
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import optest  # noqa: E402
from optest import EditSuite, chain, vjp  # noqa: E402
from test_npu_elementwise import check_model  # noqa: E402

aten = torch.ops.aten
torch.manual_seed(0)
r = torch.randn
TORCH_2 = int(torch.__version__.split(".")[0]) >= 2
# PyTorch 2 has no .vec backward overloads, and traces the .vec forwards as .default
HAS_VEC_BACKWARD = hasattr(aten.upsample_bilinear2d_backward, "vec")

BL = "aten.upsample_bilinear2d.default"
BLV = "aten.upsample_bilinear2d.vec"
BLB = "aten.upsample_bilinear2d_backward.default"
BLBV = "aten.upsample_bilinear2d_backward.vec"
NN = "aten.upsample_nearest2d.default"
NNV = "aten.upsample_nearest2d.vec"
NNB = "aten.upsample_nearest2d_backward.default"
NNBV = "aten.upsample_nearest2d_backward.vec"
ALL_TARGETS = (BL, BLV, BLB, BLBV, NN, NNV, NNB, NNBV)


def node(graph, target):
    """The first node of `graph` with this target."""
    return next(n for n in graph["nodes"] if n["target"] == target)


def set_arg(target, index, value):
    def edit(graph):
        args = node(graph, target)["args"]
        while len(args) <= index:  # make_fx leaves out trailing defaults (scales_h=None)
            args.append(None)
        args[index] = value
    return edit


def retarget(target, new_target, args):
    """Rewrites the first `target` node into `new_target` with `args` (argument 0 kept)."""
    def edit(graph):
        n = node(graph, target)
        n["target"] = new_target
        n["args"] = [n["args"][0]] + args
        n["kwargs"] = {}
    return edit


def set_input(index, dtype=None, shape=None):
    """Changes input `index`'s recorded dtype/shape (only for cases refused at check time)."""
    def edit(graph):
        v = graph["values"][graph["inputs"][index]["value"]]
        if dtype is not None:
            v["dtype"] = dtype
        if shape is not None:
            v["shape"] = shape
    return edit


def fl(v):
    return {"float": v}


def out_shape(f, x):
    with torch.no_grad():
        return f(x).shape


def grad_chain(f):
    """(x, w) -> d(sum(f(x) * w))/dx through torch.autograd.grad."""
    def g(x, w):
        with torch.enable_grad():
            x = x.detach().requires_grad_()
            return torch.autograd.grad((f(x) * w).sum(), x)[0]
    return g


suite = EditSuite("resize")


# ---- forwards and backwards of every overload ------------------------------------------------

def bilinear(size, ac=False, sh=None, sw=None):
    return lambda x: aten.upsample_bilinear2d.default(x, size, ac, sh, sw)


def bilinear_vec(size, ac=False, scales=None):
    return lambda x: aten.upsample_bilinear2d.vec(x, size, ac, scales)


def nearest(size, sh=None, sw=None):
    return lambda x: aten.upsample_nearest2d.default(x, size, sh, sw)


def nearest_vec(size, scales=None):
    return lambda x: aten.upsample_nearest2d.vec(x, size, scales)


def bilinear_bwd(size, in_size, ac=False, sh=None, sw=None):
    return lambda g: aten.upsample_bilinear2d_backward.default(g, size, in_size, ac, sh, sw)


def nearest_bwd(size, in_size, sh=None, sw=None):
    return lambda g: aten.upsample_nearest2d_backward.default(g, size, in_size, sh, sw)


def vec_bwd(forward):
    """The backward of a .vec forward `forward`: under PyTorch 1.13 the .vec backward op itself
    (through autograd: its arguments are the forward's); PyTorch 2 traces it as .default."""
    def f(x, g):
        x = x.detach().requires_grad_()
        return vjp([forward(x)], [x], [g])[0]
    return chain(f)


def add_bilinear(name, shape, size, ac=False, sh=None, sw=None):
    """.default forward and backward (direct and through autograd)."""
    x = r(*shape)
    fwd = bilinear(size, ac, sh, sw)
    gy = r(*out_shape(fwd, x))
    suite.case(f"bl_{name}", fwd, [x])
    suite.case(f"bl_bwd_{name}", bilinear_bwd(size, list(shape), ac, sh, sw), [gy])
    suite.case(f"bl_vjp_{name}", vec_bwd(fwd), [x, gy])


def add_bilinear_vec(name, shape, size=None, ac=False, scales=None):
    x = r(*shape)
    fwd = bilinear_vec(size, ac, scales)
    suite.case(f"blv_{name}", fwd, [x])
    suite.case(f"blv_bwd_{name}", vec_bwd(fwd), [x, r(*out_shape(fwd, x))])


def add_nearest(name, shape, size, sh=None, sw=None):
    x = r(*shape)
    fwd = nearest(size, sh, sw)
    gy = r(*out_shape(fwd, x))
    suite.case(f"nn_{name}", fwd, [x])
    suite.case(f"nn_bwd_{name}", nearest_bwd(size, list(shape), sh, sw), [gy])
    suite.case(f"nn_vjp_{name}", vec_bwd(fwd), [x, gy])


def add_nearest_vec(name, shape, size=None, scales=None):
    x = r(*shape)
    fwd = nearest_vec(size, scales)
    suite.case(f"nnv_{name}", fwd, [x])
    suite.case(f"nnv_bwd_{name}", vec_bwd(fwd), [x, r(*out_shape(fwd, x))])


# bilinear, sizes only (ratio in/out): up, down, non-integer, out == 1, out == in
for ac in (False, True):
    t = "_ac" if ac else ""
    add_bilinear(f"x2{t}", (2, 3, 4, 5), [8, 10], ac)
    add_bilinear(f"frac{t}", (2, 2, 5, 4), [7, 11], ac)
    add_bilinear(f"down{t}", (1, 3, 9, 10), [4, 3], ac)
    add_bilinear(f"mixed{t}", (3, 2, 6, 3), [2, 7], ac)
    add_bilinear(f"one{t}", (2, 2, 5, 6), [1, 1], ac)
    add_bilinear(f"one_row{t}", (1, 2, 4, 5), [1, 9], ac)
    add_bilinear(f"from_one{t}", (1, 2, 1, 1), [3, 4], ac)
    add_bilinear(f"same{t}", (2, 2, 4, 5), [4, 5], ac)
# scales beside the sizes: the ratio is 1/scale (align_corners false), in/out ignored
add_bilinear("scale2", (2, 3, 3, 4), [6, 8], False, 2.0, 2.0)
add_bilinear("scale_not_size", (1, 2, 3, 3), [7, 7], False, 2.3, 2.3)
add_bilinear("scale_down", (2, 2, 9, 7), [4, 2], False, 0.5, 0.4)
add_bilinear("scale_one_dim", (1, 3, 5, 6), [10, 6], False, None, 1.7)
add_bilinear("scale_same_size", (1, 2, 3, 4), [3, 4], False, 2.0, 2.0)  # out == in: a copy
add_bilinear("scale_ac_ignored", (1, 2, 3, 4), [7, 9], True, 2.3, 2.3)
add_bilinear("big", (4, 16, 28, 28), [56, 56])
add_bilinear("empty_batch", (0, 3, 4, 4), [7, 6])
add_bilinear("empty_batch_ac", (0, 3, 4, 4), [7, 6], True)
if TORCH_2:
    # sizes past what the scale covers: the source coordinate passes the last row, which
    # PyTorch 2 clamps (PyTorch 1.13 reads past the input there)
    add_bilinear("scale_past_input", (1, 2, 3, 3), [12, 5], False, 2.0, 1.0)
else:
    print(f"skip resize/bl*_scale_past_input: torch {torch.__version__} reads past the input "
          "where the scale does not cover the output size")

# .vec: output_size or scale_factors (F.interpolate's forms)
add_bilinear_vec("size", (2, 3, 4, 5), [7, 9])
add_bilinear_vec("size_ac", (2, 3, 4, 5), [7, 9], True)
add_bilinear_vec("scales2", (2, 3, 4, 5), None, False, [2.0, 2.0])
add_bilinear_vec("scales_frac", (1, 2, 3, 5), None, False, [2.3, 1.7])
add_bilinear_vec("scales_down", (2, 2, 9, 10), None, False, [0.5, 0.35])
add_bilinear_vec("scales_ac", (1, 2, 3, 5), None, True, [2.3, 1.7])
add_bilinear_vec("empty_batch", (0, 2, 3, 3), None, False, [2.0, 1.5])

# nearest: floor(dst * ratio) clamped; out == in and out == 2 * in exact whatever the scale
add_nearest("x2", (2, 3, 4, 5), [8, 10])
add_nearest("x3", (1, 2, 3, 4), [9, 12])
add_nearest("frac", (2, 2, 5, 4), [7, 11])
add_nearest("down", (1, 3, 9, 10), [4, 3])
add_nearest("down_frac", (2, 2, 7, 5), [3, 2])
add_nearest("one", (2, 2, 5, 6), [1, 1])
add_nearest("same", (2, 2, 4, 5), [4, 5])
add_nearest("scale_not_size", (1, 2, 3, 3), [5, 7], 2.3, 2.3)
add_nearest("scale_past_input", (1, 2, 3, 3), [12, 4], 2.0, 0.9)
add_nearest("scale_down", (2, 2, 9, 7), [4, 2], 0.5, 0.4)
# the exact cases with a scale that would say otherwise: dst / 2 (not floor(dst / 2.3)), dst
add_nearest("scale_double_size", (2, 1, 3, 3), [6, 6], 2.3, 2.3)
add_nearest("scale_same_size", (1, 1, 3, 4), [3, 4], 1.6, 2.0)
add_nearest_vec("scales_double_size", (2, 1, 3, 5), None, [2.3, 1.7])
if TORCH_2:
    add_nearest("scale_double_size_c2", (1, 2, 3, 3), [6, 6], 2.3, 2.3)
    add_nearest("scale_same_size_c2", (1, 2, 3, 4), [3, 4], 1.6, 2.0)
    add_nearest_vec("scales_double_size_c2", (1, 2, 3, 5), None, [2.3, 1.7])
else:
    print(f"skip resize/nn*_size_c2: torch {torch.__version__}'s nearest forward takes the "
          "exact cases only for one channel (its backward always does)")
add_nearest("big", (4, 16, 28, 28), [56, 56])
add_nearest("empty_batch", (0, 3, 4, 4), [7, 6])
add_nearest_vec("size", (2, 3, 4, 5), [7, 9])
add_nearest_vec("scales2", (2, 3, 4, 5), None, [2.0, 2.0])
add_nearest_vec("scales_frac", (1, 2, 4, 7), None, [2.3, 1.7])
add_nearest_vec("scales_down", (2, 2, 9, 10), None, [0.5, 0.35])

# F.interpolate as models call it, through autograd
for mode, extra in (("bilinear", {"align_corners": False}), ("bilinear", {"align_corners": True}),
                    ("nearest", {})):
    t = f"{mode}{'_ac' if extra.get('align_corners') else ''}"
    x = r(2, 3, 5, 4)
    for name, kw in (("size", {"size": (9, 6)}), ("scale", {"scale_factor": 2}),
                     ("scale_frac_keep", {"scale_factor": 2.3, "recompute_scale_factor": False}),
                     ("scale_frac_recompute", {"scale_factor": 2.3,
                                               "recompute_scale_factor": True}),
                     ("scale_down", {"scale_factor": (0.5, 0.8)})):
        f = (lambda m, e, k: lambda x: F.interpolate(x, mode=m, **e, **k))(mode, extra, kw)
        suite.case(f"interp_{t}_{name}", f, [x])
        suite.case(f"interp_grad_{t}_{name}", grad_chain(f), [x, r(*out_shape(f, x))])

# a segmentation-head-like chain: conv features upsampled twice and summed
suite.case("grad_chain_head", grad_chain(lambda x: F.interpolate(
    F.interpolate(x, scale_factor=0.5, mode="bilinear") * 2, size=(11, 9), mode="bilinear",
    align_corners=False) + F.interpolate(x, size=(11, 9), mode="nearest")),
    [r(2, 3, 8, 6), r(2, 3, 11, 9)])


# ---- graphs edgegrad must refuse -------------------------------------------------------------

x3 = r(1, 2, 3, 4)
g68 = r(1, 2, 6, 8)
BL_X2 = bilinear([6, 8])
suite.case("err_f64", BL_X2, [x3.double()], expect_error="float32 only")
suite.case("err_nearest_f64", nearest([6, 8]), [x3.double()], expect_error="float32 only")
suite.case("err_bwd_f64", bilinear_bwd([6, 8], [1, 2, 3, 4]), [g68.double()],
           expect_error="argument grad_output (#0) dtype float64")
suite.case("err_size_len", BL_X2, [x3], edit=set_arg(BL, 1, [6]),
           expect_error="argument output_size (#1) has 1 elements")
suite.case("err_size_zero", BL_X2, [x3], edit=set_arg(BL, 1, [0, 8]),
           expect_error="output_size (#1) [0, 8]: output sizes must be >= 1")
suite.case("err_nearest_size_neg", nearest([6, 8]), [x3], edit=set_arg(NN, 1, [6, -8]),
           expect_error="output_size (#1) [6, -8]: output sizes must be >= 1")
suite.case("err_size_recorded", BL_X2, [x3], edit=set_arg(BL, 1, [5, 8]),
           expect_error="output shape [1, 2, 6, 8] contradicts aten.upsample_bilinear2d.default "
                        "(expected [1, 2, 5, 8])")
suite.case("err_nearest_size_recorded", nearest([6, 8]), [x3], edit=set_arg(NN, 1, [6, 9]),
           expect_error="contradicts aten.upsample_nearest2d.default")
suite.case("err_scale_zero", bilinear([6, 8], False, 2.0, 2.0), [x3],
           edit=set_arg(BL, 3, fl(0.0)),
           expect_error="argument scales_h (#3) 0: scale factors must be finite and > 0")
suite.case("err_scale_neg", nearest([6, 8]), [x3], edit=set_arg(NN, 3, fl(-2.0)),
           expect_error="argument scales_w (#3) -2: scale factors must be finite and > 0")
suite.case("err_scale_nan", bilinear([6, 8]), [x3], edit=set_arg(BL, 4, fl("nan")),
           expect_error="argument scales_w (#4) nan")
suite.case("err_scale_tiny", bilinear([6, 8]), [x3], edit=set_arg(BL, 3, fl(1e-300)),
           expect_error="with 1/scale a finite float32")
suite.case("err_scale_kind", bilinear([6, 8]), [x3], edit=set_arg(BL, 3, [fl(2.0)]),
           expect_error="argument scales_h (#3) is a list")
suite.case("err_align_kind", BL_X2, [x3], edit=set_arg(BL, 2, 1),
           expect_error="argument align_corners (#2) is a int: expected a bool")
suite.case("err_rank3", BL_X2, [x3], edit=set_input(0, shape=[2, 3, 4]),
           expect_error="argument self (#0) shape [2, 3, 4]: expected 4-D [N, C, H, W]")
suite.case("err_channels0", BL_X2, [x3], edit=set_input(0, shape=[1, 0, 3, 4]),
           expect_error="shape [1, 0, 3, 4]: C, H and W must be >= 1")
suite.case("err_h0", nearest([6, 8]), [x3], edit=set_input(0, shape=[1, 2, 0, 4]),
           expect_error="shape [1, 2, 0, 4]: C, H and W must be >= 1")
suite.case("err_extra_arg", BL_X2, [x3], edit=set_arg(BL, 5, 1),
           expect_error="6 positional arguments: aten.upsample_bilinear2d.default takes at most 5")
suite.case("err_bwd_input_size_len", bilinear_bwd([6, 8], [1, 2, 3, 4]), [g68],
           edit=set_arg(BLB, 2, [2, 3, 4]), expect_error="argument input_size (#2) has 3 elements")
suite.case("err_bwd_input_size_h0", nearest_bwd([6, 8], [1, 2, 3, 4]), [g68],
           edit=set_arg(NNB, 2, [1, 2, 0, 4]),
           expect_error="argument input_size (#2) [1, 2, 0, 4]: N and C must be >= 0, H and W >= 1")
suite.case("err_bwd_input_size_batch", bilinear_bwd([6, 8], [1, 2, 3, 4]), [g68],
           edit=set_arg(BLB, 2, [2, 2, 3, 4]),
           expect_error="grad_output shape [1, 2, 6, 8] contradicts the upsampling's output "
                        "[2, 2, 6, 8]")
suite.case("err_bwd_input_size_recorded", bilinear_bwd([6, 8], [1, 2, 3, 4]), [g68],
           edit=set_arg(BLB, 2, [1, 2, 3, 5]),
           expect_error="output shape [1, 2, 3, 4] contradicts "
                        "aten.upsample_bilinear2d_backward.default (expected [1, 2, 3, 5])")
suite.case("err_bwd_output_size", nearest_bwd([6, 8], [1, 2, 3, 4]), [g68],
           edit=set_arg(NNB, 1, [6, 7]),
           expect_error="grad_output shape [1, 2, 6, 8] contradicts the upsampling's output "
                        "[1, 2, 6, 7]")
suite.case("err_bwd_grad_rank", nearest_bwd([6, 8], [1, 2, 3, 4]), [g68],
           edit=set_input(0, shape=[2, 6, 8]), expect_error="grad_output shape [2, 6, 8]")
# .vec nodes (written by editing a .default node, so that both PyTorch versions build them)
suite.case("err_vec_both", BL_X2, [x3],
           edit=retarget(BL, BLV, [[6, 8], False, [fl(2.0), fl(2.0)]]),
           expect_error="are both given: must specify exactly one of output_size and "
                        "scale_factors")
suite.case("err_vec_neither", nearest([6, 8]), [x3], edit=retarget(NN, NNV, [None, None]),
           expect_error="are both None: must specify exactly one of output_size and scale_factors")
suite.case("err_vec_missing", BL_X2, [x3], edit=retarget(BL, BLV, [None, False]),
           expect_error="argument scale_factors (#3) missing")
suite.case("err_vec_scales_len", BL_X2, [x3],
           edit=retarget(BL, BLV, [None, False, [fl(2.0), fl(2.0), fl(2.0)]]),
           expect_error="argument scale_factors (#3) is not a list of 2 numbers")
suite.case("err_vec_scale_neg", nearest([6, 8]), [x3],
           edit=retarget(NN, NNV, [None, [fl(2.0), fl(-2.0)]]),
           expect_error="argument scale_factors (#2) -2: scale factors must be finite and > 0")
suite.case("err_vec_scale_kind", nearest([6, 8]), [x3],
           edit=retarget(NN, NNV, [None, [fl(2.0), True]]),
           expect_error="argument scale_factors (#2) element 1 is not a number")
suite.case("err_vec_size_zero", nearest([6, 8]), [x3],
           edit=retarget(NN, NNV, [None, [fl(0.2), fl(2.0)]]),
           expect_error="[0.2, 2] with input 3x4: output size H 0 is not in [1, 2^40]")
suite.case("err_vec_size_huge", BL_X2, [x3],
           edit=retarget(BL, BLV, [None, False, [fl(2.0), fl(1e300)]]),
           expect_error="output size W 4e+300 is not in [1, 2^40]")
suite.case("err_vec_scales_recorded", BL_X2, [x3],
           edit=retarget(BL, BLV, [None, False, [fl(2.0), fl(2.3)]]),
           expect_error="output shape [1, 2, 6, 8] contradicts aten.upsample_bilinear2d.vec "
                        "(expected [1, 2, 6, 9])")
suite.case("err_vec_bwd_both", bilinear_bwd([6, 8], [1, 2, 3, 4]), [g68],
           edit=retarget(BLB, BLBV, [[6, 8], [1, 2, 3, 4], False, [fl(2.0), fl(2.0)]]),
           expect_error="must specify exactly one of output_size and scale_factors")
suite.case("err_vec_bwd_scales", nearest_bwd([6, 8], [1, 2, 3, 4]), [g68],
           edit=retarget(NNB, NNBV, [None, [1, 2, 3, 4], [fl(2.0), fl(3.0)]]),
           expect_error="grad_output shape [1, 2, 6, 8] contradicts the upsampling's output "
                        "[1, 2, 6, 12]")


# ---- every traced target was run ------------------------------------------------------------

def targets_covered(workdir):
    """The cases above must have traced each target this PyTorch traces: all eight under 1.13,
    the four .default ones under PyTorch 2 (which has no .vec backward and traces .vec calls
    as .default). Runs after the cases, from their exported graphs."""
    seen = set()
    for path in glob.glob(os.path.join(workdir, "*", "model.json")):
        if os.path.basename(os.path.dirname(path)).startswith("err_"):
            continue
        with open(path) as f:
            seen |= {n["target"] for n in json.load(f)["nodes"]}
    want = {t for t in ALL_TARGETS if HAS_VEC_BACKWARD or not t.endswith(".vec")}
    missing = sorted(want - seen)
    return f"targets never traced: {missing}" if missing else None


# ---- on an SoC: the upsampling on the NPU between NPU convolutions ---------------------------

def npu_case(workdir, exe, fn, args):
    os.makedirs(workdir, exist_ok=True)
    names = [f"arg{i}" for i in range(len(args))]
    stem = os.path.join(workdir, "model")
    optest.export_function(fn, args, stem, arg_names=names)
    with open(stem + ".json") as f:
        ups = {n["target"] for n in json.load(f)["nodes"]
               if n["target"].startswith("aten.upsample")}
    if not ups:
        return "no upsampling node traced"
    with torch.no_grad():
        ref = fn(*args)
    refs = {f"out{k}": t.detach().numpy() for k, t in enumerate(ref if isinstance(ref, tuple)
                                                                  else (ref,))}
    inputs = {nm: a.detach().numpy() for nm, a in zip(names, args)}
    return check_model(exe, stem + ".json", inputs, refs, workdir, ("SM8650",),
                       {"aten.convolution.default"} | ups, {})


def conv_up_conv(x, w1, w2):
    y = F.interpolate(F.relu(F.conv2d(x, w1, padding=1)), scale_factor=2, mode="bilinear",
                      align_corners=False)
    return F.conv2d(y, w2, padding=1)


def conv_up_conv_grads(x, w1, w2, gy):
    with torch.enable_grad():
        ps = [t.detach().requires_grad_() for t in (x, w1, w2)]
        return tuple(torch.autograd.grad((conv_up_conv(*ps) * gy).sum(), ps))


NPU_ARGS = [r(2, 3, 6, 5), r(4, 3, 3, 3) * 0.3, r(2, 4, 3, 3) * 0.3]
NPU_CASES = {
    "sm8650_forward": (conv_up_conv, NPU_ARGS),
    "sm8650_grads": (conv_up_conv_grads, NPU_ARGS + [r(2, 2, 12, 10)]),
}


def main():
    run = optest.Runner(suite.family)
    for name, fn, args, static, expect_error in suite.cases:
        run.record(name, lambda c=(name, fn, args, static, expect_error):
                   suite._run_case(run.exe, run.workdir, *c))
    for name, (fn, args) in NPU_CASES.items():
        run.record(name, lambda fn=fn, args=args, d=os.path.join(run.workdir, name):
                   npu_case(d, run.exe, fn, args))
    if not run.filter:
        run.record("targets_covered", lambda: targets_covered(run.workdir))
    run.finish()


if __name__ == "__main__":
    main()
