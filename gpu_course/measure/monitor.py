"""GpuMonitor: like ``watch nvidia-smi`` but recorded. A daemon thread samples every GPU (`nvml`)
and the host (psutil) on a fixed schedule; times are seconds since ``start()``, the clock ``now()``
and ``mark()`` share. Without NVML it says so once and records the CPU only.
"""
import math
import sys
import threading
import time
import warnings
from pathlib import Path

import pandas as pd
import psutil

from gpu_course.measure import nvml
from gpu_course.measure.records import GPU_COLUMNS, HOST_COLUMNS, MARKER_COLUMNS, busy_and_total, write_atomic

_TEXT_COLUMNS = frozenset({"clock_event_reasons", "error", "cpu_per_core", "label"})
MiB = 2**20
STOP_WAIT_S = 5.0   # how long stop() waits for a sampling round before giving up on it


class GpuUnavailableWarning(RuntimeWarning):
    """NVML cannot be used, so the monitor samples the CPU only."""


_warned = set()  # notices already shown in this process: once is enough in a notebook


class GpuMonitor:
    """Samples every GPU and the host every ``interval`` s on a thread; runs once. `warn`:
    the notice without GPUs as a warning (else only in `.notice`, for the caller to say)."""

    def __init__(self, interval=0.5, warn=True):
        if not isinstance(interval, (int, float)) or not interval > 0:
            raise ValueError(f"interval={interval!r}: expected a number of seconds > 0")
        self.interval = float(interval)
        self.available_gpus, self.notice = _gpus()
        if warn and self.notice and self.notice not in _warned:
            _warned.add(self.notice)
            warnings.warn(self.notice, GpuUnavailableWarning, stacklevel=2)
        self.t0_wall = None          # time.time() at start, to place the run in the day
        self.ticks = 0               # sampling rounds done
        self.missed_ticks = 0        # rounds skipped because sampling ran late
        self.last_error = None       # last unexpected exception in the sampling thread
        self.stalled = None          # why stop() gave up on the thread (a query never returned)
        self._t0 = None              # time.monotonic() at start: the monitor clock's zero
        self._gpu_rows, self._host_rows, self._markers = [], [], []
        self._lock = threading.Lock()  # the trainer snapshots while the thread appends
        self._stop_event = threading.Event()
        self._thread = None
        self.sampler_cpu_s = 0.0     # CPU seconds the sampling thread has used (read per tick)
        self._last_cpu_times = None

    # -- life cycle ----------------------------------------------------------------------
    def start(self):
        """Start sampling (the first sample is taken at t=0). Returns self."""
        if self._thread is not None:
            raise RuntimeError("this GpuMonitor was already started; create a new one")
        self._last_cpu_times = psutil.cpu_times(percpu=True)   # baseline for CPU %
        self._t0 = time.monotonic()
        self.t0_wall = time.time()
        self._thread = threading.Thread(target=self._run, name="GpuMonitor", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Stop sampling, waiting at most STOP_WAIT_S (else `stalled` says why)."""
        thread = self._thread
        if thread is None:
            return
        self._stop_event.set()
        if thread is not threading.current_thread():
            thread.join(timeout=STOP_WAIT_S)
            if thread.is_alive() and not self.stalled:
                with self._lock:
                    last = (self._host_rows or self._gpu_rows or [(0.0,)])[-1][0]
                self.stalled = ("stalled: a GPU query hung past the run's end; "
                                f"no samples after t={last:.1f} s")

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
        return False

    def now(self):
        """Seconds since ``start()`` on the monitor clock."""
        if self._t0 is None:
            raise RuntimeError("GpuMonitor.now(): the monitor has not been started")
        return time.monotonic() - self._t0

    def mark(self, label):
        """Record an event (e.g. "epoch 1 start") at the current monitor time; returns t."""
        t = self.now()
        with self._lock:
            self._markers.append((t, str(label)))
        return t

    # -- sampling thread -------------------------------------------------------------------
    def _run(self):
        tick = 0
        while True:
            try:
                self._sample_once(self.now())
            except Exception as exc:  # a psutil hiccup must not end the recording
                self.last_error = f"{type(exc).__name__}: {exc}"
            self.sampler_cpu_s = time.thread_time()
            elapsed = self.now()
            following = next_tick(tick, elapsed, self.interval)
            self.missed_ticks += following - tick - 1
            tick = following
            if self._stop_event.wait(tick * self.interval - elapsed):
                return

    def _sample_once(self, t):
        samples = {index: nvml.sample(index) for index in self.available_gpus}
        gpu_rows = [(t, i, *(s[key] for key in nvml.SAMPLE_KEYS)) for i, s in samples.items()]
        host_row = self._host_sample(t)
        with self._lock:
            self._gpu_rows.extend(gpu_rows)
            self._host_rows.append(host_row)
            self.ticks += 1

    def _host_sample(self, t):
        # own deltas: psutil.cpu_percent's baseline is shared with any other caller
        now_times = psutil.cpu_times(percpu=True)   # one read of /proc/stat
        total, per_core = cpu_percent_between(self._last_cpu_times, now_times)
        self._last_cpu_times = now_times
        memory = psutil.virtual_memory()
        used_mib = (memory.total - memory.available) / MiB   # what cannot be reclaimed
        return (t, total, per_core, round(used_mib, 1), round(memory.total / MiB, 1))

    # -- reading the samples ------------------------------------------------------------------
    def _snapshot(self):
        with self._lock:
            return list(self._gpu_rows), list(self._host_rows), list(self._markers)

    def gpu_frame(self):
        """GPU samples, one row per sample per GPU, with the gpu.csv columns."""
        return _frame(self._snapshot()[0], GPU_COLUMNS)

    def host_frame(self):
        """Host samples with the host.csv columns (cpu_per_core as "12.0;40.5;...")."""
        rows = [(t, total, ";".join(f"{p:.1f}" for p in per_core), used, size)
                for t, total, per_core, used, size in self._snapshot()[1]]
        return _frame(rows, HOST_COLUMNS)

    def markers_frame(self):
        """Markers with the markers.csv columns (t, label)."""
        return _frame(self._snapshot()[2], MARKER_COLUMNS)

    def save(self, folder):
        """Write gpu.csv, host.csv and markers.csv into folder, each file atomically."""
        folder = Path(folder)
        for name, frame in (("gpu.csv", self.gpu_frame()), ("host.csv", self.host_frame()),
                            ("markers.csv", self.markers_frame())):
            write_atomic(folder / name, frame.to_csv(index=False))
        return folder

    def summary(self):
        """What `gpu-course watch` says of the samples: means and maxima per GPU, then over GPUs."""
        gpu, host = self.gpu_frame(), self.host_frame()
        per_gpu = gpu.groupby("gpu")
        result = {"samples": int(max(gpu["t"].nunique(), len(host))),
                  "cpu_percent_mean": _number(host["cpu_percent"].mean())}
        for column, how, key in (("util_gpu", "mean", "gpu_util_mean"),
                                 ("power_w", "mean", "power_w_mean"),
                                 ("sm_active", "mean", "sm_active_mean"),
                                 ("mem_used_mib", "max", "mem_used_max_mib")):
            result[key] = _number(per_gpu[column].agg(how).agg(how))
        return result

    def status_line(self):
        """The latest sample as one line, e.g. ``t=12.5s  GPU0 97% 10.2/80.0 GiB 312 W 65C | CPU 43%``."""
        with self._lock:
            count = len(self.available_gpus)
            gpu_rows = self._gpu_rows[-count:] if count else []
            host_row = self._host_rows[-1] if self._host_rows else None
        t = self.now() if self._t0 is not None else 0.0
        parts = [_gpu_status(dict(zip(GPU_COLUMNS, row))) for row in gpu_rows]
        line = f"t={t:.1f}s  " + "  ".join(parts)
        if host_row is not None:
            _, cpu, _, used, size = host_row
            host = f"CPU {cpu:.0f}%  RAM {used / 1024:.1f}/{size / 1024:.1f} GiB"
            line = f"{line} | {host}" if parts else line + host
        return line.rstrip()


def next_tick(tick, elapsed, interval):
    """The next tick on the grid k * interval ahead of ``elapsed`` (overruns skipped)."""
    return max(tick + 1, math.floor(elapsed / interval) + 1)


def cpu_percent_between(before, after):
    """(total %, per-core % tuple) of busy CPU time between two ``psutil.cpu_times(percpu=True)``."""
    deltas = [[n - o for n, o in zip(busy_and_total(new), busy_and_total(old))]
              for old, new in zip(before, after)]
    return (_percent(sum(b for b, _ in deltas), sum(t for _, t in deltas)),
            tuple(_percent(b, t) for b, t in deltas))


def _percent(busy, total):
    return round(min(100.0, max(0.0, 100.0 * busy / total)), 1) if total > 0 else 0.0


def _gpus():
    """(the GPUs to sample, the notice where there are none)."""
    if not nvml.available():
        return [], nvml.init_error()
    if nvml.gpu_count() == 0:
        return [], "NVML found no GPUs; sampling CPU only"
    return list(range(nvml.gpu_count())), None


def _frame(rows, columns):
    frame = pd.DataFrame.from_records(rows, columns=list(columns))
    for column in columns:
        if column == "gpu":
            frame[column] = frame[column].astype("int64")
        elif column not in _TEXT_COLUMNS:   # None (unsupported metric) becomes NaN
            frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
        else:
            frame[column] = frame[column].astype(object)
    return frame


def _number(value):
    return None if value is None or pd.isna(value) else float(value)


def _gpu_status(row):
    name = f"GPU{row['gpu']}"
    if row["error"] and row["util_gpu"] is None:
        return f"{name} error: {row['error']}"

    def show(key, fmt, scale=1):
        return "--" if row[key] is None else format(row[key] / scale, fmt)
    return (f"{name} {show('util_gpu', '.0f')}% {show('mem_used_mib', '.1f', 1024)}/"
            f"{show('mem_total_mib', '.1f', 1024)} GiB {show('power_w', '.0f')} W {show('temp_c', '.0f')}C")


def record_to_csv(out, seconds=None, interval=0.5, stream=None):
    """``gpu-course monitor``: record until Ctrl-C, SIGTERM (or ``seconds``) with a live
    status line, into ``out`` and ``<stem>-host.csv``; returns the sampling rounds."""
    if seconds is not None and not seconds >= 0:
        raise ValueError(f"seconds={seconds!r}: expected a number >= 0 or None (until Ctrl-C)")
    stream = sys.stdout if stream is None else stream
    out = Path(out)
    host_out = out.with_name(f"{out.stem}-host.csv")
    out.parent.mkdir(parents=True, exist_ok=True)
    monitor = GpuMonitor(interval=interval, warn=False)   # the notice goes to the stream
    if monitor.notice:
        print(monitor.notice, file=stream)
    width = 0
    from .guards import check_stop, stop_requests
    try:
        with stop_requests(), monitor:
            while seconds is None or monitor.now() < seconds:
                check_stop()
                left = interval if seconds is None else seconds - monitor.now()
                time.sleep(max(0.0, min(interval, left)))
                line = monitor.status_line()
                stream.write("\r" + line.ljust(width))   # pad over a longer previous line
                stream.flush()
                width = len(line)
    except KeyboardInterrupt:
        pass          # Ctrl-C (or SIGTERM) is how a recording normally ends
    write_atomic(host_out, monitor.host_frame().to_csv(index=False))
    if monitor.available_gpus:  # a header-only GPU file would look like a recording
        write_atomic(out, monitor.gpu_frame().to_csv(index=False))
    where = f"{out} and {host_out}" if monitor.available_gpus else f"{host_out} (no GPU to sample: CPU/RAM)"
    print(f"\n{monitor.ticks} samples written to {where}", file=stream)
    return monitor.ticks
