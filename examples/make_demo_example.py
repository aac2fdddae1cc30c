#!/usr/bin/python3
"""Export the bundled demo: one training step of a small CNN on real handwritten digits.

    PYTHONPATH=python /usr/bin/python3 examples/make_demo_example.py [--digits PATH]

Reads a batch of 16 images from scikit-learn's digits data set (8x8 pixels, values 0..16,
10 classes; the file ships with Debian's python3-sklearn at DEFAULT_DIGITS, read directly with
gzip + numpy, so sklearn itself is not imported) and writes, next to this script:

    digits_step.json, digits_step.safetensors      the graph (edgegrad.export)
    digits_step_inputs/<input name>.npy            input, target and every parameter
    digits_step_reference/<output name>.npy        PyTorch's loss and gradients (eager)

so the demo runs and checks itself without PyTorch. Model:
conv(1->8, 3, pad 1) -> relu -> conv(8->16, 3, stride 2, pad 1) -> relu -> flatten
-> linear(16*4*4 -> 10), cross-entropy loss. It is a frozen-backbone fine-tuning step, the kind
on-device training is about: the conv weights are frozen (stored in the .safetensors file),
the conv biases and the classifier head train. The gradient still flows through the frozen
convs to reach the conv biases, so the convs' backward asks for input and bias gradients only
([True, False, True] and [False, False, True]) — what edgegrad lowers to the NPU.
Deterministic: the same files for the same data. Every file is written atomically.
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
BATCH = 16
STEM = os.path.join(HERE, "digits_step")
TRAINABLE = ("conv1.bias", "conv2.bias", "fc.weight", "fc.bias")


class DigitsNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


def load_digits(path, count):
    """The first ``count`` digits: images [count, 1, 8, 8] float32 in [0, 1], labels int64."""
    with gzip.open(path, "rb") as f:
        table = np.loadtxt(f, delimiter=",", max_rows=count)
    if table.shape != (count, 65):
        raise ValueError(f"{path}: expected {count} rows of 64 pixels + label, "
                         f"got {table.shape}")
    images = (table[:, :64] / 16.0).astype(np.float32).reshape(count, 1, 8, 8)
    return torch.from_numpy(images), torch.from_numpy(table[:, 64].astype(np.int64))


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
    p = argparse.ArgumentParser(description="export the digits demo training step")
    p.add_argument("--digits", default=DEFAULT_DIGITS,
                   help="sklearn's digits.csv.gz (apt-get install python3-sklearn)")
    args = p.parse_args(argv)
    if not os.path.exists(args.digits):
        print(f"{args.digits}: not found: install python3-sklearn or pass --digits",
              file=sys.stderr)
        return 1
    torch.manual_seed(0)
    model = DigitsNet()
    x, target = load_digits(args.digits, BATCH)
    result = export_training_step(model, F.cross_entropy, (x, target), STEM, trainable=TRAINABLE)
    inputs = {"input": x, "target": target}
    inputs.update({n.replace(".", "_"): p for n, p in model.named_parameters() if n in TRAINABLE})
    reference = eager_reference(model, x, target)
    save_npy_folder(STEM + "_inputs", inputs)
    save_npy_folder(STEM + "_reference", reference)
    print(f"wrote {result.json_path}, {result.weights_path}, {len(inputs)} inputs, "
          f"{len(reference)} reference outputs; loss {float(reference['loss']):.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
