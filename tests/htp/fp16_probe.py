"""Measures how Qualcomm's QNN HTP backend computes float graphs, op by op, against exact fp32.

Each probe is a one-op (or two-op) ONNX model (opset 17) run three ways:
  - ONNX Runtime's CPU execution provider: the exact fp32 reference;
  - QNN's HTP backend (onnxruntime-qnn: libQnnHtp.so's x86 emulation), CPU fallback disabled,
    for one SoC (--soc-model, QNN's soc_model number; 57 = SM8650);
  - edgegrad's fp16 storage rule, emulated here: every input and weight rounded to fp16 (round to
    nearest even, magnitudes above 65504 saturated), the op computed in fp32 (float64 here, then
    fp32), its output rounded to fp16's precision with one binade more range (11 significant
    bits, saturating at 131008: the format the HTP keeps op results in).
It prints one table row per probe: the relative error max|got - ref| / max|ref| of QNN and of
the emulated rule, and their distance to each other in fp16 ulps of the reference's largest
magnitude. docs/fp16.md holds the table this script printed and what it means.

Usage: python tests/htp/fp16_probe.py [--soc-model 57] [--markdown]
Needs numpy, onnx, onnxruntime and onnxruntime-qnn (QNN's HTP emulation is x86-64 Linux only).
"""
import argparse
import os
import sys
import tempfile

import numpy as np

try:
    import onnx
    import onnxruntime as ort
    import onnxruntime_qnn as oq
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # the probe cannot say anything without QNN: fail, never skip
    sys.exit(f"fp16_probe: {e}: needs onnx, onnxruntime and onnxruntime-qnn")

FP16_MAX = 65504.0


def fp16(a):
    """a rounded to fp16 (nearest even), saturating at +-65504 as QNN HTP's inputs do."""
    a = np.asarray(a, np.float32)
    return np.clip(a, -FP16_MAX, FP16_MAX).astype(np.float16).astype(np.float32)


def result(a):
    """a as an op writes it on the HTP: 11 significant bits (nearest even; fp16's subnormals
    below 2^-14), saturating at +-131008, fp16 with one binade more range."""
    a = np.asarray(a, np.float32).astype(np.float64)
    small = np.abs(a) < 65520  # fp16's own range rounds alike
    m, e = np.frexp(np.where(small, 0, a))
    wide = np.clip(np.ldexp(np.round(m * 2048), e - 11), -131008, 131008)
    return np.where(small, a.astype(np.float32).astype(np.float16).astype(np.float64),
                    wide).astype(np.float32)


class Qnn:
    def __init__(self, soc_model):
        ort.register_execution_provider_library("QNNExecutionProvider", oq.get_library_path())
        self.dev = [d for d in ort.get_ep_devices() if d.ep_name == "QNNExecutionProvider"][0]
        self.soc_model = soc_model
        self.dir = tempfile.mkdtemp(prefix="fp16_probe_")

    def run(self, nodes, inputs, inits, output="y"):
        """Runs the graph on QNN HTP and on the CPU EP; returns (qnn, exact)."""
        g = helper.make_graph(
            nodes, "probe",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, v.shape) for n, v in inputs.items()],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
            [numpy_helper.from_array(v, n) for n, v in inits.items()])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        path = os.path.join(self.dir, "probe.onnx")
        onnx.save(model, path)
        cwd = os.getcwd()
        os.chdir(self.dir)  # QNN writes schematic.bin into the working directory
        try:
            so = ort.SessionOptions()
            so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
            so.add_provider_for_devices([self.dev], {"backend_type": "htp",
                                                     "soc_model": str(self.soc_model)})
            q = ort.InferenceSession(path, so).run(None, inputs)[0]
            c = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, inputs)[0]
        finally:
            os.chdir(cwd)
        return q, c


def rel(got, ref):
    ref = ref.astype(np.float64)
    return float(np.max(np.abs(got.astype(np.float64) - ref)) / max(np.max(np.abs(ref)), 1e-30))


