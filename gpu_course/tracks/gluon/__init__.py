"""The Gluon (Apache MXNet 1.9) track: `from gpu_course import gluon as gc`, the same
public names as `gpu_course.tracks.torch`, so a lesson reads the same in both."""
from __future__ import annotations

from .. import adapter_functions, lazy
from ...config import Experiment
from ...env.cores import check_thread_variables

check_thread_variables()   # before MXNet loads: it aborts the process on a garbled count

from ...lessons import conclude, show, sizes, workers  # noqa: E402
from ...analyse.memory import memory_of
from ...lessons.exercises import check
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


solution, sweep, repeat = adapter_functions("gluon", train)


def __getattr__(name: str):
    return lazy(__name__, name)
