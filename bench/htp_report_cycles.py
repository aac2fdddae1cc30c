"""Emulated QNN HTP cycles of a compiled program's NPU partitions, written into its compile report.

    .venv/bin/python bench/htp_report_cycles.py --edgegrad build/edgegrad PROGRAM.egp REPORT.json \\
        [--runs 5] [--prepare default|fast] [--inputs DIR]

PROGRAM.egp is a program `edgegrad compile MODEL.json --soc SOC -o PROGRAM.egp --report
REPORT.json` wrote, REPORT.json the compile report of that same compilation (its partitions
must be the program's: the same SoC, precision, count, names and nodes, else nothing is
written). Each NPU partition is written as ONNX (`edgegrad export-onnx`) and run --runs times on
Qualcomm's HTP backend (onnxruntime-qnn, through tests/htp/qnn_ref.py) for the SoC's QNN
soc_model (`edgegrad targets`), ONNX Runtime's CPU fallback disabled and QNN's detailed
profiling on. Its inputs are random (a fixed seed: floats standard normal, integers in [0, 4),
booleans fair coins), or with --inputs DIR the arrays an `edgegrad run PROGRAM.egp ...
--dump-partitions DIR` wrote (DIR/<partition>/<input>.npy).

REPORT.json gets, atomically, an `htp_cycles` object in each entry of `partitions` (`total`: the
fewest cycles of a run, `runs`, `qnn_ops`: the ops QNN built, `by_type`: that run's cycles per
QNN op type, `transpose_share`: the Transpose ops' part of `total`) and a top-level one
(`total`: the partitions' totals summed, `soc_model`, `prepare`, `qnn_sdk`, `note`);
docs/report-format.md describes them. A table (partition, QNN ops, cycles, share in Transpose)
and the total are printed.

What the numbers are: the cycles QNN's x86 emulation of the HTP counts, which follow the
emulating host's time and load, not the NPU's (bench/htp_cycles.md); the minimum over runs is
the steadiest statistic. Needs onnxruntime, onnxruntime-qnn and onnx (scripts/install-deps.sh
test); edgegrad itself never does.

Exit status: 0 ok; 1 QNN HTP refused a partition or a run failed (REPORT.json untouched);
2 bad usage or input (a report of another program, a missing or mismatched dump array,
onnxruntime-qnn not installed; REPORT.json untouched). Errors are one line:
`<where>: <what> (<values>): <rule>`.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "htp"))

NOTE = ("emulated cycles: the time QNN's x86 emulation of the HTP took on the host that ran "
        "it (not NPU time; they move with host load), see bench/htp_cycles.md")
SEED = 0
INT_RANGE = (0, 4)  # random integers: valid indices or counts for any small dimension
FLOAT_KINDS = {"FLOAT": "float32", "FLOAT16": "float16", "DOUBLE": "float64"}
INT_KINDS = {"INT64": "int64", "INT32": "int32", "INT8": "int8", "UINT8": "uint8",
             "UINT32": "uint32"}


class Failure(Exception):
    """A one-line error and the exit status it ends the tool with."""

    def __init__(self, message, status):
        super().__init__(" ".join(str(message).split()))
        self.status = status


def edgegrad(exe, *argv):
    """stdout of `edgegrad argv...`; its last stderr line as a Failure (exit 2) if it fails."""
    try:
        proc = subprocess.run([exe, *argv], capture_output=True, text=True)
    except OSError as e:
        raise Failure(f"{exe}: cannot run ({e.strerror}): --edgegrad must name the edgegrad "
                      "binary", 2)
    if proc.returncode:
        lines = (proc.stderr.strip() or proc.stdout.strip() or "(no message)").splitlines()
        raise Failure(lines[-1], 2)
    return proc.stdout


def soc_model_of(exe, soc):
    """QNN's soc_model of `soc`, from the soc_model column of `edgegrad targets`."""
    lines = edgegrad(exe, "targets").splitlines()
    at = lines[0].find("soc_model") if lines else -1
    if at < 0:
        raise Failure(f"{exe} targets: no soc_model column in its table: needs an edgegrad that "
                      "lists QNN's soc_model", 2)
    for line in lines[1:]:
        fields = line.split()
        if fields and fields[0] == soc:
            m = re.match(r"\d+", line[at:])
            if m:
                return int(m.group(0))
    raise Failure(f"{exe} targets: no soc_model for SoC {soc}: the program's SoC must be one "
                  "edgegrad targets lists", 2)


def load_report(path):
    try:
        with open(path, "rb") as f:
            report = json.loads(f.read())
    except OSError as e:
        raise Failure(f"{path}: cannot read ({e.strerror}): REPORT.json must be a compile "
                      "report", 2)
    except ValueError as e:
        raise Failure(f"{path}: not JSON ({e}): REPORT.json must be a compile report", 2)
    if not isinstance(report, dict) or report.get("format") != "edgegrad.placement" or \
            not isinstance(report.get("partitions"), list):
        raise Failure(f"{path}: not a compile report (format "
                      f"{report.get('format') if isinstance(report, dict) else None!r}): "
                      "REPORT.json must be what edgegrad compile --report wrote", 2)
    return report


