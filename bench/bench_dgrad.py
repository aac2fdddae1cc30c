#!/usr/bin/python3
"""make bench: the conv input gradient ("dgrad") on edgegrad's NPU path against PyTorch.

    /usr/bin/python3 bench/bench_dgrad.py BENCH_BINARY [--threads 1,2] [--filter NAME]

For each thread count, runs BENCH_BINARY (bench/bench_htp_dgrad.c: the NPU executor running
Transpose(W_hwio, perm [0,1,3,2]) + TransposeConv2d, exactly what `convolution_backward` with
output_mask [True, False, False] lowers to) and, in the same run, PyTorch's
`torch.ops.aten.convolution_backward` with the same mask, shapes and thread count, on the
shapes of bench/dgrad_shapes.md. Prints GFLOP/s of both, the ratio per shape and the
geometric mean of the ratios. FLOPs = 2*N*Cout*Ho*Wo*Cin*kH*kW. A benchmark, not a test: the
machines are shared and noisy, so it reports and never fails on speed.

What edgegrad's time includes (printed with the tables, see NOTE): one
eg_htp_qnn_executor_execute call. The weight is a STATIC tensor, so the executor folds the weight
Transpose at create (its graph finalize, as QNN's graphFinalize would) and, for 3x3 stride-1
layers, also transforms the constant filter for Winograd F(2x2, 3x3) there; neither is in the
timed loop (PyTorch's weight is likewise a ready tensor). GFLOP/s are nominal FLOPs / time on
both sides; Winograd does 2.25x fewer multiplies than the nominal count.
"""
import argparse
import math
import os
import subprocess
import sys
import time

import torch

SHAPES = [  # name, N, Cin, H(=W), Cout, k, stride, pad  (dgrad_shapes.md)
    ("r18-l1", 8, 64, 56, 64, 3, 1, 1),
    ("r18-l2-ds", 8, 64, 56, 128, 3, 2, 1),
    ("r18-l2", 8, 128, 28, 128, 3, 1, 1),
    ("r18-l3", 8, 256, 14, 256, 3, 1, 1),
    ("r18-l4", 8, 512, 7, 512, 3, 1, 1),
    ("pw-1x1", 8, 32, 112, 64, 1, 1, 0),
    ("stem-7x7", 1, 3, 224, 64, 7, 2, 3),
]


def flops(n, cin, h, cout, k, s, p):
    ho = (h + 2 * p - k) // s + 1
    return 2.0 * n * cout * ho * ho * cin * k * k


def torch_gflops(shape, threads, min_time=0.3, rounds=3):
    """Best-of-rounds GFLOP/s of PyTorch's convolution_backward, grad_input only."""
    name, n, cin, h, cout, k, s, p = shape
    torch.set_num_threads(threads)
    x = torch.randn(n, cin, h, h)
    w = torch.randn(cout, cin, k, k)
    gy = torch.randn_like(torch.nn.functional.conv2d(x, w, stride=s, padding=p))

    def once():
        torch.ops.aten.convolution_backward(gy, x, w, None, [s, s], [p, p], [1, 1], False,
                                            [0, 0], 1, [True, False, False])
    once()  # warm-up
    best = math.inf
    for _ in range(rounds):
        reps, t0 = 0, time.perf_counter()
        while True:
            once()
            reps += 1
            dt = time.perf_counter() - t0
            if dt >= min_time:
                break
        best = min(best, dt / reps)
    return flops(n, cin, h, cout, k, s, p) / best / 1e9


NOTE = ("edgegrad: time of eg_htp_qnn_executor_execute; the weight Transpose is folded and the\n"
        "Winograd filter transform (3x3 stride 1) done once at executor create (graph finalize),\n"
        "not in the timed loop. GFLOP/s = nominal FLOPs / time for both (Winograd F(2x2,3x3)\n"
        "does 2.25x fewer multiplies). algo: TransposeConv2d algorithm x pieces (threads).")


def edgegrad_gflops(binary, threads, name_filter):
    """Runs the C benchmark; returns {shape name: (GFLOP/s, algo x pieces)} from its table."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    args = [binary] + ([name_filter] if name_filter else [])
    out = subprocess.run(args, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench: {binary} failed (exit {out.returncode}): {out.stderr.strip()}")
    result = {}
    for line in out.stdout.splitlines():
        f = line.split()
        if len(f) >= 5 and any(f[0] == s[0] for s in SHAPES):
            result[f[0]] = (float(f[2]), f"{f[3]} x{f[4]}")
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--filter", default="")
    opts = ap.parse_args()
    shapes = [s for s in SHAPES if s[0].startswith(opts.filter)]
    if not shapes:
        sys.exit(f"bench: no shape matches {opts.filter!r}")
    print(NOTE)
    for threads in (int(t) for t in opts.threads.split(",")):
        ours = edgegrad_gflops(opts.binary, threads, opts.filter)
        print(f"\n== {threads} thread{'s' if threads > 1 else ''}: conv input gradient, GFLOP/s")
        print(f"{'shape':<11} {'edgegrad NPU path':>18} {'PyTorch':>9} {'ratio':>7}  algo")
        ratios = []
        for s in shapes:
            if s[0] not in ours:
                sys.exit(f"bench: {opts.binary} printed no result for {s[0]}")
            theirs = torch_gflops(s, threads)
            gflops, algo = ours[s[0]]
            ratio = gflops / theirs
            ratios.append(ratio)
            print(f"{s[0]:<11} {gflops:>18.1f} {theirs:>9.1f} {ratio:>6.2f}x  {algo}")
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"{'geomean':<11} {'':>18} {'':>9} {geo:>6.2f}x")


if __name__ == "__main__":
    main()
