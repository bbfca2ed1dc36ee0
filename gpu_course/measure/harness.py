"""The bookkeeping around a framework's own training loop (monitor, step timer, run record,
progress bar, epoch rows); `loss` and `correct` are read after the epoch's sync, not in a step:

    with Harness(cfg, Ran(engine="pytorch")) as rec:            # adapters: gc.record(...)
        for epoch in rec.epochs():
            for x, y in rec.batches(train_iter):
                ...the framework's step...
                rec.step(len(y), loss=loss.detach(), correct=(out.argmax(1) == y).sum())
            rec.end_epoch(sync=torch.cuda.synchronize, evaluate=lambda: accuracy(net))
"""
from __future__ import annotations

import dataclasses
import functools
import math
import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..analyse import metrics
from ..config import Experiment
from . import nvml
from .guards import Diverged, check_loss, check_stop, not_learning, stop_requests
from .monitor import GpuMonitor
from .progress import bar
from .records import OutOfMemory, Ran, RunRecord, load_run  # noqa: F401  (Ran: re-exported)
from .timing import StepTimer, clock, summary_line


@dataclass(frozen=True)
class Device:
    """How a framework's device values are read without a sync inside a step: `read` after
    the epoch's sync, `total` adds a list, `reduce` over processes (DDP), `events` times
    steps on the device, `late_facts()` adds facts known once a step ran."""

    read: Callable[[Any], float] = float
    total: Callable[[list], Any] | None = None
    reduce: Callable[[Any], Any] | None = None
    events: Any = None
    late_facts: Callable[[], dict] | None = None


@dataclass(frozen=True)
class Output:
    """Where a run reports (the tracks' `train` and `record` take these as keywords)."""

    runs_dir: str | Path | None = None
    progress: bool = True
    verbose: bool = True
    monitor: bool = True
    record: bool = True
    on_epoch: Callable[[dict], Any] | None = None

    @classmethod
    def of(cls, options: dict) -> "Output":
        """The Output that keywords name; an unknown name is refused."""
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = [k for k in options if k not in names]
        if unknown:
            said = ", ".join(f"{k}={options[k]!r}" for k in unknown)
            raise TypeError(f"{said}: not an option of the output; allowed: {', '.join(names)}")
        return cls(**options)