def check_match(report, report_path, info, program_path):
    """Fails (exit 2) unless the report's partitions are the program's: same SoC and precision,
    same count, and partition k is the program's partition_k with its node count, first and
    last node (inspect --json shows no more of a partition's node set)."""
    rule = f"REPORT.json must be the compile report of {os.path.basename(program_path)}"
    for key in ("soc", "precision"):
        if report.get(key) != info.get(key):
            raise Failure(f"{report_path}: {key} differs from the program's ({report.get(key)!r} "
                          f"vs {info.get(key)!r}): {rule}", 2)
    parts, progs = report["partitions"], info["partitions"]
    if len(parts) != len(progs):
        raise Failure(f"{report_path}: partition count differs from the program's ({len(parts)} "
                      f"vs {len(progs)}): {rule}", 2)
    for k, (r, p) in enumerate(zip(parts, progs)):
        nodes = r.get("nodes") if isinstance(r, dict) else None
        mine = (f"partition_{r.get('id')}" if isinstance(r, dict) else None,
                len(nodes) if isinstance(nodes, list) else None,
                nodes[0] if nodes else None, nodes[-1] if nodes else None)
        theirs = (p["name"], p["nodes"], p["first_node"], p["last_node"])
        if mine != theirs:
            raise Failure(f"{report_path}: partitions[{k}] differs from the program's "
                          f"{p['name']} ({mine[0]}, {mine[1]} nodes {mine[2]}..{mine[3]} vs "
                          f"{theirs[0]}, {theirs[1]} nodes {theirs[2]}..{theirs[3]}): {rule}", 2)


def random_feeds(model, rng):
    """{input name: array} of each graph input's dtype and shape: floats standard normal,
    integers in INT_RANGE (small enough to index any dimension edgegrad's NPU ops take, and
    to fit the int32 the NPU holds an int64 in), booleans fair coins."""
    import numpy as np
    import onnx
    feeds = {}
    for i in model.graph.input:
        kind = onnx.TensorProto.DataType.Name(i.type.tensor_type.elem_type)
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        if kind in FLOAT_KINDS:
            feeds[i.name] = rng.standard_normal(shape).astype(FLOAT_KINDS[kind])
        elif kind in INT_KINDS:
            feeds[i.name] = rng.integers(*INT_RANGE, size=shape).astype(INT_KINDS[kind])
        elif kind == "BOOL":
            feeds[i.name] = rng.random(shape) < 0.5
        else:
            raise Failure(f"input {i.name}: dtype {kind}: no random inputs of this type (give "
                          "--inputs DIR)", 2)
    return feeds


def dump_feeds(model, folder, part):
    """{input name: array} from DIR/<partition>/<input>.npy, each checked against the input's
    dtype and shape."""
    import numpy as np
    from onnx import helper
    feeds = {}
    for i in model.graph.input:
        path = os.path.join(folder, part, i.name + ".npy")
        try:
            a = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise Failure(f"{path}: cannot load ({type(e).__name__}: {e}): --inputs DIR must be "
                          "an edgegrad run --dump-partitions dump of this program", 2)
        want_dtype = helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type)
        want_shape = tuple(d.dim_value for d in i.type.tensor_type.shape.dim)
        if a.dtype != want_dtype or a.shape != want_shape:
            raise Failure(f"{path}: {a.dtype} {list(a.shape)} where {part} takes "
                          f"{np.dtype(want_dtype)} {list(want_shape)}: --inputs DIR must be a "
                          "dump of this program", 2)
        feeds[i.name] = a
    return feeds


class native_stderr_held:
    """Holds back what native code (ONNX Runtime's logger) writes to file descriptor 2 inside
    the block; release() passes it on. A refusal is reported in one line of our own, and ONNX
    Runtime logs the same message itself at its error severity, which qnn_ref keeps."""

    def __enter__(self):
        sys.stderr.flush()
        self.saved, self.file = os.dup(2), tempfile.TemporaryFile()
        os.dup2(self.file.fileno(), 2)
        self.keep = False
        return self

    def release(self):
        self.keep = True

    def __exit__(self, *exc):
        os.dup2(self.saved, 2)
        os.close(self.saved)
        if self.keep:
            self.file.seek(0)
            sys.stderr.buffer.write(self.file.read())
            sys.stderr.flush()
        self.file.close()
        return False


