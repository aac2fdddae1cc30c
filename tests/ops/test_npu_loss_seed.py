"""test_npu_loss_seed — the backward's seed read on the NPU, with loss scaling, through the CLI.

The step is test_loss_scale.py's: an MLP with a cross-entropy loss at batch 4, over 14 batches
of which 4 hold an example of magnitude 1e37 whose scaled gradients overflow (on SM8650's fp16
partitions: saturate at 65504), so those steps are skipped and dynamic scaling halves S.

  - `edgegrad compile --soc SM8650 --report`: nll_loss_backward (which reads the seed) on the
    NPU, in nll_loss_forward's partition, and no node on the CPU: nothing between the loss and
    the gradients;
  - `edgegrad train --soc SM8650` (the .json) and the compiled .egp, with dynamic loss scaling
    and with a static scale of 1024: the trained weights of the CPU-seed placement (the same
    step compiled with --skip-op aten.nll_loss_backward, which keeps the seed's reader on the
    CPU) within fp16's rounding, the same scale after every step and the same skipped steps,
    the 4 injected ones.

The weights are judged against the CPU-seed run with a bound of 2^-9 of each tensor's largest
magnitude, 4 fp16 ulps at that magnitude (the runs differ in where nll_loss_backward computes,
fp32 on the CPU or fp16 on the NPU, and in the seed: 65536 there, its fp16 value 65504 here,
which the step divides out): an update on unscaled or doubly scaled gradients, a skipped step
taken or a good one skipped moves them by far more. Runs under PyTorch 1.13 and 2.x (the export
needs no GradScaler).

    PYTHONPATH=python .venv/bin/python tests/ops/test_npu_loss_seed.py --edgegrad build/edgegrad \\
        --workdir build/ops-npu-loss-seed
"""
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from optest import Runner  # noqa: E402
from test_loss_scale import HUGE_BATCHES, K, edgegrad_run, prepare  # noqa: E402

SOC = "SM8650"
SEED_READER = "aten.nll_loss_backward.default"


def compile_step(exe, workdir, stem, name, extra=()):
    """Compiles the step for SOC into NAME.egp with --report; returns the report."""
    egp, rep = (os.path.join(workdir, f"{name}.{e}") for e in ("egp", "json"))
    r = subprocess.run([exe, "compile", stem + ".json", "--soc", SOC, "-o", egp, "--report", rep,
                        "-q", *extra], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"edgegrad compile exit {r.returncode}: {r.stderr.strip()}")
    return json.load(open(rep)), egp


def placement_problems(report):
    nodes = report["nodes"]
    part = {n["target"]: n.get("partition") for n in nodes if n["placement"] == "npu"}
    why = [f"{n['name']} ({n['target']}) on the CPU: {n.get('reason')}"
           for n in nodes if n["placement"] != "npu"]
    if SEED_READER not in part:
        why.append(f"{SEED_READER} is not on the NPU")
    elif part[SEED_READER] != part.get("aten.nll_loss_forward.default"):
        why.append(f"{SEED_READER} in partition {part[SEED_READER]}, nll_loss_forward in "
                   f"{part.get('aten.nll_loss_forward.default')}")
    return why


def check_placement(exe, workdir, stem):
    report, _ = compile_step(exe, workdir, stem, "placement")
    why = placement_problems(report)
    if not why:
        print(f"placement: {len(report['nodes'])} nodes on the NPU, {SEED_READER} with the "
              "loss's forward")
    return why


def train(exe, workdir, stem, model, name, flags):
    """edgegrad_run of test_loss_scale.py with MODEL (a .json plus --soc, or a .egp)."""
    if model.endswith(".json"):
        return edgegrad_run(exe, workdir, stem, name, ["--soc", SOC, *flags])
    link = os.path.join(workdir, name)  # edgegrad_run trains STEM.json: a stem for the .egp
    for ext in (".init.safetensors",):
        if not os.path.exists(link + ext):
            os.symlink(stem + ext, link + ext)
    if not os.path.exists(link + ".json"):
        os.symlink(model, link + ".json")
    return edgegrad_run(exe, workdir, link, name, flags)


def close(got, want):
    """None when every element is within 2^-9 of the tensor's largest magnitude (module doc)."""
    bound = 2.0 ** -9 * max(float(np.max(np.abs(want))), 2.0 ** -14)
    err = float(np.max(np.abs(got - want)))
    return None if err <= bound else f"max |diff| {err:.3g} > {bound:.3g}"


def scaling_case(exe, workdir, stem, cpu_egp, name, flags):
    want_scales, want_skipped, want_w = train(exe, workdir, stem, cpu_egp, f"{name}_cpu_seed",
                                              flags)
    why = []
    if want_skipped != len(HUGE_BATCHES):
        why.append(f"the CPU-seed run skipped {want_skipped} steps, not the "
                   f"{len(HUGE_BATCHES)} injected: the case does not test what it says")
    npu_egp = os.path.join(workdir, "npu_seed.egp")
    for model, tag in ((stem + ".json", "json"), (npu_egp, "egp")):
        scales, skipped, w = train(exe, workdir, stem, model, f"{name}_{tag}", flags)
        if scales != want_scales:
            why.append(f"{tag}: scale after each step {scales}, the CPU seed's {want_scales}")
        if skipped != want_skipped:
            why.append(f"{tag}: {skipped} skipped steps, the CPU seed's {want_skipped}")
        for n in sorted(want_w):
            bad = close(w[n], want_w[n]) if n in w else "missing from --out"
            if bad:
                why.append(f"{tag}: {n} after {K} steps: {bad}")
    if not why:
        print(f"{name}: .json --soc {SOC} and .egp: scales {want_scales[:5]}..., {want_skipped} "
              f"skipped steps and the weights of the CPU-seed placement")
    return why


def main():
    run = Runner("npu_loss_seed")
    os.makedirs(run.workdir, exist_ok=True)
    _, _, _, stem = prepare(run.workdir)
    run.record("placement", lambda: check_placement(run.exe, run.workdir, stem))
    _, cpu_egp = compile_step(run.exe, run.workdir, stem, "cpu_seed",
                              ["--skip-op", SEED_READER])
    compile_step(run.exe, run.workdir, stem, "npu_seed")
    cases = [("dynamic", ["--loss-scale", "dynamic", "--loss-scale-interval", "2"]),
             ("static", ["--loss-scale", "1024"])]
    for name, flags in cases:
        run.record(name, lambda c=(name, flags): scaling_case(run.exe, run.workdir, stem,
                                                              cpu_egp, *c))
    run.finish()


if __name__ == "__main__":
    main()
