"""PyTorch comparison tests for the pooling family (src/ops/pool.c):
aten.max_pool2d_with_indices(+_backward), aten.avg_pool2d(+_backward),
aten._adaptive_avg_pool2d(+_backward), aten.adaptive_max_pool2d(+_backward).

Forward cases compare outputs and int64 indices; backward cases call the ATen backward ops
directly (gradients from a random grad_output, indices from the forward) and also run whole
chains through torch.autograd.grad. Covered: kernel/stride/padding/dilation combinations
including rectangular ones, 1-element lists and stride [] (= kernel), ceil_mode on sizes where it
adds a window and where ATen's "last window must start inside the input or left padding" rule
drops one, count_include_pad both ways, divisor_override, overlapping max windows (stride <
kernel, so gradients accumulate), ties and NaNs, adaptive sizes that do and do not divide the
input (and exceed it), unbatched [C, H, W] inputs and an empty batch; plus graphs edgegrad must
refuse: unsupported dtypes, and exported graphs edited to break a rule PyTorch would refuse to
trace (padding > kernel/2, zero stride/dilation, divisor 0, too-small output, wrong recorded
shapes, bad output_size, non-int64 indices).

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_pool.py \
        --edgegrad build/edgegrad --workdir /tmp/ops-pool
"""
import itertools
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from optest import EditSuite  # noqa: E402

aten = torch.ops.aten
torch.manual_seed(0)
r = torch.randn


def node(graph, target):
    """The first node of `graph` with this target."""
    return next(n for n in graph["nodes"] if n["target"] == target)


def set_arg(target, index, value):
    def edit(graph):
        node(graph, target)["args"][index] = value
    return edit


def set_args(target, **changes):
    """Sets positional arguments {index: value} of the first `target` node, filling any the
    trace left out (make_fx drops trailing defaults) from `fill`."""
    fill = changes.pop("fill", [])
    def edit(graph):
        args = node(graph, target)["args"]
        while len(args) < len(fill):
            args.append(fill[len(args)])
        for k, v in changes.items():
            args[int(k[1:])] = v
    return edit


MP_DEFAULTS = [None, None, [], [0, 0], [1, 1], False]
AP_DEFAULTS = [None, None, [], [0, 0], False, True, None]


def set_input(index, dtype=None, shape=None):
    """Changes input `index`'s recorded dtype/shape (only for cases that fail at check time,
    before the harness's .npy inputs are read)."""
    def edit(graph):
        v = graph["values"][graph["inputs"][index]["value"]]
        if dtype is not None:
            v["dtype"] = dtype
        if shape is not None:
            v["shape"] = shape
    return edit


def ties(*shape, levels=3):
    """Small integers as floats: many equal values in every window."""
    return torch.randint(0, levels, shape).float()


def grad_chain(f):
    """(x, w) -> d(sum(f(x) * w))/dx through torch.autograd.grad (w makes grad_output
    non-uniform)."""
    def g(x, w):
        with torch.enable_grad():
            x = x.detach().requires_grad_()
            return torch.autograd.grad((f(x) * w).sum(), x)[0]
    return g


def out_hw(f, x):
    with torch.no_grad():
        y = f(x)
    return (y[0] if isinstance(y, tuple) else y).shape


suite = EditSuite("pool")

MP = "aten.max_pool2d_with_indices.default"
MPB = "aten.max_pool2d_with_indices_backward.default"
AP = "aten.avg_pool2d.default"
APB = "aten.avg_pool2d_backward.default"
AAP = "aten._adaptive_avg_pool2d.default"
AMP = "aten.adaptive_max_pool2d.default"
AMPB = "aten.adaptive_max_pool2d_backward.default"


# ---- max_pool2d_with_indices: forward (values and indices) ----------------------------------

def max_pool(k, s=(), p=0, d=1, ceil=False):
    return lambda x: tuple(aten.max_pool2d_with_indices(x, k, s, p, d, ceil))


def max_pool_bwd(k, s=(), p=0, d=1, ceil=False):
    """grad_output g, input x -> max_pool2d_with_indices_backward with the forward's indices."""
    def f(x, g):
        _, idx = aten.max_pool2d_with_indices(x, k, s, p, d, ceil)
        return aten.max_pool2d_with_indices_backward(g, x, k, s, p, d, ceil, idx)
    return f


