"""PyTorch comparison for the matrix-product family: aten.mm, aten.addmm, aten.bmm, aten.mv,
aten.dot (src/ops/matmul.c).

Cases: square, skinny and empty products; every expansion of addmm's self ([n, m], [m],
[1, m], [n, 1], 0-d); beta and alpha (including beta 0 with NaN in self, which ATen ignores);
the Linear layer's forward and backward as make_fx traces them (addmm, mm, t, sum); weights
frozen as statics; bmm / mv / dot forward, empty, and backward (autograd chains through
optest.vjp, whose traces use transpose.int, mm, t and mul); and refusals (unsupported dtypes, and exported graphs edited so the shapes
cannot multiply).
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from optest import EditSuite, chain, vjp  # noqa: E402


def set_input_shape(index, shape):
    def edit(graph):
        graph["values"][graph["inputs"][index]["value"]]["shape"] = shape
    return edit


def linear_step(x, w, b):
    """A Linear layer's loss and gradients, as a training step traces them."""
    with torch.enable_grad():
        loss = F.linear(x, w, b).sum()
        return (loss, *torch.autograd.grad(loss, [x, w, b]))


torch.manual_seed(0)
suite = EditSuite("matmul")
r = torch.randn

# ---- mm
suite.case("mm", lambda a, b: torch.mm(a, b), [r(4, 5), r(5, 3)])
suite.case("mm_1x1", lambda a, b: torch.mm(a, b), [r(1, 1), r(1, 1)])
suite.case("mm_vec_row", lambda a, b: torch.mm(a, b), [r(1, 64), r(64, 10)])
suite.case("mm_vec_col", lambda a, b: torch.mm(a, b), [r(64, 10), r(10, 1)])
suite.case("mm_big", lambda a, b: torch.mm(a, b), [r(128, 512), r(512, 96)])
suite.case("mm_k0", lambda a, b: torch.mm(a, b), [r(3, 0), r(0, 4)])
suite.case("mm_n0", lambda a, b: torch.mm(a, b), [r(0, 5), r(5, 4)])
suite.case("mm_m0", lambda a, b: torch.mm(a, b), [r(3, 5), r(5, 0)])
suite.case("mm_static_weight", lambda a, w: torch.mm(a, w), [r(8, 16), r(16, 4)],
           static=("arg1",))
suite.case("mm_transposed", lambda a, b: torch.mm(a.t(), b), [r(5, 4), r(5, 3)])

# ---- addmm
for name, shape in (("full", (4, 3)), ("row", (3,)), ("row2d", (1, 3)), ("col", (4, 1)),
                    ("scalar", ()), ("one", (1,))):
    suite.case(f"addmm_{name}", lambda s, a, b: torch.addmm(s, a, b),
               [r(shape), r(4, 5), r(5, 3)])
suite.case("addmm_beta_alpha", lambda s, a, b: torch.addmm(s, a, b, beta=0.5, alpha=-2.0),
           [r(4, 3), r(4, 5), r(5, 3)])
suite.case("addmm_int_scalars", lambda s, a, b: torch.addmm(s, a, b, beta=2, alpha=3),
           [r(3), r(4, 5), r(5, 3)])
suite.case("addmm_beta0_nan", lambda s, a, b: torch.addmm(s, a, b, beta=0),
           [torch.full((4, 3), float("nan")), r(4, 5), r(5, 3)])
suite.case("addmm_alpha0", lambda s, a, b: torch.addmm(s, a, b, alpha=0),
           [r(4, 3), r(4, 5), r(5, 3)])
suite.case("addmm_k0", lambda s, a, b: torch.addmm(s, a, b, beta=1.5), [r(3), r(2, 0), r(0, 3)])
suite.case("addmm_big", lambda s, a, b: torch.addmm(s, a, b), [r(1000), r(64, 512), r(512, 1000)])
suite.case("linear", lambda x, w, b: F.linear(x, w, b), [r(8, 20), r(10, 20), r(10)],
           static=("arg1", "arg2"))
