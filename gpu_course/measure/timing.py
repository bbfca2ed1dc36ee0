"""Step timing: each step split into data wait (blocked in the loader's next()) and compute.
Host-side, no sync added: "compute" is dispatch, Python and a full device queue's back-pressure."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import asdict, dataclass, field
from numbers import Integral
from typing import Callable, Iterable, Iterator

clock = time.perf_counter  # monotonic, sub-microsecond resolution


@dataclass
class EpochTiming:
    """What one epoch cost, all times in seconds."""

    epoch_time_s: float       # wall time from start_epoch to end_epoch (incl. the final sync)
    steps: int
    samples: int
    data_wait_s: float        # blocked waiting for the loader, all steps
    compute_s: float          # the rest of the steps, plus the final sync's drain
    sync_s: float             # the final sync alone: device work still queued at the end
    timed_steps: int          # steps after the run's warm-up
    timed_samples: int        # their samples
    timed_s: float            # their time (wait + compute), plus the sync if any was timed
    timed_wait_s: float       # their data wait
    steady_offset_s: float    # when the first timed step began, seconds after the epoch's start
    step_rows: list = field(default_factory=list, repr=False)  # (samples, wait_s, compute_s)

    def as_row(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "step_rows"}


class StepTimer:
    """Times steps of a training loop; the first `warmup_steps` of the run are not steady."""

    def __init__(self, warmup_steps: int = 5):
        if not isinstance(warmup_steps, int) or warmup_steps < 0:
            raise ValueError(f"warmup_steps={warmup_steps!r} must be an integer >= 0")
        self.warmup_steps = warmup_steps
        self.total_steps = 0
        self.epochs: list[EpochTiming] = []
        self._in_epoch = False

    def start_epoch(self) -> None:
        self._epoch_start = self._last_end = clock()
        self._rows: list[tuple[int, float, float]] = []
        self._step_wait = 0.0
        # an epoch that begins after the warm-up is steady from its start
        self._steady_offset = 0.0 if self.total_steps >= self.warmup_steps else float("nan")
        self._in_epoch = True

    def wrap(self, iterable: Iterable) -> Iterator:
        """Yield from `iterable`, charging the time spent in next() to data wait."""
        iterator = iter(iterable)
        while True:
            t1 = clock()
            try:
                item = next(iterator)
            except StopIteration:
                return
            self._step_wait += clock() - t1
            yield item

    def step(self, samples: int) -> None:
        """Close the current step: its time less the data wait is compute."""
        if not self._in_epoch:
            raise RuntimeError("StepTimer.step() called outside start_epoch()/end_epoch()")
        now = clock()
        total = now - self._last_end
        wait = min(self._step_wait, total)
        if self.total_steps == self.warmup_steps:  # this step is the first steady one
            self._steady_offset = self._last_end - self._epoch_start
        self._rows.append((samples, wait, total - wait))
        self.total_steps += 1
        self._last_end = now
        self._step_wait = 0.0

    def end_epoch(self, sync: Callable[[], object] | None = None) -> EpochTiming:
        """Finish the epoch; `sync()` waits for queued device work, charged to compute."""
        start = clock()
        if sync is not None:
            sync()
        end = clock()
        sync_s = end - start if sync is not None else 0.0
        rows = self._rows
        timed = rows[max(0, len(rows) - max(0, self.total_steps - self.warmup_steps)):]

        def sums(part):   # [samples, wait, compute], each added up
            return [sum(column) for column in zip(*part)] or [0, 0.0, 0.0]
        (samples, wait, compute), (t_samples, t_wait, t_compute) = sums(rows), sums(timed)
        timing = EpochTiming(
            epoch_time_s=end - self._epoch_start, steps=len(rows), samples=samples, data_wait_s=wait,
            compute_s=compute + sync_s, sync_s=sync_s, timed_steps=len(timed), timed_samples=t_samples,
            timed_s=t_wait + t_compute + (sync_s if timed else 0.0), timed_wait_s=t_wait,
            steady_offset_s=self._steady_offset if timed else float("nan"), step_rows=rows)
        self.epochs.append(timing)
        self._in_epoch = False
        return timing


@dataclass(frozen=True)
class Workload:
    """What an inference measurement serves (lesson 15), each after `warmup` passes."""

    batches: tuple = (1, 128)
    requests: int = 200
    images: int = 1280
    warmup: int = 3

    def __post_init__(self):
        batches = tuple(self.batches)
        if not batches or not all(isinstance(b, Integral) and not isinstance(b, bool) and b >= 1
                                  for b in batches):
            raise ValueError(f"batches={batches!r} must be one batch size >= 1 or more")
        object.__setattr__(self, "batches", tuple(int(b) for b in batches))
        for name, low in (("requests", 1), ("images", 1), ("warmup", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name}={value!r} must be an integer >= {low}")

    def replace(self, **changes) -> "Workload":
        return dataclasses.replace(self, **changes)


def summary_line(num_gpus: int, num_workers: int, batch_size: int, dtype: str,
                 samples_per_sec: float, epoch_time_s: float) -> str:
    """The talk's one-line result, `NUM_GPU: 1, NUM_WORKER: 29, ... epoch time: 18.59`."""
    return (f"NUM_GPU: {num_gpus}, NUM_WORKER: {num_workers}, "
            f"BATCH_SIZE_PER_GPU: {batch_size}, TYPECAST: {dtype}, "
            f"Samples/Sec: {samples_per_sec:.2f}, epoch time: {epoch_time_s:.2f}")
