"""Whole training steps, edgegrad beside PyTorch at its best (`make bench-steps`).

    PYTHONPATH=python .venv/bin/python bench/bench_steps.py --edgegrad build/edgegrad \\
        --bench-step build/bench_step [--workdir DIR] [--cases resnet18,cifar_cnn:full,...]
        [--threads 1,2] [--reps 10] [--round-ms 25] [--torch-compile all|small|none]
        [--compile-families resnet18,...] [--no-compile-times]

Cases: family x regime (full / head / bias). The torchvision families are tests/models/
run_models.py's (its FAMILIES, build() and trainable() are imported, not copied): batch 8 of
3x64x64; the three 32x32 nets of bench/small_nets.py (cifar_cnn, cifar_resnet, cifar_mbv2):
batch 8 of 3x32x32. A --cases entry is FAMILY (every regime) or FAMILY:REGIME. Random
initialisation (torch.manual_seed(0)), 10 classes, train mode, cross-entropy, exported with
edgegrad.export_training_step. For each case and thread count T, five systems, each a
long-lived worker process of its own (so its peak RSS, VmHWM, is that system's alone):

- torch NCHW: the step the export computes, eager: out = model(x), loss = cross_entropy(out, y),
  torch.autograd.grad(loss, trainable) (BatchNorm's running statistics update as a side effect,
  Dropout draws its own masks), torch.set_num_threads(T);
- torch CL: the same with model and input in torch.channels_last;
- torch compile: the same step with model + loss compiled by torch.compile (inductor, CPU;
  AOTAutograd compiles the backward): compile time is excluded from the timed steps and
  reported; where it does not compile, the exception's first line is reported. By default
  (--torch-compile all) every case: a cold compile takes a minute or more per torchvision case
  and thread count on 2 cores (inductor's on-disk cache makes reruns fast), so --torch-compile
  small compiles the 32x32 nets only and none none, the output saying so (PyTorch's best is then
  the best of fewer variants: compiled steps won some torchvision cases, e.g. MobileNetV2 head);
- edgegrad CPU: bench_step --serve on the exported .json (every node on the portable CPU kernels);
- edgegrad .egp: bench_step --serve on the program `edgegrad compile --soc SM8650 --precision
  fp32 -o` wrote (the NPU partitions run on the QNN-semantics executor on this CPU; fp32, because
  the fp16 default emulates the HTP's rounding of every op result, a cost the phone never pays).

Every worker runs two warm-up steps, then --reps interleaved rounds: in each round every system
times k steps in turn (k = --round-ms over its warm-up step's time, 1 to 20; the order rotates
by one system a round: A B C D E, B C D E A, ...). All workers get OMP_NUM_THREADS =
OPENBLAS_NUM_THREADS = T; bench_step also --threads T. Reported per system: median step time and
its spread (min-max over all timed steps). PyTorch's best per case = the fastest median of the
variants that ran; ratio = edgegrad median / best (< 1: edgegrad faster). Then the geometric mean
and the worst ratio per path and thread count, and the compile-time section: `edgegrad compile
--soc SM8650 -o` (one process: load, compile, write) of full-training graphs at batch 2, min of
3, with node counts and us per node. The first line is the environment (CPU, cores,
OPENBLAS_CORETYPE, the OpenBLAS kernel core in use, PyTorch's version and CPU capability, load
average, commit); every time lands in WORKDIR/bench-steps.json too.

A report, never a test: the machines are shared and noisy.
"""
import argparse
import json
import math
import os
import re
import resource
import select
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import run_models  # noqa: E402
import small_nets  # noqa: E402

DEFAULT_CASES = ("resnet18", "mobilenet_v2", "squeezenet1_1", "efficientnet_b0",
                 "cifar_cnn:full", "cifar_resnet:full", "cifar_mbv2:full")