def measure(qnn_ref, onnx_path, part, soc_model, args, rng):
    """The partition's htp_cycles object: its cycles over args.runs runs on QNN HTP."""
    import onnx
    model = onnx.load(onnx_path, load_external_data=False)
    feeds = dump_feeds(model, args.inputs, part) if args.inputs else random_feeds(model, rng)
    try:
        with native_stderr_held() as held:
            session = qnn_ref.qnn_session(onnx_path, soc_model, prepare=args.prepare)
            held.release()
    except qnn_ref.QnnRefusal as e:
        raise Failure(f"{part}: QNN HTP (soc_model {soc_model}) refused it "
                      f"({e.ort_message}): every partition must run whole on QNN HTP", 1)
    try:
        for _ in range(args.runs):
            qnn_ref.run(session, feeds)
        runs = qnn_ref.cycles_runs(session)
    except Exception as e:  # ONNX Runtime's own error types
        raise Failure(f"{part}: QNN HTP run failed ({type(e).__name__}: {e}): every partition "
                      "must run on QNN HTP", 1)
    if len(runs) != args.runs:
        raise Failure(f"{part}: QNN profiled {len(runs)} of {args.runs} runs: every run must "
                      "be profiled", 1)
    total, by_type = qnn_ref.cheapest_run_by_type(session, runs)
    types = {}
    for graph in qnn_ref.qnn_graphs(session):
        types.update(graph)
    return {"total": total, "runs": len(runs), "qnn_ops": len(types),
            "by_type": dict(sorted(by_type.items())),
            "transpose_share": by_type.get("Transpose", 0) / total if total else 0.0}


def write_atomic(path, report):
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".htp-cycles-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def qnn_sdk_version():
    try:
        from onnxruntime_qnn import build_and_package_info as info
        return getattr(info, "qnn_version", None)
    except ImportError:
        return None


def run(args):
    try:
        import onnxruntime_qnn  # noqa: F401  (qnn_ref loads it only on first use)
        import qnn_ref
    except ImportError as e:
        raise Failure(f"python {sys.executable}: {e.name or e} is not installed (import "
                      f"failed: {e}): needs onnxruntime, onnxruntime-qnn and onnx "
                      "(scripts/install-deps.sh test)", 2)
    import numpy as np
    report = load_report(args.report)
    info = json.loads(edgegrad(args.edgegrad, "inspect", args.program, "--json"))
    check_match(report, args.report, info, args.program)
    soc_model = soc_model_of(args.edgegrad, info["soc"])
    rng = np.random.default_rng(SEED)
    tmp = tempfile.mkdtemp(prefix="htp-report-cycles-")
    try:
        onnx_dir = os.path.join(tmp, "onnx")
        if info["partitions"]:
            edgegrad(args.edgegrad, "export-onnx", args.program, onnx_dir)
        results = [measure(qnn_ref, os.path.join(onnx_dir, p["name"] + ".onnx"), p["name"],
                           soc_model, args, rng) for p in info["partitions"]]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for entry, cycles in zip(report["partitions"], results):
        entry["htp_cycles"] = cycles
    total = sum(c["total"] for c in results)
    report["htp_cycles"] = {"total": total, "soc_model": soc_model, "prepare": args.prepare,
                            "qnn_sdk": qnn_sdk_version(), "note": NOTE}
    write_atomic(args.report, report)
    print(f"{'partition':14s} {'QNN ops':>8s} {'cycles':>14s} {'in Transpose':>13s}")
    for p, c in zip(info["partitions"], results):
        print(f"{p['name']:14s} {c['qnn_ops']:8d} {c['total']:14d} "
              f"{100 * c['transpose_share']:12.1f}%")
    transposes = sum(c["by_type"].get("Transpose", 0) for c in results)
    print(f"{'total':14s} {sum(c['qnn_ops'] for c in results):8d} {total:14d} "
          f"{100 * transposes / total if total else 0.0:12.1f}%")
    print(f"{info['soc']} (soc_model {soc_model}), min of {args.runs} runs per partition; "
          "emulated cycles, not NPU time (bench/htp_cycles.md)")
    return 0


def main(argv):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("program", metavar="PROGRAM.egp", help="a compiled program (edgegrad "
                   "compile -o)")
    p.add_argument("report", metavar="REPORT.json", help="the compile report of the same "
                   "compilation (edgegrad compile --report); gets the htp_cycles fields")
    p.add_argument("--edgegrad", required=True, help="the edgegrad binary")
    p.add_argument("--runs", type=int, default=5, help="runs per partition; the fewest cycles "
                   "count (default 5: bench/htp_cycles.md)")
    p.add_argument("--prepare", choices=("default", "fast"), default="default",
                   help="QNN's graph compiler effort (fast: far quicker for large partitions)")
    p.add_argument("--inputs", metavar="DIR", help="feed each partition from an edgegrad run "
                   "--dump-partitions DIR dump (DIR/<partition>/<input>.npy) instead of random "
                   "inputs")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error(f"--runs {args.runs}: must be at least 1")
    try:
        return run(args)
    except Failure as e:
        print(f"htp_report_cycles: {e}", file=sys.stderr)
        return e.status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