suite.case("linear_step", linear_step,
           [r(6, 20).requires_grad_(), r(10, 20).requires_grad_(), r(10).requires_grad_()])

# ---- bmm, mv, dot
suite.case("bmm", lambda a, b: torch.bmm(a, b), [r(3, 4, 5), r(3, 5, 2)])
suite.case("bmm_one_batch", lambda a, b: torch.bmm(a, b), [r(1, 7, 3), r(1, 3, 6)])
suite.case("bmm_big", lambda a, b: torch.bmm(a, b), [r(8, 64, 96), r(8, 96, 48)])
suite.case("bmm_transposed", lambda a, b: torch.bmm(a.transpose(1, 2), b),
           [r(2, 5, 4), r(2, 5, 3)])
suite.case("bmm_batch0", lambda a, b: torch.bmm(a, b), [r(0, 3, 4), r(0, 4, 2)])
suite.case("bmm_k0", lambda a, b: torch.bmm(a, b), [r(2, 3, 0), r(2, 0, 4)])
suite.case("bmm_n0", lambda a, b: torch.bmm(a, b), [r(2, 0, 4), r(2, 4, 5)])
suite.case("matmul_3d", lambda a, b: a @ b, [r(2, 3, 4), r(2, 4, 5)])
suite.case("mv", lambda a, v: torch.mv(a, v), [r(4, 5), r(5)])
suite.case("mv_big", lambda a, v: torch.mv(a, v), [r(300, 500), r(500)])
suite.case("mv_k0", lambda a, v: torch.mv(a, v), [r(3, 0), r(0)])
suite.case("mv_n0", lambda a, v: torch.mv(a, v), [r(0, 4), r(4)])
suite.case("matmul_mat_vec", lambda a, v: a @ v, [r(4, 5), r(5)])
suite.case("dot", lambda a, b: torch.dot(a, b), [r(7), r(7)])
suite.case("dot_big", lambda a, b: torch.dot(a, b), [r(100000), r(100000)])
suite.case("dot_empty", lambda a, b: torch.dot(a, b), [r(0), r(0)])
suite.case("matmul_vec_vec", lambda a, b: a @ b, [r(5), r(5)])
leaf = lambda *s: r(*s).requires_grad_(True)  # noqa: E731
suite.case("grad_bmm", chain(lambda a, b, g: vjp([torch.bmm(a, b)], [a, b], [g])),
           [leaf(3, 4, 5), leaf(3, 5, 2), r(3, 4, 2)])
suite.case("grad_bmm_empty", chain(lambda a, b, g: vjp([torch.bmm(a, b)], [a, b], [g])),
           [leaf(2, 3, 0), leaf(2, 0, 4), r(2, 3, 4)])
suite.case("grad_mv", chain(lambda a, v, g: vjp([torch.mv(a, v)], [a, v], [g])),
           [leaf(4, 5), leaf(5), r(4)])
suite.case("grad_dot", chain(lambda a, b, g: vjp([torch.dot(a, b)], [a, b], [g])),
           [leaf(6), leaf(6), r(())])
suite.case("grad_mm_k0", chain(lambda a, b, g: vjp([a @ b], [a, b], [g])),
           [leaf(3, 0), leaf(0, 4), r(3, 4)])
suite.case("grad_linear_empty_batch",
           chain(lambda x, w, b, g: vjp([F.linear(x, w, b)], [x, w, b], [g])),
           [leaf(0, 3), leaf(4, 3), leaf(4), r(0, 4)])

# ---- refused: unsupported dtypes PyTorch accepts
suite.case("err_mm_f64", lambda a, b: torch.mm(a, b),
           [r(2, 3, dtype=torch.float64), r(3, 2, dtype=torch.float64)],
           expect_error="dtype float64: aten.mm.default supports float32 only")
