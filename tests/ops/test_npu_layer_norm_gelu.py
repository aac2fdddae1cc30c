"""NPU builders for layer norm and gelu, forward and backward (src/backends/htp/compile/builders/
layer_norm.c: ReduceMean / ReduceSum composites; gelu.c: QNN Gelu for the erf form, Tanh
composites for the tanh form, Gelu / x for the erf form's cdf in the backward) against PyTorch,
through the CLI, on every HTP generation.

Placement and numbers are checked as in test_npu_elementwise.py (whose NpuSuite harness this
file uses): `edgegrad compile --report` and `edgegrad run`, both at --precision fp32, for SM8450,
SM8650 and SM8850 (each op of `npu` on the NPU) and SM8350 (V68: every float node on the CPU
with the partitioner's reason). Declined forms stay on the CPU with the builder's reason.

Every case traces under PyTorch 1.13 and 2.x (`approximate` is a gelu argument since 1.12).
Not cases, because PyTorch's own fp32 answer is not the function there: a layer norm
backward over one column (x - mean is exactly 0: edgegrad gives 0, PyTorch rounding noise of
1.5e-5), a mean of 1000 over a spread of 1 (PyTorch's forward is 6e-5 off the float64 one);
and a broadcasting gelu_backward (declined: "broadcasts to the result"), which PyTorch's CPU
kernel cannot compute (oneDNN: "could not create a primitive descriptor"), under 1.13 and 2.x.

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_npu_layer_norm_gelu.py \
        --edgegrad build/edgegrad --workdir /tmp/npu-layer-norm-gelu
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from test_npu_elementwise import NpuSuite, vjp  # noqa: E402

aten = torch.ops.aten
F = torch.nn.functional
LN, LN_BWD = "native_layer_norm", "native_layer_norm_backward"


def r(*shape, scale=1.0, shift=0.0):
    return torch.randn(*shape) * scale + shift


def edges(inf=float("inf")):
    """Zeros, values around |x| = 1e-7 (the erf backward's cdf switches to 0.5 there), a
    subnormal, far values and infinities (`inf`: +inf's stand-in)."""
    return torch.tensor([[0.0, -0.0, 1e-8, -1e-8, 2e-7, -2e-7, 1e-30, 1e-40],
                         [-40.0, -10.0, -3.0, 0.5, 3.0, 10.0, 40.0, 1e20],
                         [-1e20, -1e-3, 1e-3, -5.5, 5.5, 2.0, inf, -inf]])


def gelu_case(s, name, x, form):
    s.case(name, lambda x: F.gelu(x, approximate=form), [x], npu=["gelu"])


def gelu_bwd_case(s, name, g, x, form):
    s.case(name, lambda g, x: aten.gelu_backward(g, x, approximate=form), [g, x],
           npu=["gelu_backward"])


def gelu_chain(form):
    def f(x, g):
        y = F.gelu(x, approximate=form)
        return y, vjp([y], [x], [g])[0]
    return f


def ln_forward(k, affine=(True, True), eps=1e-5):
    """native_layer_norm over the last k dims: (y, mean, rstd), every element an output."""
    def f(x, *wb):
        it = iter(wb)
        w = next(it) if affine[0] else None
        b = next(it) if affine[1] else None
        return aten.native_layer_norm(x, list(x.shape[-k:]), w, b, eps)
    return f


def ln_backward(k, mask, weight=True, bias=True):
    """The forward and its backward in one graph (the backward reads the forward's mean and
    rstd); returns the gradients output_mask asks for."""
    def f(g, x, *wb):
        it = iter(wb)
        w = next(it) if weight else None
        b = next(it) if bias else None
        ns = list(x.shape[-k:])
        _, mean, rstd = aten.native_layer_norm(x, ns, w, b, 1e-5)
        out = aten.native_layer_norm_backward(g, x, ns, mean, rstd, w, b, mask)
        return tuple(o for o in out if o is not None)
    return f


def build_suite():
    torch.manual_seed(0)
    s = NpuSuite("npu_layer_norm_gelu")
    x3, g3 = r(2, 5, 16, scale=3), r(2, 5, 16)
    x4, g4 = r(2, 3, 4, 5, scale=3), r(2, 3, 4, 5)

    # gelu: QNN Gelu (erf form), the tanh form as a composite
    gelu_case(s, "gelu", x3, "none")
    gelu_case(s, "gelu_rank4", x4, "none")
    # gelu(+inf) is inf under PyTorch 1.13 (and in edgegrad, x * (1 + erf) / 2) but NaN under
    # 2.x (its vectorised erf): the forward's edges hold a large finite value there instead
    gelu_case(s, "gelu_edges", edges(1e30), "none")
    gelu_case(s, "gelu_tanh", x3, "tanh")
    gelu_case(s, "gelu_tanh_rank4", x4, "tanh")
    gelu_case(s, "gelu_tanh_edges", edges(1e30), "tanh")
    gelu_bwd_case(s, "gelu_backward", g3, x3, "none")
    gelu_bwd_case(s, "gelu_backward_rank4", g4, x4, "none")
    gelu_bwd_case(s, "gelu_backward_edges", r(3, 8), edges(), "none")
    gelu_bwd_case(s, "gelu_backward_tanh", g3, x3, "tanh")
    gelu_bwd_case(s, "gelu_backward_tanh_edges", r(3, 8), edges(), "tanh")
    for form in ("none", "tanh"):
        s.case(f"gelu_chain_{form}", gelu_chain(form), [x3.clone().requires_grad_(True), g3],
               npu=["gelu", "gelu_backward"])

    # native_layer_norm: y, mean and rstd
    s.case("layer_norm", ln_forward(1), [r(2, 5, 16, scale=2, shift=3), r(16), r(16)],
           npu=[LN])
    s.case("layer_norm_k2", ln_forward(2), [r(2, 5, 6, 4, scale=2), r(6, 4), r(6, 4)],
           npu=[LN])
    s.case("layer_norm_rank4_last", ln_forward(1), [r(2, 4, 4, 8), r(8), r(8)], npu=[LN])
    s.case("layer_norm_no_affine", ln_forward(1, (False, False)), [r(3, 10, scale=5)],
           npu=[LN])
    s.case("layer_norm_weight_only", ln_forward(1, (True, False)), [r(3, 10), r(10)],
           npu=[LN])
    s.case("layer_norm_bias_only", ln_forward(1, (False, True), eps=1e-3),
           [r(3, 10), r(10)], npu=[LN])
    s.case("layer_norm_whole", ln_forward(2), [r(4, 6), r(4, 6), r(4, 6)], npu=[LN])
    s.case("layer_norm_large_mean", ln_forward(1), [r(4, 32, shift=20), r(32), r(32)],
           npu=[LN])
    s.case("layer_norm_one_col", ln_forward(1), [r(4, 1), r(1), r(1)], npu=[LN])

    # native_layer_norm_backward: every output_mask
    xb, gb, wb, bb = r(2, 5, 16, scale=2, shift=1), r(2, 5, 16), r(16), r(16)
    for mask in ([True, True, True], [True, False, False], [False, True, True],
                 [True, False, True], [False, True, False], [False, False, True]):
        tag = "".join("T" if m else "F" for m in mask)
        s.case(f"layer_norm_backward_{tag}", ln_backward(1, mask), [gb, xb, wb, bb],
               npu=[LN, LN_BWD])
    s.case("layer_norm_backward_k2", ln_backward(2, [True, True, True]),
           [r(2, 3, 4, 6), r(2, 3, 4, 6), r(4, 6), r(4, 6)], npu=[LN, LN_BWD])
    s.case("layer_norm_backward_no_affine", ln_backward(1, [True, False, False], False, False),
           [gb, xb], npu=[LN, LN_BWD])
    s.case("layer_norm_backward_whole_input", ln_backward(1, [True, False, False]),
           [r(16), r(16), r(16), r(16)], npu=[LN, LN_BWD])
    s.case("layer_norm_backward_whole_weight", ln_backward(2, [True, True, True]),
           [r(4, 6), r(4, 6), r(4, 6), r(4, 6)], npu=[LN],
           cpu={LN_BWD: "normalized_shape covers all 2 dims of the input"}, socs=("SM8650",))

    # a transformer block's MLP half: LayerNorm -> Linear -> GELU -> Linear, with its backward
    def mlp(x, w1, w2, lw, lb):
        h = F.layer_norm(x, [x.shape[-1]], lw, lb)
        return F.linear(F.gelu(F.linear(h, w1)), w2) + x
    def mlp_step(x, g, w1, w2, lw, lb):
        y = mlp(x, w1, w2, lw, lb)
        return (y, *vjp([y], [x, lw, lb], [g]))
    rg = lambda *sh: r(*sh).requires_grad_(True)
    s.case("mlp_block", mlp_step, [rg(2, 5, 8), r(2, 5, 8), r(16, 8) / 3, r(8, 16) / 4,
                                   rg(8), rg(8)],
           npu=[LN, LN_BWD, "gelu", "gelu_backward"])

    # declines
    s.case("gelu_empty", lambda x: F.gelu(x), [r(0, 3)], cpu={"gelu": "empty tensor"},
           socs=("SM8650",))
    s.case("layer_norm_empty", ln_forward(1), [r(0, 4), r(4), r(4)],
           cpu={LN: "empty tensor"}, socs=("SM8650",))
    return s


if __name__ == "__main__":
    build_suite().main()
