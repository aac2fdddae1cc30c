"""test_loss_scale — edgegrad's loss scaling (eg_optimizer_options.loss_scale, driven by
`edgegrad train --loss-scale`) against torch.amp.GradScaler on the CPU: the scale after EVERY
step, the skipped steps, and the weights after the run.

The model is a two-layer MLP (Linear 6->5, ReLU, Linear 5->3) with a cross-entropy loss,
exported with export_training_step at batch B = 4. Overflow is injected by the data: some
batches hold an example of magnitude 1e37, whose logits (~1e36) still give a finite loss
while its scaled gradients (~1e36 * S) overflow float32 to inf for any scale the run reaches:
GradScaler skips those steps and halves S; with growth_interval 2 the good steps between
them double S again. The PyTorch loop is GradScaler's documented one
(scaler.scale(loss).backward(); scaler.step(opt); scaler.update()) with SGD, momentum and
weight decay: an update on scaled gradients, or one on an overflowed step, moves the weights
far outside the project tolerance.

Cases: dynamic scaling (GradScaler's defaults but growth_interval 2), and a static scale
(GradScaler with growth and backoff of 1 is refused by torch, so the reference is the same
loop with scaler.update(S) each step, which keeps S).

PyTorch 1.13 has no CPU GradScaler: the test says NOT RUN there and passes.

    PYTHONPATH=python .venv/bin/python tests/ops/test_loss_scale.py --edgegrad build/edgegrad \\
        --workdir build/ops-loss-scale
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from optest import Runner  # noqa: E402
from edgegrad import safetensors  # noqa: E402
from edgegrad.export import export_training_step  # noqa: E402
from edgegrad.tolerance import compare  # noqa: E402

B, K = 4, 14
HUGE = 1e37
HUGE_BATCHES = (2, 3, 7, 12)  # 0-based steps whose batch holds an example of magnitude HUGE
SGD = dict(lr=0.05, momentum=0.9, weight_decay=0.1)
SGD_FLAGS = ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9", "--weight-decay", "0.1"]


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(6, 5), torch.nn.Linear(5, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def prepare(workdir):
    """Exports the step and writes the data set; returns the initial state_dict and data."""
    torch.manual_seed(0)
    model = MLP().train()
    x, t = torch.randn(K * B, 6), torch.randint(0, 3, (K * B,))
    # along fc1's first row, so it passes the ReLU; labelled as the class its logits (~1e36,
    # from fc2's first column) rank lowest, so its gradients are not 0
    w1, w2 = model.fc1.weight.detach()[0], model.fc2.weight.detach()[:, 0]
    for k in HUGE_BATCHES:
        x[k * B + 1] = w1 / w1.norm() * HUGE
        t[k * B + 1] = int(torch.argmin(w2))
    stem = os.path.join(workdir, "step")
    export_training_step(model, F.cross_entropy, (x[:B], t[:B]), stem, eval_graph=False)
    d = os.path.join(workdir, "data")
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "input.npy"), x.numpy())
    np.save(os.path.join(d, "target.npy"), t.numpy())
    return model.state_dict(), x, t, stem


def torch_run(init, x, t, scaler, static=None):
    """GradScaler's training loop over the K batches: (scale after each step, skipped steps,
    final state_dict)."""
    model = MLP()
    model.load_state_dict(init)
    opt = torch.optim.SGD(model.parameters(), **SGD)
    scales, skipped = [], 0
    for k in range(K):
        opt.zero_grad()
        loss = F.cross_entropy(model(x[k * B:(k + 1) * B]), t[k * B:(k + 1) * B])
        assert torch.isfinite(loss), f"step {k + 1}: the reference's loss {loss} is not finite"
        scaler.scale(loss).backward()
        scaler.step(opt)
        skipped += sum(v.item() for v in scaler._found_inf_per_device(opt).values()) > 0
        scaler.update(static)
        scales.append(scaler.get_scale())
    return scales, skipped, {n: v.detach().numpy().copy() for n, v in model.state_dict().items()}


def edgegrad_run(exe, workdir, stem, name, flags):
    """`edgegrad train` over the K batches in file order: (scale after each step from --log,
    skipped steps, --out's tensors)."""
    out, log = (os.path.join(workdir, f"{name}.{ext}") for ext in ("safetensors", "jsonl"))
    r = subprocess.run([exe, "train", stem + ".json", "--data", os.path.join(workdir, "data"),
                        "--init", stem + ".init.safetensors", "--epochs", "1", "--no-shuffle",
                        "--out", out, "--log", log, "-q", *SGD_FLAGS, *flags],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"edgegrad train exit {r.returncode}: {r.stderr.strip()}")
    steps = [e for e in map(json.loads, open(log)) if e["event"] == "step"]
    tensors, _ = safetensors.load(out)
    return ([e["loss_scale"] for e in steps], steps[-1]["skipped_steps"],
            {n: np.asarray(v) for n, v in tensors.items()})


def run_case(exe, workdir, stem, init, x, t, name, flags, make_scaler, static):
    want_scales, want_skipped, want_w = torch_run(init, x, t, make_scaler(), static)
    got_scales, got_skipped, got_w = edgegrad_run(exe, workdir, stem, name, flags)
    why = []
    if got_scales != want_scales:
        why.append(f"scale after each step {got_scales}, GradScaler's {want_scales}")
    if got_skipped != want_skipped:
        why.append(f"{got_skipped} skipped steps, GradScaler skipped {want_skipped}")
    if want_skipped != len(HUGE_BATCHES):
        why.append(f"the reference skipped {want_skipped} steps, not the {len(HUGE_BATCHES)} "
                   "injected: the case does not test what it says")
    for n in sorted(want_w):
        bad = compare(got_w[n], want_w[n]) if n in got_w else "missing from --out"
        if bad:
            why.append(f"{n} after {K} steps: {bad}")
    if not why:
        print(f"{name}: scales {want_scales[:6]}... and {want_skipped} skipped steps as "
              f"GradScaler's; weights match after {K} steps")
    return why


def main():
    run = Runner("loss_scale")
    if not hasattr(torch, "amp") or not hasattr(torch.amp, "GradScaler"):
        print(f"NOT RUN loss_scale: torch {torch.__version__} has no CPU torch.amp.GradScaler "
              "(PyTorch 2.3 and later)")
        print("loss_scale: 0 passed, 0 failed")
        sys.exit(0)
    os.makedirs(run.workdir, exist_ok=True)
    init, x, t, stem = prepare(run.workdir)
    cases = [
        ("dynamic", ["--loss-scale", "dynamic", "--loss-scale-interval", "2"],
         lambda: torch.amp.GradScaler("cpu", growth_interval=2), None),
        ("static", ["--loss-scale", "1024"],
         lambda: torch.amp.GradScaler("cpu", init_scale=1024.0), 1024.0),
    ]
    for name, flags, make_scaler, static in cases:
        run.record(name, lambda c=(name, flags, make_scaler, static):
                   run_case(run.exe, run.workdir, stem, init, x, t, *c))
    run.finish()


if __name__ == "__main__":
    main()
