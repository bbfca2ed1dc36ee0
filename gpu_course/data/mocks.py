"""mock="loader", the compute ceiling: one batch on the device, served for every step."""
from __future__ import annotations

from typing import Any, Callable


class OneBatch:
    """One batch of `loader`, placed once, served as many times as the loader has batches."""

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
