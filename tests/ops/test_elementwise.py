"""PyTorch comparison tests for the elementwise family (src/ops/elementwise.c): relu, neg,
threshold_backward, add/sub (Tensor, Scalar, alpha), rsub (Scalar, Tensor), mul and div (Tensor,
Scalar, and with rounding_mode None / 'trunc' / 'floor': Tensor_mode, Scalar_mode), where.self
(a bool condition input: edgegrad has no comparison ops to make one).

Covers same-shape, scalar, 0-d, per-channel and two-sided broadcasting, dtype promotion (Python
numbers, 0-d tensors, int/float mixes, true division of integers), sizes large enough for the
threaded paths, and graphs the checks must reject (built by editing an exported graph, since
PyTorch will not trace them).

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_elementwise.py \
        --edgegrad build/edgegrad --workdir /tmp/ops-elementwise
"""
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import optest  # noqa: E402

aten = torch.ops.aten
torch.manual_seed(0)


# ---- invalid graphs: export a valid one, then edit its JSON ------------------------------

def node(graph, target):
    return next(n for n in graph["nodes"] if n["target"] == target)


def value(graph, vid):
    return graph["values"][vid]


def set_input(graph, index, dtype=None, shape=None):
    """Changes input `index`'s recorded dtype/shape (the harness's .npy must still match,
    so these edits are only used in cases that fail before any input is read)."""
    v = value(graph, graph["inputs"][index]["value"])
    if dtype is not None:
        v["dtype"] = dtype
    if shape is not None:
        v["shape"] = shape


