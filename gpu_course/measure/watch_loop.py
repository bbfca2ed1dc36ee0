"""`for x, y in gc.watch(train_loader): ...`: the course's record of your own loop.

Each pass over the loader (or a new loader over the same data) is an epoch of one run record,
as the track's `gc.record` keeps it; the record closes when the program ends or `.run` is read.
"""
from __future__ import annotations

import atexit
import sys
from typing import Any, Callable, Iterable

from ..config import OWN, Experiment

PASSES = 10_000     # epochs the harness allows; the record keeps the number that ran
_OPEN: dict = {}    # watched loaders whose record is open, by their data


def experiment(name: str, engine: str) -> Experiment:
    """The config of a watched loop: nothing known yet but that it is the attendee's own."""
    return Experiment(name=name, engine=engine, model=OWN, dataset=OWN, epochs=PASSES)


def watched(loader: Iterable, open_record: Callable[[], Any], sync: Callable | None = None) -> "Watched":
    """The open Watched for the same data, else a new one; `sync` waits for the device."""
    key = id(getattr(loader, "dataset", getattr(loader, "_dataset", loader)))
    found = _OPEN.get(key)
    if found is None or found.loader is not loader and found.rec is None:
        found = _OPEN[key] = Watched(loader, open_record, sync)
    found.loader = loader
    return found


class Watched:
    """A loader whose passes are timed into one run record (see the module)."""

    def __init__(self, loader: Iterable, open_record: Callable[[], Any], sync=None):
        self.loader, self._open, self.sync = loader, open_record, sync
        self.rec = self.closed = None

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        if self.rec is None:
            self.rec = self._open().__enter__()
            self._epochs = self.rec.epochs()
        rec = self.rec
        next(self._epochs)
        pending = None
        try:
            for batch in rec.batches(self.loader):
                pending = samples(batch)
                yield batch
                rec.step(pending)   # the loop body ran: the step ends here
                pending = None
        except GeneratorExit:       # the loop broke out: its last step still counts
            if pending is not None:
                rec.step(pending)
        except BaseException as err:
            self.close(err)
            raise
        rec.end_epoch(sync=self.sync)

    @property
    def run(self):
        """The record, closed (a later pass starts a new one)."""
        rec = self.close()
        return rec.run if rec is not None else None

    def close(self, err: BaseException | None = None):
        rec, self.rec = self.rec, None
        if rec is not None:
            rec.record.meta["config"]["epochs"] = len(rec.timer.epochs)
            rec.__exit__(type(err) if err else None, err, err.__traceback__ if err else None)
            self.closed = rec
        return self.closed


def samples(batch) -> int:
    """Examples in a batch: the length of its first part (a tensor's first dimension)."""
    first = next(iter(batch.values()), None) if isinstance(batch, dict) else \
        batch[0] if isinstance(batch, (tuple, list)) and batch else batch
    try:
        return len(first)
    except TypeError:
        return 1


@atexit.register
def _close_all() -> None:
    """At the program's end, open records close (interrupted or failed: sys.last_value)."""
    for each in list(_OPEN.values()):
        each.close(getattr(sys, "last_value", None))
