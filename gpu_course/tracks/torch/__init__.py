"""The PyTorch track: `from gpu_course import torch as gc`, the same public names as
`gpu_course.tracks.gluon` plus LARS, Signum, GpuLoader, lr_curve and make_optimizer."""
from __future__ import annotations

from dataclasses import dataclass

from .. import track
from ...config import Experiment as _Experiment

track(__name__, "pytorch", {
    "to_device": "loop:to_device", "lr_curve": "optim:lr_curve",
    "make_optimizer": "optim:make_optimizer", "LARS": "optim:LARS", "Signum": "optim:Signum",
    "GpuLoader": "gpu_loader:GpuLoader", "Batches": "gpu_loader:Batches",
    "COMPILE_BACKEND_ENV": "train:COMPILE_BACKEND_ENV"})


@dataclass(frozen=True, eq=False)  # eq and hash as the base class: fields only
class Experiment(_Experiment):
    """`gpu_course.config.Experiment` with engine="pytorch" by default."""

    engine: str = "pytorch"

