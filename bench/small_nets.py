"""Three small nets on 3x32x32 images (CIFAR-sized) for `make bench-steps`: steps where per-op
overhead, not arithmetic, decides. Plain PyTorch modules, 10 classes.

- cifar_cnn: conv3x3-ReLU-maxpool2 three times (32, 64, 128 channels), then Linear(2048, 10);
- cifar_resnet: a 3x3 stem (16, BatchNorm, ReLU), three basic residual blocks (16; 32 and 64 at
  stride 2, with 1x1 conv + BatchNorm shortcuts), global average pool, Linear(64, 10);
- cifar_mbv2: a 3x3 stem (16, BN, ReLU6), four MobileNetV2 inverted residuals (1x1 expand x6 -
  BN - ReLU6, depthwise 3x3 - BN - ReLU6, 1x1 project - BN; a residual add where shape allows;
  24 at stride 2, 24, 32 at stride 2, 32), a 1x1 conv to 128 (BN, ReLU6), global average pool,
  Linear(128, 10).
"""
import torch
from torch import nn

SIZE = 32


def conv_bn(cin, cout, kernel=3, stride=1, groups=1, act=nn.ReLU):
    layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, act()) if act else nn.Sequential(*layers)


class CifarCNN(nn.Sequential):
    def __init__(self, classes):
        layers, cin = [], 3
        for cout in (32, 64, 128):
            layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
            cin = cout
        super().__init__(*layers, nn.Flatten(), nn.Linear(cin * (SIZE // 8) ** 2, classes))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(conv_bn(cin, cout, stride=stride), conv_bn(cout, cout, act=None))
        self.shortcut = (conv_bn(cin, cout, 1, stride, act=None)
                         if stride != 1 or cin != cout else nn.Identity())
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.body(x) + self.shortcut(x))


class CifarResNet(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.stem = conv_bn(3, 16)
        self.blocks = nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 32, 2),
                                    BasicBlock(32, 64, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand=6):
        super().__init__()
        mid = cin * expand
        self.body = nn.Sequential(conv_bn(cin, mid, 1, act=nn.ReLU6),
                                  conv_bn(mid, mid, 3, stride, groups=mid, act=nn.ReLU6),
                                  conv_bn(mid, cout, 1, act=None))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class CifarMBV2(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.stem = conv_bn(3, 16, act=nn.ReLU6)
        self.blocks = nn.Sequential(InvertedResidual(16, 24, 2), InvertedResidual(24, 24, 1),
                                    InvertedResidual(24, 32, 2), InvertedResidual(32, 32, 1))
        self.last = conv_bn(32, 128, 1, act=nn.ReLU6)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(128, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.last(self.blocks(self.stem(x)))), 1))


NETS = {"cifar_cnn": CifarCNN, "cifar_resnet": CifarResNet, "cifar_mbv2": CifarMBV2}


def build(name, batch, classes):
    """(model in train mode, input [batch, 3, 32, 32], a target class per image), seed 0."""
    torch.manual_seed(0)
    model = NETS[name](classes).train()
    return model, torch.randn(batch, 3, SIZE, SIZE), torch.randint(0, classes, (batch,))
