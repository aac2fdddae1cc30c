"""NPU builders for pooling and normalisation (src/backends/htp/compile/builders/pool.c, norm.c)
against PyTorch, through the CLI, on every HTP generation; plus whole models: an eval-mode
network run forward, an eval-mode head-only fine-tuning step, and training steps of small conv
nets from the conformance zoo compiled for SM8650, whose mixed CPU/NPU partitions must still
match PyTorch's eager training step.

Placement is asserted from `edgegrad compile --report` as in test_npu_elementwise.py (whose
NpuSuite harness this file uses).

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_npu_pool_norm.py \
        --edgegrad build/edgegrad --workdir /tmp/npu-pool-norm
"""
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from test_npu_elementwise import SOCS, NpuSuite, check_model  # noqa: E402
import zoo  # noqa: E402
from edgegrad.export import export_function, export_training_step  # noqa: E402

aten = torch.ops.aten
F = torch.nn.functional

def r(*shape, scale=1.0):
    return torch.randn(*shape) * scale


def bn_fn(training=False, weight=True):
    def f(x, w, b, m, v):
        return F.batch_norm(x, m, v, w if weight else None, b if weight else None,
                            training, 0.1, 1e-3)
    return f


def bn_args(c, *shape):
    return [r(*shape), torch.rand(c) + 0.5, r(c), r(c), torch.rand(c) + 0.2]


# ---- whole models ----

def training_step(model_fn, x, target, loss_fn, npu, cpu=None, trainable=None,
                  socs=("SM8650",)):
    """A zoo model's training step compiled for `socs`: placement as asserted, every output
    (loss, gradients, new buffers) as PyTorch's eager step computes it (zoo.eager)."""
    def run(exe, workdir):
        torch.manual_seed(0)
        model = model_fn()
        params = [n for n, _ in model.named_parameters()]
        train = params if trainable is None else list(trainable)
        os.makedirs(workdir, exist_ok=True)
        stem = os.path.join(workdir, "step")
        result = export_training_step(model, loss_fn, (x, target), stem, trainable=train)
        inputs = zoo.runtime_inputs(result.graph, model, x, target)
        refs, _, _ = zoo.eager(model, loss_fn, x, target, train)
        return check_model(exe, result.json_path, inputs, refs, workdir, socs,
                           {"aten." + t for t in npu},
                           {"aten." + k: v for k, v in (cpu or {}).items()})
    return run


def eval_forward(model_fn, x, npu, cpu=None):
    """An eval-mode model's forward (parameters and buffers traced as statics) on every SoC."""
    def run(exe, workdir):
        torch.manual_seed(0)
        model = model_fn()
        with torch.no_grad():
            for _ in range(3):  # non-trivial running statistics
                model.train()(torch.randn_like(x) * 2 + 0.5)
        model.eval()
        os.makedirs(workdir, exist_ok=True)
        stem = os.path.join(workdir, "model")
        # traced without autograd: with it, group norm's mean / rstd feed dead detach nodes
        # (saved for a backward that never comes), which keep it on the CPU
        with torch.no_grad():
            export_function(lambda t: model(t), [x], stem, arg_names=["x"])
        with torch.no_grad():
            ref = model(x).numpy()
        return check_model(exe, stem + ".json", {"x": x.numpy()}, {"out0": ref}, workdir, SOCS,
                           {"aten." + t for t in npu},
                           {"aten." + k: v for k, v in (cpu or {}).items()})
    return run


def warmed(model_cls, shape):
    """model_cls() in eval mode with running statistics from a few train-mode forwards on
    inputs of `shape`."""
    def make():
        m = model_cls()
        with torch.no_grad():
            for _ in range(3):
                m(torch.randn(*shape) * 2 + 0.5)
        return m.eval()
    return make


