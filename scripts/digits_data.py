#!/usr/bin/python3
"""Write the demo's fine-tuning data: the handwritten digits 5-9 of scikit-learn's digits set.

    /usr/bin/python3 scripts/digits_data.py OUT_DIR [--digits PATH]

Reads Debian's python3-sklearn copy of the data (digits.csv.gz: 8x8 pixels 0..16 and the label
per row; read with gzip + numpy, sklearn itself is not imported) and writes OUT_DIR/input.npy
(float32 [N, 1, 8, 8], pixels / 16, as examples/make_demo_example.py trained with) and
OUT_DIR/target.npy (int64 [N], label - 5: the fine-tuned head's five classes), atomically.
Needs numpy only.
"""
import argparse
import gzip
import os
import sys
import tempfile

import numpy as np

DEFAULT_DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"


def save_atomic(path, array):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        np.save(f, array)
    os.replace(tmp, path)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir")
    p.add_argument("--digits", default=DEFAULT_DIGITS)
    a = p.parse_args(argv)
    if not os.path.exists(a.digits):
        print(f"digits_data: {a.digits}: not found: apt-get install python3-sklearn (it ships "
              "the digits data set), or give --digits PATH", file=sys.stderr)
        return 2
    with gzip.open(a.digits, "rb") as f:
        table = np.loadtxt(f, delimiter=",")
    if table.ndim != 2 or table.shape[1] != 65:
        print(f"digits_data: {a.digits}: rows of {table.shape[-1]} values: expected 64 pixels "
              "and a label", file=sys.stderr)
        return 2
    keep = table[:, 64] >= 5
    images = (table[keep, :64] / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    labels = (table[keep, 64] - 5).astype(np.int64)
    os.makedirs(a.out_dir, exist_ok=True)
    save_atomic(os.path.join(a.out_dir, "input.npy"), images)
    save_atomic(os.path.join(a.out_dir, "target.npy"), labels)
    print(f"digits_data: {len(labels)} images of the digits 5-9 in {a.out_dir}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
