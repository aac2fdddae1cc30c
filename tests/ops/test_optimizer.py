"""test_optimizer — edgegrad's optimizers (eg_optimizer_*, driven by `edgegrad train`) against
torch.optim, the weights compared after EVERY step, one case per term of the update rules.

The model is a two-layer MLP (Linear 6->5, tanh, Linear 5->3) with an MSE loss, exported with
export_training_step at batch B = 4; the data set holds K * B = 24 examples. Weights after step
k come from `edgegrad train --epochs 1 --no-shuffle` over the first k * B examples (k = 1..K):
its k steps see the batches PyTorch's loop sees, in the same order. They must match, after
every step and for every parameter, a torch.optim loop with the same hyperparameters at the
project tolerance (edgegrad.tolerance).

A case isolates terms: besides the reference it names ablations, the same PyTorch loop with one
term switched off or swapped (no weight decay, no dampening, Adam's coupled L2 in place of
AdamW's decoupled decay, no bias correction, ...). An ablation is what edgegrad would compute
if it dropped that term, so the test also asserts that each ablation's weights leave the
reference by at least MARGIN times the tolerance at some step: a case whose hyperparameters
cannot tell the term apart fails instead of passing whatever the term does. The largest
ablation distance is printed per case (in tolerances).

Not covered: amsgrad and maximize, which edgegrad's optimizers do not offer.

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_optimizer.py --edgegrad build/edgegrad \\
        --workdir build/ops-optimizer
"""
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
from edgegrad.tolerance import bound, compare  # noqa: E402

B, K = 4, 6
MARGIN = 10.0  # an ablation must move some weight by this many tolerances at some step


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(6, 5), torch.nn.Linear(5, 3)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


class AdamNoBiasCorrection(torch.optim.Optimizer):
    """Adam without its bias corrections (m / (sqrt(v) + eps)): the ablation of that term,
    which torch.optim has no switch for. Used only to show the Adam cases can see the term."""

    def __init__(self, params, lr, betas, eps=1e-8, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                g = p.grad + group["weight_decay"] * p
                st = self.state[p]
                if not st:
                    st["m"], st["v"] = torch.zeros_like(p), torch.zeros_like(p)
                st["m"].mul_(b1).add_(g, alpha=1 - b1)
                st["v"].mul_(b2).addcmul_(g, g, value=1 - b2)
                p.sub_(group["lr"] * st["m"] / (st["v"].sqrt() + group["eps"]))


def sgd(**kw):
    return lambda params: torch.optim.SGD(params, **kw)


def adam(cls=torch.optim.Adam, **kw):
    return lambda params: cls(params, **kw)


# (name, edgegrad train flags, the reference, [(ablated term, its loop's optimizer)])
SGD_LR = dict(lr=0.1)
ADAM = dict(lr=0.05, betas=(0.8, 0.95))
ADAM_FLAGS = ["--lr", "0.05", "--betas", "0.8,0.95"]
CASES = [
    ("sgd", ["--optimizer", "sgd", "--lr", "0.1"], sgd(**SGD_LR), []),
    ("sgd_weight_decay", ["--optimizer", "sgd", "--lr", "0.1", "--weight-decay", "0.2"],
     sgd(**SGD_LR, weight_decay=0.2), [("weight decay", sgd(**SGD_LR))]),
    ("sgd_momentum", ["--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9"],
     sgd(**SGD_LR, momentum=0.9), [("momentum", sgd(**SGD_LR))]),
    ("sgd_dampening", ["--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9",
                       "--dampening", "0.3"],
     sgd(**SGD_LR, momentum=0.9, dampening=0.3),
     [("dampening", sgd(**SGD_LR, momentum=0.9)),
      ("1 - dampening in place of dampening", sgd(**SGD_LR, momentum=0.9, dampening=0.7)),
      ("momentum", sgd(**SGD_LR))]),
    ("sgd_nesterov", ["--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9", "--nesterov"],
     sgd(**SGD_LR, momentum=0.9, nesterov=True),
     [("nesterov", sgd(**SGD_LR, momentum=0.9))]),
    ("sgd_nesterov_weight_decay", ["--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9",
                                   "--nesterov", "--weight-decay", "0.2"],
     sgd(**SGD_LR, momentum=0.9, nesterov=True, weight_decay=0.2),
     [("weight decay", sgd(**SGD_LR, momentum=0.9, nesterov=True)),
      ("nesterov", sgd(**SGD_LR, momentum=0.9, weight_decay=0.2))]),
    ("sgd_momentum_dampening_weight_decay",
     ["--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.8", "--dampening", "0.3",
      "--weight-decay", "0.1"],
     sgd(**SGD_LR, momentum=0.8, dampening=0.3, weight_decay=0.1),
     [("weight decay", sgd(**SGD_LR, momentum=0.8, dampening=0.3)),
      ("dampening", sgd(**SGD_LR, momentum=0.8, weight_decay=0.1))]),
    ("adam", ["--optimizer", "adam", *ADAM_FLAGS], adam(**ADAM),
     [("bias correction", adam(AdamNoBiasCorrection, **ADAM)),
      ("betas", adam(lr=0.05))]),
    ("adam_eps", ["--optimizer", "adam", *ADAM_FLAGS, "--eps", "0.02"], adam(**ADAM, eps=0.02),
     [("eps", adam(**ADAM))]),
    ("adam_l2", ["--optimizer", "adam", *ADAM_FLAGS, "--weight-decay", "0.3"],
     adam(**ADAM, weight_decay=0.3),
     [("L2 weight decay", adam(**ADAM)),
      ("L2 coupled, not decoupled", adam(torch.optim.AdamW, **ADAM, weight_decay=0.3)),
      ("bias correction", adam(AdamNoBiasCorrection, **ADAM, weight_decay=0.3))]),
    ("adamw", ["--optimizer", "adamw", *ADAM_FLAGS, "--weight-decay", "0.5"],
     adam(torch.optim.AdamW, **ADAM, weight_decay=0.5),
     [("decoupled weight decay", adam(torch.optim.AdamW, **ADAM, weight_decay=0.0)),
      ("decoupled, not L2", adam(**ADAM, weight_decay=0.5))]),
]


def prepare(workdir):
    """Exports the step, writes data_k/ (the first k * B examples) for k = 1..K; returns the
    model's initial state_dict, the data and the step's stem."""
    torch.manual_seed(0)
    model = MLP().train()
    x, t = torch.randn(K * B, 6), torch.randn(K * B, 3)
    stem = os.path.join(workdir, "step")
    export_training_step(model, F.mse_loss, (x[:B], t[:B]), stem, eval_graph=False)
    for k in range(1, K + 1):
        d = os.path.join(workdir, f"data_{k}")
        os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "input.npy"), x[:k * B].numpy())
        np.save(os.path.join(d, "target.npy"), t[:k * B].numpy())
    return model.state_dict(), x, t, stem


