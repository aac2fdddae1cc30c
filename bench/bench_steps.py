"""Whole training steps, edgegrad beside PyTorch eager (`make bench-steps`).

    PYTHONPATH=python .venv/bin/python bench/bench_steps.py --edgegrad build/edgegrad \\
        --bench-step build/bench_step [--workdir DIR] [--cases resnet18,mobilenet_v2:full,...]
        [--threads 1,2] [--reps 10] [--compile-families resnet18,...] [--no-compile-times]

Cases: family x regime (full / head / bias, as tests/models/run_models.py defines them: its
FAMILIES, build() and trainable() are imported, not copied); a --cases entry is FAMILY (every regime) or
FAMILY:REGIME. Each model is torchvision's definition (tests/models/tvshim.py), random
initialisation (torch.manual_seed(0)), 10 classes, train mode, batch 8 of 3x64x64, loss
cross-entropy, exported with edgegrad.export_training_step. For each case and thread count T:

- PyTorch: the step the export computes, eager: out = model(x), loss = cross_entropy(out, y),
  torch.autograd.grad(loss, trainable) (BatchNorm's running statistics update as a side effect,
  Dropout draws its own masks), torch.set_num_threads(T), in a child process of its own so its
  peak RSS (VmHWM) is that case's alone;
- edgegrad CPU: bench_step on the exported .json (every node on the portable CPU kernels);
- edgegrad .egp: bench_step on the program `edgegrad compile --soc SM8650 --precision fp32 -o`
  wrote (the NPU partitions run on the QNN-semantics executor on this CPU; fp32, because the
  fp16 default emulates the HTP's rounding of every op result, a cost the phone never pays).

Each side: one warm-up, then the minimum (and median) of --reps steps; bench_step runs with
--threads T and OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = T. Ratio = edgegrad / PyTorch (< 1:
edgegrad faster). Then the geometric mean and the worst ratio per path and thread count, and
the compile-time section: `edgegrad compile --soc SM8650 -o` (one process: load, compile,
write) of full-training graphs at batch 2, min of 3, with node counts and us per node.

A report, never a test: the machines are shared and noisy.
"""
import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
sys.path.insert(0, os.path.join(ROOT, "python"))
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import run_models  # noqa: E402

