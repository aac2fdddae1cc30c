#!/usr/bin/env python3
"""Make the federated demo's step and data (make fed-demo, tests/python/test_federated.py).

    PYTHONPATH=python .venv/bin/python scripts/fed_demo_step.py OUT_DIR [--digits PATH]

A small conv net with BatchNorm (conv 1->8, BatchNorm, ReLU, conv 8->16 stride 2, ReLU, linear
256->5), pretrained with PyTorch on the digits 0-4 of scikit-learn's digits set (6 epochs of
Adam, seeded), given a fresh head for the digits 5-9 and exported whole (every parameter
trains; BatchNorm's running statistics are state) with batch 4, so that a fleet of many small
clients each holds whole batches. Writes OUT_DIR/step.json, step.eval.json,
step.init.safetensors (edgegrad.export_training_step) and the digits 5-9 (label - 5) in an
order drawn from seed 0: OUT_DIR/train.npz (672 examples) and val.npz (the other 224).
Deterministic for the same data and PyTorch.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "examples")]

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from edgegrad import export_training_step  # noqa: E402
from make_demo_example import DEFAULT_DIGITS, load_digits  # noqa: E402

BATCH, TRAIN = 4, 672


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 5)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir")
    p.add_argument("--digits", default=DEFAULT_DIGITS)
    a = p.parse_args(argv)
    try:
        x, y = load_digits(a.digits)
    except OSError as e:
        print(f"fed_demo_step: --digits {a.digits} ({e.strerror or e}): scikit-learn's digits "
              f"(Debian's python3-sklearn ships them)", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    low = y < 5
    net = SmallNet()
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    xl, yl = x[low], y[low]
    for _ in range(6):
        order = torch.randperm(len(xl))
        for s in range(0, len(xl) - 31, 32):
            idx = order[s:s + 32]
            opt.zero_grad()
            F.cross_entropy(net(xl[idx]), yl[idx]).backward()
            opt.step()
    net.fc = nn.Linear(16 * 4 * 4, 5)  # a fresh head for the digits 5-9
    net.train()
    os.makedirs(a.out_dir, exist_ok=True)
    xh, yh = x[~low].numpy(), (y[~low] - 5).numpy()
    export_training_step(net, F.cross_entropy, (torch.from_numpy(xh[:BATCH]),
                                                torch.from_numpy(yh[:BATCH])),
                         os.path.join(a.out_dir, "step"))
    order = np.random.default_rng(0).permutation(len(yh))
    for name, idx in (("train", order[:TRAIN]), ("val", order[TRAIN:])):
        path = os.path.join(a.out_dir, name + ".npz")
        np.savez(path + ".tmp.npz", input=xh[idx], target=yh[idx])
        os.replace(path + ".tmp.npz", path)
    print(f"fed_demo_step: {a.out_dir}/step.json (batch {BATCH}), train.npz ({TRAIN} digits "
          f"5-9), val.npz ({len(yh) - TRAIN})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
