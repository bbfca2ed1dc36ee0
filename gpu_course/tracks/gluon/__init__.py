"""The Gluon (Apache MXNet 1.9) track: `from gpu_course import gluon as gc`, the same
public names as `gpu_course.tracks.torch`, so a lesson reads the same in both."""
from __future__ import annotations

from .. import lazy
from ...config import Experiment
from ...env.cores import check_thread_variables

check_thread_variables()   # before MXNet loads: it aborts the process on a garbled count

from ...experiments import interleave as _interleave  # noqa: E402
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
from .models import get_model
from .profile import profile_steps
from .optim import lr_scheduler, make_trainer, optimizer_params
from .loop import evaluate, split
from .memory import MemoryMeter, memory_run
from .record import record, watch
from .train import build, train

__all__ = ["Experiment", "sizes", "show", "conclude", "workers", "check", "solution", "load_run", "load_runs", "plots", "report", "tables",
           "gpu_count", "try_devices", "load_datasets", "prepare_data", "make_loader", "load_data",
           "get_model", "inference_net", "time_inference", "Workload", "build", "record", "watch", "train", "evaluate", "split", "lr_scheduler", "optimizer_params",
           "make_trainer", "sweep", "profile_steps", "repeat", "MemoryMeter", "memory_run", "memory_of"]


def solution(exercise: str) -> None:
    """Print exercise `exercise`'s solution in this track, to compare with your own."""
    _solution(exercise, "gluon")


def sweep(cfg: Experiment, field: str, values, repeats: int = 1, **train_kwargs):
    """train(cfg with `field` set to each value) (`experiments.sweep`)."""
    return _sweep(train, cfg, field, values, repeats, **train_kwargs)


def repeat(cfgs, repeats: int = 3, **train_kwargs):
    """Each config trained `repeats` times, interleaved; {name: [runs]} for `noise.compare`."""
    return _interleave(train, list(cfgs), repeats, **train_kwargs)


def __getattr__(name: str):
    return lazy(__name__, name)
