"""Self-test of tests/htp/qnn_ref.py, the harness every HTP check runs QNN through: on tiny ONNX
graphs made with onnx.helper,
- an accepted graph (Conv -> Relu -> Sigmoid, SM8650) runs as QNN ops (the EP's JSON dump of the
  graph QNN built) and gives QNN's fp16 result within the fp16 error bound of ONNX Runtime's
  CPU result, bitwise the same on a second run;
- a graph with an op QNN HTP lacks (Det) raises QnnRefusal with ONNX Runtime's message, where
  ONNX Runtime with its default CPU fallback would have run it quietly;
- the profile gives one cycle count per QNN op, a positive total, and QNN node names that
  map back to the ONNX node names (named, unnamed, rewritten by the layout pass, inserted);
- QNN HTP's fast preparation applies sample 0's gate to every sample of x * g and x / g with a
  per-sample gate g [N, 1, 1, C], and gives every sample but the first wrong values for
  x * sigmoid(clamp(x)) of a pooled x [N, 1, 1, C]; it computes the forms edgegrad emits
  instead right;
- QNN HTP's emulator crashes (a signal) running, after fast preparation, ResNet-50's layer4
  downsample (a 1x1 stride-2 Conv from [2, 4, 4, 1024] to 2048 channels) with its training
  batch norm; the same graph with a Slice of the pixels and a stride-1 Conv (edgegrad's form,
  conv.c pointwise_subsample) runs in both preparations, as does the strided one at the
  default effort, each agreeing with ONNX Runtime's CPU (run in child processes);
- a session's temporary directory goes with the session, and with a forked pool worker that
  ends holding it;
- htp_check's flip rule imposes QNN HTP's decisions at near ties (a mask of p - q <= 0 with p,
  q a few fp16 roundings apart) and finds nothing to impose far from ties.
Needs onnxruntime, onnxruntime-qnn and onnx (scripts/install-deps.sh test), not PyTorch.

    .venv/bin/python tests/htp/test_qnn_ref.py

Prints one line per failed check and last `qnn_ref self-test: N passed, M failed`; exit 0 only
if every check passed.
"""
import multiprocessing
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qnn_ref  # noqa: E402

SM8650 = 57
U16 = 2.0 ** -11  # unit roundoff of fp16, the precision QNN HTP computes float graphs in