def add_max_pool(name, shape, k, s=(), p=0, d=1, ceil=False, x=None):
    x = r(*shape) if x is None else x
    fwd = max_pool(k, s, p, d, ceil)
    suite.case(f"max_{name}", fwd, [x])
    g = r(*out_hw(fwd, x))
    suite.case(f"max_bwd_{name}", max_pool_bwd(k, s, p, d, ceil), [x, g])


add_max_pool("k2", (2, 3, 8, 8), [2, 2])
add_max_pool("k3s2p1", (2, 3, 9, 9), [3, 3], [2, 2], [1, 1])
add_max_pool("k3s1_overlap", (2, 2, 7, 6), [3, 3], [1, 1])
add_max_pool("k3s1p1_overlap", (1, 3, 6, 7), [3, 3], [1, 1], [1, 1])
add_max_pool("k4s2p2", (2, 2, 9, 10), [4, 4], [2, 2], [2, 2])
add_max_pool("rect", (2, 3, 9, 8), [3, 2], [2, 1], [1, 0])
add_max_pool("rect2", (1, 2, 5, 11), [2, 5], [1, 3], [1, 2])
add_max_pool("dil2", (2, 2, 9, 9), [3, 3], [1, 1], [1, 1], [2, 2])
add_max_pool("dil_rect", (1, 3, 11, 10), [3, 2], [2, 1], [1, 1], [2, 3])
add_max_pool("ceil_adds", (2, 2, 7, 8), [2, 2], [2, 2], ceil=True)
add_max_pool("ceil_k3s2", (1, 3, 10, 10), [3, 3], [2, 2], ceil=True)
add_max_pool("ceil_drops", (1, 2, 5, 5), [2, 2], [2, 2], [1, 1], ceil=True)
add_max_pool("ceil_dil", (1, 2, 10, 9), [3, 3], [2, 2], [1, 1], [2, 2], ceil=True)
add_max_pool("ceil_same", (1, 2, 9, 9), [3, 3], [2, 2], [1, 1], ceil=True)
add_max_pool("stride_empty", (2, 2, 7, 7), [3, 3], [])
add_max_pool("one_elem_lists", (2, 2, 9, 7), [3], [2], [1], [1])
add_max_pool("unbatched", (3, 7, 7), [3, 3], [2, 2], [1, 1])
add_max_pool("unbatched_ceil", (2, 6, 7), [2, 3], [2, 2], [1, 1], ceil=True)
add_max_pool("k1", (2, 3, 4, 5), [1, 1])
add_max_pool("global", (2, 3, 5, 6), [5, 6])
add_max_pool("ties", (2, 3, 9, 9), [3, 3], [1, 1], [1, 1], x=ties(2, 3, 9, 9))
add_max_pool("ties_const", (1, 2, 6, 6), [3, 3], [2, 2], [1, 1], x=torch.zeros(1, 2, 6, 6))
add_max_pool("ties_dil", (1, 2, 8, 8), [3, 3], [1, 1], [1, 1], [2, 1], x=ties(1, 2, 8, 8, levels=2))
# all -inf: the harness cannot compare infinities, so compare indices and the gradient
x_inf = torch.full((1, 2, 4, 5), -float("inf"))
x_inf[0, 1, 2, 3] = 1.0
suite.case("max_neg_inf_indices", lambda x: aten.max_pool2d_with_indices(x, [2, 2], [1, 1])[1],
           [x_inf])
suite.case("max_bwd_neg_inf", max_pool_bwd([2, 2], [1, 1]), [x_inf, r(1, 2, 3, 4)])
add_max_pool("empty_batch", (0, 3, 6, 6), [2, 2])
add_max_pool("big", (4, 32, 56, 56), [3, 3], [2, 2], [1, 1])

# NaN wins the max (the last NaN of a window gives the index): the harness cannot compare NaN
# values, so compare the indices, and the gradient (finite) that follows them.
xn = r(1, 2, 7, 7)
xn[0, 0, 1, 1] = xn[0, 0, 1, 2] = xn[0, 1, 4, 4] = float("nan")
suite.case("max_nan_indices", lambda x: aten.max_pool2d_with_indices(x, [3, 3], [1, 1], [1, 1])[1],
           [xn])
suite.case("max_bwd_nan", max_pool_bwd([3, 3], [1, 1], [1, 1]), [xn, r(1, 2, 7, 7)])