def torch_weights(init, x, t, make_opt):
    """The state_dict after each of K steps of `make_opt`'s optimizer from `init` over the
    batches in file order: a list of K {name: numpy array}."""
    model = MLP()
    model.load_state_dict(init)
    opt = make_opt(list(model.parameters()))
    out = []
    for k in range(K):
        loss = F.mse_loss(model(x[k * B:(k + 1) * B]), t[k * B:(k + 1) * B])
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append({n: v.detach().numpy().copy() for n, v in model.state_dict().items()})
    return out


def edgegrad_weights(exe, workdir, stem, name, flags):
    """edgegrad's state_dict after steps 1..K (one `edgegrad train` run each)."""
    out = []
    for k in range(1, K + 1):
        w = os.path.join(workdir, f"{name}_{k}.safetensors")
        r = subprocess.run([exe, "train", stem + ".json", "--data",
                            os.path.join(workdir, f"data_{k}"), "--init",
                            stem + ".init.safetensors", "--epochs", "1", "--no-shuffle",
                            "--out", w, "-q", *flags], capture_output=True, text=True,
                           timeout=300)
        if r.returncode != 0:
            raise AssertionError(f"edgegrad train ({k} steps) exit {r.returncode}: "
                                 f"{r.stderr.strip()}")
        tensors, _ = safetensors.load(w)
        out.append({n: np.asarray(v) for n, v in tensors.items()})
    return out


def distance(a, ref):
    """The largest |a - ref| over steps and weights, in tolerances of the reference."""
    return max(float(np.max(np.abs(a[k][n].astype(np.float64) - ref[k][n]) / bound(ref[k][n])))
               for k in range(K) for n in ref[k])


def run_case(exe, workdir, stem, init, x, t, name, flags, reference, ablations):
    want = torch_weights(init, x, t, reference)
    got = edgegrad_weights(exe, workdir, stem, name, flags)
    why = []
    for k in range(K):
        if set(got[k]) != set(want[k]):
            return f"step {k + 1}: --out names {sorted(got[k])}, want {sorted(want[k])}"
        for n in sorted(want[k]):
            bad = compare(got[k][n], want[k][n])
            if bad:
                why.append(f"{n} after step {k + 1} of {K}: {bad}")
        if why:  # later steps only repeat the first divergence
            return why
    seen = []
    for term, make in ablations:
        d = distance(torch_weights(init, x, t, make), want)
        seen.append(f"{term} {d:.0f}")
        if d < MARGIN:
            why.append(f"without {term} the weights move by at most {d:.2f} tolerances (< "
                       f"{MARGIN:g}): the case cannot tell the term apart")
    print(f"{name}: matches torch.optim after each of {K} steps"
          + (f"; ablations, in tolerances: {', '.join(seen)}" if seen else ""))
    return why


def main():
    run = Runner("optimizer")
    os.makedirs(run.workdir, exist_ok=True)
    init, x, t, stem = prepare(run.workdir)
    for name, flags, reference, ablations in CASES:
        run.record(name, lambda c=(name, flags, reference, ablations):
                   run_case(run.exe, run.workdir, stem, init, x, t, *c))
    run.finish()


if __name__ == "__main__":
    main()
