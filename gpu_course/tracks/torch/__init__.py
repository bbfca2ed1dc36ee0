"""The PyTorch track: `from gpu_course import torch as gc`, the same public names as
`gpu_course.tracks.gluon` plus LARS, Signum, GpuLoader, lr_curve and make_optimizer."""
from __future__ import annotations

from dataclasses import dataclass

from .. import lazy
from ...config import Experiment as _Experiment
from ...experiments import interleave as _interleave
from ...lessons import conclude, show, sizes, workers
from ...analyse.memory import memory_of
from ...lessons.exercises import check, solution as _solution
from ...experiments import sweep as _sweep
from ...measure.records import load_run, load_runs
from ...measure.timing import Workload
from .data import make_loader
from .datasets import load_data, load_datasets
from .io_data import prepare_data
from .devices import gpu_count, try_devices
from .inference import inference_net, time_inference
from .gpu_loader import Batches, GpuLoader
from .lars import LARS
from .signum import Signum
from .models import get_model
from .profile import profile_steps
from .optim import lr_curve, lr_scheduler, make_optimizer
from .loop import evaluate, to_device
from .memory import MemoryMeter, memory_run
from .record import record, watch
from .train import COMPILE_BACKEND_ENV, build, train

__all__ = ["Experiment", "sizes", "show", "conclude", "workers", "check", "solution", "load_run", "load_runs", "plots", "report", "tables",
           "gpu_count", "try_devices", "load_datasets", "prepare_data", "make_loader", "load_data",
           "get_model", "inference_net", "time_inference", "Workload", "build", "record", "watch", "train", "evaluate", "to_device",
           "lr_scheduler", "lr_curve", "make_optimizer",
           "sweep", "profile_steps", "repeat", "LARS", "Signum", "GpuLoader", "Batches", "COMPILE_BACKEND_ENV", "MemoryMeter", "memory_run", "memory_of"]


def solution(exercise: str) -> None:
    """Print exercise `exercise`'s solution in this track, to compare with your own."""
    _solution(exercise, "pytorch")


@dataclass(frozen=True, eq=False)  # eq and hash as the base class: fields only
class Experiment(_Experiment):
    """`gpu_course.config.Experiment` with engine="pytorch" by default."""

    engine: str = "pytorch"


def sweep(cfg: Experiment, field: str, values, repeats: int = 1, **train_kwargs):
    """train(cfg with `field` set to each value) (`experiments.sweep`)."""
    return _sweep(train, cfg, field, values, repeats, **train_kwargs)


def repeat(cfgs, repeats: int = 3, **train_kwargs):
    """Each config trained `repeats` times, interleaved; {name: [runs]} for `noise.compare`."""
    return _interleave(train, list(cfgs), repeats, **train_kwargs)


def __getattr__(name: str):
    return lazy(__name__, name)