COMPILE_FAMILIES = ("resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "densenet121")
BATCH, SIZE, CLASSES = 8, 64, run_models.CLASSES
COMPILE_BATCH = 2
SOC = "SM8650"
MAX_ROUND_STEPS = 20
START_TIMEOUT_S, ROUND_TIMEOUT_S = 3600, 900
# (key, column label): PyTorch's variants, then edgegrad's paths
TORCH_VARIANTS = (("nchw", "torch NCHW"), ("cl", "torch CL"), ("compile", "torch compile"))
EDGEGRAD_PATHS = (("cpu", "edgegrad CPU"), ("egp", ".egp"))
SYSTEMS = TORCH_VARIANTS + EDGEGRAD_PATHS


def build(family, batch, size=SIZE):
    if family in small_nets.NETS:
        return small_nets.build(family, batch, CLASSES)
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


def first_line(e):
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}".strip()


def torch_worker(family, regime, threads, variant):
    """PyTorch's side of the rounds, in a process of its own: bench_step --serve's protocol (a
    ready line, then one line of K step times for each count K read from stdin; "q" ends it).
    Anything else the libraries print goes to stderr."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def say(obj):
        proto.write(json.dumps(obj) + "\n")

    torch.set_num_threads(threads)
    try:
        model, x, y = build(family, BATCH)
        train = set(run_models.trainable(model, regime, family))
        if variant == "cl":
            model = model.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)
        params = []
        for name, p in model.named_parameters():
            p.requires_grad_(name in train)
            if name in train:
                params.append(p)

        def loss_of(x, y):
            return F.cross_entropy(model(x), y)

        fn, compile_ms, breaks = loss_of, None, None
        if variant == "compile":
            fn = torch.compile(loss_of)  # inductor: compiles at the first call

        def step():
            t0 = time.perf_counter()
            torch.autograd.grad(fn(x, y), params)
            return (time.perf_counter() - t0) * 1e3

        first = step()
        if variant == "compile":
            from torch._dynamo.utils import counters
            compile_ms, breaks = first, sum(counters["graph_break"].values())
        warm = step()
    except Exception as e:  # reported by the driver, never fatal
        return say({"error": first_line(e)})
    say({"ready": True, "warmup_ms": warm, "compile_ms": compile_ms, "graph_breaks": breaks,
         "threads": threads, "peak_rss_kb": peak_rss_kb()})
    for line in sys.stdin:
        if line.strip() == "q":
            break
        try:
            times = [step() for _ in range(int(line))]
        except Exception as e:
            return say({"error": first_line(e)})
        say({"times_ms": times, "peak_rss_kb": peak_rss_kb()})


class Worker:
    """One system's long-lived process, spoken to one line at a time (see torch_worker)."""

    def __init__(self, key, cmd, env, errpath):
        self.key, self.error, self.ready, self.times, self.rss_kb = key, None, None, [], None
        self.errpath = errpath
        self.errfile = open(errpath, "w")
        self.buf, self.proc = b"", None
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self.errfile, env=env)
        except OSError as e:
            self.fail(e)

    def _line(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise RuntimeError(f"no answer in {timeout} s")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                self.proc.wait()
                with open(self.errpath) as f:
                    tail = [line for line in f.read().splitlines() if line.strip()]
                raise RuntimeError(f"exit {self.proc.returncode}: "
                                   f"{tail[-1] if tail else 'no message'}")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    def start(self):
        if self.error:
            return
        try:
            self.ready = self._line(START_TIMEOUT_S)
            self.rss_kb = self.ready["peak_rss_kb"]
        except Exception as e:
            self.fail(e)

    def run(self, k):
        if self.error:
            return
        try:
            self.proc.stdin.write(f"{k}\n".encode())
            self.proc.stdin.flush()
            reply = self._line(ROUND_TIMEOUT_S)
            self.times += reply["times_ms"]
            self.rss_kb = reply["peak_rss_kb"]
        except Exception as e:
            self.fail(e)

    def fail(self, e):
        self.error = first_line(e) if not isinstance(e, RuntimeError) else str(e)
        self.close()

    def close(self):
        if self.proc and self.proc.poll() is None:
            try:
                self.proc.stdin.write(b"q\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.errfile.close()

    def stats(self):
        if self.error or not self.times:
            return None
        t = sorted(self.times)
        n = len(t)
        median = t[n // 2] if n % 2 else 0.5 * (t[n // 2 - 1] + t[n // 2])
        return {"median_ms": median, "min_ms": t[0], "max_ms": t[-1], "steps": n}


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
        if family not in run_models.FAMILIES and family not in small_nets.NETS:
            sys.exit(f"bench_steps: unknown family {family!r} (known: "
                     f"{', '.join([*run_models.FAMILIES, *small_nets.NETS])})")
        for r in ([regime] if regime else run_models.REGIMES):
            if r not in run_models.REGIMES:
                sys.exit(f"bench_steps: unknown regime {r!r} (known: full, head, bias)")
            cases.append((family, r))
    return cases


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def compiles(family, mode):
    return mode == "all" or (mode == "small" and family in small_nets.NETS)


def environment(args):
    """The environment line's fields: CPU, cores, OpenBLAS's core, PyTorch's build, commit."""
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")), cpu)
    except OSError:
        pass
    try:
        blas = json.loads(subprocess.run([args.bench_step, "--blas"], capture_output=True,
                                         text=True, check=True).stdout)
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        blas = {"blas_core": f"unknown ({first_line(e)})", "blas_config": ""}
    config = torch.__config__.show()
    onednn = re.search(r"MKL-DNN (v[\d.]+)", config)
    mkl = re.search(r"Math Kernel Library Version ([\d.]+)", config)
    try:
        capability = torch.backends.cpu.get_cpu_capability()
    except AttributeError:
        capability = "?"
    git = ["git", "-C", ROOT]
    commit = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    if subprocess.run(git + ["diff", "--quiet", "HEAD"], capture_output=True).returncode:
        commit += "+changes"
    return {"cpu": cpu, "cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
            "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
            "blas_core": blas["blas_core"], "blas_config": blas["blas_config"],
            "torch": torch.__version__, "torch_cpu_capability": capability,
            "onednn": onednn.group(1) if onednn else None, "mkl": mkl.group(1) if mkl else None,
            "commit": commit, "utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}


def load_text():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def busy_warning(when):
    """A line when the 1-minute load average reaches the usable cores: other processes then
    take CPU time from the timed steps, the 2-thread ones most (their threads wait for each
    other), so the ratios say little."""
    load, cores = os.getloadavg()[0], len(os.sched_getaffinity(0))
    if load >= cores:
        print(f"warning: load average {load:.2f} {when} on {cores} usable cores: the machine is "
              "busy, its times (2-thread ones most) are not those of a quiet machine")


def ms(v):
    return "-" if v is None else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def measure(args, case, t, json_path, egp, inputs, log):
    """The five systems of one case at t threads in interleaved rounds: {key: result}."""
    family, regime = case
    env = thread_env(t)
    me = os.path.abspath(__file__)
    specs, results = [], {}
    for key, _ in TORCH_VARIANTS:
        if key == "compile" and not compiles(family, args.torch_compile):
            results[key] = {"skipped": f"not run (--torch-compile {args.torch_compile})"}
            continue
        specs.append((key, [sys.executable, me, "--torch-worker", family, regime, str(t), key]))
    for key, model in (("cpu", json_path), ("egp", egp)):
        specs.append((key, [args.bench_step, model, inputs, "--threads", str(t), "--warmup", "2",
                            "--serve"]))
    workers = []
    for key, cmd in specs:  # one at a time: a compile must not slow the others' warm-up
        w = Worker(key, cmd, env, os.path.join(log, f"{key}_{t}.err"))
        w.start()
        if not w.error:
            w.k = max(1, min(MAX_ROUND_STEPS, math.ceil(args.round_ms /
                                                         max(w.ready["warmup_ms"], 1e-3))))
        workers.append(w)
    for r in range(args.reps):
        alive = [w for w in workers if not w.error]
        turn = r % len(alive) if alive else 0
        for w in alive[turn:] + alive[:turn]:
            w.run(w.k)
    for w in workers:
        w.close()
        res = {"error": w.error} if w.error else dict(w.stats(), k=w.k, times_ms=w.times)
        res["peak_rss_kb"] = w.rss_kb
        if w.ready and w.ready.get("compile_ms") is not None:
            res["compile_s"] = w.ready["compile_ms"] / 1e3
            res["graph_breaks"] = w.ready["graph_breaks"]
        results[w.key] = res
    return results


def print_row(row, width):
    res = row["systems"]
    cells, spreads = [], []
    for key, _ in SYSTEMS:
        r = res[key]
        if "median_ms" not in r:
            cells.append("fail" if "error" in r else "-")
            spreads.append("")
            continue
        ratio = f" {row['ratio'][key]:.2f}x" if key in row["ratio"] else ""
        star = "*" if key == row["best"] else ""
        cells.append(f"{ms(r['median_ms'])}{star}{ratio}")
        spreads.append(f"{ms(r['min_ms'])}-{ms(r['max_ms'])}")
    rss = " / ".join("-" if res[k].get("peak_rss_kb") is None else
                     f"{res[k]['peak_rss_kb'] / 1024:.0f}" for k, _ in SYSTEMS)
    cc = res["compile"].get("compile_s")
    print(f"{row['case']:<20} {row['threads']:>1} " + " ".join(f"{c:>{width}}" for c in cells) +
          f" {'-' if cc is None else f'{cc:.0f}':>6}  {rss}")
    print(f"{'':<20} {'':>1} " + " ".join(f"{c:>{width}}" for c in spreads), flush=True)
    for key, label in SYSTEMS:
        if "error" in res[key]:
            print(f"{'':<22} {label}: {res[key]['error']}", flush=True)


def steps(args):
    cases, threads = parse_cases(args.cases), [int(t) for t in args.threads.split(",")]
    env = environment(args)
    before = load_text()
    print(f"environment: {env['cpu']}, {env['cores']} cores ({env['usable_cores']} usable), "
          f"OPENBLAS_CORETYPE={env['openblas_coretype'] or '(unset)'}, OpenBLAS core "
          f"{env['blas_core']} ({env['blas_config']}), torch {env['torch']} (CPU capability "
          f"{env['torch_cpu_capability']}, oneDNN {env['onednn']}, MKL {env['mkl']}), load "
          f"{before}, commit {env['commit']}, {env['utc']} UTC")
    busy_warning("before the run")
    compiled = {"all": "every case (a cold compile takes a minute or more per torchvision case "
                "and thread count on 2 cores; --torch-compile small: the 32x32 nets only)",
                "small": "the 32x32 nets only (--torch-compile small: PyTorch's best of the "
                "other cases is eager's alone)",
                "none": "no case (--torch-compile none: PyTorch's best is eager's alone)"}[
                    args.torch_compile]
    print(f"whole training steps: batch {BATCH}, 3x{SIZE}x{SIZE} (32x32 nets: 3x32x32), "
          f"{CLASSES} classes, cross-entropy; .egp for {SOC} (fp32); {args.reps} interleaved "
          f"rounds of k steps per system (k ~ {args.round_ms:g} ms / step, 1-{MAX_ROUND_STEPS}) "
          f"after 2 warm-up steps; torch.compile (inductor) on {compiled}.")
    print("median ms per step (line below: min-max); * PyTorch's best; ratio = edgegrad / best; "
          "compile s: torch.compile's first step (excluded)")
    width = 14
    labels = [label for _, label in SYSTEMS]
    hdr = (f"{'case':<20} {'T':>1} " + " ".join(f"{h:>{width}}" for h in labels) +
           f" {'comp s':>6}  peak RSS MB (same order)")
    print(hdr)
    print("-" * len(hdr), flush=True)
    rows = []
    for family, regime in cases:
        try:
            json_path, egp, inputs = export_case(family, regime, args.workdir, args.edgegrad)
        except Exception as e:  # a failed export or compile is reported, not fatal
            print(f"{family + ' ' + regime:<20} export/compile failed: {first_line(e)}", flush=True)
            continue
        log = os.path.dirname(json_path)
        for t in threads:
            res = measure(args, (family, regime), t, json_path, egp, inputs, log)
            ran = {k: res[k]["median_ms"] for k, _ in TORCH_VARIANTS if "median_ms" in res[k]}
            best = min(ran, key=ran.get) if ran else None
            row = {"case": f"{family} {regime}", "threads": t, "systems": res, "best": best,
                   "ratio": {}, "ratio_nchw": {}}
            for key, _ in EDGEGRAD_PATHS:
                if best and "median_ms" in res[key]:
                    row["ratio"][key] = res[key]["median_ms"] / ran[best]
                    if "nchw" in ran:
                        row["ratio_nchw"][key] = res[key]["median_ms"] / ran["nchw"]
            rows.append(row)
            print_row(row, width)
    print()
    for t in threads:
        sel = [r for r in rows if r["threads"] == t]
        for key, label in EDGEGRAD_PATHS:
            have = [r for r in sel if key in r["ratio"]]
            if not have:
                continue
            worst = max(have, key=lambda r: r["ratio"][key])
            nchw = [r["ratio_nchw"][key] for r in have if key in r["ratio_nchw"]]
            print(f"{t} thread{'s' if t > 1 else ' '}, {label:<12}: against best geomean "
                  f"{geomean([r['ratio'][key] for r in have]):.2f}x, worst "
                  f"{worst['ratio'][key]:.2f}x ({worst['case']}); against torch NCHW geomean "
                  f"{geomean(nchw):.2f}x ({len(have)} cases)")
        bests = [r["best"] for r in sel if r["best"]]
        if bests:
            print(f"{t} thread{'s' if t > 1 else ' '}, PyTorch's best: " + ", ".join(
                f"{label} {bests.count(k)}" for k, label in TORCH_VARIANTS if bests.count(k)))
    print(f"load average before {before}, after {load_text()}")
    busy_warning("after the run")
    out = os.path.join(args.workdir, "bench-steps.json")
    with open(out, "w") as f:
        json.dump({"environment": env, "load_before": before, "load_after": load_text(),
                   "reps": args.reps, "round_ms": args.round_ms,
                   "torch_compile": args.torch_compile, "rows": rows}, f, indent=1)
    print(f"every step time: {out}")
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
    if argv[:1] == ["--torch-worker"]:
        return torch_worker(argv[1], argv[2], int(argv[3]), argv[4])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edgegrad", default=os.path.join(ROOT, "build", "edgegrad"))
    ap.add_argument("--bench-step", default=os.path.join(ROOT, "build", "bench_step"))
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build", "bench-steps"))
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES),
                    help="FAMILY or FAMILY:REGIME, comma-separated")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=10, help="interleaved rounds")
    ap.add_argument("--round-ms", type=float, default=25,
                    help="each system's time per round: k steps of about this much in all")
    ap.add_argument("--torch-compile", choices=("all", "small", "none"), default="all",
                    help="which cases torch.compile measures: every case (default), the 32x32 "
                    "nets or none")
    ap.add_argument("--compile-families", default=",".join(COMPILE_FAMILIES),
                    help="families of the compile-time section ('' for none)")
    ap.add_argument("--no-compile-times", action="store_true")
    args = ap.parse_args(argv)
    if args.reps < 1:
        ap.error("--reps must be >= 1")
    if args.round_ms <= 0:
        ap.error("--round-ms must be > 0")
    os.makedirs(args.workdir, exist_ok=True)
    steps(args)
    if not args.no_compile_times:
        compile_times(args)


if __name__ == "__main__":
    main(sys.argv[1:])