def save_model(path, nodes, inputs, y_shape, inits, opset=17):
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y_shape))
    graph = helper.make_graph(nodes, "g", inputs, [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def conv_chain(path, w, x_shape, tail=True):
    """Conv (named) -> Relu (unnamed) -> Sigmoid (named): the three ways QNN names ops; the
    Conv alone if not tail."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))
    nodes = [helper.make_node("Conv", ["x", "w"], ["c" if tail else "y"], name="conv",
                              pads=[1, 1, 1, 1])]
    if tail:
        nodes += [helper.make_node("Relu", ["c"], ["r"]),
                  helper.make_node("Sigmoid", ["r"], ["y"], name="sig")]
    y_shape = (x_shape[0], w.shape[0]) + tuple(x_shape[2:])
    return save_model(path, nodes, [x], y_shape, [numpy_helper.from_array(w, "w")])


def downsample_bn(path, subsample):
    """ResNet-50's layer4 downsample as edgegrad lowers it, in ONNX: x [2, 4, 4, 1024] NHWC ->
    Transpose -> Conv 1x1 stride 2 (subsample: Slice of every second row and column, then
    stride 1) by a runtime weight [2048, 1024, 1, 1] -> Transpose -> batch norm with batch
    statistics and the running statistics' update. Outputs y, new_mean, new_var; returns the
    feeds."""
    n, hw, ci, co = 2, 4, 1024, 2048
    vi = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    ins = [vi("x", [n, hw, hw, ci]), vi("w", [co, ci, 1, 1])] + [vi(v, [co]) for v in
                                                                 ("gamma", "beta", "rm", "rv")]
    inits = [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in
             (("eps", [1e-5]), ("keep", [0.9]), ("step", [0.1]), ("vstep", [0.1 / 7]))]
    inits += [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in
              (("axes", [0, 1, 2]), ("mshape", [1, 1, 1, co]), ("s0", [0, 0]),
               ("s1", [hw, hw]), ("sa", [2, 3]), ("ss", [2, 2]))]
    mk = helper.make_node
    nodes = [mk("Transpose", ["x"], ["xn"], perm=[0, 3, 1, 2])]
    if subsample:
        nodes += [mk("Slice", ["xn", "s0", "s1", "sa", "ss"], ["xs"]),
                  mk("Conv", ["xs", "w"], ["cn"], kernel_shape=[1, 1], strides=[1, 1])]
    else:
        nodes += [mk("Conv", ["xn", "w"], ["cn"], kernel_shape=[1, 1], strides=[2, 2])]
    mean = lambda i, o: mk("ReduceMean", [i], [o], axes=[0, 1, 2], keepdims=0)
    nodes += [mk("Transpose", ["cn"], ["c"], perm=[0, 2, 3, 1]), mean("c", "mean"),
              mk("Sub", ["c", "mean"], ["x1"]), mean("x1", "resid"),
              mk("Sub", ["x1", "resid"], ["xc"]), mk("Mul", ["xc", "xc"], ["xc2"]),
              mean("xc2", "var"), mk("Add", ["var", "eps"], ["ve"]), mk("Sqrt", ["ve"], ["sd"]),
              mk("Reciprocal", ["sd"], ["rstd"]), mk("Mul", ["rstd", "gamma"], ["scale"]),
              mk("Mul", ["xc", "scale"], ["scaled"]), mk("Add", ["scaled", "beta"], ["y"]),
              mk("Mul", ["rm", "keep"], ["mk"]), mk("Mul", ["mean", "step"], ["ms"]),
              mk("Add", ["mk", "ms"], ["new_mean"]), mk("Reshape", ["mean", "mshape"], ["m4"]),
              mk("Sub", ["c", "m4"], ["cen"]), mk("Mul", ["cen", "cen"], ["cen2"]),
              mk("ReduceSum", ["cen2", "axes"], ["vsum"], keepdims=0),
              mk("Mul", ["rv", "keep"], ["vk"]), mk("Mul", ["vsum", "vstep"], ["vs"]),
              mk("Add", ["vk", "vs"], ["new_var"])]
    outs = [vi("y", [n, hw // 2, hw // 2, co]), vi("new_mean", [co]), vi("new_var", [co])]
    model = helper.make_model(helper.make_graph(nodes, "g", ins, outs, inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    rng = np.random.default_rng(1)
    feeds = {v.name: rng.standard_normal([d.dim_value for d in v.type.tensor_type.shape.dim])
             .astype(np.float32) for v in ins}
    feeds["rv"] = np.abs(feeds["rv"]) + 0.5
    return feeds


_KEPT = []


def keep_session(path):
    """In a pool worker: a CPU session with its own temporary directory, kept alive; returns
    the directory."""
    _KEPT.append(qnn_ref.cpu_session(path))
    return _KEPT[-1].workdir


def child_run(path, feeds_path, prepare, out_path):
    """In a child process (`--child`): runs the graph on QNN HTP for SM8650 and saves its
    outputs; a crash of QNN's emulator ends the process with a signal. QNN's files go to a
    folder beside out_path, inside the parent's temporary directory: a crashed child runs no
    clean-up of its own."""
    feeds = dict(np.load(feeds_path))
    session = qnn_ref.qnn_session(path, SM8650, prepare=prepare, profile=False,
                                  workdir=out_path + ".qnn")
    got = qnn_ref.run(session, feeds)
    np.savez(out_path, **got)


def main():
    passed = failed = 0

    def expect(what, ok, detail=""):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print(f"FAIL {what}: {detail}")

    rng = np.random.default_rng(0)
    tmp_dir = tempfile.TemporaryDirectory(prefix="qnn-ref-test-")
    tmp = tmp_dir.name
    w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
    x = rng.standard_normal((1, 4, 10, 10)).astype(np.float32)
    chain = conv_chain(os.path.join(tmp, "chain.onnx"), w, x.shape)

    # Accepted: QNN's result against the CPU's. fp16 bound on the conv output z: inputs and
    # weights rounded to fp16 (2u per product) and a K-term sum (K u, the worst case even if
    # HTP accumulated in fp16); relu passes it on, sigmoid scales it by at most 1/4, and the
    # relu and sigmoid outputs are rounded once more each (u each; sigmoid's output <= 1).
    qnn = qnn_ref.qnn_session(chain, SM8650, workdir=os.path.join(tmp, "qnn"))
    y_qnn = qnn_ref.run(qnn, {"x": x})["y"].astype(np.float64)
    y_cpu = qnn_ref.run(qnn_ref.cpu_session(chain), {"x": x})["y"]
    abs_model = conv_chain(os.path.join(tmp, "abs.onnx"), np.abs(w), x.shape, tail=False)
    abs_sum = qnn_ref.run(qnn_ref.cpu_session(abs_model), {"x": np.abs(x)})["y"]  # sum |w||x|
    k = w.shape[1] * w.shape[2] * w.shape[3]
    bound = (k + 3) * U16 * abs_sum / 4 + 2 * U16
    err = np.abs(y_qnn - y_cpu)
    print(f"QNN HTP vs CPU: max error {err.max():.3g}, worst error/bound {np.max(err / bound):.3g}")
    expect("QNN HTP result within the fp16 bound of the CPU result",
           y_qnn.shape == y_cpu.shape and bool(np.all(err <= bound)),
           f"max error {err.max():.3g}, worst error/bound {np.max(err / bound):.3g}")
    expect("QNN HTP computes at fp16 here, not fp32 (the bound is not vacuous)",
           err.max() > 1e-6, f"max error {err.max():.3g}")
    # The bound can fail: the same conv with its kernel flipped (convolution for
    # cross-correlation, a classic layout slip) is far outside it.
    flipped = conv_chain(os.path.join(tmp, "flip.onnx"), w[:, :, ::-1, ::-1].copy(), x.shape)
    y_flip = qnn_ref.run(qnn_ref.cpu_session(flipped), {"x": x})["y"]
    expect("a flipped kernel falls outside the bound", bool(np.any(np.abs(y_qnn - y_flip) > bound)))
    y_again = qnn_ref.run(qnn, {"x": x})["y"]
    expect("QNN HTP outputs are deterministic", np.array_equal(y_qnn, y_again))

    graphs = qnn_ref.qnn_graphs(qnn)
    types = sorted(t for g in graphs for t in g.values())
    expect("the accepted graph ran as QNN ops (JSON graph dump)",
           len(graphs) == 1 and "Conv2d" in types and "Sigmoid" in types
           and any(t in ("Relu", "ElementWiseNeuron") for t in types), f"{graphs}")

    # Cycles: one entry per QNN op of the dumped graph, a positive total covering them.
    per_op, total = qnn_ref.cycles(qnn)
    expect("one cycle count per QNN op", graphs and set(per_op) == set(graphs[0]),
           f"profile {sorted(per_op)} vs graph {sorted(graphs[0]) if graphs else None}")
    expect("positive total covering the ops", total > 0 and total >= sum(per_op.values()),
           f"total {total}, ops {per_op}")
    expect("every profiled run parsed", len(qnn_ref.cycles_runs(qnn)) == 2,
           f"{len(qnn_ref.cycles_runs(qnn))} runs")

    # QNN names -> ONNX names: each ONNX node is the source of a QNN op; the rest are the
    # EP's layout Transposes.
    origin = {name: qnn_ref.onnx_node(qnn, name) for name in per_op}
    expect("every ONNX node found among the QNN ops",
           sorted(set(origin.values()) - {None}) == sorted(["conv", "Relu1", "sig"]),
           f"{origin}")
    inserted = {n: graphs[0][n] for n, src in origin.items() if src is None}
    expect("only layout Transposes are unmapped", set(inserted.values()) <= {"Transpose"},
           f"{inserted}")
    expect("workdir holds the session's files",
           os.path.isfile(os.path.join(tmp, "qnn", "profile.csv")))

    try:
        qnn_ref.qnn_session(chain, 0)
        expect("soc_model 0 rejected", False, "qnn_session returned a session")
    except ValueError as e:
        expect("soc_model 0 rejected", "positive integer" in str(e), str(e))

    # Refused: Det has no QNN HTP op. The harness raises; ONNX Runtime with its default CPU
    # fallback would have built a session that runs Det on the CPU.
    xd = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])
    det = save_model(os.path.join(tmp, "det.onnx"), [helper.make_node("Det", ["x"], ["y"])],
                     [xd], [2], [])
    try:
        qnn_ref.qnn_session(det, SM8650)
        expect("Det refused", False, "qnn_session returned a session")
    except qnn_ref.QnnRefusal as e:
        expect("Det refused with ONNX Runtime's message",
               "fallback to CPU EP has been explicitly disabled" in e.ort_message
               and det in str(e), str(e))
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.add_provider_for_devices([qnn_ref._qnn_device()], {"backend_type": "htp"})
    quiet = ort.InferenceSession(det, so)
    xv = rng.standard_normal((2, 3, 3)).astype(np.float32)
    expect("with CPU fallback ONNX Runtime quietly runs the refused graph",
           np.allclose(quiet.run(None, {"x": xv})[0], np.linalg.det(xv), rtol=1e-4, atol=1e-5))

    # an int64 output (edgegrad's widened int32, a final Cast): QNN HTP computes the int32
    # and run() widens it as edgegrad's runtime does; the Cast itself would fail every run
    xi = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])
    yi = helper.make_tensor_value_info("i", TensorProto.INT64, [2, 5, 3, 4])
    y1 = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4, 5])
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu"),
         helper.make_node("GreaterOrEqual", ["x", "zero"], ["ge"], name="ge"),
         helper.make_node("Where", ["ge", "one", "zero_i"], ["w"], name="where"),
         helper.make_node("Transpose", ["w"], ["i32"], name="nchw", perm=[0, 3, 1, 2]),
         helper.make_node("Cast", ["i32"], ["i"], name="widen", to=TensorProto.INT64)],
        "g", [xi], [y1, yi],
        [numpy_helper.from_array(np.zeros(1, np.float32), "zero"),
         numpy_helper.from_array(np.ones(1, np.int32), "one"),
         numpy_helper.from_array(np.zeros(1, np.int32), "zero_i")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    widen = os.path.join(tmp_dir.name, "widen.onnx")
    onnx.save(m, widen)
    xv = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    got = qnn_ref.run(qnn_ref.qnn_session(widen, SM8650), {"x": xv})
    expect("an int64 output is computed as int32 and widened",
           got["i"].dtype == np.int64 and
           np.array_equal(got["i"], (xv >= 0).astype(np.int64).transpose(0, 3, 1, 2))
           and np.allclose(got["y"], np.maximum(xv, 0), rtol=1e-3, atol=1e-3), str(got))

    # QNN HTP's fast preparation and a per-sample gate: x [N, H, W, C] * g [N, 1, 1, C] (and /)
    # gives every sample sample 0's gate; the forms edgegrad emits instead (lower.c,
    # per_sample_gate: the gate first for Multiply, rank-3 views for Divide) are right in both
    # preparations. If the first check starts failing, QNN has fixed the fault.
    xg = rng.uniform(0.5, 2, (2, 4, 3, 16)).astype(np.float32)
    gg = rng.uniform(0.5, 1, (2, 1, 1, 16)).astype(np.float32)
    vx = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 3, 16])
    vg = helper.make_tensor_value_info("g", TensorProto.FLOAT, [2, 1, 1, 16])
    shapes = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
              (("rows", [2, 12, 16]), ("gate", [2, 1, 16]), ("back", [2, 4, 3, 16]))]
    forms = {
        "x * g": ([helper.make_node("Mul", ["x", "g"], ["y"])], xg * gg),
        "x / g": ([helper.make_node("Div", ["x", "g"], ["y"])], xg / gg),
        "g * x": ([helper.make_node("Mul", ["g", "x"], ["y"])], xg * gg),
        "x / g on rank-3 views": ([helper.make_node("Reshape", ["x", "rows"], ["x3"]),
                                   helper.make_node("Reshape", ["g", "gate"], ["g3"]),
                                   helper.make_node("Div", ["x3", "g3"], ["y3"]),
                                   helper.make_node("Reshape", ["y3", "back"], ["y"])], xg / gg)}
    for form, (nodes, want) in forms.items():
        path = save_model(os.path.join(tmp, "gate.onnx"), nodes, [vx, vg], xg.shape, shapes)
        for prepare in qnn_ref.PREPARE_MODES:
            got = qnn_ref.run(qnn_ref.qnn_session(path, SM8650, prepare=prepare, profile=False),
                              {"x": xg, "g": gg})["y"]
            e = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
            wrong = form in ("x * g", "x / g") and prepare == "fast"
            expect(f"{form}, {prepare} preparation: {'sample 0s gate' if wrong else 'right'}",
                   e > 0.1 if wrong else e < 4 * U16, f"relative error {e:.3g}")
            if wrong:  # and the wrong values are sample 0's gate applied to sample 1
                alt = xg * gg[:1] if "*" in form else xg / gg[:1]
                expect(f"{form}, fast preparation: sample 1 took sample 0's gate",
                       float(np.max(np.abs(got - alt)) / np.max(np.abs(alt))) < 4 * U16)

    # QNN HTP's fast preparation and a pooled pair: x [N, 1, 1, C] * sigmoid(clamp(x)) (a
    # squeeze-excitation block's SiLU, clamped as eg_htp_transcendental_input reads Sigmoid's
    # input) is wrong for every sample but the first; on rank-2 views [N, C] (lower.c,
    # pooled_pair) it is right in both preparations.
    xp = (rng.standard_normal((2, 1, 1, 16)) * 2).astype(np.float32)
    vp = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1, 1, 16])
    consts = [numpy_helper.from_array(np.array(-65504, np.float32), "lo"),
              numpy_helper.from_array(np.array(65504, np.float32), "hi"),
              numpy_helper.from_array(np.array([2, 16], np.int64), "rows"),
              numpy_helper.from_array(np.array([2, 1, 1, 16], np.int64), "back")]
    gate = [helper.make_node("Clip", ["x", "lo", "hi"], ["xc"]),
            helper.make_node("Sigmoid", ["xc"], ["s"])]
    want = xp / (1 + np.exp(-xp.astype(np.float64)))
    forms = {"x * sigmoid(clamp(x))": gate + [helper.make_node("Mul", ["x", "s"], ["y"])],
             "the same on rank-2 views": gate + [
                 helper.make_node("Reshape", ["x", "rows"], ["x2"]),
                 helper.make_node("Reshape", ["s", "rows"], ["s2"]),
                 helper.make_node("Mul", ["x2", "s2"], ["y2"]),
                 helper.make_node("Reshape", ["y2", "back"], ["y"])]}
    for form, nodes in forms.items():
        path = save_model(os.path.join(tmp, "pooled.onnx"), nodes, [vp], xp.shape, consts)
        for prepare in qnn_ref.PREPARE_MODES:
            got = qnn_ref.run(qnn_ref.qnn_session(path, SM8650, prepare=prepare, profile=False),
                              {"x": xp})["y"]
            e = [float(np.max(np.abs(got[b] - want[b])) / np.max(np.abs(want))) for b in (0, 1)]
            wrong = form.startswith("x *") and prepare == "fast"
            expect(f"{form}, {prepare} preparation: {'sample 1 wrong' if wrong else 'right'}",
                   (e[0] < 4 * U16 and e[1] > 0.1) if wrong else max(e) < 4 * U16,
                   f"relative error per sample {e[0]:.3g}, {e[1]:.3g}")

    # QNN HTP's fast preparation and ResNet-50's layer4 downsample with its batch norm: running
    # it crashes the emulator (SIGSEGV, a read past a buffer); edgegrad's form (conv.c,
    # pointwise_subsample) runs in both preparations; each result that comes back agrees with
    # ONNX Runtime's CPU within 16 fp16 roundings (measured: 2)
    import subprocess
    for subsample in (False, True):
        form = "Slice + stride-1 Conv" if subsample else "strided Conv"
        path = os.path.join(tmp, f"downsample_{int(subsample)}.onnx")
        feeds = downsample_bn(path, subsample)
        np.savez(path + ".npz", **feeds)
        want = qnn_ref.run(qnn_ref.cpu_session(path), feeds)
        for prepare in qnn_ref.PREPARE_MODES:
            out = os.path.join(tmp, f"downsample_{int(subsample)}_{prepare}.npz")
            rc = subprocess.call([sys.executable, os.path.abspath(__file__), "--child", path,
                                  path + ".npz", prepare, out], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            crash = not subsample and prepare == "fast"
            expect(f"{form}, {prepare} preparation: {'crashes' if crash else 'runs'}",
                   rc < 0 if crash else rc == 0, f"exit {rc}")
            if rc == 0:
                got = np.load(out)
                e = max(float(np.max(np.abs(got[k] - want[k])) / np.max(np.abs(want[k])))
                        for k in want)
                expect(f"{form}, {prepare} preparation: agrees with the CPU", e < 16 * U16,
                       f"relative error {e:.3g}")

    # htp_check's flip rule: y = Where(p - q <= 0, 0, g) with p and q a few fp16 roundings
    # apart: QNN HTP (fp16) decides some masks the other way than the fp32 function, so y
    # differs by whole g values there; with QNN's near-tie decisions imposed on the fp32
    # function it agrees; with p and q far apart no decision differs and there is nothing to
    # impose.
    import htp_check
    vs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4096]) for n in "pqg"]
    flip_nodes = [helper.make_node("Sub", ["p", "q"], ["d"]),
                  helper.make_node("LessOrEqual", ["d", "zero"], ["m"]),
                  helper.make_node("Where", ["m", "zero", "g"], ["y"])]
    flip = save_model(os.path.join(tmp, "flip.onnx"), flip_nodes, vs, (1, 4096),
                      [numpy_helper.from_array(np.zeros(1, np.float32), "zero")])
    for near in (True, False):
        pv = (1 + rng.uniform(-1, 1, (1, 4096)) * 1e-3).astype(np.float32)
        qv = (1 + rng.uniform(-1, 1, (1, 4096)) * 1e-3).astype(np.float32)
        if not near:
            qv = qv + 0.5
        feeds = {"p": pv, "q": qv, "g": (1 + rng.uniform(0, 1, (1, 4096))).astype(np.float32)}
        got = qnn_ref.run(qnn_ref.qnn_session(flip, SM8650, profile=False), feeds)["y"]
        plain = qnn_ref.run(qnn_ref.cpu_session(flip), feeds)["y"]
        flips = htp_check.imposed_decisions(flip, SM8650, "default", feeds, feeds,
                                            htp_check.magnitude(*feeds.values()))
        if near:
            expect("near ties: QNN HTP's masks differ from the fp32 function's",
                   float(np.max(np.abs(got - plain))) >= 1, "no mask differed")
            expect("near ties: with QNN's decisions imposed the fp32 function agrees",
                   flips is not None and float(np.max(np.abs(got - flips["ref16"]["y"]))) <
                   4 * U16 * 2, str(flips and flips["what"]))
        else:
            expect("far from ties: no decision to impose", flips is None, str(flips))
    # the rule's test of one comparison: a decision 0.5 from its tie with QNN's operand error
    # 1e-3 is a fault, not a flip; 5e-4 from it, a flip; an operand error of 0.1 (of a
    # partition magnitude 2) excuses nothing
    a0, zero = np.array([0.5, -5e-4, 1.0]), np.zeros(3)
    differ0, differ1 = np.array([True, False, False]), np.array([False, True, False])
    for what, args, want in (
            ("a decision far from its tie is not excused", (a0 + 1e-3, differ0, 2.0), False),
            ("a decision at a near tie is excused", (a0 + 1e-3, differ1, 2.0), True),
            ("a large operand error excuses nothing", (a0 + 0.1, differ1, 2.0), False)):
        qa, differ, mag = args
        expect(f"flip rule: {what}",
               htp_check.near_ties(a0, zero, qa, zero, differ, mag) == want)

    del qnn
    before = set(os.listdir(tempfile.gettempdir()))
    temp_session = qnn_ref.qnn_session(chain, SM8650)
    temp_dir = temp_session.workdir
    made = os.path.isdir(temp_dir) and os.path.basename(temp_dir) not in before
    del temp_session
    expect("a session's own temporary directory goes with it",
           made and not os.path.exists(temp_dir), temp_dir)
    # ... and with the process that made it: a forked pool worker (htp_check's) ends in
    # os._exit, skipping atexit, with a session still alive
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        kept = pool.submit(keep_session, chain).result()
    expect("a session alive when its pool worker ends leaves no temporary directory",
           not os.path.exists(kept), kept)
    tmp_dir.cleanup()
    print(f"qnn_ref self-test: {passed} passed, {failed} failed")
    return 0 if passed and not failed else 1


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        child_run(*sys.argv[2:])
        sys.exit(0)
    sys.exit(main())
