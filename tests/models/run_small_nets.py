"""The 32 x 32 nets of `make bench-steps` (bench/small_nets.py: cifar_cnn, cifar_resnet,
cifar_mbv2) against PyTorch: each net's training step, batch 8 of 3 x 32 x 32, 10 classes,
cross-entropy, exported with export_training_step, run by edgegrad on the CPU and as the
program compiled for SM8650 in fp32 (``edgegrad compile --soc SM8650 --precision fp32 -o``,
then ``edgegrad run PROGRAM.egp``), each output (loss, gradients, new BatchNorm buffers)
compared with PyTorch by the model zoo's machinery and numerics rule (run_models.py, whose
module doc states it: err(edgegrad) <= 2.5 x PyTorch fp32's err + 1e-5 x max|ref64|, against
a float64 reference, with the flip rule for ReLU/ReLU6/max-pool decisions within rounding of a
bound).

    PYTHONPATH=python .venv/bin/python tests/models/run_small_nets.py --edgegrad build/edgegrad \\
        [--workdir DIR] [--nets cifar_cnn,...] [--regimes full,bias] [--targets cpu,SM8650]

Regimes: ``full`` (every parameter: the convolutions' weight gradients, which the CPU path
computes by row bands at these sizes, src/kernels/conv_rowband_nchw.c) and ``bias`` (every
bias, BatchNorm's included: the frozen convolutions' input gradients, on the NPU the
TransposeConv2d composite). Measured (PyTorch 2.13, x86): every case within 0.4 of its bound;
cifar_mbv2 comes closest, full and bias alike (0.30 on the CPU, 0.38 on SM8650, at a BatchNorm
bias gradient that is zero up to rounding), head no higher than 0.04 on any net: so full and
bias are the default, head runs on request. SM8650 takes one of cifar_mbv2's ReLU6 decisions
the other way from float64 (block 0's expansion, input 8.4e-8 above 0 in float64; PyTorch
fp32 takes it the same way): the flip rule judges it, and that decision alone moves the stem's
weight gradient by 1.3e-3 and a BatchNorm bias gradient by 5e-3 of their largest elements.

Each line: ``PASS|FAIL net regime target: worst ratio of the bound, ...`` as run_models.py
prints it; the last line ``small nets: N passed, M failed``. Exit 0 only if every case passed.
"""
import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))

import run_models  # noqa: E402  (sets up the conformance and python paths)
import small_nets  # noqa: E402
import torch  # noqa: E402

BATCH = 8
TARGETS = ("cpu", "SM8650")
REGIMES = ("full", "bias")


def build(net, size=small_nets.SIZE):
    """(model, input, target) of ``net`` as bench/small_nets.py builds it (seed 0); ``size``
    is the nets' own 32."""
    del size
    return small_nets.build(net, BATCH, run_models.CLASSES)


trainable = run_models.trainable


def step_of(family, size, state, x, y, train, draws):
    """run_models.step_of for these nets: the AVX2 run's fresh Python rebuilds the step."""
    model, _, _ = build(family, size)
    model.load_state_dict(state)
    return run_models.case_step(model, x, y, train, draws)


def _worker(task):
    return run_models._worker(task, sys.modules[__name__], egp=True)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edgegrad", required=True, help="the edgegrad CLI binary")
    p.add_argument("--workdir", help="keep case files here (default: a temporary folder)")
    p.add_argument("--nets", default=",".join(small_nets.NETS))
    p.add_argument("--regimes", default=",".join(REGIMES))
    p.add_argument("--targets", default=",".join(TARGETS))
    # 1 by default: about 36 s of CPU in one process, 46 s in two (each imports PyTorch and
    # the exporter); ctest runs other tests beside it
    p.add_argument("-j", "--jobs", type=int, default=1, help="parallel worker processes")
    args = p.parse_args(argv)
    nets = [n for n in args.nets.split(",") if n]
    regimes = [r for r in args.regimes.split(",") if r]
    targets = [t if t == "cpu" else t.upper() for t in args.targets.split(",") if t]
    bad = ([n for n in nets if n not in small_nets.NETS] +
           [r for r in regimes if r not in run_models.REGIMES])
    if bad or not nets or not regimes or not targets:
        print(f"run_small_nets: {bad or 'nothing to run'}: nets are {', '.join(small_nets.NETS)}"
              f", regimes {', '.join(run_models.REGIMES)}", file=sys.stderr)
        return 2
    workdir = args.workdir or tempfile.mkdtemp(prefix="edgegrad-small-nets-")
    command = [os.path.abspath(args.edgegrad)]
    print(f"small nets: torch {torch.__version__}, {len(nets)} nets x {len(regimes)} regimes x "
          f"{len(targets)} targets, batch {BATCH} x 3 x {small_nets.SIZE} x {small_nets.SIZE}",
          flush=True)
    start = time.monotonic()
    # the largest net first: with two workers it runs while the other two do
    tasks = [(n, regimes, targets, small_nets.SIZE, workdir, command, False)
             for n in sorted(nets, key=list(small_nets.NETS).index, reverse=True)]
    passed, failed = run_models.run_tasks(_worker, tasks, args.jobs)
    print(f"{time.monotonic() - start:.0f} s; case files: {workdir}")
    print(f"small nets: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