class Harness:
    """Runs the bookkeeping around one experiment's training loop."""

    def __init__(self, cfg: Experiment, ran: Ran = Ran(), device: Device = Device(),
                 output: Output = Output()):
        self.cfg, self.output, self.device = cfg, output, device
        self.events = device.events
        self.total = device.total or (lambda parts: functools.reduce(operator.add, parts))
        self.timer = StepTimer(cfg.warmup_steps)
        # the notice is said once below as one line, not a warning box
        self.monitor = GpuMonitor(interval=cfg.monitor_interval, warn=False) if output.monitor else None
        self._ran = dataclasses.replace(ran, engine=ran.engine or cfg.engine)
        self.record = None   # the RunRecord, made on entering (with Ctrl-C asking to stop)
        self.epoch = -1
        self.run = None
        self.losses: list = []  # each epoch's mean training loss
        self._skips = None  # the training data's SkipCounter (skip_corrupt), if it has one
        self._order = None  # the training loader's packed-file order (data.order), if it has one
        self._bar = None
        if ran.device_notice:
            self.say(ran.device_notice)
        elif self.monitor is not None and self.monitor.notice not in _SAID | {None}:
            _SAID.add(self.monitor.notice)
            self.say(self.monitor.notice)

    # -- context ----------------------------------------------------------------------
    def __enter__(self) -> "Harness":
        # from here until the record is closed, Ctrl-C and SIGTERM ask the loop to stop at
        # the next step boundary (check_stop): a record is never left saying "running"
        self._stops = stop_requests()
        self._stops.__enter__()
        try:
            check_stop()   # asked while the run was set up: it never started
            if self.output.record:
                ran = self._ran
                self.record = RunRecord(self.cfg.to_dict(), ran, runs_dir=self.output.runs_dir,
                                        monitor=self.monitor)
                self.record.note(device_notice=ran.device_notice, devices=ran.devices)
            if self.monitor is not None:
                self.monitor.start()
        except BaseException as err:
            self._stops.__exit__(type(err), err, err.__traceback__)
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            self._close(exc_type, exc, tb)
        except BaseException as err:
            self._stops.__exit__(type(err), err, err.__traceback__)
            raise
        self._stops.__exit__(exc_type, exc, tb)  # raises a request the loop did not obey
        return False

    def _close(self, exc_type, exc, tb) -> None:
        self._close_bar()
        if exc is not None and self.record is not None:
            exc.run_path = self.record.path  # lets a sweep read back the failed run
        names = self._skips.names() if self._skips is not None and self._skips.count else []
        if names:
            more = f" and {len(names) - 3} more (in the record's notes)" if len(names) > 3 else ""
            self.note(skipped={"reads": self._skips.count, "distinct": len(names),
                                "files": names[:SKIPPED_NAMES]})
            self.say(f"Skipped {self._skips.count} unreadable read(s) of {len(names)} image(s): "
                     f"{', '.join(names[:3])}{more}")
        if self._order is not None:
            self.note(page_cache=self._order.note())   # what the cache held, each epoch
        learned = not_learning(self.losses, self.cfg) if exc_type is None else None
        if learned:
            self.note(learning=learned)
            self.say(f"Did not learn: {learned}")
        if self.record is not None:
            self.record.summary_extra = lambda run: {"summary_line": self.summary_line(run)}
            self.record.__exit__(exc_type, exc, tb)  # computes the summary from the record
            self.run = load_run(self.record.path)
        elif self.monitor is not None:
            self.monitor.stop()
        if exc_type is None and self.run is not None:
            self.say(self.run.summary["summary_line"])
        elif exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            kept = self.record.path if self.record else "memory"
            self.say(f"Interrupted: {len(self.timer.epochs)} finished epoch(s) kept in {kept}.")
        elif isinstance(exc, (OutOfMemory, Diverged)):
            self.say(f"{'Diverged' if isinstance(exc, Diverged) else 'Out of memory'}: {exc}")

    # -- the loop ---------------------------------------------------------------------
    def epochs(self) -> Iterator[int]:
        for epoch in range(self.cfg.epochs):
            check_stop()
            self.epoch = epoch
            self._losses, self._corrects = [], []  # each step's device values, added at the end
            self._seen = 0
            self._t_start = self.monitor.mark(f"epoch {epoch} start") if self.monitor else float("nan")
            if self.events is not None:
                self.events.start()
            self.timer.start_epoch()
            yield epoch

    def batches(self, iterable: Iterable, total: int | None = None) -> Iterator:
        """The training batches, timed, cut at cfg.max_steps, with a progress bar."""
        limit = self.cfg.max_steps
        try:
            total = len(iterable) if total is None else total
        except TypeError:   # an iterable without a length
            pass
        if total is not None and limit is not None:
            total = min(total, limit)
        if self.output.progress:   # gone without a trace when closed, also in a saved notebook
            self._bar = bar(total, desc=f"{self.cfg.name} epoch {self.epoch}", unit="step")
        self._skips = skip_counter(iterable) or self._skips
        self._order = order_of(iterable) or self._order
        for i, batch in enumerate(self.timer.wrap(iterable)):
            yield batch
            check_stop()  # the step is done: a SIGTERM stops the run here
            if limit is not None and i + 1 >= limit:
                break

    def step(self, samples: int, loss: Any = None, correct: Any = None, loss_sum: Any = None) -> None:
        """Close one step of `samples` images: `loss` the batch's mean (or `loss_sum`),
        `correct` its right predictions; numbers or device arrays (lists: one per device)."""
        self.timer.step(samples)
        if self.events is not None:
            self.events.mark()  # queued on the device: no wait
        if loss is not None:
            loss_sum = (loss, samples)
        if loss_sum is not None:
            self._losses.append(loss_sum)
        if correct is not None:
            self._corrects.append(correct)
            self._seen += samples
        if self._bar is not None:
            self._bar.update(1)

    def end_epoch(self, sync: Callable[[], Any] | None = None, val_acc: float | None = None,
                  lr: float | None = None, evaluate: Callable[[], float] | None = None,
                  loss: float | None = None, train_acc: float | None = None) -> dict:
        """Finish the epoch (sync first, so its time is real), then evaluate and record;
        loss/train_acc: a loop's own values, or functions that read them after the sync."""
        timing = self.timer.end_epoch(sync)
        loss = loss() if callable(loss) else loss
        train_acc = train_acc() if callable(train_acc) else train_acc
        t_end = self.monitor.mark(f"epoch {self.epoch} end") if self.monitor else float("nan")
        self._close_bar()
        device = list(self.events.times()) if self.events is not None else []
        if loss is None and self._losses and timing.samples:
            loss = self._read(self._add_up(self._losses)) / timing.samples  # after the sync
        if train_acc is None and self._corrects and self._seen:
            train_acc = self._read(self._add_up(self._corrects)) / self._seen
        self._losses, self._corrects = [], []
        eval_s = float("nan")
        if evaluate is not None:  # outside the timed epoch: validation is not training speed
            t = clock()
            val_acc = evaluate()
            eval_s = clock() - t
        row = {"epoch": self.epoch, **timing.as_row(), "loss": loss, "train_acc": train_acc,
               "val_acc": val_acc, "lr": lr, "eval_s": eval_s, "t_start": self._t_start,
               "t_steady": self._t_start + timing.steady_offset_s, "t_end": t_end}
        row["samples_per_sec"] = metrics.epoch_numbers(row)["samples_per_sec"]
        first_timed = timing.steps - timing.timed_steps
        steps = [{"epoch": self.epoch, "step": i, "samples": n, "data_wait_s": round(w, 7),
                  "compute_s": round(c, 7), "timed": int(i >= first_timed),
                  "device_s": round(device[i], 7) if i < len(device) else None}
                 for i, (n, w, c) in enumerate(timing.step_rows)]
        if self.record is not None:
            if self.device.late_facts is not None and self.epoch == 0:
                self.record.meta["ran"].update(self.device.late_facts())
            self.record.add_epoch(row, steps)
        self.losses.append(loss)
        self.say(epoch_line(row))
        check_loss(row["loss"], self.epoch, self.cfg)  # NaN/inf: stop with status diverged
        if self.output.on_epoch is not None:   # e.g. SageMaker's metric lines
            self.output.on_epoch(row)
        return row

    def note(self, **values: Any) -> None:
        """Facts about the loop itself for the record's notes, e.g. `loss_read="each step"`."""
        if self.record is not None:
            self.record.note(**values)

    # -- results ----------------------------------------------------------------------
    def summary_line(self, run) -> str:
        """The talk's one-line result for the recorded run (numbers from `metrics`)."""
        cfg = self.cfg
        gpus = cfg.num_gpus if nvml.gpu_count() > 0 else 0  # CPU fallback: say so
        return summary_line(gpus, cfg.num_workers, cfg.batch_size, cfg.dtype,
                            metrics.samples_per_sec(run), metrics.epoch_time_s(run))

    def say(self, text: str) -> None:
        if self.output.verbose:
            print(text, flush=True)

    def _add_up(self, parts: list) -> Any:
        """The sum of the steps' values (per device where a step gave a list)."""
        if isinstance(parts[0], list):
            return [self._add_up([p[i] for p in parts]) for i in range(len(parts[0]))]
        if isinstance(parts[0], tuple):
            sizes = {n for _, n in parts}
            if len(sizes) == 1:  # equal batches (drop_last): one multiplication
                return self.total([v for v, _ in parts]) * sizes.pop()
            return self.total([v * n for v, n in parts])
        return self.total(parts)

    def _read(self, value: Any) -> float:
        if isinstance(value, list):
            return sum(self._read(v) for v in value)
        if isinstance(value, (int, float)):
            return float(value)
        if self.device.reduce is not None:
            value = self.device.reduce(value)
        return float(self.device.read(value))

    def _close_bar(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


_SAID = set()  # monitor notices already said in this process: once is enough
SKIPPED_NAMES = 20  # unreadable files named in a record; the count covers all of them


def order_of(loader):
    """The `data.order.EpochOrder` behind a PyTorch or Gluon loader's sampler, or None."""
    sampler = getattr(loader, "sampler", getattr(getattr(loader, "_batch_sampler", None), "_sampler", None))
    order = getattr(sampler, "epochs", None)
    return order if callable(getattr(order, "note", None)) else None


def skip_counter(loader):
    """The SkipCounter of a PyTorch or Gluon loader's dataset, or None."""
    counter = getattr(getattr(loader, "dataset", getattr(loader, "_dataset", None)), "skipped", None)
    return counter if hasattr(counter, "names") else None


def epoch_line(row: dict) -> str:
    """One epoch as the course prints it; the numbers are `metrics.epoch_numbers`."""
    n = metrics.epoch_numbers(row)

    def num(v, fmt):
        return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)
    return (f"[Epoch {row['epoch']}] train={num(row['train_acc'], '.4f')} "
            f"val={num(row['val_acc'], '.4f')} loss={num(row['loss'], '.4f')} "
            f"time: {row['epoch_time_s']:.2f}s samples/s: {num(n['samples_per_sec'], ',.1f')} "
            f"data wait: {num(n['data_wait_share'], '.0%')}")
