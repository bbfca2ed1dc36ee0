"""The PyTorch track: `from gpu_course import torch as gc`, the same public names as
`gpu_course.tracks.gluon` plus LARS, Signum, GpuLoader, lr_curve and make_optimizer."""
from __future__ import annotations

from dataclasses import dataclass

from .. import adapter_functions, lazy
from ...config import Experiment as _Experiment
from ...lessons import conclude, show, sizes, workers
from ...analyse.memory import memory_of
from ...lessons.exercises import check
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


@dataclass(frozen=True, eq=False)  # eq and hash as the base class: fields only
class Experiment(_Experiment):
    """`gpu_course.config.Experiment` with engine="pytorch" by default."""

    engine: str = "pytorch"


solution, sweep, repeat = adapter_functions("pytorch", train)


def __getattr__(name: str):
    return lazy(__name__, name)
