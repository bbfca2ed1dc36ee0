"""Step timing: split each training step into data wait and compute.

This is the profiling lecture's manual instrumentation (t1 before fetching a batch, t2
once it arrives, t3 when the step's work is done), written once for every framework:

    timer = StepTimer(warmup_steps=5)
    timer.start_epoch()
    for batch in timer.wrap(train_iter):     # time blocked in next() = data wait
        ...forward, backward, update...
        loss_value = float(loss)            # the step's sync point (the loop needs it anyway)
        timer.step(len(batch))              # the rest = compute
    epoch = timer.end_epoch(sync=None)      # sync: wait for queued device work first

Only synchronised time is trusted: with an asynchronous framework a step's "compute" is
the time the host spent issuing it unless the loop synchronises, and `end_epoch(sync)`
drains the queue so the epoch's total is always real.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Iterator

clock = time.perf_counter  # monotonic, sub-microsecond resolution


@dataclass
class EpochTiming:
    """What one epoch cost, all times in seconds."""

    epoch_time_s: float       # wall time from start_epoch to end_epoch (incl. the final sync)
    steps: int
    samples: int
    data_wait_s: float        # blocked waiting for the loader
    compute_s: float          # everything else in the steps
    timed_samples: int        # samples in steps after the run's warm-up
    timed_s: float            # their data wait + compute

    @property
    def samples_per_sec(self) -> float:
        """Throughput over the timed (post-warm-up) steps; NaN if none were timed."""
        return self.timed_samples / self.timed_s if self.timed_s > 0 else float("nan")

    @property
    def data_wait_share(self) -> float:
        total = self.data_wait_s + self.compute_s
        return self.data_wait_s / total if total > 0 else float("nan")

    def as_row(self) -> dict:
        row = asdict(self)
        row["samples_per_sec"] = self.samples_per_sec
        return row


class StepTimer:
    """Times steps of a training loop; the first `warmup_steps` of the run are not counted
    in samples/s (graph building, cuDNN autotuning and worker start-up happen there)."""

    def __init__(self, warmup_steps: int = 5):
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps={warmup_steps!r} must be >= 0")
        self.warmup_steps = warmup_steps
        self.total_steps = 0
        self.epochs: list[EpochTiming] = []
        self._in_epoch = False

    def start_epoch(self) -> None:
        self._epoch_start = self._last = clock()
        self._arrived = None
        self._steps = self._samples = self._timed_samples = 0
        self._wait = self._compute = self._timed = 0.0
        self._step_wait = 0.0
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
            t2 = clock()
            self._step_wait = t2 - t1
            self._arrived = t2
            yield item

    def step(self, samples: int) -> None:
        """Close the current step: the time since its batch arrived is compute."""
        if not self._in_epoch:
            raise RuntimeError("StepTimer.step() called outside start_epoch()/end_epoch()")
        now = clock()
        compute = now - (self._arrived if self._arrived is not None else self._last)
        self._close_step(samples, self._step_wait, compute)
        self._last = now
        self._arrived = None
        self._step_wait = 0.0

    def _close_step(self, samples: int, wait: float, compute: float) -> None:
        self._steps += 1
        self._samples += samples
        self._wait += wait
        self._compute += compute
        self.total_steps += 1
        if self.total_steps > self.warmup_steps:
            self._timed_samples += samples
            self._timed += wait + compute

    def end_epoch(self, sync: Callable[[], object] | None = None) -> EpochTiming:
        """Finish the epoch; `sync()` waits for queued device work, charged to compute."""
        if sync is not None:
            t = clock()
            sync()
            drained = clock() - t
            self._compute += drained
            if self.total_steps > self.warmup_steps:
                self._timed += drained
        end = clock()
        timing = EpochTiming(epoch_time_s=end - self._epoch_start, steps=self._steps,
                             samples=self._samples, data_wait_s=self._wait,
                             compute_s=self._compute, timed_samples=self._timed_samples,
                             timed_s=self._timed)
        self.epochs.append(timing)
        self._in_epoch = False
        return timing


def summarize(epochs: list[EpochTiming]) -> dict:
    """Run-level numbers: samples/s over every timed step; epoch time as the mean of the
    epochs after the first (the first carries start-up costs) when there are several."""
    if not epochs:
        return {"samples_per_sec": float("nan"), "epoch_time_s": float("nan"),
                "data_wait_share": float("nan")}
    timed_samples = sum(e.timed_samples for e in epochs)
    timed_s = sum(e.timed_s for e in epochs)
    steady = epochs[1:] if len(epochs) > 1 else epochs
    wait = sum(e.data_wait_s for e in epochs)
    busy = wait + sum(e.compute_s for e in epochs)
    return {
        "samples_per_sec": timed_samples / timed_s if timed_s > 0 else float("nan"),
        "epoch_time_s": sum(e.epoch_time_s for e in steady) / len(steady),
        "data_wait_share": wait / busy if busy > 0 else float("nan"),
    }


def summary_line(num_gpus: int, num_workers: int, batch_size: int, dtype: str,
                 samples_per_sec: float, epoch_time_s: float) -> str:
    """The talk's one-line result, e.g.
    `NUM_GPU: 1, NUM_WORKER: 29, BATCH_SIZE_PER_GPU: 64, TYPECAST: float32,
    Samples/Sec: 663.50, epoch time: 18.59`."""
    return (f"NUM_GPU: {num_gpus}, NUM_WORKER: {num_workers}, "
            f"BATCH_SIZE_PER_GPU: {batch_size}, TYPECAST: {dtype}, "
            f"Samples/Sec: {samples_per_sec:.2f}, epoch time: {epoch_time_s:.2f}")
