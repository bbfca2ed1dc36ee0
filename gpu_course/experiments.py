"""Sweeps: the same experiment over several values of one field.

A point that runs out of device memory is marked "oom" in its run record and the sweep
goes on to the next value, as the talk's batch-size table needs.
"""
from __future__ import annotations

from typing import Callable, Iterable

from .config import Experiment
from .measure.records import OutOfMemory, Run, load_run


def sweep(train: Callable[..., Run], cfg: Experiment, field: str, values: Iterable,
          repeats: int = 1, **train_kwargs) -> list:
    """Run `train(cfg.replace(field=v))` for each value; returns the runs in order.
    repeats=k runs the whole sweep k times, interleaved (v1, v2, ..., v1, v2, ...), and
    returns a list of k runs per value (a point that ran out of memory is not tried
    again): tables and plots show each point's spread over its runs."""
    _check_repeats(repeats)
    values = list(values)
    points: dict = {i: [] for i in range(len(values))}
    for _ in range(repeats):
        for i, value in enumerate(values):
            if any(r.meta.get("status") == "oom" for r in points[i]):
                continue  # the same size will not fit the second time either
            point = cfg.replace(**{field: value, "name": f"{field}={value}"})
            try:
                points[i].append(train(point, **train_kwargs))
            except OutOfMemory as err:
                print(f"{field}={value}: out of memory, going on with the next value ({err})")
                path = getattr(err, "run_path", None)
                if path is not None:
                    points[i].append(load_run(path))
    return [group if repeats > 1 and len(group) > 1 else group[0]
            for group in points.values() if group]


def _check_repeats(repeats) -> None:
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats={repeats!r} must be an integer >= 1")


def interleave(train: Callable[..., Run], cfgs: list[Experiment], repeats: int = 3,
               **train_kwargs) -> dict[str, list[Run]]:
    """Run each config `repeats` times, interleaved (A, B, A, B, ...) so that drift in
    the machine's speed hits every config alike; {name: [runs]} in the given order.
    `noise.compare` judges two of them against their spread."""
    _check_repeats(repeats)
    names = [c.name for c in cfgs]
    if len(set(names)) != len(names):
        raise ValueError(f"config names must differ to tell the repeats apart: {names}")
    runs: dict[str, list[Run]] = {name: [] for name in names}
    for _ in range(repeats):
        for cfg in cfgs:
            runs[cfg.name].append(train(cfg, **train_kwargs))
    return runs
