""""One weight, one copy" (issue 5) with a realistically sized filter, through the CLI.

A frozen 3x3 conv with 128 -> 128 channels (a 589,824-byte fp32 filter) is exported twice:

  fwd:   y = conv2d(x, W, b)
  pair:  y = conv2d(x, W, b); gx = convolution_backward(y, x, W, mask [T,F,F])[0]
         (the backward reads y, so forward and backward land in one NPU partition)

Both are compiled for SM8650 at --precision fp32 (optest.NPU_FP32) into .egp files and
inspected (`edgegrad inspect --json`):
  - the pair's NPU graph has Conv2d, Transpose(perm [0,1,3,2]) and TransposeConv2d, and the
    Transpose reads the very STATIC tensor the Conv2d reads;
  - the STATIC bytes of the two files are equal (the backward stores no copy of W), and the
    file grows by far less than the filter: only the Transpose / TransposeConv2d op records and
    the NATIVE tensors' descriptors (asserted: under 1% of the filter's bytes);
  - both programs run and match PyTorch (y, and gx against aten.convolution_backward).
A frozen-backbone training step whose loss (cross entropy with reduction none, summed: that
nll_loss runs on the CPU and its backward needs its total_weight) sits between forward and backward puts them in different partitions: compile must then say, in the report's notes, that the weight is
held by several partitions.

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_npu_weight_once.py \\
        --edgegrad build/edgegrad --workdir /tmp/ops-npu-weight-once
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "data"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from optest import NPU_FP32, allclose_report  # noqa: E402
from make_npu_fixtures import edit_json, drop_grad_weight  # noqa: E402
from edgegrad.export import export_function, export_training_step  # noqa: E402

aten = torch.ops.aten
SOC = "SM8650"
C, K = 128, 3
FILTER_BYTES = C * C * K * K * 4


def sh(*cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError("%s -> exit %d: %s" % (" ".join(map(str, cmd)), p.returncode,
                                                     p.stderr.strip()))
    return p.stdout


def compile_inspect(exe, stem, workdir):
    egp = os.path.join(workdir, os.path.basename(stem) + ".egp")
    report = egp + ".report.json"
    sh(exe, "compile", stem + ".json", "--soc", SOC, *NPU_FP32, "-o", egp, "--report", report,
       "-q")
    with open(report) as f:
        rep = json.load(f)
    return egp, json.loads(sh(exe, "inspect", egp, "--json")), rep


def run_compare(exe, egp, inputs, refs, workdir, name):
    in_dir = os.path.join(workdir, name + "_in")
    out_dir = os.path.join(workdir, name + "_out")
    os.makedirs(in_dir, exist_ok=True)
    args = []
    for k, v in inputs.items():
        path = os.path.join(in_dir, k + ".npy")
        np.save(path, v.detach().numpy())
        args += ["--input", "%s=%s" % (k, path)]
    sh(exe, "run", egp, *args, "--output-dir", out_dir, "-q")
    for k, ref in refs.items():
        got = np.load(os.path.join(out_dir, k + ".npy"))
        msg = allclose_report(got, ref.detach().numpy())
        assert msg is None, "%s output %s: %s" % (name, k, msg)


def partition_ops(info):
    (part,) = [p for p in info["partitions"]]
    return part


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edgegrad", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    torch.manual_seed(5)
    x = torch.randn(1, C, 8, 8)
    w, b = torch.randn(C, C, K, K) * 0.05, torch.randn(C)

    def fwd(x, w, b):
        return F.conv2d(x, w, b, 1, 1)

    def pair(x, w, b):
        y = F.conv2d(x, w, b, 1, 1)
        gx = aten.convolution_backward(y, x, w, [C], [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                       [True, False, False])[0]
        return y, gx

    stems = {n: os.path.join(a.workdir, n) for n in ("fwd", "pair")}
    export_function(fwd, (x, w, b), stems["fwd"], static_args=("w", "b"))
    export_function(pair, (x, w, b), stems["pair"], static_args=("w", "b"))
    edit_json(stems["pair"] + ".json", drop_grad_weight)

    failures = 0
    checks = []

    def check(name, fn):
        nonlocal failures
        try:
            fn()
            checks.append(name)
        except Exception as e:  # noqa: BLE001 - report every failing check, then exit 1
            failures += 1
            print("FAIL %s: %s" % (name, e))

    egp_f, info_f, _ = compile_inspect(a.edgegrad, stems["fwd"], a.workdir)
    egp_p, info_p, rep_p = compile_inspect(a.edgegrad, stems["pair"], a.workdir)

    def shared_filter():
        assert info_p["cpu_nodes"] == 0, "pair: %d CPU nodes" % info_p["cpu_nodes"]
        part = partition_ops(info_p)
        tensors = part["tensors"]
        ops = {op["type"]: op for op in part["ops"]}
        for t in ("Conv2d", "Transpose", "TransposeConv2d"):
            assert t in ops, "pair partition has no %s (ops: %s)" % (t, sorted(ops))
        perm = ops["Transpose"]["params"].get("perm")
        assert perm == [0, 1, 3, 2], "Transpose perm: %s" % perm
        conv_filter = ops["Conv2d"]["inputs"][1]
        assert ops["Transpose"]["inputs"][0] == conv_filter, (
            "Transpose reads tensor %s, Conv2d's filter is %s" % (ops["Transpose"]["inputs"][0],
                                                                  conv_filter))
        assert ops["TransposeConv2d"]["inputs"][1] == ops["Transpose"]["outputs"][0]
        (t,) = [t for t in tensors if t["name"] == conv_filter]
        assert t["type"] == "STATIC" and t["bytes"] == FILTER_BYTES, t
        statics = [t for t in tensors if t["type"] == "STATIC" and t["bytes"] >= FILTER_BYTES]
        assert len(statics) == 1, "STATIC tensors of filter size: %s" % statics

    def one_copy():
        sf, sp = info_f["static_bytes"], info_p["static_bytes"]
        assert sf == sp, "STATIC bytes: forward only %d, with the backward %d" % (sf, sp)
        assert sf >= FILTER_BYTES, "STATIC bytes %d < the filter's %d" % (sf, FILTER_BYTES)
        grow = info_p["file_bytes"] - info_f["file_bytes"]
        size_grow = os.path.getsize(egp_p) - os.path.getsize(egp_f)
        assert grow == size_grow, "inspect file_bytes disagree with the files' sizes"
        assert 0 < grow < FILTER_BYTES // 100, (
            "the backward adds %d bytes to the .egp; the filter is %d: it must add only op "
            "records and descriptors (< 1%%)" % (grow, FILTER_BYTES))
        print("one weight, one copy: filter %d bytes; .egp %d -> %d bytes (+%d); STATIC %d both"
              % (FILTER_BYTES, info_f["file_bytes"], info_p["file_bytes"], grow, sf))

    def numerics():
        y = F.conv2d(x, w, b, 1, 1)
        gx = aten.convolution_backward(y, x, w, [C], [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                       [True, False, False])[0]
        run_compare(a.edgegrad, egp_f, {"x": x}, {"out0": y}, a.workdir, "fwd")
        run_compare(a.edgegrad, egp_p, {"x": x}, {"out0": y, "out1": gx}, a.workdir,
                    "pair")

    def split_partitions_noted():
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                    torch.nn.Conv2d(8, 4, 3, padding=1), torch.nn.Flatten())
        stem = os.path.join(a.workdir, "step")
        export_training_step(model, lambda y, t: F.cross_entropy(y, t, reduction="none").sum(),
                             (torch.randn(2, 3, 6, 6), torch.tensor([3, 17])), stem,
                             trainable=("0.bias", "2.bias"))
        _, _, rep = compile_inspect(a.edgegrad, stem, a.workdir)
        notes = rep.get("notes", [])
        assert any("2.weight" in n and "several partitions" in n for n in notes), (
            "no note on the second conv's weight held by several partitions: %s" % notes)

    check("filter shared by Conv2d and Transpose", shared_filter)
    check("one copy in the .egp", one_copy)
    check("numerics vs PyTorch", numerics)
    check("split partitions noted", split_partitions_noted)
    print("npu weight-once: %d passed, %d failed" % (len(checks), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