def probes(rng):
    """(name, shape text, nodes, inputs, initializers, emulation of edgegrad's fp16 rule)."""
    n = lambda *s: rng.standard_normal(s).astype(np.float32)
    out = []
    x, w = n(1, 512, 8, 8), n(64, 512, 3, 3) * 0.05
    def conv16(x=x, w=w):
        import torch
        y = torch.nn.functional.conv2d(torch.from_numpy(fp16(x)).double(),
                                       torch.from_numpy(fp16(w)).double(), padding=1)
        return result(y.float().numpy())
    out.append(("Conv2d", "x 1x512x8x8, w 64x512x3x3, pad 1 (Cin*kh*kw = 4608)",
                [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
                {"x": x}, {"w": w}, conv16))
    a, b = n(64, 4096), n(4096, 64)
    out.append(("MatMul", "64x4096 @ 4096x64 (K = 4096)",
                [helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": a}, {"b": b},
                lambda: result(fp16(a).astype(np.float64) @ fp16(b).astype(np.float64))))
    for name, v in (("ReduceSum", rng.uniform(0, 1, (1, 50000)).astype(np.float32)),
                    ("ReduceSum", n(1, 50000))):
        out.append((name, "1x50000 -> 1x1, " + ("uniform [0, 1)" if v.min() >= 0 else "N(0, 1)"),
                    [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=1)],
                    {"x": v}, {"axes": np.array([1], np.int64)},
                    lambda v=v: result(fp16(v).astype(np.float64).sum(axis=1, keepdims=True))))
    p, q = n(1, 4096), n(1, 4096) * 1e-3
    out.append(("ElementWiseAdd", "1x4096, N(0,1) + 1e-3 N(0,1)",
                [helper.make_node("Add", ["p", "q"], ["y"])], {"p": p, "q": q}, {},
                lambda: result(fp16(p).astype(np.float64) + fp16(q))))
    l = n(8, 1000) * 4
    def lsm(l=l):
        z = fp16(l).astype(np.float64)
        z = z - z.max(axis=1, keepdims=True)
        return result(z - np.log(np.exp(z).sum(axis=1, keepdims=True)))
    out.append(("LogSoftmax", "8x1000 over axis 1, 4 N(0,1)",
                [helper.make_node("LogSoftmax", ["x"], ["y"], axis=1)], {"x": l}, {}, lsm))
    s = n(1, 4096) * 4
    out.append(("Sigmoid", "1x4096, 4 N(0,1)", [helper.make_node("Sigmoid", ["x"], ["y"])],
                {"x": s}, {}, lambda: result(1 / (1 + np.exp(-fp16(s).astype(np.float64))))))
    big = np.linspace(30000, 70000, 4096, dtype=np.float32).reshape(1, 4096)
    out.append(("ElementWiseAdd", "x + x, x in [30000, 70000] (overflow)",
                [helper.make_node("Add", ["x", "x"], ["y"])], {"x": big}, {},
                lambda: result(2 * fp16(big))))
    half = np.full([1], 0.5, np.float32)
    out.append(("Add, Mul", "(x + x) * 0.5, x in [30000, 70000] (overflow inside)",
                [helper.make_node("Add", ["x", "x"], ["t"]),
                 helper.make_node("Mul", ["t", "half"], ["y"])], {"x": big}, {"half": half},
                lambda: result(result(2 * fp16(big)) * 0.5)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--soc-model", type=int, default=57)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    qnn = Qnn(args.soc_model)
    print(f"QNN HTP soc_model {args.soc_model}; errors are max|got - exact| / max|exact|")
    print("| op | shape | QNN HTP | edgegrad fp16 | QNN vs edgegrad (fp16 ulps of max) |")
    print("|---|---|---:|---:|---:|")
    for name, shape, nodes, inputs, inits, emulate in probes(np.random.default_rng(args.seed)):
        got, exact = qnn.run(nodes, inputs, inits)
        mine = emulate()
        top = min(float(np.max(np.abs(exact))), FP16_MAX)
        ulp = 2.0 ** (np.floor(np.log2(max(top, 2.0 ** -14))) - 10)  # fp16's spacing at top
        dist = float(np.max(np.abs(got.astype(np.float64) - mine)))
        print(f"| {name} | {shape} | {rel(got, exact):.2e} | {rel(mine, exact):.2e} | "
              f"{dist / ulp:.2f} |", flush=True)


if __name__ == "__main__":
    main()
