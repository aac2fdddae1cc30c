"""Qualcomm's own HTP stack as a second oracle for edgegrad's NPU partitions.

QNN's HTP backend runs here as x86 emulation: PyPI's onnxruntime-qnn 2.7.0 ships Qualcomm's
libQnnHtp.so (QNN SDK 2.51) behind ONNX Runtime's QNN execution provider. Every HTP check uses
this module to build sessions over ONNX files, run them and read QNN's per-op cycle counts.

    import qnn_ref
    ref = qnn_ref.qnn_session("part.onnx", soc_model=57)      # SM8650; raises QnnRefusal
    cpu = qnn_ref.cpu_session("part.onnx")                    # ONNX Runtime CPU, exact fp32
    y_htp, y_cpu = qnn_ref.run(ref, feeds), qnn_ref.run(cpu, feeds)
    per_op, total = qnn_ref.cycles(ref)                        # the last run's cycles

Contracts:
- QNN gets the ONNX graph's ops as they are: ONNX Runtime's Pad_Fusion (a Pad folded into the
  Conv after it) is disabled, so an explicit Pad stays a QNN Pad.
- A QNN session never runs anything on the CPU. ONNX Runtime's CPU fallback is disabled, so a
  graph QNN HTP cannot take whole fails at construction; that failure, and a session in which
  QNN built no graph at all, raise QnnRefusal carrying ONNX Runtime's message. A graph that
  ONNX Runtime's CPU cannot load either is no refusal: its own error is raised.
- soc_model is QNN's SoC number (SM8350 30, SM8450 36, SM8475 42, SM8550 43, SM8650 57,
  SM8635 68, SM8750 69, SM7675 70, SM8850 87). SM8350 computes float graphs in fp32, the
  others with fp16 support in fp16; SM8635 and SM7675 refuse every float graph (QNN's log:
  "The SocModel doesn't support FP16"). 0 is refused: it would mean "keep the SoC the
  process last set" (SM8350 in a fresh process).
- Each session owns a working directory (a fresh temporary one, removed with the session,
  unless `workdir` is given):
  the profiling CSV and the JSON dump of the graph QNN built go there, and the session is
  created and run with that directory as the current one, because QNN's optrace may write
  files (schematic.bin) into whatever directory is current.
- QNN node names. The QNN EP names each QNN op after the ONNX node it came from: the ONNX name
  itself; "<name>_token_<n>" where ONNX Runtime's layout pass rewrote the node (NCHW ops such
  as Conv become NHWC ones); "<op_type><index>" for an ONNX node without a name (index = its
  position in graph.node). Ops the EP inserts itself (the NCHW<->NHWC Transposes around
  layout-sensitive ops) are named "Transpose", "Transpose_token_<n>": onnx_node() maps those
  to None.
- int64 outputs. edgegrad's NPU holds int64 values as int32 and its runtime widens them on the
  CPU at a partition's outputs; the ONNX form ends such an output in a Cast(int32 -> int64).
  The QNN EP builds such a graph but fails its runs where the Cast follows an int32 Transpose
  (the NHWC -> NCHW one of an int64 value the NPU holds NHWC: "ORT Tensor data size does not
  match QNN tensor data size"), so a QNN session is built over a copy of the graph without
  those final Casts (outputs int32: what the HTP computes) and run() widens them to int64 on
  the host, as edgegrad's runtime does.
- Emulated cycles are not deterministic from run to run (bench/htp_cycles.md says what they
  track and which statistic to use); outputs are.
"""
import collections
import contextlib
import csv
import glob
import json
import multiprocessing.util
import os
import re
import shutil
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

QNN_EP = "QNNExecutionProvider"
_registered = False


class QnnRefusal(Exception):
    """QNN HTP did not take the whole graph (or built nothing); str() is ONNX Runtime's
    message, prefixed with the ONNX file and soc_model."""

    def __init__(self, onnx_path, soc_model, message):
        super().__init__(f"{onnx_path}: QNN HTP (soc_model {soc_model}) refused the graph: "
                         f"{message}")
        self.onnx_path, self.soc_model, self.ort_message = onnx_path, soc_model, message


