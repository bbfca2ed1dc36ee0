"""Mock components for the ceilings (the profiling lecture's method), framework-free.

mock="loader" measures the compute ceiling: one batch, placed on the device(s) once,
served for every step, so the model never waits for data. (mock="trainer", the input
ceiling, needs no object: the loop fetches batches and drops them.)
"""
from __future__ import annotations

from typing import Any, Callable


class OneBatch:
    """One batch of `loader`, placed by `place(batch)` (e.g. copied to the GPU) once and
    served as many times as the loader has batches."""

    def __init__(self, loader, place: Callable[[Any], Any]):
        self.loader, self.place = loader, place
        self.steps = len(loader)
        self.batch = None

    def __len__(self) -> int:
        return self.steps

    def __iter__(self):
        if self.batch is None:
            self.batch = self.place(next(iter(self.loader)))
        for _ in range(self.steps):
            yield self.batch
