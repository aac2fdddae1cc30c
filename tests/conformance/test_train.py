"""`edgegrad train` against a PyTorch training loop, and its refusals and resume:

    python tests/conformance/test_train.py --edgegrad build/edgegrad --workdir DIR [--filter S]

Numeric cases (zoo models, export_training_step at batch 4; 41 random examples, so 10 steps per
epoch with one example dropped; 2 epochs = 20 steps), each on the CPU path and as a program
compiled for SM8650 at fp32 (`edgegrad compile --precision fp32 -o`, then `edgegrad train
PROGRAM.egp`; fp32 is what the PyTorch loop computes in): edgegrad's per-step losses (--log)
and trained weights (--out, by state_dict name) must match a PyTorch loop over the same batches
in the same order (edgegrad's shuffle reproduced here) with the same torch.optim optimizer and
per-epoch schedule, at the project tolerance (edgegrad.tolerance; integers exact):
- lenet5: SGD, momentum 0.9, Nesterov, weight decay 1e-4, shuffled (seed 7), StepLR(1, 0.5);
- resnet_block: BatchNorm state (running statistics, num_batches_tracked), Adam, file order;
- mobilenet_v2_block: depthwise convs, BatchNorm, MSE loss on float targets, AdamW (weight
  decay 0.05), shuffled, cosine schedule;
- finetune_head: a trained head and conv1 bias over a frozen backbone with a train-mode
  BatchNorm, SGD with momentum and dampening 0.1; data as numpy.savez_compressed archives;
- dropout: Dropout2d and Dropout (the step's random inputs) with BatchNorm, SGD with momentum
  and weight decay, shuffled; the masks edgegrad draws are drawn here from the same stream
  (Masks) and PyTorch's Bernoulli draws answer with them; data as numpy.savez archives.
Adam's data seed is 1: with seed 0, step 17 of resnet_block puts one pre-activation of the
block's last ReLU 1.2e-7 from zero (float64), so float32 rounding picks the branch and both
trajectories are right yet part (measured: each step's gradients before it agree with PyTorch's
as closely as PyTorch float32 does with float64); seeds 1-5 have no such tie.
The --out file must load into a fresh model with load_state_dict(strict=False): no unexpected
key, and missing keys exactly the frozen parameters; that model in eval mode must give, on the
9-example validation set (--eval STEM.eval.json --val-data, the eval graph compiled too for
SM8650), the val loss and top-1 accuracy edgegrad logged after the last epoch (an eval event
before training is logged too).

Behaviour cases: kill -9 mid-run and --resume give weights bit-identical to an uninterrupted
run (the dropout model: Adam state, BatchNorm buffers and the masks' stream restored), and no
temporary file stays beside the checkpoint; bad data (wrong shape, dtype, negative label, NaN,
truncated .npy, too few examples; an .npz member missing, cut short, altered, not an array, a
file that is no archive) and a mismatched or corrupt checkpoint are refused with exit 2 and one line before any step, no
--out file written; a loss that turns inf/NaN stops with exit 1, the last checkpoint intact.
Prints one line per case and `train: N passed, M failed`; exit 1 on any failure.
"""
import argparse
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "python")]

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import zoo  # noqa: E402
from edgegrad import export_training_step  # noqa: E402
from edgegrad import safetensors  # noqa: E402
from edgegrad._functional import replay_draws  # noqa: E402
from edgegrad.tolerance import compare  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)
B, N, V, EPOCHS = 4, 41, 9, 2
M64 = (1 << 64) - 1


GOLDEN, RNG_SALT = 0x9E3779B97F4A7C15, 0x6A09E667F3BCC909


