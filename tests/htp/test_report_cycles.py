"""Test of bench/htp_report_cycles.py, QNN HTP's emulated cycles written into a compile report.

On tests/data/tiny_step.json compiled for SM8650 with its loss kept on the CPU (--skip-op: four
NPU partitions, where the NPU would otherwise run the whole step as one):
- the tool writes an `htp_cycles` object into every partition of the report (positive total,
  --runs runs, its by_type split within the total, transpose_share from it) and a top-level one
  (total = the partitions' totals summed, SM8650's soc_model as `edgegrad targets` lists it,
  the QNN SDK onnxruntime-qnn ships, the note), and changes nothing else in the report;
- a report of another program (another graph, the same graph for another SoC) is refused with
  one line and exit 2, the file left byte for byte;
- fed from an `edgegrad run --dump-partitions` dump (--inputs) it measures every partition too;
  a dump array of the wrong shape is refused (exit 2, report untouched), so the dump is read;
- random inputs take each input's ONNX dtype: floats, int64 in a small range, booleans;
- without onnxruntime-qnn importable: one line, exit 2, report untouched.

    .venv/bin/python tests/htp/test_report_cycles.py --edgegrad build/edgegrad [--workdir DIR]

Prints one line per failed check and last `report_cycles: N passed, M failed`; exit 0 only if
every check passed.
"""
import argparse
import copy
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
TOOL = os.path.join(ROOT, "bench", "htp_report_cycles.py")
DATA = os.path.join(ROOT, "tests", "data")
RUNS = 3
sys.path.insert(0, HERE)