# A sweep over odd and even sizes of every geometry the rules allow (smaller inputs).
for h, k, s, p, d, ceil in itertools.product([5, 6, 7], [2, 3], [1, 2, 3], [0, 1], [1, 2],
                                             [False, True]):
    if h + 2 * p < d * (k - 1) + 1 or (s == 1 and ceil) or (d == 2 and s == 1):
        continue
    x = r(1, 2, h, h + 1)
    fwd = max_pool([k, k], [s, s], [p, p], [d, d], ceil)
    name = f"sweep_h{h}k{k}s{s}p{p}d{d}{'c' if ceil else ''}"
    suite.case(f"max_{name}", fwd, [x])
    suite.case(f"max_bwd_{name}", max_pool_bwd([k, k], [s, s], [p, p], [d, d], ceil),
               [x, r(*out_hw(fwd, x))])

# autograd chains
suite.case("max_grad_chain", grad_chain(lambda x: F.max_pool2d(x, 3, 2, 1)),
           [r(2, 3, 9, 9), r(2, 3, 5, 5)])
suite.case("max_grad_chain_overlap_ceil",
           grad_chain(lambda x: F.max_pool2d(x, 3, 1, 1, ceil_mode=True)),
           [ties(2, 2, 6, 7), r(2, 2, 6, 7)])
suite.case("max_grad_chain_twice",
           grad_chain(lambda x: F.max_pool2d(F.max_pool2d(x, 2, 1), 3, 2, 1, dilation=1)),
           [r(1, 3, 10, 9), r(1, 3, 5, 4)])


# ---- avg_pool2d ------------------------------------------------------------------------------

def avg_pool(k, s=(), p=0, ceil=False, cip=True, div=None):
    return lambda x: aten.avg_pool2d(x, k, s, p, ceil, cip, div)


def avg_pool_bwd(k, s=(), p=0, ceil=False, cip=True, div=None):
    return lambda g, x: aten.avg_pool2d_backward(g, x, k, s, p, ceil, cip, div)


def add_avg_pool(name, shape, k, s=(), p=0, ceil=False, cip=True, div=None):
    x = r(*shape)
    fwd = avg_pool(k, s, p, ceil, cip, div)
    suite.case(f"avg_{name}", fwd, [x])
    suite.case(f"avg_bwd_{name}", avg_pool_bwd(k, s, p, ceil, cip, div),
               [r(*out_hw(fwd, x)), x])


add_avg_pool("k2", (2, 3, 8, 8), [2, 2])
add_avg_pool("k3s2p1", (2, 3, 9, 9), [3, 3], [2, 2], [1, 1])
add_avg_pool("k3s2p1_nopad", (2, 3, 9, 9), [3, 3], [2, 2], [1, 1], cip=False)
add_avg_pool("k3s1p1_overlap", (2, 2, 7, 6), [3, 3], [1, 1], [1, 1])
add_avg_pool("k3s1p1_overlap_nopad", (2, 2, 7, 6), [3, 3], [1, 1], [1, 1], cip=False)
add_avg_pool("rect", (2, 3, 9, 8), [3, 2], [2, 1], [1, 0])
add_avg_pool("rect_nopad", (1, 2, 7, 11), [2, 5], [1, 3], [1, 2], cip=False)
add_avg_pool("ceil", (2, 2, 7, 8), [2, 2], [2, 2], ceil=True)
add_avg_pool("ceil_k3s2", (1, 3, 10, 10), [3, 3], [2, 2], ceil=True)
add_avg_pool("ceil_pad", (1, 2, 8, 8), [3, 3], [2, 2], [1, 1], ceil=True)
add_avg_pool("ceil_pad_nopad", (1, 2, 8, 8), [3, 3], [2, 2], [1, 1], ceil=True, cip=False)
add_avg_pool("ceil_hang", (1, 2, 6, 6), [4, 4], [3, 3], [1, 1], ceil=True)
add_avg_pool("ceil_hang_nopad", (1, 2, 6, 6), [4, 4], [3, 3], [1, 1], ceil=True, cip=False)
add_avg_pool("ceil_drops", (1, 2, 5, 5), [2, 2], [2, 2], [1, 1], ceil=True)
add_avg_pool("div3", (2, 2, 7, 7), [3, 3], [2, 2], [1, 1], div=3)
add_avg_pool("div_neg_ceil", (1, 2, 8, 7), [3, 2], [2, 2], [1, 1], ceil=True, div=-2)
add_avg_pool("div_nopad", (1, 2, 6, 6), [3, 3], [2, 2], [1, 1], cip=False, div=5)
add_avg_pool("stride_empty", (2, 2, 9, 6), [3, 3], [])
add_avg_pool("one_elem_lists", (2, 2, 9, 7), [3], [2], [1])
add_avg_pool("unbatched", (3, 7, 7), [3, 3], [2, 2], [1, 1], cip=False)
add_avg_pool("unbatched_ceil", (2, 6, 7), [2, 3], [2, 2], [1, 1], ceil=True)
add_avg_pool("global", (2, 3, 5, 6), [5, 6])
add_avg_pool("empty_batch", (0, 3, 6, 6), [2, 2])
add_avg_pool("big", (4, 32, 56, 56), [3, 3], [2, 2], [1, 1], cip=False)

