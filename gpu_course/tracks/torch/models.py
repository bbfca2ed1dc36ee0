"""The course's CIFAR networks in PyTorch, layer for layer as GluonCV's `cifar_resnet*_v1`
and `cifar_wideresnet*`, and the Gluon track's `tiny` net."""
from __future__ import annotations

import torch
from torch import nn


def _conv3x3(in_channels: int, channels: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_channels, channels, 3, stride=stride, padding=1, bias=False)


class BasicBlockV1(nn.Module):
    """conv-BN-ReLU-conv-BN, plus the (projected) input, then ReLU."""

    def __init__(self, in_channels: int, channels: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(
            _conv3x3(in_channels, channels, stride), nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True),
            _conv3x3(channels, channels), nn.BatchNorm2d(channels))
        self.downsample = None
        if in_channels != channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        residual = x if self.downsample is None else self.downsample(x)
        return torch.relu(self.body(x) + residual)


class BasicBlockV2(nn.Module):
    """Pre-activation block: BN-ReLU-conv-BN-ReLU-conv, plus the (projected) input."""

    def __init__(self, in_channels: int, channels: int, stride: int):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_channels)
        self.conv1 = _conv3x3(in_channels, channels, stride)
        self.bn2 = nn.BatchNorm2d(channels)
        self.conv2 = _conv3x3(channels, channels)
        self.downsample = None
        if in_channels != channels:
            self.downsample = nn.Conv2d(in_channels, channels, 1, stride=stride, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(x))
        residual = x if self.downsample is None else self.downsample(x)
        return self.conv2(torch.relu(self.bn2(self.conv1(x)))) + residual


def _stages(block, widths: list[int], blocks_per_stage: int) -> list[nn.Module]:
    return [nn.Sequential(block(widths[i - 1], widths[i], 1 if i == 1 else 2),
                          *[block(widths[i], widths[i], 1) for _ in range(blocks_per_stage - 1)])
            for i in range(1, len(widths))]


class CifarNet(nn.Module):
    """`features` pooled to one vector, then a dense `output` layer, as GluonCV's nets."""

    def __init__(self, layers: list[nn.Module], width: int, classes: int):
        super().__init__()
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.output = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.output(self.features(x))


class CifarResNet(CifarNet):
    """GluonCV's CIFARResNetV1 (depth = 6n + 2)."""

    def __init__(self, depth: int, classes: int = 10):
        if (depth - 2) % 6:
            raise ValueError(f"depth={depth} must be 6n + 2 (20, 56, 110, ...)")
        widths = [16, 16, 32, 64]
        super().__init__([nn.Conv2d(3, widths[0], 3, padding=1, bias=False),
                          nn.BatchNorm2d(widths[0]),
                          *_stages(BasicBlockV1, widths, (depth - 2) // 6)], widths[-1], classes)


class CifarWideResNet(CifarNet):
    """GluonCV's CIFARWideResNet (depth = 6n + 4, width factor k)."""

    def __init__(self, depth: int, width: int, classes: int = 10):
        if (depth - 4) % 6:
            raise ValueError(f"depth={depth} must be 6n + 4 (16, 28, 40, ...)")
        widths = [16, 16 * width, 32 * width, 64 * width]
        super().__init__([
            nn.BatchNorm2d(3, affine=False),  # GluonCV: BatchNorm(scale=False, center=False)
            nn.Conv2d(3, widths[0], 3, padding=1, bias=False), nn.BatchNorm2d(widths[0]),
            *_stages(BasicBlockV2, widths, (depth - 4) // 6),
            nn.BatchNorm2d(widths[-1]), nn.ReLU(inplace=True)], widths[-1], classes)


class TinyNet(CifarNet):
    """Three conv-BN-ReLU-maxpool blocks and a dense layer, as the Gluon track's tiny net."""

    def __init__(self, classes: int = 10):
        layers = []
        for cin, channels in ((3, 32), (32, 64), (64, 128)):
            layers += [nn.Conv2d(cin, channels, 3, padding=1, bias=False),
                       nn.BatchNorm2d(channels), nn.ReLU(inplace=True), nn.MaxPool2d(2)]
        super().__init__(layers, 128, classes)


MODELS = {"resnet20": lambda k: CifarResNet(20, k), "resnet56": lambda k: CifarResNet(56, k),
          "resnet110": lambda k: CifarResNet(110, k),
          "wrn16_10": lambda k: CifarWideResNet(16, 10, k),
          "wrn28_10": lambda k: CifarWideResNet(28, 10, k), "tiny": TinyNet}  # name: net of k classes


def get_model(cfg_or_name, classes: int | None = None) -> nn.Module:
    """The network an Experiment's `model` (or a name) names, with `classes` outputs."""
    name = getattr(cfg_or_name, "model", cfg_or_name)
    if classes is None:
        from ...data import num_classes
        classes = num_classes(cfg_or_name) if hasattr(cfg_or_name, "dataset") else 10
    if name not in MODELS:
        raise ValueError(f"model={name!r} is unknown; allowed: {', '.join(MODELS)}")
    net = MODELS[name](classes)
    net.course_model = name  # lets a record tell the course's networks from a user's own
    return net