def _mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class Masks:
    """edgegrad train's random inputs (src/cli/train.c draw_masks): one splitmix64 stream from
    seed ^ RNG_SALT, each element 1 where its number's top 24 bits < p * 2^24."""

    def __init__(self, seed, draws):
        self.state, self.draws = (seed ^ RNG_SALT) & M64, draws  # draws: [(shape, p)] in order

    def step(self):
        masks = []
        for shape, p in self.draws:
            n = int(np.prod(shape))
            with np.errstate(over="ignore"):
                s = np.uint64(self.state) + np.uint64(GOLDEN) * np.arange(1, n + 1,
                                                                            dtype=np.uint64)
                z = s
                z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
                z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
                z = z ^ (z >> np.uint64(31))
            self.state = (self.state + GOLDEN * n) & M64
            one = (z >> np.uint64(40)).astype(np.float64) < p * 16777216.0
            masks.append(torch.from_numpy(one.reshape(shape).astype(np.float32)))
        return masks


def order(n, seed, epoch, shuffle):
    """edgegrad train's example order of `epoch` (src/cli/train.c order_epoch)."""
    p = list(range(n))
    if not shuffle:
        return p
    s = (seed ^ ((epoch * 0xD1B54A32D192ED03) & M64)) & M64
    for i in range(n - 1, 0, -1):
        s = (s + GOLDEN) & M64
        j = (_mix(s) * (i + 1)) >> 64
        p[i], p[j] = p[j], p[i]
    return p


class Case:
    """`data`: how the data sets are written: "npy" (a folder), "npz" (numpy.savez) or
    "npz_compressed" (numpy.savez_compressed)."""

    def __init__(self, name, make, shape, target, loss, opt, flags, trainable=None,
                 shuffle=False, schedule=None, data_seed=0, data="npy"):
        self.name, self.make, self.shape, self.target = name, make, shape, target
        self.data_seed, self.data = data_seed, data
        self.loss, self.opt, self.flags, self.trainable = loss, opt, flags, trainable
        self.shuffle, self.schedule = shuffle, schedule


def _cls(classes):
    return lambda n: torch.randint(0, classes, (n,), dtype=torch.int64)


CASES = [
    Case("lenet5", zoo.LeNet5, (1, 32, 32), _cls(10), F.cross_entropy,
         lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, nesterov=True, weight_decay=1e-4),
         ["--optimizer", "sgd", "--lr", "0.01", "--momentum", "0.9", "--nesterov",
          "--weight-decay", "1e-4", "--seed", "7", "--lr-schedule", "step", "--lr-step", "1",
          "--lr-gamma", "0.5"], shuffle=True,
         schedule=lambda o: torch.optim.lr_scheduler.StepLR(o, 1, 0.5)),
    Case("resnet_block", zoo.ResNetBlockNet, (8, 16, 16), _cls(5), F.cross_entropy,
         lambda p: torch.optim.Adam(p, lr=1e-3), ["--optimizer", "adam", "--lr", "1e-3",
                                                  "--no-shuffle"], data_seed=1),
    Case("mobilenet_v2_block", zoo.MobileNetV2Net, (3, 16, 16),
         lambda n: torch.randn(n, 4), F.mse_loss,
         lambda p: torch.optim.AdamW(p, lr=2e-3, weight_decay=0.05),
         ["--optimizer", "adamw", "--lr", "2e-3", "--weight-decay", "0.05", "--seed", "11",
          "--lr-schedule", "cosine"], shuffle=True,
         schedule=lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, EPOCHS), data_seed=1),
    Case("finetune_head", lambda: zoo.SmallConvNet(bn=True), (3, 16, 16), _cls(5),
         F.cross_entropy,
         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, dampening=0.1),
         ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.8", "--dampening", "0.1",
          "--no-shuffle"], trainable=["conv1.bias", "fc.weight", "fc.bias"],
         data="npz_compressed"),
    Case("dropout", zoo.DropoutNet, (3, 10, 10), _cls(5), F.cross_entropy,
         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-3),
         ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9", "--weight-decay", "1e-3",
          "--seed", "3"], shuffle=True, data="npz"),
]


