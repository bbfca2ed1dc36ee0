"""Sweeps: the same experiment over several values of one field.

A point that runs out of device memory is marked "oom" in its run record and the sweep
goes on to the next value, as the talk's batch-size table needs.
"""
from __future__ import annotations

from typing import Callable, Iterable

from .config import Experiment
from .records import OutOfMemory, Run, load_run


def sweep(train: Callable[..., Run], cfg: Experiment, field: str, values: Iterable,
          **train_kwargs) -> list[Run]:
    """Run `train(cfg.replace(field=v))` for each value; returns the runs in order."""
    runs = []
    for value in values:
        point = cfg.replace(**{field: value, "name": f"{field}={value}"})
        try:
            runs.append(train(point, **train_kwargs))
        except OutOfMemory as err:
            print(f"{field}={value}: out of memory, going on with the next value ({err})")
            path = getattr(err, "run_path", None)
            if path is not None:
                runs.append(load_run(path))
    return runs
