"""NPU builders for softmax and scaled-dot-product attention (src/backends/htp/compile/builders/
attention.c: Softmax, ReduceMax, ElementWiseLog, MatMul with transpose_in0/1) against PyTorch,
through the CLI, on every HTP generation.

Placement and numbers are checked as in test_npu_elementwise.py (whose NpuSuite harness this
file uses): `edgegrad compile --report` and `edgegrad run`, both at --precision fp32, for SM8450,
SM8650 and SM8850 (each op of `npu` on the NPU) and SM8350 (V68: every float node on the CPU
with the partitioner's reason). Declined forms stay on the CPU with the builder's reason.

Cases: softmax along the last dim and along others (the Transpose + Softmax + Transpose form),
ranks 2 to 4, with _softmax_backward_data through autograd; _safe_softmax with lines of only
-inf; F.scaled_dot_product_attention forward and backward: plain, L != S, causal with L < S and
L > S, a given scale, constant float masks ([L, S], broadcast [B, 1, L, S] and [L, 1], with
-inf entries, with is_causal); the fused ops called directly (logsumexp compared; the backward
fed an out and logsumexp of its own). Declined: a mask computed at run time, a constant mask
with a fully masked query row, is_causal with a mask broadcast over the query rows.

PyTorch 1.13 has neither F.scaled_dot_product_attention, the fused ops nor _safe_softmax: there
the softmax cases run and one "not applicable" line is printed per case left out.

    PYTHONPATH=python .venv/bin/python tests/ops/test_npu_attention.py \
        --edgegrad build/edgegrad --workdir <dir>
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from test_npu_elementwise import NpuSuite, vjp  # noqa: E402

A = torch.ops.aten
F = torch.nn.functional
NINF = float("-inf")
FUSED = hasattr(F, "scaled_dot_product_attention") and \
    hasattr(A, "_scaled_dot_product_flash_attention_for_cpu")
SAFE = hasattr(A, "_safe_softmax")
SDPA = "_scaled_dot_product_flash_attention_for_cpu"
SDPA_BWD = "_scaled_dot_product_flash_attention_for_cpu_backward"


def r(*shape, scale=1.0):
    return torch.randn(*shape) * scale


def leaf(*shape):
    return r(*shape).requires_grad_(True)


def softmax_grads(dim):
    """(x, g) -> (softmax(x, dim), its input gradient for g)."""
    def fn(x, g):
        y = torch.softmax(x, dim)
        return y, vjp([y], [x], [g])[0]
    return fn


def safe_softmax(dim):
    return lambda x: A._safe_softmax(x, dim)


def sdpa_grads(**kw):
    """(q, k, v, g[, mask]) -> (y, dq, dk, dv) of F.scaled_dot_product_attention."""
    def fn(q, k, v, g, *mask):
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[0] if mask else None, **kw)
        return (y, *vjp([y], [q, k, v], [g]))
    return fn


def build_suite():
    torch.manual_seed(0)
    s = NpuSuite("npu_attention")
    skipped = []

    def fused(name, *args, **kwargs):
        if FUSED:
            s.case(name, *args, **kwargs)
        else:
            skipped.append(name)

    # softmax and its backward, every dim
    x4, g4 = r(2, 3, 4, 5, scale=3), r(2, 3, 4, 5)
    s.case("softmax_last", lambda x: torch.softmax(x, -1), [x4], npu=["_softmax"])
    s.case("softmax_dim1", lambda x: torch.softmax(x, 1), [x4], npu=["_softmax"])
    s.case("softmax_rank2_dim0", lambda x: torch.softmax(x, 0), [r(6, 9, scale=4)],
           npu=["_softmax"])
    s.case("softmax_ninf", lambda x: torch.softmax(x, -1),
           [torch.tensor([[0.5, NINF, 2.0, NINF], [NINF, 1.0, NINF, -3.0]])], npu=["_softmax"])
    for dim in (-1, 2, 0):
        s.case(f"softmax_backward_dim{dim}", softmax_grads(dim),
               [x4.clone().requires_grad_(True), g4],
               npu=["_softmax", "_softmax_backward_data"])
    s.case("softmax_backward_rank3", softmax_grads(1),
           [leaf(3, 7, 2), r(3, 7, 2)], npu=["_softmax", "_softmax_backward_data"])

    # _safe_softmax: a line of only -inf gives zeros
    if SAFE:
        sm = r(3, 4, 5)
        sm[1, 2] = NINF
        sm[0, :, 3] = NINF
        for dim in (-1, 1):
            s.case(f"safe_softmax_dim{dim}", safe_softmax(dim), [sm], npu=["_safe_softmax"])
    else:
        skipped += ["safe_softmax_dim-1", "safe_softmax_dim1"]

    # attention, forward and backward
    def grads(name, b, h, l, sl, e, mask=None, npu=(SDPA, SDPA_BWD), cpu=None, **kw):
        args = [leaf(b, h, l, e), leaf(b, h, sl, e), leaf(b, h, sl, e), r(b, h, l, e)]
        static = ()
        if mask is not None:
            args.append(mask)
            static = () if cpu else ("arg4",)
        fused(name, sdpa_grads(**kw), args, npu=npu, cpu=cpu, static=static)

    grads("sdpa", 2, 3, 5, 5, 4)
    grads("sdpa_l_ne_s", 2, 3, 5, 7, 4)
    grads("sdpa_one_head", 1, 1, 6, 3, 8)
    grads("sdpa_causal_l_lt_s", 2, 2, 4, 7, 4, is_causal=True)
    grads("sdpa_causal_l_gt_s", 2, 2, 9, 3, 4, is_causal=True)
    grads("sdpa_scale", 2, 3, 5, 7, 4, scale=0.3)
    grads("sdpa_mask", 2, 3, 5, 7, 4, mask=r(5, 7))
    grads("sdpa_mask_4d", 2, 3, 5, 7, 4, mask=r(2, 1, 5, 7))
    grads("sdpa_mask_column", 2, 3, 5, 7, 4, mask=r(5, 1))
    holes = r(5, 7)
    holes[1, 1:] = NINF
    holes[3, ::2] = NINF
    grads("sdpa_mask_ninf", 2, 3, 5, 7, 4, mask=holes)
    grads("sdpa_mask_causal", 2, 3, 5, 7, 4, mask=r(5, 7), is_causal=True)
    grads("sdpa_long_rows", 1, 2, 40, 37, 16, mask=r(40, 37), scale=0.2)

    # the fused ops called directly: logsumexp; the backward fed its own out and logsumexp
    q0, k0, v0 = r(2, 3, 5, 4), r(2, 3, 7, 4), r(2, 3, 7, 4)
    fused("forward_logsumexp",
          lambda q, k, v, m: A._scaled_dot_product_flash_attention_for_cpu(
              q, k, v, attn_mask=m), [q0, k0, v0, holes], static=["arg3"], npu=[SDPA])
    fused("forward_logsumexp_causal_scale",
          lambda q, k, v: A._scaled_dot_product_flash_attention_for_cpu(
              q, k, v, 0.0, True, scale=1.5), [q0, k0, v0], npu=[SDPA])
    fused("backward_given_out_lse",
          lambda g, q, k, v, o, lse, m: A._scaled_dot_product_flash_attention_for_cpu_backward(
              g, q, k, v, o, lse, 0.0, False, attn_mask=m, scale=0.4),
          [r(2, 3, 5, 4), q0, k0, v0, r(2, 3, 5, 4), r(2, 3, 5).abs() + 1.0, holes],
          static=["arg6"], npu=[SDPA_BWD])
    fused("backward_causal",
          lambda g, q, k, v, o, lse: A._scaled_dot_product_flash_attention_for_cpu_backward(
              g, q, k, v, o, lse, 0.0, True),
          [r(2, 3, 5, 4), q0, k0, v0, r(2, 3, 5, 4), r(2, 3, 5) + 2.0], npu=[SDPA_BWD])

    # declined
    run_time = "is computed at run time"
    grads("sdpa_run_time_mask", 2, 3, 5, 7, 4, mask=r(5, 7), npu=(),
          cpu={SDPA: run_time, SDPA_BWD: run_time})
    full_row = r(5, 7)
    full_row[2] = NINF
    whole = "masks every key of query row 2"
    fused("sdpa_fully_masked_row", sdpa_grads(),
          [leaf(2, 3, 5, 4), leaf(2, 3, 7, 4), leaf(2, 3, 7, 4), r(2, 3, 5, 4), full_row],
          static=["arg4"], cpu={SDPA: whole, SDPA_BWD: whole}, socs=("SM8650",))
    merged = "masks every key of query row 0 (with is_causal)"
    fused("sdpa_causal_masks_row0", sdpa_grads(is_causal=True),
          [leaf(2, 3, 5, 4), leaf(2, 3, 7, 4), leaf(2, 3, 7, 4), r(2, 3, 5, 4),
           r(5, 7).index_fill(1, torch.tensor([0]), NINF)],
          static=["arg4"], cpu={SDPA: merged, SDPA_BWD: merged}, socs=("SM8650",))
    bcast = "needs the mask's last two dims full"
    fused("sdpa_causal_broadcast_mask", sdpa_grads(is_causal=True),
          [leaf(2, 3, 5, 4), leaf(2, 3, 7, 4), leaf(2, 3, 7, 4), r(2, 3, 5, 4), r(1, 7)],
          static=["arg4"], cpu={SDPA: bcast, SDPA_BWD: bcast}, socs=("SM8650",))
    for name in skipped:
        print(f"not applicable under PyTorch {torch.__version__}: npu_attention/{name} (no "
              "F.scaled_dot_product_attention, fused attention ops or _safe_softmax)")
    return s


if __name__ == "__main__":
    build_suite().main()