suite.case("err_mm_int64", lambda a, b: torch.mm(a, b),
           [torch.ones(2, 3, dtype=torch.int64), torch.ones(3, 2, dtype=torch.int64)],
           expect_error="supports float32 only")

# ---- refused: graphs edited so the shapes break the rules
suite.case("err_mm_shapes", lambda a, b: torch.mm(a, b), [r(2, 3), r(3, 5)],
           edit=set_input_shape(1, [4, 5]),
           expect_error="self [2, 3] and mat2 [4, 5] cannot be multiplied")
suite.case("err_mm_rank", lambda a, b: torch.mm(a, b), [r(2, 3), r(3, 5)],
           edit=set_input_shape(0, [6]), expect_error="has shape [6]: aten.mm.default takes 2-D")
suite.case("err_addmm_shapes", lambda s, a, b: torch.addmm(s, a, b), [r(3), r(2, 4), r(4, 3)],
           edit=set_input_shape(2, [5, 3]),
           expect_error="mat1 [2, 4] and mat2 [5, 3] cannot be multiplied")
suite.case("err_addmm_self", lambda s, a, b: torch.addmm(s, a, b), [r(3), r(2, 4), r(4, 3)],
           edit=set_input_shape(0, [4]),
           expect_error="self [4] does not expand to the shape [2, 3] of mat1 [2, 4] @ mat2")
suite.case("err_addmm_self_rank3", lambda s, a, b: torch.addmm(s, a, b),
           [r(2, 3), r(2, 4), r(4, 3)], edit=set_input_shape(0, [1, 2, 3]),
           expect_error="self [1, 2, 3] does not expand")


suite.case("err_bmm_batch", lambda a, b: torch.bmm(a, b), [r(2, 3, 4), r(2, 4, 5)],
           edit=set_input_shape(1, [3, 4, 5]),
           expect_error="self [2, 3, 4] and mat2 [3, 4, 5]: batch sizes 2 and 3 must be equal")
suite.case("err_bmm_inner", lambda a, b: torch.bmm(a, b), [r(2, 3, 4), r(2, 4, 5)],
           edit=set_input_shape(1, [2, 3, 5]),
           expect_error="self [2, 3, 4] and mat2 [2, 3, 5] cannot be multiplied: 4 columns")
suite.case("err_bmm_rank", lambda a, b: torch.bmm(a, b), [r(2, 3, 4), r(2, 4, 5)],
           edit=set_input_shape(0, [3, 4]),
           expect_error="has shape [3, 4]: aten.bmm.default takes 3-D batches of matrices")
suite.case("err_mv_size", lambda a, v: torch.mv(a, v), [r(3, 4), r(4)],
           edit=set_input_shape(1, [5]),
           expect_error="self [3, 4] and vec [5] cannot be multiplied: 4 columns against 5 rows")
suite.case("err_mv_rank", lambda a, v: torch.mv(a, v), [r(3, 4), r(4)],
           edit=set_input_shape(1, [4, 1]), expect_error="aten.mv.default takes 1-D vectors")
suite.case("err_dot_size", lambda a, b: torch.dot(a, b), [r(3), r(3)],
           edit=set_input_shape(1, [4]), expect_error="self [3] and tensor [4] cannot be "
           "multiplied")
suite.case("err_dot_f64", lambda a, b: torch.dot(a, b),
           [r(3, dtype=torch.float64), r(3, dtype=torch.float64)],
           expect_error="dtype float64: aten.dot.default supports float32 only")


def wrong_out(graph):
    n = next(n for n in graph["nodes"] if n["target"] == "aten.mm.default")
    graph["values"][n["output"]]["shape"] = [3, 2]


suite.case("err_mm_out_shape", lambda a, b: torch.mm(a, b), [r(2, 3), r(3, 2)], edit=wrong_out,
           expect_error="output shape [3, 2] contradicts aten.mm.default (expected [2, 2])")

if __name__ == "__main__":
    suite.main()