class Session:
    """An ONNX Runtime session plus where its files go. kind is "qnn-htp" or "cpu"."""

    def __init__(self, ort_session, kind, workdir, onnx_path, soc_model=None,
                 profile_csv=None, graph_dir=None, temporary=False):
        self.ort, self.kind, self.workdir = ort_session, kind, workdir
        if temporary:
            # removed when the session goes, or at the latest when its process ends:
            # multiprocessing's finalizer, not weakref.finalize, whose exit hook (atexit) a
            # multiprocessing worker (htp_check's forked pool) never runs: it ends in os._exit
            multiprocessing.util.Finalize(self, shutil.rmtree, args=(workdir, True),
                                          exitpriority=0)
        self.onnx_path, self.soc_model = onnx_path, soc_model
        self.profile_csv, self.graph_dir = profile_csv, graph_dir
        nodes = onnx.load(onnx_path, load_external_data=False).graph.node
        self.onnx_nodes = [n.name or f"{n.op_type}{i}" for i, n in enumerate(nodes)]
        self.widened = {}  # session output name -> the int64 output name it stands for


def _int32_outputs(onnx_path, workdir):
    """(path, {int32 output: int64 output}): the graph with each int64 output that a final
    Cast(int32 -> int64) produces replaced by that Cast's int32 input (written into workdir),
    or (onnx_path, {}) when there is none."""
    model = onnx.load(onnx_path)
    g = model.graph
    types = {v.name: v.type.tensor_type.elem_type
             for v in [*g.input, *g.output, *g.value_info]}
    producer = {o: n for n in g.node for o in n.output}
    consumers = collections.Counter(i for n in g.node for i in n.input)
    widened = {}
    for out in g.output:
        n = producer.get(out.name)
        if (out.type.tensor_type.elem_type != onnx.TensorProto.INT64 or n is None or
                n.op_type != "Cast" or consumers[out.name] or
                types.get(n.input[0], onnx.TensorProto.INT32) != onnx.TensorProto.INT32):
            continue
        if any(a.name == "to" and a.i == onnx.TensorProto.INT64 for a in n.attribute):
            widened[n.input[0]] = out.name
    if not widened:
        return onnx_path, {}
    for out in g.output:
        src = next((k for k, v in widened.items() if v == out.name), None)
        if src is not None:
            g.node.remove(producer[out.name])
            out.name = src
            out.type.tensor_type.elem_type = onnx.TensorProto.INT32
    path = os.path.join(workdir, "int32_outputs.onnx")
    onnx.save(model, path)
    return path, widened