for h, k, s, p, ceil, cip in itertools.product([5, 6, 7], [2, 3, 4], [1, 2, 3], [0, 1, 2],
                                               [False, True], [True, False]):
    if p > k // 2 or (s == 1 and ceil) or (s == 1 and not cip):
        continue
    name = f"sweep_h{h}k{k}s{s}p{p}{'c' if ceil else ''}{'' if cip else 'x'}"
    add_avg_pool(name, (1, 2, h, h + 2), [k, k], [s, s], [p, p], ceil, cip)

suite.case("avg_grad_chain", grad_chain(lambda x: F.avg_pool2d(x, 3, 2, 1)),
           [r(2, 3, 9, 9), r(2, 3, 5, 5)])
suite.case("avg_grad_chain_ceil_nopad",
           grad_chain(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
           [r(2, 2, 8, 7), r(2, 2, 5, 4)])
suite.case("avg_grad_chain_div",
           grad_chain(lambda x: F.avg_pool2d(x, 2, 1, divisor_override=3)),
           [r(1, 3, 6, 5), r(1, 3, 5, 4)])


# ---- _adaptive_avg_pool2d ----------------------------------------------------------------------

def add_adaptive_avg(name, shape, size):
    x = r(*shape)
    suite.case(f"aavg_{name}", lambda x: aten._adaptive_avg_pool2d(x, size), [x])
    g = r(*out_hw(lambda x: aten._adaptive_avg_pool2d(x, size), x))
    suite.case(f"aavg_bwd_{name}", lambda g, x: aten._adaptive_avg_pool2d_backward(g, x), [g, x])


add_adaptive_avg("divides", (2, 3, 8, 6), [4, 3])
add_adaptive_avg("not_divides", (2, 3, 7, 10), [3, 4])
add_adaptive_avg("prime", (1, 2, 13, 11), [5, 7])
add_adaptive_avg("upsample", (1, 2, 3, 4), [5, 7])
add_adaptive_avg("one", (2, 4, 7, 5), [1, 1])
add_adaptive_avg("same", (1, 2, 5, 6), [5, 6])
add_adaptive_avg("unbatched", (3, 9, 7), [4, 2])
add_adaptive_avg("empty_batch", (0, 3, 6, 6), [2, 2])
add_adaptive_avg("big", (4, 64, 28, 28), [7, 7])
suite.case("aavg_empty_out", lambda x: aten._adaptive_avg_pool2d(x, [0, 2]), [r(2, 3, 5, 5)])
suite.case("aavg_grad_chain", grad_chain(lambda x: F.adaptive_avg_pool2d(x, (3, 4))),
           [r(2, 3, 7, 10), r(2, 3, 3, 4)])


# ---- adaptive_max_pool2d -----------------------------------------------------------------------

def adaptive_max(size):
    return lambda x: tuple(aten.adaptive_max_pool2d(x, size))


def adaptive_max_bwd(size):
    def f(x, g):
        _, idx = aten.adaptive_max_pool2d(x, size)
        return aten.adaptive_max_pool2d_backward(g, x, idx)
    return f


def add_adaptive_max(name, shape, size, x=None):
    x = r(*shape) if x is None else x
    suite.case(f"amax_{name}", adaptive_max(size), [x])
    suite.case(f"amax_bwd_{name}", adaptive_max_bwd(size), [x, r(*out_hw(adaptive_max(size), x))])


add_adaptive_max("divides", (2, 3, 8, 6), [4, 3])
add_adaptive_max("not_divides", (2, 3, 7, 10), [3, 4])
add_adaptive_max("prime", (1, 2, 13, 11), [5, 7])
add_adaptive_max("upsample", (1, 2, 3, 4), [5, 7])
add_adaptive_max("one", (2, 4, 7, 5), [1, 1])
add_adaptive_max("unbatched", (3, 9, 7), [4, 2])
add_adaptive_max("ties", (2, 3, 9, 7), [4, 3], x=ties(2, 3, 9, 7))
add_adaptive_max("ties_upsample", (1, 3, 4, 3), [7, 5], x=ties(1, 3, 4, 3, levels=2))
add_adaptive_max("empty_batch", (0, 3, 6, 6), [2, 2])
add_adaptive_max("big", (4, 64, 28, 28), [5, 5])
suite.case("amax_nan_indices", lambda x: aten.adaptive_max_pool2d(x, [3, 3])[1], [xn])
suite.case("amax_bwd_nan", adaptive_max_bwd([3, 3]), [xn, r(1, 2, 3, 3)])
suite.case("amax_grad_chain", grad_chain(lambda x: F.adaptive_max_pool2d(x, (3, 4))),
           [ties(2, 3, 7, 10), r(2, 3, 3, 4)])

# a small conv-net-like chain of every pool
suite.case("chain_all", grad_chain(lambda x: F.adaptive_avg_pool2d(
    F.avg_pool2d(F.adaptive_max_pool2d(F.max_pool2d(x, 3, 2, 1), (6, 5)), 2, ceil_mode=True),
    (2, 2))), [r(2, 3, 15, 13), r(2, 3, 2, 2)])


# ---- graphs edgegrad must refuse -----------------------------------------------------------------

x7 = r(1, 2, 7, 7)
suite.case("err_max_f64", max_pool([3, 3], [2, 2], [1, 1]), [x7.double()],
           expect_error="float32 only")
suite.case("err_avg_f64", avg_pool([2, 2]), [x7.double()], expect_error="float32 only")
suite.case("err_aavg_f64", lambda x: aten._adaptive_avg_pool2d(x, [2, 2]), [x7.double()],
           expect_error="float32 only")
suite.case("err_amax_f64", adaptive_max([2, 2]), [x7.double()], expect_error="float32 only")
suite.case("err_max_pad", max_pool([3, 3], [2, 2], [1, 1]), [x7],
           edit=set_arg(MP, 3, [2, 2]), expect_error="at most half of kernel size")
suite.case("err_max_pad_neg", max_pool([3, 3], [2, 2], [1, 1]), [x7],
           edit=set_arg(MP, 3, [-1, 0]), expect_error="argument padding (#3) [-1, 0]")
suite.case("err_avg_pad", avg_pool([3, 3], [2, 2], [1, 1]), [x7],
           edit=set_arg(AP, 3, [1, 2]), expect_error="at most half of kernel size")
suite.case("err_max_bwd_pad", max_pool_bwd([4, 4], [2, 2], [2, 2]), [x7, r(1, 2, 4, 4)],
           edit=set_arg(MPB, 4, [3, 3]), expect_error="at most half of kernel size")
suite.case("err_avg_bwd_pad", avg_pool_bwd([2, 2], [2, 2], [1, 1]), [r(1, 2, 4, 4), x7],
           edit=set_arg(APB, 4, [2, 2]), expect_error="at most half of kernel size")
suite.case("err_max_stride0", max_pool([3, 3], [2, 2]), [x7],
           edit=set_arg(MP, 2, [0, 2]), expect_error="argument stride (#2) [0, 2]")
suite.case("err_max_kernel0", max_pool([3, 3], [2, 2]), [x7],
           edit=set_arg(MP, 1, [0]), expect_error="argument kernel_size (#1) [0, 0]")
suite.case("err_max_dil0", max_pool([3, 3], [2, 2], [1, 1], [1, 1]), [x7],
           edit=set_args(MP, a4=[1, 0], fill=MP_DEFAULTS), expect_error="argument dilation (#4) [1, 0]")
suite.case("err_max_lists3", max_pool([3, 3], [2, 2]), [x7],
           edit=set_arg(MP, 1, [3, 3, 3]), expect_error="has 3 elements")
suite.case("err_avg_div0", avg_pool([3, 3], [2, 2], [1, 1], div=2), [x7],
           edit=set_arg(AP, 6, 0), expect_error="divisor must be not zero")
suite.case("err_avg_bwd_div0", avg_pool_bwd([3, 3], [2, 2], [1, 1], div=2),
           [r(1, 2, 4, 4), x7], edit=set_arg(APB, 7, 0), expect_error="divisor must be not zero")
suite.case("err_max_too_small", max_pool([3, 3], [2, 2], [1, 1]), [x7],
           edit=set_args(MP, a1=[8, 8], a3=[0, 0]), expect_error="output size 0x0 is too small")
suite.case("err_avg_too_small", avg_pool([3, 3]), [x7],
           edit=set_arg(AP, 1, [3, 8]), expect_error="is too small")
suite.case("err_max_ceil_shape", max_pool([2, 2], [2, 2], 0, 1, False), [x7],
           edit=set_args(MP, a5=True, fill=MP_DEFAULTS), expect_error="contradicts aten.max_pool2d_with_indices")
suite.case("err_avg_ceil_shape", avg_pool([2, 2], [2, 2], 0, False), [x7],
           edit=set_args(AP, a4=True, fill=AP_DEFAULTS), expect_error="contradicts aten.avg_pool2d")
suite.case("err_max_rank2", max_pool([2, 2]), [x7],
           edit=set_input(0, shape=[7, 7]), expect_error="expected 3-D [C, H, W] or 4-D")
suite.case("err_max_empty_h", max_pool([2, 2]), [x7],
           edit=set_input(0, shape=[1, 2, 0, 7]), expect_error="dim 2 is empty")
suite.case("err_aavg_neg_size", lambda x: aten._adaptive_avg_pool2d(x, [2, 2]), [x7],
           edit=set_arg(AAP, 1, [-1, 2]), expect_error="must be >= 0")
suite.case("err_aavg_one_size", lambda x: aten._adaptive_avg_pool2d(x, [2, 2]), [x7],
           edit=set_arg(AAP, 1, [2]), expect_error="has 1 elements")
suite.case("err_amax_shape", adaptive_max([2, 2]), [x7],
           edit=set_arg(AMP, 1, [3, 2]), expect_error="contradicts aten.adaptive_max_pool2d")
suite.case("err_max_bwd_grad_shape", max_pool_bwd([3, 3], [2, 2], [1, 1]), [x7, r(1, 2, 4, 4)],
           edit=set_input(1, shape=[1, 2, 4, 3]), expect_error="grad_output shape [1, 2, 4, 3]")
suite.case("err_avg_bwd_grad_shape", avg_pool_bwd([3, 3], [2, 2], [1, 1]), [r(1, 2, 4, 4), x7],
           edit=set_input(0, shape=[2, 2, 4, 4]), expect_error="grad_output shape [2, 2, 4, 4]")
suite.case("err_max_bwd_grad_f64", max_pool_bwd([3, 3], [2, 2], [1, 1]), [x7, r(1, 2, 4, 4)],
           edit=set_input(1, dtype="float64"), expect_error="grad_output (#0) dtype float64")
suite.case("err_max_bwd_indices_i32",
           lambda x, g, i: aten.max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [1, 1],
                                                                 [1, 1], False, i),
           [x7, r(1, 2, 4, 4), torch.zeros(1, 2, 4, 4, dtype=torch.int64)],
           edit=set_input(2, dtype="int32"), expect_error="indices (#7) dtype int32")
suite.case("err_amax_bwd_indices_shape",
           lambda x, g, i: aten.adaptive_max_pool2d_backward(g, x, i),
           [x7, r(1, 2, 3, 3), torch.zeros(1, 2, 3, 3, dtype=torch.int64)],
           edit=set_input(2, shape=[1, 2, 3, 2]), expect_error="indices shape [1, 2, 3, 2]")
suite.case("err_aavg_bwd_rank", lambda g, x: aten._adaptive_avg_pool2d_backward(g, x),
           [r(1, 2, 3, 3), x7], edit=set_input(0, shape=[2, 3, 3]),
           expect_error="grad_output shape [2, 3, 3] contradicts")

if __name__ == "__main__":
    suite.main()