def prepare(case, work):
    """Exports the case's step and writes its data set; returns (model, x, t, stem)."""
    torch.manual_seed(case.data_seed)
    model = case.make().train()
    x, t = torch.randn(N, *case.shape), case.target(N)
    stem = os.path.join(work, "step")
    export_training_step(model, case.loss, (x[:B], t[:B]), stem, trainable=case.trainable)
    vx, vt = torch.randn(V, *case.shape), case.target(V)
    for folder, a, b in (("data", x, t), ("val", vx, vt)):
        if case.data == "npy":
            os.makedirs(os.path.join(work, folder), exist_ok=True)
            np.save(os.path.join(work, folder, "input.npy"), a.numpy())
            np.save(os.path.join(work, folder, "target.npy"), b.numpy())
        else:
            save = np.savez if case.data == "npz" else np.savez_compressed
            save(os.path.join(work, folder + ".npz"), input=a.numpy(), target=b.numpy())
    case.val = (vx, vt)
    return model, x, t, stem


def data_path(case, work, folder):
    return os.path.join(work, folder + ("" if case.data == "npy" else ".npz"))


def random_draws(stem):
    """[(shape, p)] of the step's random inputs, in input order (the graph JSON's)."""
    graph = json.load(open(stem + ".json"))
    shapes = {v["id"]: v.get("shape") for v in graph["values"]}
    p = {r["input"]: r["p"] for r in graph.get("random_inputs", [])}
    return [(shapes[e["value"]], p[e["name"]]) for e in graph["inputs"] if e["name"] in p]