@contextlib.contextmanager
def _cwd(path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def _qnn_device():
    global _registered
    if not _registered:
        import onnxruntime_qnn
        ort.register_execution_provider_library(QNN_EP, onnxruntime_qnn.get_library_path())
        _registered = True
    devices = [d for d in ort.get_ep_devices() if d.ep_name == QNN_EP]
    if not devices:
        raise RuntimeError(f"onnxruntime {ort.__version__}: no {QNN_EP} device after loading "
                           "onnxruntime-qnn: reinstall it (scripts/install-deps.sh test)")
    return devices[0]


def _workdir(workdir, prefix):
    """(absolute directory, whether it is a temporary one of ours)."""
    if workdir is None:
        return tempfile.mkdtemp(prefix=prefix), True
    workdir = os.path.abspath(workdir)
    os.makedirs(workdir, exist_ok=True)
    return workdir, False


# QNN's graph finalization effort (the EP's htp_graph_finalization_optimization_mode): None
# leaves the EP's default
PREPARE_MODES = {"default": None, "fast": "1"}


def qnn_session(onnx_path, soc_model, profile=True, workdir=None, prepare="default"):
    """A session on QNN's HTP backend for SoC model `soc_model` (QNN's number, e.g. 57 for
    SM8650), with ONNX Runtime's CPU fallback disabled. profile=True records per-op cycles
    (read them with cycles()). The JSON dump of the QNN graph goes to <workdir>/qnn_graph.
    prepare: how hard QNN's graph compiler optimizes, "default" or "fast" (the EP's
    htp_graph_finalization_optimization_mode 1: a 500-op ResNet-18 backward partition at
    64x64 prepares in about a minute instead of over 50)."""
    onnx_path = os.path.abspath(onnx_path)
    if not os.path.isfile(onnx_path):
        raise FileNotFoundError(f"{onnx_path}: no such ONNX file")
    # 0 does not mean a SoC: the EP then leaves QNN's process-wide setting as it is (SM8350
    # in a fresh process, else the previous session's SoC).
    if isinstance(soc_model, bool) or int(soc_model) != soc_model or soc_model <= 0:
        raise ValueError(f"soc_model {soc_model!r}: not a QNN SoC model number (e.g. 57 for "
                         "SM8650): must be a positive integer")
    if prepare not in PREPARE_MODES:
        raise ValueError(f"prepare {prepare!r}: must be one of {', '.join(PREPARE_MODES)}")
    dev = _qnn_device()
    workdir, temporary = _workdir(workdir, "qnn-htp-")
    graph_dir = os.path.join(workdir, "qnn_graph")
    os.makedirs(graph_dir, exist_ok=True)
    csv_path = os.path.join(workdir, "profile.csv") if profile else None
    opts = {"backend_type": "htp", "soc_model": str(int(soc_model)),
            "dump_json_qnn_graph": "1", "json_qnn_graph_dir": graph_dir}
    if PREPARE_MODES[prepare]:
        opts["htp_graph_finalization_optimization_mode"] = PREPARE_MODES[prepare]
    if profile:
        opts.update(profiling_level="detailed", profiling_file_path=csv_path)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.add_provider_for_devices([dev], opts)
    try:
        qnn_path, widened = _int32_outputs(onnx_path, workdir)
        with _cwd(workdir):
            # ONNX Runtime's Pad_Fusion would fold a Pad into the Conv after it, giving QNN a
            # padded Conv2d: not the graph edgegrad builds (it pads explicitly exactly where
            # QNN HTP computes the padded Conv2d wrong, builders/conv.c)
            sess = ort.InferenceSession(qnn_path, so, disabled_optimizers=["Pad_Fusion"])
    except Exception as e:  # ONNX Runtime raises its own Fail/EPFail/... types
        if temporary:
            shutil.rmtree(workdir, True)
        # A refusal is a graph the CPU runs and QNN does not; a graph ONNX Runtime cannot load
        # at all (bad types, bad file) fails here with ONNX Runtime's own error instead.
        cpu_session(onnx_path)
        raise QnnRefusal(onnx_path, soc_model, str(e)) from e
    session = Session(sess, "qnn-htp", workdir, onnx_path, soc_model, csv_path, graph_dir,
                      temporary)
    session.widened = widened
    if not qnn_graphs(session):
        raise QnnRefusal(onnx_path, soc_model, "the QNN EP built no graph (nothing would run "
                         "on HTP)")
    return session


def cpu_session(onnx_path, workdir=None):
    """ONNX Runtime's CPU execution provider: the exact fp32 function of the ONNX graph."""
    onnx_path = os.path.abspath(onnx_path)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    workdir, temporary = _workdir(workdir, "qnn-cpu-")
    try:
        with _cwd(workdir):
            sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    except Exception:
        if temporary:
            shutil.rmtree(workdir, True)
        raise
    return Session(sess, "cpu", workdir, onnx_path, temporary=temporary)


def run(session, feeds):
    """Runs the session on feeds (name -> array); returns {output name: numpy array}."""
    names = [o.name for o in session.ort.get_outputs()]
    with _cwd(session.workdir):
        values = session.ort.run(names, {k: np.asarray(v) for k, v in feeds.items()})
    return {session.widened.get(n, n): v.astype(np.int64) if n in session.widened else v
            for n, v in zip(names, values)}


def qnn_graphs(session):
    """The graphs QNN built for the session, from the EP's JSON dump: a list of
    {qnn node name: QNN op type} (one dict per QNN graph)."""
    graphs = []
    for path in sorted(glob.glob(os.path.join(session.graph_dir or "", "*.json"))):
        if path.endswith("_tensor_log.json"):
            continue
        with open(path) as f:
            nodes = json.load(f)["graph"]["nodes"]
        graphs.append({name: node["type"] for name, node in nodes.items()})
    return graphs


_NODE_EVENT = re.compile(r"^(?P<name>.*):OpId_\d+ \(cycles\)$")
_IO_EVENT = re.compile(r"^(Input|Output) OpId_\d+ \(cycles\)$")
_UNNAMED_EVENT = re.compile(r"^OpId_\d+ \(cycles\)$")  # an op QNN made itself (no name)
_TOTAL_EVENT = "Accelerator (execute) time (cycles)"


def _profile_files(session):
    if session.profile_csv is None:
        raise ValueError(f"{session.onnx_path}: session made without profile=True: no cycles")
    if os.path.isfile(session.profile_csv):
        return [session.profile_csv]
    stem = os.path.splitext(session.profile_csv)[0]
    found = sorted(p for p in glob.glob(stem + "*.csv"))
    if not found:
        raise FileNotFoundError(f"{session.profile_csv}: QNN wrote no profiling CSV (run the "
                                "session first)")
    return found


def cycles_runs(session):
    """Every profiled run of the session, in order: a list of ({qnn node name: cycles},
    total). total is QNN's "Accelerator (execute) time (cycles)", which is the sum of the
    per-op counts plus the graph's Input/Output staging (not in the dict)."""
    runs, ops, total = [], {}, None
    for path in _profile_files(session):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                event, message = row["Event Identifier"], row["Message"]
                if message == "BACKEND" and event == _TOTAL_EVENT:
                    total = int(row["Time"])
                elif message == "NODE" and row["Unit of Measurement"] == "CYCLES":
                    m = _NODE_EVENT.match(event)
                    if m or _UNNAMED_EVENT.match(event):
                        name = m.group("name") if m else "(unnamed)"
                        ops[name] = ops.get(name, 0) + int(row["Time"])
                    elif not _IO_EVENT.match(event):
                        raise ValueError(f"{path}: unknown NODE event {event!r}")
                elif message == "EXECUTE":
                    if total is None:
                        raise ValueError(f"{path}: run without \"{_TOTAL_EVENT}\"")
                    runs.append((ops, total))
                    ops, total = {}, None
    return runs


def cycles(session):
    """The last run's ({qnn node name: cycles}, total); see cycles_runs()."""
    runs = cycles_runs(session)
    if not runs:
        raise ValueError(f"{session.profile_csv}: no profiled run yet")
    return runs[-1]


def cheapest_run_by_type(session, runs=None):
    """The profiled run with the fewest cycles (cycles_runs(), or `runs` of it), as (total,
    {QNN op type: cycles}): each QNN node's cycles counted under its op type (qnn_graphs());
    None when no run was profiled. The minimum, as bench/htp_cycles.md advises: the emulated
    cycles move with the host's load."""
    runs = cycles_runs(session) if runs is None else runs
    if not runs:
        return None
    ops, total = min(runs, key=lambda r: r[1])
    types = {}
    for graph in qnn_graphs(session):
        types.update(graph)
    by_type = collections.Counter()
    for name, c in ops.items():
        by_type[types.get(name, "(unnamed)")] += c
    return total, dict(by_type)


def onnx_node(session, qnn_name):
    """The ONNX node name a QNN node came from (unnamed ONNX nodes as "<op_type><index>"),
    or None for ops the EP inserted (layout Transposes)."""
    known = set(session.onnx_nodes)
    if qnn_name in known:
        return qnn_name
    m = re.fullmatch(r"(?P<base>.+)_token_\d+", qnn_name)
    if m and m.group("base") in known:
        return m.group("base")
    return None
