"""The part of every training run that is not the framework's: monitor, timer, record,
progress bar, epoch rows and the summary line. Each adapter's training loop does

    with Harness(cfg, engine="gluon", device_notice=notice) as h:
        for epoch in h.epochs():
            for data, label in h.batches(train_iter, total=steps):
                ...the framework's step...
                h.step(batch_size, loss=loss_value, correct=n_correct)
            h.end_epoch(sync=mx.nd.waitall, val_acc=..., lr=...)
    run = h.run          # the record read back

and stays free of bookkeeping. Ctrl-C or an error keeps every finished epoch.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .config import Experiment
from .monitor import GpuMonitor
from .records import OutOfMemory, RunRecord, load_run
from .timing import StepTimer, summarize, summary_line


class Harness:
    """Runs the bookkeeping around one experiment's training loop."""

    def __init__(self, cfg: Experiment, engine: str | None = None,
                 runs_dir: str | Path | None = None, name: str | None = None,
                 device_notice: str | None = None, devices: str | None = None,
                 progress: bool = True, monitor: bool = True, verbose: bool = True,
                 record: bool = True, on_epoch: Callable[[dict], Any] | None = None):
        self.cfg = cfg
        self.engine = engine or cfg.engine
        self.name = name or cfg.name
        self.verbose = verbose
        self.show_progress = progress
        self.timer = StepTimer(cfg.warmup_steps)
        self.monitor = GpuMonitor(interval=cfg.monitor_interval) if monitor else None
        self.record = RunRecord(cfg.to_dict(), self.engine, name=self.name, runs_dir=runs_dir,
                                monitor=self.monitor) if record else None
        self.on_epoch = on_epoch  # called with each recorded epoch row (e.g. metric lines)
        self.epoch = -1
        self.run = None
        if device_notice:
            self.say(device_notice)
        if self.record is not None:
            self.record.note(device_notice=device_notice, devices=devices)

    # -- context ----------------------------------------------------------------------
    def __enter__(self) -> "Harness":
        if self.monitor is not None:
            self.monitor.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._close_bar()
        if exc is not None and self.record is not None:
            exc.run_path = self.record.path  # lets a sweep read back the failed run
        summary = self.summary()
        if self.record is not None:
            self.record.meta["summary"].update(summary)
            self.record.__exit__(exc_type, exc, tb)
            self.run = load_run(self.record.path)
        elif self.monitor is not None:
            self.monitor.stop()
        if exc_type is None:
            self.say(summary["summary_line"])
        elif issubclass(exc_type, KeyboardInterrupt):
            self.say(f"Interrupted: {len(self.timer.epochs)} finished epoch(s) kept in "
                     f"{self.record.path if self.record else 'memory'}.")
        elif issubclass(exc_type, OutOfMemory):
            self.say(f"Out of memory: {exc}")
        return False

    # -- the loop ---------------------------------------------------------------------
    def epochs(self) -> Iterator[int]:
        for epoch in range(self.cfg.epochs):
            self.epoch = epoch
            self._loss_sum = 0.0
            self._correct = self._seen = self._loss_n = 0
            if self.monitor is not None:
                self.monitor.mark(f"epoch {epoch} start")
            self._t_start = self.monitor.now() if self.monitor else float("nan")
            self.timer.start_epoch()
            yield epoch

    def batches(self, iterable: Iterable, total: int | None = None) -> Iterator:
        """The training batches, timed, cut at cfg.max_steps, with a progress bar."""
        limit = self.cfg.max_steps
        if total is not None and limit is not None:
            total = min(total, limit)
        self._bar = self._make_bar(total)
        for i, batch in enumerate(self.timer.wrap(iterable)):
            yield batch
            if limit is not None and i + 1 >= limit:
                break

    def step(self, samples: int, loss: float | None = None, correct: int | None = None) -> None:
        """Close one step. `loss` (mean over the batch) and `correct` are optional."""
        self.timer.step(samples)
        if loss is not None:
            self._loss_sum += float(loss) * samples
            self._loss_n += samples
        if correct is not None:
            self._correct += int(correct)
            self._seen += samples
        if self._bar is not None:
            self._bar.update(1)

    def set_epoch_stats(self, loss: float | None = None, train_acc: float | None = None) -> None:
        """Epoch-level loss/accuracy for loops that read them once per epoch (one sync)
        instead of per step."""
        if loss is not None:
            self._loss_sum, self._loss_n = float(loss), 1
        if train_acc is not None:
            self._correct, self._seen = float(train_acc), 1

    def end_epoch(self, sync: Callable[[], Any] | None = None, val_acc: float | None = None,
                  lr: float | None = None, evaluate: Callable[[], float] | None = None) -> dict:
        """Finish the epoch (sync first, so its time is real), then evaluate and record."""
        timing = self.timer.end_epoch(sync)
        t_end = self.monitor.now() if self.monitor else float("nan")
        if self.monitor is not None:
            self.monitor.mark(f"epoch {self.epoch} end")
        self._close_bar()
        if evaluate is not None:  # outside the timed epoch: validation is not training speed
            val_acc = evaluate()
        row = {"epoch": self.epoch, "epoch_time_s": timing.epoch_time_s,
               "samples_per_sec": timing.samples_per_sec, "data_wait_s": timing.data_wait_s,
               "compute_s": timing.compute_s, "steps": timing.steps, "samples": timing.samples,
               "loss": self._loss_sum / self._loss_n if self._loss_n else None,
               "train_acc": self._correct / self._seen if self._seen else None,
               "val_acc": val_acc, "lr": lr, "t_start": self._t_start, "t_end": t_end}
        if self.record is not None:
            self.record.add_epoch(row)
        self.last_row = row
        self.say(_epoch_line(row))
        if self.on_epoch is not None:
            self.on_epoch(row)
        return row

    # -- results ----------------------------------------------------------------------
    def summary(self) -> dict:
        numbers = summarize(self.timer.epochs)
        rows = self.record.epochs if self.record is not None else []
        util = cpu = None
        if self.monitor is not None and rows:  # only the training epochs, not set-up
            window = self.monitor.summary(t_start=rows[0]["t_start"], t_end=rows[-1]["t_end"])
            util, cpu = window.get("gpu_util_mean"), window.get("cpu_percent_mean")
        val = rows[-1].get("val_acc") if rows else None
        cfg = self.cfg
        from . import nvml
        gpus = cfg.num_gpus if nvml.gpu_count() > 0 else 0  # CPU fallback: say so
        line = summary_line(gpus, cfg.num_workers, cfg.batch_size, cfg.dtype,
                            numbers["samples_per_sec"], numbers["epoch_time_s"])
        return {**numbers, "gpu_util_mean": util, "cpu_percent_mean": cpu, "val_acc": val,
                "summary_line": line}

    def say(self, text: str) -> None:
        if self.verbose:
            print(text, file=sys.stdout, flush=True)

    def _make_bar(self, total: int | None):
        if not self.show_progress:
            return None
        from .progress import bar  # gone without a trace when closed, also in a saved notebook
        return bar(total, desc=f"{self.name} epoch {self.epoch}", unit="step")

    def _close_bar(self) -> None:
        bar = getattr(self, "_bar", None)
        if bar is not None:
            bar.close()
            self._bar = None


def _epoch_line(row: dict) -> str:
    def num(v, fmt):
        return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)
    return (f"[Epoch {row['epoch']}] train={num(row['train_acc'], '.4f')} "
            f"val={num(row['val_acc'], '.4f')} loss={num(row['loss'], '.4f')} "
            f"time: {row['epoch_time_s']:.2f}s samples/s: {num(row['samples_per_sec'], ',.1f')} "
            f"data wait: {row['data_wait_s']:.2f}s")