DEFAULT_FAMILIES = ("resnet18", "mobilenet_v2", "squeezenet1_1")
COMPILE_FAMILIES = ("resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "densenet121")
BATCH, SIZE, CLASSES = 8, 64, run_models.CLASSES
COMPILE_BATCH = 2
SOC = "SM8650"


def build(family, batch, size=SIZE):
    return run_models.build(family, size, batch)


def peak_rss_kb():
    """This process's peak resident set (KiB): VmHWM, which starts afresh at exec; ru_maxrss
    would carry over the size of the parent that spawned us."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def torch_child(family, regime, threads, reps):
    """The PyTorch measurement, run in a process of its own: one JSON line."""
    torch.set_num_threads(threads)
    model, x, y = build(family, BATCH)
    train = set(run_models.trainable(model, regime, family))
    params = []
    for name, p in model.named_parameters():
        p.requires_grad_(name in train)
        if name in train:
            params.append(p)
    times = []
    for r in range(reps + 1):
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        torch.autograd.grad(loss, params)
        t1 = time.perf_counter()
        if r:
            times.append((t1 - t0) * 1e3)
    times.sort()
    print(json.dumps({"min_ms": times[0], "median_ms": times[len(times) // 2],
                      "peak_rss_kb": peak_rss_kb()}))


def run_json(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-500:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def thread_env(threads):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = str(threads)
    return env


def export_case(family, regime, workdir, edgegrad):
    import run_conformance as rc
    from edgegrad import export_training_step

    folder = os.path.join(workdir, family, regime)
    os.makedirs(folder, exist_ok=True)
    model, x, y = build(family, BATCH)
    result = export_training_step(model, F.cross_entropy, (x, y), os.path.join(folder, "model"),
                                  trainable=run_models.trainable(model, regime, family))
    known = {"input": x, "target": y, **result.draws}
    known.update({n.replace(".", "_"): p for n, p in model.named_parameters()})
    known.update({n.replace(".", "_"): b for n, b in model.named_buffers()})
    rc._save_inputs({e["name"]: known[e["name"]].detach().numpy()
                     for e in result.graph["inputs"]}, os.path.join(folder, "inputs"))
    egp = os.path.join(folder, "model.egp")
    # fp32: the fp16 default would emulate the HTP's rounding of every op result on this CPU,
    # a model of the phone's numerics whose cost the phone never pays
    subprocess.run([edgegrad, "compile", result.json_path, "--soc", SOC, "--precision", "fp32",
                    "-o", egp, "-q"], check=True, capture_output=True)
    return result.json_path, egp, os.path.join(folder, "inputs")


def parse_cases(text):
    cases = []
    for item in text.split(","):
        family, _, regime = item.strip().partition(":")
        if family not in run_models.FAMILIES:
            sys.exit(f"bench_steps: unknown family {family!r} (known: "
                     f"{', '.join(run_models.FAMILIES)})")
        for r in ([regime] if regime else run_models.REGIMES):
            if r not in run_models.REGIMES:
                sys.exit(f"bench_steps: unknown regime {r!r} (known: full, head, bias)")
            cases.append((family, r))
    return cases


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def steps(args):
    cases, threads = parse_cases(args.cases), [int(t) for t in args.threads.split(",")]
    rows = []
    print(f"whole training steps: batch {BATCH}, 3x{SIZE}x{SIZE}, {CLASSES} classes, "
          f"cross-entropy; min of {args.reps} (after 1 warm-up); .egp for {SOC}", flush=True)
    hdr = (f"{'case':<22} {'T':>1} {'PyTorch ms':>10} {'eg CPU ms (ratio)':>19} "
           f"{'.egp ms (ratio)':>19}   peak RSS MB torch / CPU / .egp")
    print(hdr)
    print("-" * len(hdr))
    for family, regime in cases:
        try:
            json_path, egp, inputs = export_case(family, regime, args.workdir, args.edgegrad)
        except Exception as e:  # a failed export or compile is reported, not fatal
            print(f"{family + ' ' + regime:<22} export/compile failed: {e}", flush=True)
            continue
        for t in threads:
            env = thread_env(t)
            pt = run_json([sys.executable, os.path.abspath(__file__), "--torch-child", family,
                           regime, str(t), str(args.reps)], env)
            bench = [args.bench_step, None, inputs, "--threads", str(t), "--reps", str(args.reps)]
            cpu = run_json(bench[:1] + [json_path] + bench[2:], env)
            npu = run_json(bench[:1] + [egp] + bench[2:], env)
            row = dict(case=f"{family} {regime}", threads=t, torch=pt, cpu=cpu, egp=npu,
                       r_cpu=cpu["min_ms"] / pt["min_ms"], r_egp=npu["min_ms"] / pt["min_ms"])
            rows.append(row)
            mb = [d["peak_rss_kb"] / 1024 for d in (pt, cpu, npu)]
            print(f"{row['case']:<22} {t:>1} {pt['min_ms']:>10.1f} "
                  f"{cpu['min_ms']:>10.1f} ({row['r_cpu']:.2f}x) "
                  f"{npu['min_ms']:>10.1f} ({row['r_egp']:.2f}x)   "
                  f"{mb[0]:.0f} / {mb[1]:.0f} / {mb[2]:.0f}", flush=True)
    print()
    for t in threads:
        sel = [r for r in rows if r["threads"] == t]
        if not sel:
            continue
        for path, key in (("edgegrad CPU", "r_cpu"), (".egp", "r_egp")):
            worst = max(sel, key=lambda r: r[key])
            print(f"{t} thread{'s' if t > 1 else ''}, {path:<12}: geomean {geomean([r[key] for r in sel]):.2f}x"
                  f", worst {worst[key]:.2f}x ({worst['case']})")
    return rows


def compile_times(args):
    from edgegrad import export_training_step

    families = [f for f in args.compile_families.split(",") if f]
    if not families:
        return
    print(f"\ncompile time: `edgegrad compile --soc {SOC} -o` (one process: load + compile + "
          f"write), full training, batch {COMPILE_BATCH}, 3x{SIZE}x{SIZE}, min of 3")
    print(f"{'model':<18} {'nodes':>6} {'ms':>8} {'us/node':>8}")
    for family in families:
        folder = os.path.join(args.workdir, "compile", family)
        os.makedirs(folder, exist_ok=True)
        model, x, y = build(family, COMPILE_BATCH)
        result = export_training_step(model, F.cross_entropy, (x, y),
                                      os.path.join(folder, "model"))
        nodes = len(result.graph["nodes"])
        cmd = [args.edgegrad, "compile", result.json_path, "--soc", SOC, "-o",
               os.path.join(folder, "model.egp"), "-q"]
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            best = min(best, (time.perf_counter() - t0) * 1e3)
        print(f"{family:<18} {nodes:>6} {best:>8.1f} {best * 1e3 / nodes:>8.1f}", flush=True)


def main(argv):
    if argv[:1] == ["--torch-child"]:
        family, regime, threads, reps = argv[1], argv[2], int(argv[3]), int(argv[4])
        return torch_child(family, regime, threads, reps)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edgegrad", default=os.path.join(ROOT, "build", "edgegrad"))
    ap.add_argument("--bench-step", default=os.path.join(ROOT, "build", "bench_step"))
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build", "bench-steps"))
    ap.add_argument("--cases", default=",".join(DEFAULT_FAMILIES),
                    help="FAMILY or FAMILY:REGIME, comma-separated")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--compile-families", default=",".join(COMPILE_FAMILIES),
                    help="families of the compile-time section ('' for none)")
    ap.add_argument("--no-compile-times", action="store_true")
    args = ap.parse_args(argv)
    if args.reps < 1:
        ap.error("--reps must be >= 1")
    steps(args)
    if not args.no_compile_times:
        compile_times(args)


if __name__ == "__main__":
    main(sys.argv[1:])