class ElementwiseSuite(optest.EditSuite):
    """An EditSuite with two more kinds of case, for inputs PyTorch cannot run (or trace, as
    make_fx runs the ops on its example inputs): the graph is exported from `args` and run on
    other inputs, either `run_with=(inputs, ref)` (compared with ref(*inputs)) or
    `runtime_error=(inputs, text)` (exit 1, a failed run, with that text on one line); or
    `via_egp=SOC`: compiled for SOC (at fp32, optest.NPU_FP32) to a .egp file, which is run (the
    program file carries the node's arguments, strings included) and compared with fn."""

    def __init__(self, family):
        super().__init__(family)
        self.other = {}

    def case(self, name, fn, args, static=(), expect_error=None, edit=None, run_with=None,
             runtime_error=None, via_egp=None):
        super().case(name, fn, args, static, expect_error, edit)
        if run_with or runtime_error or via_egp:
            self.other[name] = (run_with, runtime_error, via_egp)

    def _run_case(self, exe, workdir, name, fn, args, static, expect_error):
        if name not in self.other:
            return super()._run_case(exe, workdir, name, fn, args, static, expect_error)
        (run_with, runtime_error, via_egp), d = self.other[name], os.path.join(workdir, name)
        inputs = (run_with or runtime_error or (args,))[0]
        os.makedirs(d, exist_ok=True)
        names = [f"arg{i}" for i in range(len(args))]
        self._export(name, fn, args, os.path.join(d, "model"), arg_names=names)
        program = os.path.join(d, "model.json")
        if via_egp:
            program = os.path.join(d, "model.egp")
            r = subprocess.run([exe, "compile", os.path.join(d, "model.json"), "--soc", via_egp,
                                *optest.NPU_FP32, "-o", program], capture_output=True, text=True)
            if r.returncode != 0:
                return f"compile exit {r.returncode}: {r.stderr.strip()}"
            run_with = (args, fn)
        cmd = [exe, "run", program, "--output-dir", os.path.join(d, "out"), "-q"]
        for nm, a in zip(names, inputs):
            np.save(os.path.join(d, nm + ".npy"), a.numpy())
            cmd += ["--input", f"{nm}={os.path.join(d, nm + '.npy')}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if run_with:
            if r.returncode != 0:
                return f"edgegrad exit {r.returncode}: {r.stderr.strip()}"
            got = np.load(os.path.join(d, "out", "out0.npy"))
            return optest.allclose_report(got, run_with[1](*inputs).numpy())
        lines, text = r.stderr.strip().splitlines(), runtime_error[1]
        if r.returncode != 1 or len(lines) != 1 or text not in lines[0]:
            return f"expected exit 1 with one line containing {text!r}; got {r.returncode}: " \
                   f"{r.stderr.strip()!r}"
        return None


suite = ElementwiseSuite("elementwise")


def rand(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


def ints(*shape, lo=-50, hi=50, dtype=torch.int64):
    return torch.randint(lo, hi, shape, dtype=dtype)


# ---- unary ---------------------------------------------------------------------------------

suite.case("relu_4d", lambda x: torch.relu(x), [rand(2, 3, 4, 5)])
suite.case("relu_0d", lambda x: torch.relu(x), [torch.tensor(-1.5)])
suite.case("relu_f64", lambda x: torch.relu(x), [rand(7, 3, dtype=torch.float64)])
suite.case("relu_int64", lambda x: torch.relu(x), [ints(4, 5)])
suite.case("relu_int32", lambda x: torch.relu(x), [ints(9, dtype=torch.int32)])
suite.case("relu_big", lambda x: torch.relu(x), [rand(8, 16, 32, 33)])
suite.case("relu_empty", lambda x: torch.relu(x), [rand(0, 3)])
suite.case("neg", lambda x: -x, [rand(3, 4)])
suite.case("neg_int64", lambda x: torch.neg(x), [ints(5)])
suite.case("neg_f64_big", lambda x: -x, [rand(300, 300, dtype=torch.float64)])

# ---- threshold_backward ----------------------------------------------------------------------

suite.case("threshold_backward", lambda g, x: aten.threshold_backward(g, x, 0),
           [rand(2, 3, 4, 4), rand(2, 3, 4, 4)])
suite.case("threshold_backward_thr", lambda g, x: aten.threshold_backward(g, x, 0.5),
           [rand(6, 5), rand(6, 5)])
suite.case("threshold_backward_bcast", lambda g, x: aten.threshold_backward(g, x, -0.25),
           [rand(4, 1), rand(3)])
suite.case("threshold_backward_f64", lambda g, x: aten.threshold_backward(g, x, 0.0),
           [rand(5, 5, dtype=torch.float64), rand(5, 5)])

# ---- add / sub / rsub --------------------------------------------------------------------------

suite.case("add_same", lambda x, y: x + y, [rand(2, 3, 4), rand(2, 3, 4)])
suite.case("add_trailing", lambda x, y: x + y, [rand(2, 3, 4), rand(4)])
suite.case("add_two_sided", lambda x, y: x + y, [rand(4, 1), rand(1, 5)])
suite.case("add_two_sided_3d", lambda x, y: x + y, [rand(3, 1, 5), rand(4, 1)])
suite.case("add_per_channel", lambda x, b: x + b, [rand(2, 3, 4, 5), rand(1, 3, 1, 1)])
suite.case("add_per_channel_lhs", lambda b, x: b + x, [rand(3, 1, 1), rand(2, 3, 4, 5)])
suite.case("add_per_channel_big", lambda x, b: x + b, [rand(8, 32, 24, 24), rand(1, 32, 1, 1)])
suite.case("add_bias_rows", lambda x, b: x + b, [rand(64, 1030), rand(1030)])
suite.case("add_big_same", lambda x, y: x + y, [rand(4, 64, 32, 17), rand(4, 64, 32, 17)])
suite.case("add_0d_tensor", lambda x, s: x + s, [rand(3, 4), torch.tensor(2.5)])
suite.case("add_0d_lhs", lambda s, x: s + x, [torch.tensor(-1.0), rand(3, 4)])
suite.case("add_0d_0d", lambda a, b: a + b, [torch.tensor(1.0), torch.tensor(2.0)])
suite.case("add_int_number", lambda x: x + 1, [rand(3, 4)])
suite.case("add_float_number", lambda x: x + 2.5, [rand(3, 4)])
suite.case("add_alpha_int", lambda x, y: torch.add(x, y, alpha=2), [rand(2, 3), rand(3)])
suite.case("add_alpha_float", lambda x, y: torch.add(x, y, alpha=0.25), [rand(2, 3), rand(2, 3)])
suite.case("add_number_alpha", lambda x: torch.add(x, 2, alpha=3), [rand(5)])
suite.case("add_empty_bcast", lambda x, y: x + y, [rand(0, 3), rand(3)])
suite.case("add_Scalar", lambda x: aten.add.Scalar(x, 2.0, 3), [rand(2, 3)])
suite.case("add_Scalar_noalpha", lambda x: aten.add.Scalar(x, -1), [rand(4)])
suite.case("sub", lambda x, y: x - y, [rand(2, 3, 4), rand(3, 1)])
suite.case("sub_alpha", lambda x, y: torch.sub(x, y, alpha=0.5), [rand(3, 4), rand(3, 4)])
suite.case("sub_number", lambda x: x - 3, [rand(3, 4)])
suite.case("sub_Scalar", lambda x: aten.sub.Scalar(x, 2), [rand(3, 4)])
suite.case("sub_Scalar_alpha", lambda x: aten.sub.Scalar(x, 1.5, 2), [rand(3, 4)])
suite.case("rsub", lambda x: 1 - x, [rand(3, 4)])
suite.case("rsub_alpha", lambda x: torch.rsub(x, 2, alpha=3), [rand(3, 4)])
suite.case("rsub_float", lambda x: 0.5 - x, [rand(2, 2, 2)])

# ---- rsub.Tensor: other - alpha * self, broadcasting both ways ----
suite.case("rsub_tensor", lambda x, y: torch.rsub(x, y), [rand(3, 4), rand(3, 4)])
suite.case("rsub_tensor_alpha", lambda x, y: torch.rsub(x, y, alpha=2.5), [rand(3, 4), rand(4)])
suite.case("rsub_tensor_bcast_both", lambda x, y: torch.rsub(x, y, alpha=-1),
           [rand(3, 1), rand(1, 5)])
suite.case("rsub_tensor_0d_other", lambda x, y: torch.rsub(x, y), [rand(2, 3), torch.tensor(1.5)])
suite.case("rsub_tensor_int64", lambda x, y: torch.rsub(x, y, alpha=3), [ints(3, 4), ints(4)])
suite.case("rsub_tensor_int_float", lambda x, y: torch.rsub(x, y), [ints(3, 4), rand(3, 4)])
suite.case("rsub_tensor_f64", lambda x, y: torch.rsub(x, y, alpha=0.5),
           [rand(5, dtype=torch.float64), rand(5, dtype=torch.float64)])
suite.case("rsub_tensor_empty", lambda x, y: torch.rsub(x, y), [rand(0, 3), rand(3)])
suite.case("rsub_tensor_big", lambda x, y: torch.rsub(x, y, alpha=2),
           [rand(64, 64, 32), rand(64, 1, 32)])
suite.case("grad_rsub_tensor",
           optest.chain(lambda x, y, g: optest.vjp([torch.rsub(x, y, alpha=2)], [x, y], [g])),
           [rand(2, 3).requires_grad_(True), rand(3).requires_grad_(True), rand(2, 3)])
suite.case("err_rsub_tensor_bool", lambda x, y: torch.rsub(x, y), [rand(3), rand(3)],
           expect_error="subtraction is not defined on bool",
           edit=lambda g: set_input(g, 1, dtype="bool"))
suite.case("err_rsub_tensor_shapes", lambda x, y: torch.rsub(x, y), [rand(3), rand(3)],
           expect_error="operand shapes [4] and [3]: they do not broadcast",
           edit=lambda g: set_input(g, 1, shape=[4]))
suite.case("err_rsub_tensor_float_alpha_int", lambda x, y: torch.rsub(x, y, alpha=2),
           [ints(3), ints(3)], expect_error="alpha (2.5) is a float",
           edit=lambda g: node(g, "aten.rsub.Tensor")["kwargs"].update(alpha={"float": 2.5}))

# ---- mul / div -------------------------------------------------------------------------------

suite.case("mul_same", lambda x, y: x * y, [rand(3, 4), rand(3, 4)])
suite.case("mul_bcast", lambda x, y: x * y, [rand(2, 1, 4), rand(3, 1)])
suite.case("mul_per_channel", lambda x, s: x * s, [rand(2, 6, 3, 3), rand(6, 1, 1)])
suite.case("mul_number", lambda x: x * 2.0, [rand(3, 4)])
suite.case("mul_Scalar", lambda x: aten.mul.Scalar(x, 3), [rand(3, 4)])
suite.case("mul_0d", lambda x, s: x * s, [rand(3, 4), torch.tensor(0.5)])
suite.case("div", lambda x, y: x / y, [rand(3, 4), rand(3, 4) + 3])
suite.case("div_bcast", lambda x, y: x / y, [rand(2, 3, 4), rand(3, 1) + 3])
suite.case("div_number", lambda x: x / 2, [rand(3, 4)])
suite.case("div_Scalar", lambda x: aten.div.Scalar(x, 4), [rand(3, 4)])
suite.case("div_Scalar_float", lambda x: aten.div.Scalar(x, 0.3), [rand(3, 4)])

# ---- dtypes ----------------------------------------------------------------------------------

suite.case("add_int64", lambda x, y: x + y, [ints(3, 4), ints(4)])
suite.case("add_int64_alpha", lambda x, y: torch.add(x, y, alpha=3), [ints(3, 4), ints(3, 4)])
suite.case("sub_int32", lambda x, y: x - y, [ints(3, 4, dtype=torch.int32),
                                             ints(3, 4, dtype=torch.int32)])
suite.case("mul_int64", lambda x, y: x * y, [ints(3, 4), ints(3, 1)])
suite.case("mul_int64_number", lambda x: x * 7, [ints(6)])
suite.case("int64_times_float_number", lambda x: x * 2.5, [ints(6)])
suite.case("int64_plus_float_tensor", lambda x, y: x + y, [ints(2, 3), rand(2, 3)])
suite.case("int32_plus_int64_0d", lambda x, s: x + s, [ints(4, dtype=torch.int32),
                                                       torch.tensor(5)])
suite.case("int32_plus_f64_0d", lambda x, s: x + s, [ints(4, dtype=torch.int32),
                                                     torch.tensor(1.5, dtype=torch.float64)])
suite.case("f32_plus_f64_0d", lambda x, s: x + s, [rand(4), torch.tensor(1.5, dtype=torch.float64)])
suite.case("f32_plus_f64", lambda x, y: x + y, [rand(2, 4), rand(4, dtype=torch.float64)])
suite.case("bool_plus_int", lambda x: x + 1, [torch.rand(5) > 0.5])
suite.case("bool_times_float", lambda m, x: m * x, [torch.rand(3, 4) > 0.5, rand(3, 4)])
suite.case("div_int64", lambda x, y: x / y, [ints(3, 4), ints(3, 4, lo=1, hi=9)])
suite.case("div_int64_number", lambda x: x / 4, [ints(7)])
suite.case("int64_wraps", lambda x: x * 3, [torch.tensor([2 ** 62, -(2 ** 62), 5])])
suite.case("f64_ops", lambda x, y: (x + y, x - y, x * y, x / y),
           [rand(3, 4, dtype=torch.float64), rand(4, dtype=torch.float64) + 3])

# ---- where.self -------------------------------------------------------------------------------


def cond(*shape):
    return torch.rand(*shape) > 0.5


suite.case("where", lambda c, x, y: torch.where(c, x, y), [cond(3, 4), rand(3, 4), rand(3, 4)])
suite.case("where_bcast_cond", lambda c, x, y: torch.where(c, x, y),
           [cond(4, 1), rand(2, 4, 5), rand(2, 4, 5)])
suite.case("where_bcast_all", lambda c, x, y: torch.where(c, x, y),
           [cond(3, 1, 5), rand(4, 1), rand(2, 1, 1, 1)])
suite.case("where_0d", lambda c, x, y: torch.where(c, x, y),
           [torch.tensor(True), rand(()), rand(2, 3)])
suite.case("where_empty", lambda c, x, y: torch.where(c, x, y),
           [cond(0, 3), rand(0, 3), rand(3)])
suite.case("where_large", lambda c, x, y: torch.where(c, x, y),
           [cond(4, 128, 160), rand(4, 128, 160), rand(128, 1)])
suite.case("where_special", lambda c, x, y: torch.where(c, x, y),
           [torch.tensor([True, False, True, False]),
            torch.tensor([float("inf"), 1.0, -0.0, 2.0]),
            torch.tensor([0.0, -float("inf"), 3.0, -0.0])])

# ---- graphs that must be rejected --------------------------------------------------------------


def bad_shape(g):
    set_input(g, 1, shape=[4])
    value(g, node(g, "aten.add.Tensor")["output"])["shape"] = [2, 4]


def bad_out_dtype(g):
    value(g, node(g, "aten.mul.Tensor")["output"])["dtype"] = "float64"


def bad_out_shape(g):
    value(g, node(g, "aten.add.Tensor")["output"])["shape"] = [3, 2]


def rounding(g):
    node(g, "aten.div.Tensor")["kwargs"]["rounding_mode"] = 1


def float_alpha_int(g):
    node(g, "aten.add.Tensor")["kwargs"]["alpha"] = {"float": 0.5}


def bool_alpha(g):
    node(g, "aten.add.Tensor")["kwargs"]["alpha"] = True


def neg_bool(g):
    set_input(g, 0, dtype="bool")
    value(g, node(g, "aten.neg.default")["output"])["dtype"] = "bool"


def sub_bool(g):
    set_input(g, 0, dtype="bool")
    set_input(g, 1, dtype="bool")


def relu_f16(g):
    set_input(g, 0, dtype="float16")
    value(g, node(g, "aten.relu.default")["output"])["dtype"] = "float16"


def mul_tensor_as_scalar(g):
    n = node(g, "aten.mul.Tensor")
    n["target"] = "aten.mul.Scalar"


def alpha_tensor(g):
    node(g, "aten.add.Tensor")["kwargs"]["alpha"] = {"value": 0}


def unknown_kwarg(g):
    node(g, "aten.mul.Tensor")["kwargs"]["beta"] = 2


def threshold_missing(g):
    node(g, "aten.threshold_backward.default")["args"].pop()


def uint8_int8(g):
    set_input(g, 0, dtype="uint8")
    set_input(g, 1, dtype="int8")


def where_float_cond(g):
    set_input(g, 0, dtype="float32")


def where_f64(g):
    set_input(g, 2, dtype="float64")


def where_bad_shape(g):
    set_input(g, 1, shape=[2, 4])


def E(name, fn, args, edit, expect):
    suite.case(name, fn, args, expect_error=expect, edit=edit)


E("err_no_broadcast", lambda x, y: x + y, [rand(2, 3), rand(3)], bad_shape,
  "do not broadcast")
E("err_out_dtype", lambda x, y: x * y, [rand(2, 3), rand(3)], bad_out_dtype, "contradicts")
E("err_out_shape", lambda x, y: x + y, [rand(2, 1), rand(3)], bad_out_shape, "contradicts")
E("err_rounding_mode", lambda x, y: x / y, [rand(3), rand(3)], rounding, "rounding_mode")
E("err_float_alpha_int", lambda x, y: torch.add(x, y, alpha=2), [ints(3), ints(3)],
  float_alpha_int, "alpha (0.5) is a float")
E("err_bool_alpha", lambda x, y: torch.add(x, y, alpha=2), [rand(3), rand(3)], bool_alpha,
  "alpha (True) is a bool")
E("err_neg_bool", lambda x: -x, [rand(3)], neg_bool, "negation is not defined on bool")
E("err_sub_bool", lambda x, y: x - y, [rand(3), rand(3)], sub_bool, "two bool operands")
E("err_relu_f16", lambda x: torch.relu(x), [rand(3)], relu_f16, "float16")
E("err_scalar_overload_tensor", lambda x, y: x * y, [rand(3), rand(3)], mul_tensor_as_scalar,
  "takes a Python number")
E("err_unknown_kwarg", lambda x, y: x * y, [rand(3), rand(3)], unknown_kwarg,
  "unknown keyword argument 'beta'")
E("err_threshold_missing", lambda g, x: aten.threshold_backward(g, x, 0), [rand(3), rand(3)],
  threshold_missing, "argument threshold is missing")
E("err_alpha_tensor", lambda x, y: torch.add(x, y, alpha=2), [rand(3), rand(3)], alpha_tensor,
  "argument alpha is not a number")
E("err_uint8_int8", lambda x, y: x + y, [ints(3), ints(3)], uint8_int8, "int16")
W = (lambda c, x, y: torch.where(c, x, y), [cond(2, 3), rand(2, 3), rand(2, 3)])
E("err_where_float_cond", *W, where_float_cond, "condition dtype float32: where expects a bool")
E("err_where_f64", *W, where_f64, "other dtype float64: where runs on float32")
E("err_where_no_broadcast", *W, where_bad_shape, "do not broadcast")

# div with rounding_mode=None traces to aten.div.Tensor_mode
suite.case("div_Tensor_mode_none", lambda x, y: torch.div(x, y, rounding_mode=None),
           [torch.randn(3, 4), torch.rand(3, 4) + 0.5])
suite.case("div_by_zero_inf_nan", lambda x, y: x / y,
           [torch.tensor([1.0, -1.0, 0.0, 2.0]), torch.tensor([0.0, 0.0, 0.0, 4.0])])

# ---- div with rounding_mode 'trunc' / 'floor' (div.Tensor_mode, div.Scalar_mode) --------------
# ATen's semantics: floats round trunc(a / b) or floor division from the exact remainder (so
# 1 // 0.1 is 9, though 1 / 0.1 rounds to 10), division by zero gives +-inf or NaN; integers
# stay integers (C's truncation; floor one less where the signs differ), incl. negative values.

def div_mode(mode):
    return lambda x, y: torch.div(x, y, rounding_mode=mode)


def div_number(mode, number):
    return lambda x: torch.div(x, number, rounding_mode=mode)


def div_scalar_mode(mode, number):
    return lambda x: aten.div.Scalar_mode(x, number, rounding_mode=mode)


INF, NAN = float("inf"), float("nan")
SPECIAL_A = [7.0, -7.0, 7.0, -7.0, 0.0, -0.0, 1.0, -1.0, 0.0, INF, -INF, NAN, 5.0, 1.0, -1.0,
             3.5, -3.5, 1e30, 6.0, -6.0, 2.5, 1.0, -1.0, 0.3, 1e-30, -5.0]
SPECIAL_B = [2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 0.0, 0.0, 0.0, 2.0, 2.0, 1.0, INF, -INF, INF, 0.5,
             -0.5, 1e-30, 3.0, 3.0, -0.0, 0.1, 0.1, 0.1, 7.0, NAN]


def int_pair(dtype, n=64, lo=-60, hi=60):
    a = ints(n, lo=lo, hi=hi, dtype=dtype)
    b = ints(n, lo=1, hi=10, dtype=dtype) * (ints(n, lo=0, hi=2, dtype=dtype) * 2 - 1)
    return [a, b]


for mode in ("trunc", "floor"):
    suite.case(f"div_{mode}", div_mode(mode), [rand(4, 5) * 10, rand(4, 5)])
    suite.case(f"div_{mode}_bcast", div_mode(mode), [rand(3, 1, 5) * 7, rand(4, 1) + 0.5])
    suite.case(f"div_{mode}_special", div_mode(mode),
               [torch.tensor(SPECIAL_A), torch.tensor(SPECIAL_B)])
    suite.case(f"div_{mode}_f64", div_mode(mode),
               [torch.tensor(SPECIAL_A, dtype=torch.float64),
                torch.tensor(SPECIAL_B, dtype=torch.float64)])
    suite.case(f"div_{mode}_big", div_mode(mode), [rand(64, 64, 20) * 100, rand(64, 1, 20)])
    suite.case(f"div_{mode}_int64", div_mode(mode), int_pair(torch.int64))
    suite.case(f"div_{mode}_int32", div_mode(mode), int_pair(torch.int32))
    suite.case(f"div_{mode}_int64_large", div_mode(mode),
               [torch.tensor([2 ** 62 + 3, -(2 ** 62) - 3, 2 ** 63 - 1, -(2 ** 63), -(2 ** 63)]),
                torch.tensor([-7, 7, -2, 3, 2 ** 63 - 1])])
    suite.case(f"div_{mode}_int_bcast", div_mode(mode),
               [ints(3, 1), ints(4, lo=1, hi=9) * torch.tensor([1, -1, 1, -1])])
    suite.case(f"div_{mode}_int32_by_int64_0d", div_mode(mode),
               [ints(6, dtype=torch.int32), torch.tensor(-4)])
    suite.case(f"div_{mode}_int_float", div_mode(mode), [ints(3, 4), rand(3, 4) + 3])
    suite.case(f"div_{mode}_int_number", div_number(mode, -3), [ints(12)])
    suite.case(f"div_{mode}_int_float_number", div_number(mode, 2.5), [ints(12)])
    suite.case(f"div_{mode}_float_number", div_number(mode, -0.75), [rand(3, 4) * 5])
    suite.case(f"div_{mode}_number_zero", div_number(mode, 0.0), [rand(8)])
    suite.case(f"div_{mode}_empty", div_mode(mode), [ints(0, 3), ints(3, lo=1, hi=5)])
    suite.case(f"div_Scalar_mode_{mode}", div_scalar_mode(mode, 4), [ints(10)])
    suite.case(f"div_Scalar_mode_{mode}_float", div_scalar_mode(mode, -1.5), [rand(10) * 4])
    # The minimum integer divided by -1 overflows: ATen traps (SIGFPE, so the graph is traced
    # on other values); edgegrad wraps it to itself as integer negation does, so the reference
    # is PyTorch's (wrapping) negation.
    suite.case(f"div_{mode}_int64_min_by_minus_one", div_mode(mode),
               [ints(4), torch.tensor([-1, -1, -1, -1])],
               run_with=([torch.tensor([-(2 ** 63), 5, -5, 0]), torch.tensor([-1, -1, -1, -1])],
                         lambda x, y: -x))
    suite.case(f"div_{mode}_int32_min_by_minus_one", div_number(mode, -1),
               [ints(3, dtype=torch.int32)],
               run_with=([torch.tensor([-(2 ** 31), 2 ** 31 - 1, -3], dtype=torch.int32)],
                         lambda x: -x))
    # an integer divisor of 0 fails the run, as ATen raises ZeroDivisionError
    suite.case(f"err_div_{mode}_int_by_zero", div_mode(mode), int_pair(torch.int64, n=5),
               runtime_error=([ints(5), torch.tensor([3, -2, 0, 1, 0])],
                              f"integer division by zero (other element 2 is 0, rounding_mode "
                              f"'{mode}', int64): ATen raises ZeroDivisionError"))
    suite.case(f"err_div_{mode}_int32_by_zero_0d", div_mode(mode),
               [ints(4, dtype=torch.int32), torch.tensor(3, dtype=torch.int32)],
               runtime_error=([ints(4, dtype=torch.int32), torch.tensor(0, dtype=torch.int32)],
                              "integer division by zero (other element 0 is 0"))
suite.case("div_mode_none_int", div_mode(None), [ints(3, 4), ints(3, 4, lo=1, hi=9)])
suite.case("div_floor_egp", lambda x, y: torch.div(x * 2.0, y, rounding_mode="floor"),
           [rand(2, 3, 4, 5) * 10, rand(2, 3, 4, 5)], via_egp="SM8650")
suite.case("div_Scalar_mode_trunc_egp", div_scalar_mode("trunc", -3), [ints(3, 4)],
           via_egp="SM8650")
suite.case("div_Scalar_mode_none", div_scalar_mode(None, 3), [ints(5)])


def rounding_kwarg(value, target="aten.div.Tensor_mode"):
    def edit(g):
        node(g, target)["kwargs"]["rounding_mode"] = value
    return edit


E("err_rounding_mode_ceil", div_mode("floor"), [rand(3), rand(3)], rounding_kwarg({"str": "ceil"}),
  "rounding_mode 'ceil' not in {trunc, floor}")
E("err_rounding_mode_scalar_mode", div_scalar_mode("trunc", 2), [rand(3)],
  rounding_kwarg({"str": "Floor"}, "aten.div.Scalar_mode"),
  "rounding_mode 'Floor' not in {trunc, floor}")
E("err_rounding_mode_int", div_mode("trunc"), [rand(3), rand(3)], rounding_kwarg(1),
  "rounding_mode is a int: expected None or a str in {trunc, floor}")
E("err_rounding_mode_control", div_mode("trunc"), [rand(3), rand(3)],
  rounding_kwarg({"str": "floor\nfloor"}), "rounding_mode (a str of 11 bytes) not in")
E("err_str_empty", div_mode("trunc"), [rand(3), rand(3)], rounding_kwarg({"str": ""}),
  "str of 0 bytes: expected 1 to 64 bytes without NUL")
E("err_str_long", div_mode("trunc"), [rand(3), rand(3)], rounding_kwarg({"str": "t" * 65}),
  "str of 65 bytes: expected 1 to 64 bytes without NUL")
E("err_str_nul", div_mode("trunc"), [rand(3), rand(3)], rounding_kwarg({"str": "floor\u0000"}),
  "\\u0000 is not allowed")
E("err_str_not_string", div_mode("trunc"), [rand(3), rand(3)], rounding_kwarg({"str": 2}),
  "str is not a string")
E("err_str_bare", div_mode("trunc"), [rand(3), rand(3)], rounding_kwarg("trunc"),
  "a bare real or string is not an argument")
E("err_div_trunc_bool", div_mode("trunc"), [rand(3), rand(3)], sub_bool,
  "result dtype bool: div computes in float32, float64, int64 or int32 only")


if __name__ == "__main__":
    suite.main()
