#!/usr/bin/python3
"""Draw `edgegrad train --log` as a picture: loss and validation accuracy per epoch, as SVG.

    /usr/bin/python3 scripts/plot_train_log.py TRAIN.jsonl OUT.svg [--min-accuracy A]

Left panel: train loss (each epoch's mean) and val loss; right panel: val accuracy, from the
"eval" event before training (epoch 0) to the last epoch. Standard library only. With
--min-accuracy, exits 1 unless the last epoch's val accuracy is at least A (the demo's check).
The file is written atomically.
"""
import argparse
import json
import os
import sys
import tempfile

W, H, PAD = 360, 240, 44


def panel(x0, title, series, ymin, ymax, epochs):
    """SVG elements of one panel: axes, ticks, a polyline per (label, colour, points)."""
    sx = lambda e: x0 + PAD + (W - 2 * PAD) * e / max(epochs, 1)
    sy = lambda v: H - PAD - (H - 2 * PAD) * (v - ymin) / ((ymax - ymin) or 1)
    out = [f'<text x="{x0 + W / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
           f'<line x1="{sx(0)}" y1="{sy(ymin)}" x2="{sx(epochs)}" y2="{sy(ymin)}" stroke="#000"/>',
           f'<line x1="{sx(0)}" y1="{sy(ymin)}" x2="{sx(0)}" y2="{sy(ymax)}" stroke="#000"/>',
           f'<text x="{x0 + W / 2}" y="{H - 8}" text-anchor="middle" font-size="11">epoch</text>']
    for e in range(epochs + 1):
        out.append(f'<text x="{sx(e)}" y="{sy(ymin) + 14}" text-anchor="middle" '
                   f'font-size="10">{e}</text>')
    for k in range(5):
        v = ymin + (ymax - ymin) * k / 4
        out.append(f'<text x="{sx(0) - 4}" y="{sy(v) + 3}" text-anchor="end" '
                   f'font-size="10">{v:.2f}</text>')
    for i, (label, colour, pts) in enumerate(series):
        if not pts:
            continue
        path = " ".join(f"{sx(e):.1f},{sy(v):.1f}" for e, v in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for e, v in pts:
            out.append(f'<circle cx="{sx(e):.1f}" cy="{sy(v):.1f}" r="2.5" fill="{colour}"/>')
        out.append(f'<text x="{sx(epochs) - 4}" y="{PAD + 4 + 14 * i}" text-anchor="end" '
                   f'font-size="11" fill="{colour}">{label}</text>')
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("log")
    p.add_argument("svg")
    p.add_argument("--min-accuracy", type=float)
    a = p.parse_args(argv)
    events = [json.loads(line) for line in open(a.log) if line.strip()]
    epochs = [e for e in events if e["event"] == "epoch"]
    first = [e for e in events if e["event"] == "eval"]
    if not epochs:
        print(f"plot_train_log: {a.log}: no epoch events", file=sys.stderr)
        return 2
    n = epochs[-1]["epoch"]
    train = [(e["epoch"], e["train_loss"]) for e in epochs]
    val = [(e["epoch"], e["val_loss"]) for e in first + epochs if "val_loss" in e]
    acc = [(e["epoch"], e["val_accuracy"]) for e in first + epochs if "val_accuracy" in e]
    losses = [v for _, v in train + val]
    body = panel(0, "loss", [("train", "#1f77b4", train), ("val", "#d62728", val)],
                 0.0, max(losses) * 1.05, n)
    body += panel(W, "val accuracy", [("val", "#2ca02c", acc)], 0.0, 1.0, n)
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * W}" height="{H}" '
           f'font-family="sans-serif">\n<rect width="100%" height="100%" fill="#fff"/>\n'
           + "\n".join(body) + "\n</svg>\n")
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(a.svg) or ".", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(svg)
    os.replace(tmp, a.svg)
    last = acc[-1][1] if acc else None
    print(f"plot_train_log: {a.svg}: {n} epochs" +
          (f", val accuracy {acc[0][1]:.1%} before training -> {last:.1%}" if acc else ""))
    if a.min_accuracy is not None and (last is None or last < a.min_accuracy):
        print(f"plot_train_log: val accuracy {last} after the last epoch is below "
              f"{a.min_accuracy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