class PoolHeadNet(nn.Module):
    """Eval-mode forward exercising every forward builder of this family: conv, BN, ReLU6,
    max pool, avg pool (ceil), GroupNorm + SiLU, a residual add, adaptive average pool."""

    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.pool1 = nn.MaxPool2d(2)
        self.conv2, self.gn = nn.Conv2d(8, 8, 3, padding=1), nn.GroupNorm(2, 8)
        self.pool2 = nn.AvgPool2d(3, 2, 1, ceil_mode=True)
        self.fc = nn.Linear(8 * 2 * 2, 4)

    def forward(self, x):                                  # 20x20
        x = self.pool1(F.relu6(self.bn1(self.conv1(x))))   # 10x10
        x = x + F.silu(self.gn(self.conv2(x)))
        x = self.pool2(x)                                  # 6x6 (ceil)
        return self.fc(F.adaptive_avg_pool2d(x, 2).flatten(1))


def build_suite():
    torch.manual_seed(0)
    s = NpuSuite("npu_pool_norm")
    x = r(2, 3, 8, 8)

    # ---- max_pool2d_with_indices ----
    mp = "max_pool2d_with_indices.default"
    s.case("max_pool_2", lambda x: F.max_pool2d(x, 2), [x], npu=[mp])
    s.case("max_pool_3s2p1", lambda x: F.max_pool2d(x, 3, 2, 1), [r(2, 4, 9, 7)], npu=[mp])
    s.case("max_pool_rect", lambda x: F.max_pool2d(x, (2, 3), (1, 2), (1, 0)), [r(1, 2, 6, 9)],
           npu=[mp])
    s.case("max_pool_ceil", lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True), [r(2, 3, 8, 10)],
           npu=[mp])
    s.case("max_pool_ceil_dropped", lambda x: F.max_pool2d(x, 2, 2, 1, ceil_mode=True),
           [r(1, 3, 5, 5)], npu=[mp])
    s.case("max_pool_negative", lambda x: F.max_pool2d(x, 3, 2, 1), [-torch.rand(1, 2, 5, 5) - 1],
           npu=[mp])
    s.case("max_pool_ceil_mixed", lambda x: F.max_pool2d(x, (2, 3), 2, (1, 0), ceil_mode=True),
           [r(1, 2, 5, 6)], cpu={mp: "one QNN rounding_mode"})
    s.case("max_pool_dilation", lambda x: F.max_pool2d(x, 2, 1, 0, 2), [x],
           cpu={mp: "dilation [2, 2] unsupported"})
    s.case("max_pool_indices", lambda x: F.max_pool2d(x, 2, return_indices=True)[1].float(),
           [x], npu=[mp], socs=SOCS[:3])
    s.case("max_pool_unbatched", lambda x: F.max_pool2d(x, 2), [r(3, 8, 8)],
           cpu={mp: "unbatched input"})

    # ---- avg_pool2d ----
    ap = "avg_pool2d"
    s.case("avg_pool_2", lambda x: F.avg_pool2d(x, 2), [x], npu=[ap])
    s.case("avg_pool_pad_count", lambda x: F.avg_pool2d(x, 3, 2, 1), [r(2, 3, 9, 9)], npu=[ap])
    s.case("avg_pool_pad_nocount", lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
           [r(2, 3, 9, 9)], npu=[ap])
    s.case("avg_pool_ceil", lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), [r(2, 6, 9, 9)],
           npu=[ap])
    s.case("avg_pool_ceil_nocount",
           lambda x: F.avg_pool2d(x, 2, ceil_mode=True, count_include_pad=False),
           [r(2, 6, 5, 5)], npu=[ap])
    # a CEIL last window past the edge: QNN HTP computes PoolAvg2d's CEIL windows wrong, so they
    # become FLOOR over uncounted end padding, exact without padding whatever
    # count_include_pad says; with padding and count_include_pad no PoolAvg2d expresses ATen's
    # divisor (the padding counted, the overhang not): the CPU's
    s.case("avg_pool_ceil_nopad_count", lambda x: F.avg_pool2d(x, 2, ceil_mode=True),
           [r(2, 6, 5, 7)], npu=[ap])
    s.case("avg_pool_ceil_count", lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
           [r(1, 2, 6, 8)], cpu={ap: "ceil_mode with count_include_pad and padding"})
    s.case("avg_pool_divisor", lambda x: F.avg_pool2d(x, 2, divisor_override=3), [x],
           cpu={ap: "divisor_override"})

    # ---- _adaptive_avg_pool2d ----
    aap = "_adaptive_avg_pool2d"
    # F.adaptive_avg_pool2d(x, 1) traces as mean.dim (the reduce builders'); the ATen op itself:
    s.case("adaptive_avg_1x1", lambda x: aten._adaptive_avg_pool2d(x, [1, 1]), [r(2, 5, 7, 6)],
           npu=[aap])
    s.case("adaptive_avg_even", lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [r(2, 3, 8, 9)],
           npu=[aap])
    s.case("adaptive_avg_identity", lambda x: F.adaptive_avg_pool2d(x, (4, 4)), [r(1, 3, 4, 4)],
           npu=[aap])
    s.case("adaptive_avg_uneven", lambda x: F.adaptive_avg_pool2d(x, (3, 2)), [r(2, 3, 7, 7)],
           cpu={aap: "adaptive windows are uneven"})

    # ---- native_batch_norm (eval) ----
    bn = "native_batch_norm"
    stats = ["arg1", "arg2", "arg3", "arg4"]
    s.case("batch_norm_eval", bn_fn(), bn_args(4, 2, 4, 5, 6), static=stats, npu=[bn])
    s.case("batch_norm_eval_noaffine", bn_fn(weight=False), bn_args(4, 2, 4, 5, 6),
           static=stats, npu=[bn])
    s.case("batch_norm_eval_rank2", bn_fn(), bn_args(6, 5, 6), static=stats, npu=[bn])
    s.case("batch_norm_eval_runtime_stats", bn_fn(), bn_args(4, 2, 4, 5, 6),
           static=["arg1", "arg2"], cpu={bn: "running_mean is a runtime input"})
    s.case("batch_norm_eval_runtime_weight", bn_fn(), bn_args(4, 2, 4, 5, 6),
           static=["arg3", "arg4"], cpu={bn: "weight is a runtime input"})
    s.case("batch_norm_eval_rank3", bn_fn(), bn_args(4, 2, 4, 7), static=stats,
           cpu={bn: "rank-3 input"})
    # batch statistics: the composite (ReduceMean, Rsqrt, elementwise), trainable w / b
    s.case("batch_norm_train", lambda x, w, b: F.batch_norm(x, None, None, w, b, True),
           [r(2, 4, 5, 6), r(4), r(4)], npu=[bn])
    s.case("batch_norm_train_noaffine", lambda x: F.batch_norm(x, None, None, None, None, True,
                                                                0.1, 1e-3),
           [r(3, 5, 7, 4, scale=3.0) + 2.0], npu=[bn])
    s.case("batch_norm_train_rank2", lambda x, w, b: F.batch_norm(x, None, None, w, b, True),
           [r(6, 5), r(5), r(5)], npu=[bn])

    # ---- torch 2's _native_batch_norm_legit_no_training (torch.export's eval batch norm) ----
    if hasattr(aten, "_native_batch_norm_legit_no_training"):
        nt = "_native_batch_norm_legit_no_training"

        def bn_nt(weight=True):
            def f(x, w, b, m, v):
                return aten._native_batch_norm_legit_no_training(
                    x, w if weight else None, b if weight else None, m, v, 0.1, 1e-3)[0]
            return f

        s.case("batch_norm_legit_no_training", bn_nt(), bn_args(4, 2, 4, 5, 6), static=stats,
               npu=[nt])
        s.case("batch_norm_legit_no_training_noaffine", bn_nt(False), bn_args(4, 2, 4, 5, 6),
               static=stats, npu=[nt])
        s.case("batch_norm_legit_no_training_rank2", bn_nt(), bn_args(6, 5, 6), static=stats,
               npu=[nt])
        s.case("batch_norm_legit_no_training_runtime_stats", bn_nt(), bn_args(4, 2, 4, 5, 6),
               static=["arg1", "arg2"], cpu={nt: "running_mean is a runtime input"})
        s.case("batch_norm_legit_no_training_rank3", bn_nt(), bn_args(4, 2, 4, 7), static=stats,
               cpu={nt: "rank-3 input"})
        s.case("batch_norm_legit_functional_train",
               lambda x, w, b, m, v: aten._native_batch_norm_legit_functional(
                   x, w, b, m, v, True, 0.1, 1e-3)[0], bn_args(4, 2, 4, 5, 6),
               cpu={"_native_batch_norm_legit_functional": "no NPU lowering"})
    else:
        print(f"skip npu_pool_norm/batch_norm_legit_*: torch {torch.__version__} has no "
              "_native_batch_norm_legit ops (torch 2.x only)")

    # ---- native_group_norm ----
    gn = "native_group_norm"
    s.case("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), [r(2, 6, 5, 4), r(6), r(6)],
           npu=[gn])
    s.case("group_norm_static", lambda x, w, b: F.group_norm(x, 3, w, b, eps=1e-3),
           [r(2, 6, 5, 4, scale=3) + 1, r(6), r(6)], static=["arg1", "arg2"], npu=[gn])
    s.case("group_norm_noaffine", lambda x: F.group_norm(x, 1), [r(3, 4, 3, 3)], npu=[gn])
    s.case("group_norm_instance", lambda x, w: F.group_norm(x, 4, w), [r(2, 4, 6, 6), r(4)],
           npu=[gn])
    s.case("group_norm_rank2", lambda x, w, b: F.group_norm(x, 2, w, b), [r(5, 6), r(6), r(6)],
           npu=[gn])
    s.case("group_norm_rank3", lambda x: F.group_norm(x, 2), [r(2, 4, 9)],
           cpu={gn: "rank-3 input"})

    # ---- whole models ----
    s.extra("eval_pool_head_net",
            eval_forward(PoolHeadNet, r(2, 3, 20, 20),
                         npu=["native_batch_norm.default", "hardtanh.default",
                              "max_pool2d_with_indices.default", "native_group_norm.default",
                              "silu.default", "add.Tensor",
                              "_adaptive_avg_pool2d.default"]))
    s.extra("eval_mobilenet_v2",
            eval_forward(zoo.MobileNetV2Net, r(2, 3, 16, 16),
                         npu=["native_batch_norm.default", "hardtanh.default", "add.Tensor"]))
    ce = F.cross_entropy
    tgt4 = torch.tensor([0, 3, 1, 4])
    s.extra("train_small_conv_net",
            training_step(zoo.SmallConvNet, r(4, 3, 16, 16), tgt4, ce,
                          npu=["relu.default", "threshold_backward.default",
                               "max_pool2d_with_indices.default",
                               "max_pool2d_with_indices_backward.default"]))
    s.extra("train_maxpool_net",
            training_step(zoo.MaxPoolNet, r(2, 3, 16, 16), tgt4[:2], ce,
                          npu=["relu.default", "threshold_backward.default",
                               "max_pool2d_with_indices.default",
                               "max_pool2d_with_indices_backward.default"]))
    s.extra("train_lenet5",
            training_step(zoo.LeNet5, r(2, 1, 32, 32), torch.tensor([7, 2]), ce,
                          npu=["tanh.default", "tanh_backward.default",
                               "avg_pool2d.default"]))
    # batch norm forward and backward on the NPU (batch statistics, trainable affine)
    s.extra("train_bn_conv_net",
            training_step(zoo.BNConvNet, r(4, 3, 8, 8), tgt4, ce,
                          npu=["relu.default", "threshold_backward.default",
                               "native_batch_norm.default",
                               "native_batch_norm_backward.default"]))
    s.extra("train_group_norm_silu",
            training_step(zoo.GroupNormSiLUNet, r(2, 3, 12, 12), tgt4[:2], ce,
                          # PyTorch 1.13 traces silu's backward through sigmoid, 2.x
                          # as aten.silu_backward (CPU); the forward silu is on the NPU
                          npu=["silu.default"] + (["sigmoid.default"]
                                                  if torch.__version__ < "2" else []),
                          cpu={"native_group_norm.default": "mean / rstd"}))
    # head-only fine-tuning of an eval-mode ResNet block: BN folded on the NPU
    s.extra("train_resnet_block_eval_head",
            training_step(warmed(zoo.ResNetBlockNet, (4, 8, 16, 16)), r(2, 8, 16, 16),
                          torch.tensor([1, 4]), ce,
                          npu=["native_batch_norm.default", "relu.default", "add.Tensor"],
                          trainable=["fc.weight", "fc.bias"], socs=SOCS))
    return s


if __name__ == "__main__":
    build_suite().main()
