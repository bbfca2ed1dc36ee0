"""Sweeps: the same experiment over several values of one field (an "oom" point goes on)."""
from __future__ import annotations

from typing import Callable, Iterable

from .config import Experiment, at_least
from .measure.records import OutOfMemory, Run, load_run


def sweep(train: Callable[..., Run], cfg: Experiment, field: str, values: Iterable,
          repeats: int = 1, **train_kwargs) -> list:
    """`train(cfg.replace(field=v))` for each value (repeats: interleaved, a list each)."""
    at_least("repeats", repeats, 1)
    values = list(values)
    points: list[list] = [[] for _ in values]
    for _ in range(repeats):
        for value, point in zip(values, points):
            if any(r.meta.get("status") == "oom" for r in point):
                continue  # the same size will not fit the second time either
            try:
                point.append(train(cfg.replace(**{field: value, "name": f"{field}={value}"}),
                                   **train_kwargs))
            except OutOfMemory as err:
                print(f"{field}={value}: out of memory, going on with the next value ({err})")
                if (path := getattr(err, "run_path", None)) is not None:
                    point.append(load_run(path))
    return [group if repeats > 1 and len(group) > 1 else group[0] for group in points if group]


def interleave(train: Callable[..., Run], cfgs: list[Experiment], repeats: int = 3,
               **train_kwargs) -> dict[str, list[Run]]:
    """Run each config `repeats` times, interleaved (drift hits all alike): {name: [runs]}."""
    at_least("repeats", repeats, 1)
    names = [c.name for c in cfgs]
    if len(set(names)) != len(names):
        raise ValueError(f"config names must differ to tell the repeats apart: {names}")
    runs: dict[str, list[Run]] = {name: [] for name in names}
    for _ in range(repeats):
        for cfg in cfgs:
            runs[cfg.name].append(train(cfg, **train_kwargs))
    return runs