def load_tool():
    spec = importlib.util.spec_from_file_location("htp_report_cycles", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def without_cycles(report):
    """The report with every htp_cycles field taken out."""
    r = copy.deepcopy(report)
    r.pop("htp_cycles", None)
    for p in r.get("partitions", []):
        p.pop("htp_cycles", None)
    return r


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edgegrad", required=True)
    ap.add_argument("--workdir", help="files (default: a temporary folder, removed)")
    args = ap.parse_args(argv)
    eg = os.path.abspath(args.edgegrad)
    tmp_obj = None
    if args.workdir:
        work = os.path.abspath(args.workdir)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    else:
        tmp_obj = tempfile.TemporaryDirectory(prefix="report-cycles-")
        work = tmp_obj.name
    passed = failed = 0

    def expect(what, ok, detail=""):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print(f"FAIL {what}: {detail}")
        return ok

    def path(name):
        return os.path.join(work, name)

    split = ["--skip-op", "aten.nll_loss_forward", "--skip-op", "aten.nll_loss_backward",
             "--skip-op", "aten._log_softmax_backward_data"]

    def compile_(graph, soc, stem):
        subprocess.run([eg, "compile", os.path.join(DATA, graph + ".json"), "--soc", soc,
                        "--report", path(stem + ".json"), "-o", path(stem + ".egp"), "-q",
                        *split], check=True)
        with open(path(stem + ".json"), "rb") as f:
            return f.read()

    def tool(program, report, *extra, env=None):
        return subprocess.run([sys.executable, TOOL, "--edgegrad", eg, path(program),
                               path(report), "--runs", str(RUNS), *extra],
                              capture_output=True, text=True, env=env)

    # The program under test and its report, and reports of other programs.
    original = compile_("tiny_step", "SM8650", "tiny")
    compile_("npu_conv_step", "SM8650", "other_graph")
    compile_("tiny_step", "SM8550", "other_soc")
    info = json.loads(subprocess.run([eg, "inspect", path("tiny.egp"), "--json"],
                                     capture_output=True, text=True, check=True).stdout)
    import htp_check
    soc_model = htp_check.soc_models(eg)["SM8650"]

    # 1. Random inputs: every partition measured, the total their sum, nothing else changed.
    proc = tool("tiny.egp", "tiny.json")
    if expect("tool runs", proc.returncode == 0,
              f"exit {proc.returncode}: {proc.stderr.strip()[-400:]}"):
        with open(path("tiny.json")) as f:
            got = json.load(f)
        parts = got["partitions"]
        cyc = [p.get("htp_cycles") for p in parts]
        expect("a partition per program partition", len(parts) == len(info["partitions"]) >= 2,
               f"{len(parts)} report partitions, {len(info['partitions'])} in the program")
        for p, c in zip(parts, cyc):
            name = f"partition_{p['id']}"
            if not expect(f"{name} has htp_cycles", isinstance(c, dict), repr(c)):
                continue
            expect(f"{name} positive cycles", isinstance(c["total"], int) and c["total"] > 0,
                   repr(c["total"]))
            expect(f"{name} runs", c["runs"] == RUNS, f"{c['runs']} != {RUNS}")
            split = sum(c["by_type"].values())
            expect(f"{name} by_type within the total", 0 < split <= c["total"],
                   f"by_type sums to {split}, total {c['total']}")
            share = c["by_type"].get("Transpose", 0) / c["total"]
            expect(f"{name} transpose_share", abs(c["transpose_share"] - share) < 1e-12,
                   f"{c['transpose_share']} != {share}")
            expect(f"{name} qnn_ops", isinstance(c.get("qnn_ops"), int) and c["qnn_ops"] > 0,
                   repr(c.get("qnn_ops")))
        top = got.get("htp_cycles") or {}
        totals = [c["total"] for c in cyc if isinstance(c, dict)]
        expect("top-level total is the sum", top.get("total") == sum(totals) > 0,
               f"{top.get('total')} vs sum {sum(totals)} of {totals}")
        expect("soc_model", top.get("soc_model") == soc_model,
               f"{top.get('soc_model')} != {soc_model} (edgegrad targets, SM8650)")
        expect("prepare", top.get("prepare") == "default", repr(top.get("prepare")))
        from onnxruntime_qnn import build_and_package_info
        expect("qnn_sdk", top.get("qnn_sdk") == build_and_package_info.qnn_version,
               f"{top.get('qnn_sdk')!r} != {build_and_package_info.qnn_version!r}")
        expect("note", "bench/htp_cycles.md" in top.get("note", "") and
               "\n" not in top.get("note", ""), repr(top.get("note")))
        expect("report otherwise unchanged", without_cycles(got) == json.loads(original),
               "keys other than htp_cycles differ from edgegrad compile's report")
        expect("table printed", "partition_0" in proc.stdout and "total" in proc.stdout,
               proc.stdout[-400:])

    # 2. A report of another program: exit 2, one line, the file byte for byte.
    for other in ("other_graph", "other_soc"):
        with open(path(other + ".json"), "rb") as f:
            before = f.read()
        proc = tool("tiny.egp", other + ".json")
        with open(path(other + ".json"), "rb") as f:
            after = f.read()
        expect(f"{other} report refused", proc.returncode == 2,
               f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
        expect(f"{other} one-line error", len(proc.stderr.strip().splitlines()) == 1 and
               "tiny.egp" in proc.stderr, repr(proc.stderr[-300:]))
        expect(f"{other} report untouched", before == after, "the file changed")

    # 3. Inputs from a dump of the program.
    inputs = sorted(f[:-4] for f in os.listdir(os.path.join(DATA, "tiny_step_inputs")))
    subprocess.run([eg, "run", path("tiny.egp"), "-q", "--dump-partitions", path("dump"),
                    "--output-dir", path("out"),
                    *[a for n in inputs for a in
                      ("--input", f"{n}={os.path.join(DATA, 'tiny_step_inputs', n + '.npy')}")]],
                   check=True)
    with open(path("dumped.json"), "wb") as f:
        f.write(original)
    proc = tool("tiny.egp", "dumped.json", "--inputs", path("dump"))
    if expect("tool runs on a dump", proc.returncode == 0,
              f"exit {proc.returncode}: {proc.stderr.strip()[-400:]}"):
        with open(path("dumped.json")) as f:
            got = json.load(f)
        totals = [(p.get("htp_cycles") or {}).get("total", 0) for p in got["partitions"]]
        expect("dump: every partition positive", all(t > 0 for t in totals), repr(totals))
        top = got.get("htp_cycles") or {}
        expect("dump: total is the sum", top.get("total") == sum(totals),
               f"{top.get('total')} vs {sum(totals)}")
    # a dump array of the wrong shape is refused: the tool reads the dump
    victim = path("dump/partition_1/" + sorted(os.listdir(path("dump/partition_1")))[0])
    np.save(victim, np.zeros((1, 2, 3), np.float32))
    with open(path("dumped.json"), "wb") as f:
        f.write(original)
    proc = tool("tiny.egp", "dumped.json", "--inputs", path("dump"))
    with open(path("dumped.json"), "rb") as f:
        after = f.read()
    expect("bad dump array refused", proc.returncode == 2 and
           os.path.basename(victim) in proc.stderr,
           f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    expect("bad dump: report untouched", after == original, "the file changed")

    # 4. A partition QNN HTP refuses (partition_0 built from a graph holding Det, which QNN HTP
    # lacks): exit 1, one line naming it and QNN's message, the report untouched.
    from onnx import TensorProto, helper
    det = helper.make_model(helper.make_graph(
        [helper.make_node("Det", ["x"], ["y"])], "det",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]),
        opset_imports=[helper.make_opsetid("", 17)])
    det.ir_version = 8
    import onnx
    onnx.save(det, path("det.onnx"))
    # The tool runs in a process of its own (its stderr whole, ONNX Runtime's native log
    # included), with qnn_ref.qnn_session swapped for one that builds det.onnx instead.
    refusing = f"""
import os, runpy, sys
sys.path.insert(0, {HERE!r})
import qnn_ref
real = qnn_ref.qnn_session
def refusing(onnx_path, *a, **kw):
    if os.path.basename(onnx_path) == "partition_0.onnx":
        onnx_path = {path("det.onnx")!r}
    return real(onnx_path, *a, **kw)
qnn_ref.qnn_session = refusing
sys.argv = [{TOOL!r}, "--edgegrad", {eg!r}, {path("tiny.egp")!r}, {path("refused.json")!r},
            "--runs", "1"]
runpy.run_path({TOOL!r}, run_name="__main__")
"""
    with open(path("refused.json"), "wb") as f:
        f.write(original)
    proc = subprocess.run([sys.executable, "-c", refusing], capture_output=True, text=True)
    status, msg = proc.returncode, proc.stderr.strip()
    with open(path("refused.json"), "rb") as f:
        after = f.read()
    expect("refusal: exit 1, one line naming the partition and QNN's message",
           status == 1 and len(msg.splitlines()) == 1 and "partition_0" in msg and
           "fallback to CPU EP has been explicitly disabled" in msg, f"exit {status}: {msg}")
    expect("refusal: report untouched", after == original, "the file changed")

    # 5. Random inputs follow each input's dtype.
    graph = helper.make_graph(
        [helper.make_node("Identity", ["f"], ["y"])], "g",
        [helper.make_tensor_value_info("f", TensorProto.FLOAT, [64]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [64]),
         helper.make_tensor_value_info("b", TensorProto.BOOL, [64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64])])
    feeds = load_tool().random_feeds(helper.make_model(graph), np.random.default_rng(0))
    expect("random float input", feeds["f"].dtype == np.float32 and feeds["f"].std() > 0.5,
           f"{feeds['f'].dtype}, std {feeds['f'].std()}")
    expect("random int64 input", feeds["i"].dtype == np.int64 and feeds["i"].min() >= 0 and
           feeds["i"].max() < 16 and len(set(feeds["i"].tolist())) > 1,
           f"{feeds['i'].dtype} in [{feeds['i'].min()}, {feeds['i'].max()}]")
    expect("random bool input", feeds["b"].dtype == np.bool_ and 0 < feeds["b"].sum() < 64,
           f"{feeds['b'].dtype}, {feeds['b'].sum()} true")

    # 6. Without onnxruntime-qnn: a module of that name that fails to import stands in for it.
    fake = path("no_qnn")
    os.makedirs(fake)
    with open(os.path.join(fake, "onnxruntime_qnn.py"), "w") as f:
        f.write("raise ImportError('onnxruntime_qnn absent', name='onnxruntime_qnn')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([fake, os.environ.get("PYTHONPATH", "")]))
    with open(path("noqnn.json"), "wb") as f:
        f.write(original)
    proc = tool("tiny.egp", "noqnn.json", env=env)
    with open(path("noqnn.json"), "rb") as f:
        after = f.read()
    expect("no onnxruntime-qnn: exit 2, one line", proc.returncode == 2 and
           len(proc.stderr.strip().splitlines()) == 1 and "onnxruntime" in proc.stderr,
           f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    expect("no onnxruntime-qnn: report untouched", after == original, "the file changed")

    print(f"report_cycles: {passed} passed, {failed} failed")
    if tmp_obj:
        tmp_obj.cleanup()
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