def torch_loop(case, model, x, t, seed, draws=()):
    """PyTorch's training over the same batches: (per-step losses, trained state_dict). With
    `draws`, the model's Bernoulli draws are answered by edgegrad's masks of each step."""
    model = copy.deepcopy(model)
    names = case.trainable or [n for n, _ in model.named_parameters()]
    for n, p in model.named_parameters():
        p.requires_grad_(n in names)
    params = dict(model.named_parameters())
    opt = case.opt([params[n] for n in names])
    sched = case.schedule(opt) if case.schedule else None
    losses = []
    masks = Masks(seed, draws)
    for epoch in range(EPOCHS):
        perm = order(N, seed, epoch, case.shuffle)
        for s in range(N // B):
            idx = torch.tensor(perm[s * B:(s + 1) * B])
            step = replay_draws(lambda a, b: case.loss(model(a), b), masks.step())
            loss = step(x[idx], t[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        if sched:
            sched.step()
    return losses, {k: v.detach() for k, v in model.state_dict().items()}


def run(cli, *args, timeout=600):
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=timeout)


def seed_of(case):
    f = case.flags
    return int(f[f.index("--seed") + 1]) if "--seed" in f else 0


def numeric(cli, case, work, soc):
    model, x, t, stem = prepare(case, work)
    out, log = os.path.join(work, f"w_{soc}.safetensors"), os.path.join(work, f"log_{soc}.jsonl")
    args = [stem + ".json", "--data", data_path(case, work, "data"), "--init",
            stem + ".init.safetensors", "--epochs", str(EPOCHS), "--out", out, "--log", log,
            "--eval", stem + ".eval.json", "--val-data", data_path(case, work, "val"),
            "-q", *case.flags]
    if soc != "cpu":  # the programs a device app ships: compiled once, then trained
        for graph, k in ((stem + ".json", 0), (stem + ".eval.json", args.index("--eval") + 1)):
            egp = graph[:-len(".json")] + f"_{soc}.egp"
            r = run(cli, "compile", graph, "--soc", soc, "--precision", "fp32", "-o", egp)
            if r.returncode != 0:
                return f"edgegrad compile {graph} exit {r.returncode}: {r.stderr.strip()}"
            args[k] = egp
    r = run(cli, "train", *args)
    if r.returncode != 0:
        return f"edgegrad train exit {r.returncode}: {r.stderr.strip()}"
    draws = random_draws(stem)
    if (case.make is zoo.DropoutNet) != bool(draws):
        return f"random inputs {draws}: the export's Dropout masks are not what the case has"
    want_losses, want_sd = torch_loop(case, model, x, t, seed_of(case), draws)
    events = [json.loads(line) for line in open(log)]
    got_losses = [e["loss"] for e in events if e["event"] == "step"]
    if len(got_losses) != len(want_losses):
        return f"{len(got_losses)} steps logged, PyTorch ran {len(want_losses)}"
    bad = compare(np.array(got_losses, np.float32), np.array(want_losses, np.float32))
    if bad:
        return f"per-step losses: {bad}"
    got, _ = safetensors.load(out)
    trained = set(case.trainable or [n for n, _ in model.named_parameters()])
    state = {n for n, _ in model.named_buffers()}
    if set(got) != trained | state:
        return f"--out names {sorted(got)}, want {sorted(trained | state)}"
    for name, value in got.items():
        bad = compare(np.asarray(value), want_sd[name].numpy())
        if bad:
            return f"{name} after {len(want_losses)} steps: {bad}"
    fresh = case.make()
    res = fresh.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in got.items()},
                                strict=False)
    frozen = {n for n, _ in model.named_parameters()} - trained
    if res.unexpected_keys or set(res.missing_keys) != frozen:
        return (f"load_state_dict: unexpected {res.unexpected_keys}, missing "
                f"{res.missing_keys} (want the frozen {sorted(frozen)})")
    # the loaded model, in eval mode on the validation set, against the last epoch's val_*
    fresh.load_state_dict({k: v for k, v in model.state_dict().items() if k in frozen},
                          strict=False)
    fresh.eval()
    vx, vt = case.val
    losses, right = [], 0
    with torch.no_grad():
        for s in range(V // B):
            out = fresh(vx[s * B:(s + 1) * B])
            losses.append(float(case.loss(out, vt[s * B:(s + 1) * B])))
            if not vt.dtype.is_floating_point:
                right += int((out.argmax(1) == vt[s * B:(s + 1) * B]).sum())
    last = [e for e in events if e["event"] == "epoch"][-1]
    first = [e for e in events if e["event"] == "eval"]
    if len(first) != 1 or "val_loss" not in first[0]:
        return f"no eval event before training in the log: {first}"
    bad = compare(np.float32(last["val_loss"]), np.float32(np.mean(losses)))
    if bad:
        return f"val loss after training: {bad}"
    if vt.dtype.is_floating_point:
        if "val_accuracy" in last:
            return "val_accuracy logged for a regression (MSE) model"
    elif last.get("val_accuracy") != right / (V // B * B):
        return (f"val accuracy {last.get('val_accuracy')}, PyTorch's with the --out weights "
                f"{right / (V // B * B)}")
    return None


# ---- behaviour ----


def _weights(path):
    with open(path, "rb") as f:
        return f.read()


def kill_resume(cli, work):
    """Killed with SIGKILL mid-run, then resumed: the same bytes as an uninterrupted run (Adam
    state, BatchNorm buffers, and Dropout masks drawn from the stream the checkpoint saves)."""
    case = next(c for c in CASES if c.name == "dropout")
    _, _, _, stem = prepare(case, work)
    base = [stem + ".json", "--data", data_path(case, work, "data"), "--init",
            stem + ".init.safetensors", "--optimizer", "adam", "--lr", "1e-3", "--seed", "5",
            "-q"]
    epochs = 40
    whole = os.path.join(work, "whole.safetensors")
    r = run(cli, "train", *base, "--epochs", str(epochs), "--out", whole)
    if r.returncode:
        return f"uninterrupted run exit {r.returncode}: {r.stderr.strip()}"
    for attempt in range(5):
        ck = os.path.join(work, f"ck{attempt}")
        resumed = os.path.join(work, f"resumed{attempt}.safetensors")
        args = [*base, "--epochs", str(epochs), "--out", resumed, "--checkpoint", ck,
                "--checkpoint-every", "3"]
        p = subprocess.Popen([cli, "train", *args], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        target = os.path.join(ck, "checkpoint.safetensors")
        deadline = time.time() + 120
        while not os.path.exists(target) and p.poll() is None and time.time() < deadline:
            time.sleep(0.001)
        time.sleep(0.02 * attempt)
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stderr.close()
        if p.returncode != -signal.SIGKILL:
            continue  # it finished before the kill: try again, killing sooner is not possible
        if os.path.exists(resumed):
            return "a killed run left its --out file"
        r = run(cli, "train", *args, "--resume")
        if r.returncode:
            return f"--resume exit {r.returncode}: {r.stderr.strip()}"
        if _weights(resumed) != _weights(whole):
            return "resumed weights differ from the uninterrupted run's"
        left = sorted(set(os.listdir(ck)) - {"checkpoint.safetensors"})
        if left:
            return f"files left beside the checkpoint after the resumed run: {left}"
        return None
    return "every attempt finished before it could be killed"


def refusals(cli, work):
    case = CASES[1]
    model, x, t, stem = prepare(case, work)
    init = stem + ".init.safetensors"
    out = os.path.join(work, "never.safetensors")

    def refused(label, data, want, *extra):
        r = run(cli, "train", stem + ".json", "--data", data, "--init", init, "--epochs", "1",
                "--out", out, *extra)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 2 or len(lines) != 1 or want not in lines[0] or r.stdout:
            return (f"{label}: exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r} "
                    f"(want exit 2, one line with {want!r}, nothing on stdout)")
        if os.path.exists(out):
            return f"{label}: --out was written"
        return None

    def data_with(label, **arrays):
        d = os.path.join(work, label)
        os.makedirs(d, exist_ok=True)
        base = {"input": x.numpy(), "target": t.numpy()}
        base.update(arrays)
        for k, v in base.items():
            if v is not None:
                np.save(os.path.join(d, k + ".npy"), v)
            elif os.path.exists(os.path.join(d, k + ".npy")):
                os.remove(os.path.join(d, k + ".npy"))
        return d

    xs = x.numpy()
    nan = xs.copy()
    nan[3, 0, 1, 2] = np.nan
    neg = t.numpy().copy()
    neg[5] = -1
    trunc = data_with("truncated")
    with open(os.path.join(trunc, "input.npy"), "r+b") as f:
        f.truncate(os.path.getsize(f.name) - 7)
    checks = [
        ("shape", data_with("shape", input=xs[:, :, :8]), "each example must be"),
        ("dtype", data_with("dtype", input=xs.astype(np.float64)), "dtype float64"),
        ("uint8", data_with("uint8", input=(np.abs(xs) * 10).astype(np.uint8)), "--normalize"),
        ("label", data_with("label", target=neg), "label -1"),
        ("nan", data_with("nan", input=nan), "is nan"),
        ("count", data_with("count", target=t.numpy()[:-1]), "same examples"),
        ("few", data_with("few", input=xs[:3], target=t.numpy()[:3]), "fewer than"),
        ("truncated", trunc, "input.npy"),
        ("missing", data_with("missing", target=None), "target.npy: missing"),
        ("no folder", os.path.join(work, "nodir"), "not a folder"),
    ]
    # .npz archives: a member missing, the archive cut short, a member's bytes altered (its
    # CRC then fails), a member that is not an array, a file that is no archive
    def npz_with(label, **arrays):
        path = os.path.join(work, label + ".npz")
        base = {"input": xs, "target": t.numpy()}
        base.update(arrays)
        np.savez(path, **{k: v for k, v in base.items() if v is not None})
        return path

    cut = npz_with("cut")
    with open(cut, "r+b") as f:
        f.truncate(os.path.getsize(cut) // 2)
    altered = npz_with("altered")
    blob = bytearray(open(altered, "rb").read())
    at = blob.index(b"\x93NUMPY") + 200  # inside input.npy's data (stored, not deflated)
    blob[at] ^= 0xFF
    open(altered, "wb").write(bytes(blob))
    junk = os.path.join(work, "junk.npz")
    with open(junk, "wb") as f:
        f.write(b"not a zip archive at all")
    notnpy = npz_with("notnpy", target=None)
    with zipfile.ZipFile(notnpy, "a") as z:
        z.writestr("target.npy", b"plain text")
    checks += [
        ("npz member", npz_with("nomember", target=None), "[target.npy]: missing"),
        ("npz shape", npz_with("npzshape", input=xs[:, :, :8]), "each example must be"),
        ("npz cut", cut, "not a folder nor a readable .npz archive"),
        ("npz altered", altered, "damaged"),
        ("npz junk", junk, "not a folder nor a readable .npz archive"),
        ("npz not npy", notnpy, "[target.npy]: not a .npy file"),
    ]
    for label, d, want in checks:
        bad = refused(label, d, want)
        if bad:
            return bad
    big = t.numpy().copy()
    big[7] = 5  # resnet_block has 5 classes: with the eval graph's [4, 5] output, refused
    bad = refused("classes", data_with("classes", target=big), "the model has 5 classes",
                  "--eval", stem + ".eval.json", "--val-split", "0.25")
    if bad:
        return bad
    # a checkpoint of another optimizer setting, then a corrupt one
    ck = os.path.join(work, "ck")
    r = run(cli, "train", stem + ".json", "--data", os.path.join(work, "data"), "--init", init,
            "--epochs", "1", "--checkpoint", ck, "-q")
    if r.returncode:
        return f"checkpoint run exit {r.returncode}: {r.stderr.strip()}"
    bad = refused("other run", os.path.join(work, "data"), "written by another run",
                  "--checkpoint", ck, "--resume", "--lr", "0.5")
    if bad:
        return bad
    with open(os.path.join(ck, "checkpoint.safetensors"), "r+b") as f:
        f.seek(9)
        f.write(b"\x00\x00garbage")
    return refused("corrupt checkpoint", os.path.join(work, "data"), "checkpoint",
                   "--checkpoint", ck, "--resume")


def diverges(cli, work):
    """A loss that becomes inf/NaN stops training (exit 1); the last checkpoint stays."""
    case = CASES[1]
    _, _, _, stem = prepare(case, work)
    ck = os.path.join(work, "ck")
    out = os.path.join(work, "never.safetensors")
    r = run(cli, "train", stem + ".json", "--data", os.path.join(work, "data"), "--init",
            stem + ".init.safetensors", "--epochs", "50", "--optimizer", "sgd", "--lr", "1e12",
            "--checkpoint", ck, "--checkpoint-every", "1", "--out", out, "-q")
    lines = r.stderr.strip().splitlines()
    if r.returncode != 1 or len(lines) != 1 or "training stopped" not in lines[0]:
        return f"exit {r.returncode}, stderr {r.stderr!r}: want exit 1 and one line"
    if os.path.exists(out):
        return "--out written by a run that failed"
    got, _ = safetensors.load(os.path.join(ck, "checkpoint.safetensors"))
    for name, value in got.items():
        v = np.asarray(value)
        if v.dtype.kind == "f" and not np.isfinite(v).all():
            return f"checkpoint tensor {name} is not finite: it was written after the bad step"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edgegrad", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--filter", default="")
    a = ap.parse_args()
    cli = os.path.abspath(a.edgegrad)
    shutil.rmtree(a.workdir, ignore_errors=True)
    jobs = [(f"{c.name}/{soc}", lambda w, c=c, soc=soc: numeric(cli, c, w, soc))
            for c in CASES for soc in ("cpu", "SM8650")]
    jobs += [("kill_resume", lambda w: kill_resume(cli, w)),
             ("refusals", lambda w: refusals(cli, w)),
             ("diverges", lambda w: diverges(cli, w))]
    passed = failed = 0
    for name, job in jobs:
        if a.filter not in name:
            continue
        work = os.path.join(a.workdir, name.replace("/", "_"))
        os.makedirs(work)
        try:
            why = job(work)
        except Exception as e:  # a harness error is a failure, with its reason
            why = f"{type(e).__name__}: {e}"
        print(f"{'ok  ' if why is None else 'FAIL'} {name}{'' if why is None else ': ' + why}")
        passed += why is None
        failed += why is not None
    print(f"train: {passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
