#!/usr/bin/python3
"""Make the bundled demo: a small CNN pretrained on handwritten digits 0-4, and the training
step that fine-tunes it on digits 5-9 with its conv weights frozen.

    PYTHONPATH=python .venv/bin/python examples/make_demo_example.py [--digits PATH]

Reads scikit-learn's digits data set (1797 images of 8x8 pixels, values 0..16; the file ships
with Debian's python3-sklearn at DEFAULT_DIGITS and is read with gzip + numpy, so sklearn
itself is not imported). Pretrains DigitsNet on the digits 0-4 (Adam, PRETRAIN_EPOCHS epochs,
seeded), then gives it a fresh classifier head for the five classes 5-9 (label - 5) and
exports the fine-tuning step (batch BATCH): the conv weights are frozen (stored once, in the
.safetensors file); the conv biases and the head train, so the gradient flows through the
frozen convs (convolution_backward asking for input and bias gradients only: what edgegrad
lowers to the NPU). Writes, next to this script:

    digits_step.json, digits_step.safetensors      the step (frozen weights inside)
    digits_step.eval.json                          its eval-mode forward (loss, output)
    digits_step.init.safetensors                   the trainable tensors' first values
    digits_step_inputs/<input name>.npy            the first batch of digits 5-9 and the
                                                   trainable parameters
    digits_step_reference/<output name>.npy        PyTorch's loss and gradients on it (eager)

so `make demo` fine-tunes and checks itself without PyTorch (scripts/demo.sh; its data come
from the same Debian file, scripts/digits_data.py). Deterministic: the same files for the same
data and PyTorch. Every file is written atomically.
"""
import argparse
import gzip
import io
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

from edgegrad import export_training_step  # noqa: E402
from edgegrad._files import write_atomic  # noqa: E402

DEFAULT_DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
BATCH = 32
PRETRAIN_EPOCHS = 40
STEM = os.path.join(HERE, "digits_step")
TRAINABLE = ("conv1.bias", "conv2.bias", "fc.weight", "fc.bias")


class DigitsNet(nn.Module):
    """conv(1->16, 3, pad 1) -> relu -> conv(16->32, 3, stride 2, pad 1) -> relu -> flatten
    -> linear(32*4*4 -> 5)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.fc = nn.Linear(32 * 4 * 4, 5)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


def load_digits(path):
    """Every digit: images [N, 1, 8, 8] float32 in [0, 1], labels int64."""
    with gzip.open(path, "rb") as f:
        table = np.loadtxt(f, delimiter=",")
    if table.ndim != 2 or table.shape[1] != 65:
        raise ValueError(f"{path}: expected rows of 64 pixels + label, got {table.shape}")
    images = (table[:, :64] / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    return torch.from_numpy(images), torch.from_numpy(table[:, 64].astype(np.int64))


def pretrain(model, x, y):
    """Adam over shuffled batches of the digits 0-4; returns the training accuracy."""
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(0)
    for _ in range(PRETRAIN_EPOCHS):
        order = torch.randperm(len(x), generator=g)
        for s in range(0, len(x) - BATCH + 1, BATCH):
            idx = order[s:s + BATCH]
            loss = F.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def eager_reference(model, x, target):
    """PyTorch's loss and gradients, computed eagerly with backward()."""
    model.zero_grad()
    loss = F.cross_entropy(model(x), target)
    loss.backward()
    ref = {"loss": loss.detach()}
    ref.update({"grad_" + n.replace(".", "_"): p.grad for n, p in model.named_parameters()
                if n in TRAINABLE})
    return ref


def save_npy_folder(folder, tensors):
    """Write each tensor as folder/<name>.npy (atomically); remove stale .npy files."""
    os.makedirs(folder, exist_ok=True)
    for stale in set(os.listdir(folder)) - {n + ".npy" for n in tensors}:
        if stale.endswith(".npy"):
            os.unlink(os.path.join(folder, stale))
    for name, t in tensors.items():
        buffer = io.BytesIO()
        np.save(buffer, t.detach().contiguous().numpy())
        write_atomic(os.path.join(folder, name + ".npy"), buffer.getvalue())


def main(argv):
    p = argparse.ArgumentParser(description="pretrain the digits demo model and export its "
                                "fine-tuning step")
    p.add_argument("--digits", default=DEFAULT_DIGITS,
                   help="sklearn's digits.csv.gz (apt-get install python3-sklearn)")
    args = p.parse_args(argv)
    if not os.path.exists(args.digits):
        print(f"{args.digits}: not found: install python3-sklearn or pass --digits",
              file=sys.stderr)
        return 1
    torch.manual_seed(0)
    x, y = load_digits(args.digits)
    low, high = y < 5, y >= 5
    model = DigitsNet()
    acc = pretrain(model, x[low], y[low])
    model.fc = nn.Linear(32 * 4 * 4, 5)  # a fresh head for the digits 5-9 (seeded above)
    xf, yf = x[high][:BATCH], y[high][:BATCH] - 5
    for name, param in model.named_parameters():
        param.requires_grad_(name in TRAINABLE)
    result = export_training_step(model, F.cross_entropy, (xf, yf), STEM, trainable=TRAINABLE)
    inputs = {"input": xf, "target": yf}
    inputs.update({n.replace(".", "_"): p for n, p in model.named_parameters() if n in TRAINABLE})
    for p_ in model.parameters():
        p_.requires_grad_(True)
    reference = eager_reference(model, xf, yf)
    save_npy_folder(STEM + "_inputs", inputs)
    save_npy_folder(STEM + "_reference", reference)
    print(f"pretrained on {int(low.sum())} digits 0-4 (train accuracy {acc:.3f}); wrote "
          f"{result.json_path}, {result.eval_path}, {result.weights_path}, {result.init_path}, "
          f"{len(inputs)} inputs, {len(reference)} reference outputs; first-step loss "
          f"{float(reference['loss']):.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
