"""Run records, one folder per run under `runs_dir` (runs/, or GPU_COURSE_RUNS): run.json (config,
versions, hardware, git commit, status, summary), epochs.csv (a row per finished epoch), steps.csv
(a row per step: samples, data wait, host-side compute, steady or not), gpu.csv and host.csv (the
monitor's samples), markers.csv (epoch boundaries on the monitor's clock). Every file is written
atomically, so an interrupted run keeps every finished epoch.
"""
from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import math
import os
import platform
import secrets
import socket
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable

from ..env import cpu
from . import nvml
from .guards import OutOfMemory, naming, status_of  # noqa: F401  (OutOfMemory: re-exported)

EPOCH_COLUMNS = ["epoch", "epoch_time_s", "samples_per_sec", "data_wait_s", "compute_s",
                 "sync_s", "steps", "samples", "timed_steps", "timed_samples", "timed_s",
                 "timed_wait_s", "loss", "train_acc", "val_acc", "lr", "eval_s",
                 "t_start", "t_steady", "t_end"]
STEP_COLUMNS = ["epoch", "step", "samples", "data_wait_s", "compute_s", "timed", "device_s"]
GPU_COLUMNS = ["t", "gpu", *nvml.SAMPLE_KEYS]
HOST_COLUMNS = ["t", "cpu_percent", "cpu_per_core", "ram_used_mib", "ram_total_mib"]
MARKER_COLUMNS = ["t", "label"]
STATUSES = ("running", "finished", "interrupted", "failed", "oom", "diverged")
REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("mxnet", "mxnet-cu112", "gluoncv", "torch", "numpy", "pandas", "matplotlib",
            "nvidia-ml-py", "psutil", "gpu-course")


def default_runs_dir() -> Path:
    path = Path(os.environ.get("GPU_COURSE_RUNS") or REPO_ROOT / "runs").expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"GPU_COURSE_RUNS={path} is a file; name a folder, or unset it (runs/)")
    return path


def runs_root(runs_dir=None) -> Path:
    """Where run records go: `runs_dir` (~ expanded), else `default_runs_dir()`."""
    return Path(runs_dir).expanduser() if runs_dir else default_runs_dir()


# -- writing ----------------------------------------------------------------------------
def write_atomic(path: Path, text: str | bytes) -> None:
    """Write text (or bytes) to `path` via a temporary file in the same folder and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    binary = isinstance(text, bytes)
    try:
        with open(tmp, "wb" if binary else "w", encoding=None if binary else "utf-8",
                  newline=None if binary else "") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:  # a full disk: no temporary file outlives the failed write
        tmp.unlink(missing_ok=True)
        raise naming(err, path) from None


def append_text(path: Path, text: str) -> None:
    """Append text to a file in one write, flushed to disk; an error names the file."""
    try:
        with open(path, "a", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    except OSError as err:   # a full disk: a write() error names no file
        raise naming(err, path) from None


def rows_to_csv(rows: Iterable[dict], columns: list[str]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    for row in rows:   # None and NaN as empty cells
        writer.writerow({k: "" if v is None or (isinstance(v, float) and math.isnan(v)) else v
                         for k, v in ((k, row.get(k)) for k in columns)})
    return buf.getvalue()


def _now() -> str:
    return _dt.datetime.now().astimezone().isoformat(timespec="milliseconds")


def _json_safe(value: Any) -> Any:
    """NaN is not JSON: store it as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


@dataclass(frozen=True)
class Ran:
    """What the record says beyond cfg: the devices, the settings the machine could not
    honour (`downgrades`: {"field", "requested", "ran", "why"}) and other `facts`."""

    engine: str | None = None
    devices: str | None = None
    device_notice: str | None = None
    downgrades: tuple = ()
    facts: dict = field(default_factory=dict)


class RunRecord:
    """The on-disk record of one run, saved each epoch; leaving it stops the monitor and sets the status."""

    def __init__(self, config: dict, ran: Ran, runs_dir: str | Path | None = None,
                 monitor: Any = None, hardware_info: dict | None = None):
        name = config.get("name", "run")
        downgrades = list(ran.downgrades or ())
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in name)[:60]
        self.run_id = f"{stamp}-{safe}-{secrets.token_hex(2)}"
        self.path = runs_root(runs_dir) / self.run_id
        self.path.mkdir(parents=True, exist_ok=False)
        self.monitor = monitor
        self.summary_extra = None  # run -> dict, added to the summary at finish
        self.epochs: list[dict] = []
        self.meta = {
            "run_id": self.run_id, "name": name, "engine": ran.engine, "status": "running",
            "error": None, "started_at": _now(), "ended_at": None,
            "config": dict(config), "versions": versions(),
            "hardware": hardware_info if hardware_info is not None else hardware(),
            "git": git_info(), "summary": {}, "notes": {},
            # what was asked for where it differs from what ran, and why
            "requested": {d["field"]: d["requested"] for d in downgrades},
            "downgrades": downgrades,
            # what the run was handed (own network/loader), threads, compile backend...
            "ran": dict(ran.facts or {}), "load": {"start": machine_load()},
        }
        self._write_meta()

    # -- updates ----------------------------------------------------------------------
    def add_epoch(self, row: dict, steps: Iterable[dict] = ()) -> None:
        """Append a finished epoch (and its steps) and save everything so far."""
        self.epochs.append(dict(row))
        write_atomic(self.path / "epochs.csv", rows_to_csv(self.epochs, EPOCH_COLUMNS))
        steps = list(steps)
        if steps:  # appended, not rewritten: a long run's steps would cost quadratic time
            text = rows_to_csv(steps, STEP_COLUMNS)
            append_text(self.path / "steps.csv",
                        text if not (self.path / "steps.csv").exists()
                        else text.split("\n", 1)[1])
        if self.monitor is not None:
            self.monitor.save(self.path)
        self._write_meta()

    def note(self, **values: Any) -> None:
        """Free-form facts about the run (e.g. the CPU fallback notice)."""
        self.meta["notes"].update(values)
        self._write_meta()

    def finish(self, status: str = "finished", error: str | None = None) -> None:
        if status not in STATUSES:
            raise ValueError(f"status={status!r}; allowed: {', '.join(STATUSES)}")
        if self.monitor is not None:
            self.monitor.stop()
            if getattr(self.monitor, "stalled", None):  # a GPU query never returned
                self.meta["notes"]["monitor"] = self.monitor.stalled
            try:
                self.monitor.save(self.path)
            except OSError as err:  # a full disk must not keep the status from run.json
                self.meta["notes"]["monitor"] = f"samples not saved: {err}"
        self.meta["load"]["end"] = machine_load()
        self.meta.update(status=status, error=error, ended_at=_now())
        try:  # the numbers every consumer computes, cached (metrics defines them)
            from ..analyse import metrics
            run = Run(self.path)
            self.meta["summary"].update(metrics.summary(run))
            if self.summary_extra is not None:  # e.g. the harness's summary line
                self.meta["summary"].update(self.summary_extra(run))
        except Exception as err:  # a record must close even if its files are damaged
            self.meta["summary"]["error"] = f"summary not computed: {err}"
        self._write_meta()

    def _write_meta(self) -> None:
        write_meta(self.path, self.meta)

    # -- context manager --------------------------------------------------------------
    def __enter__(self) -> "RunRecord":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None and self.meta["status"] == "running":
            self.finish("finished")
        elif exc_type is not None:
            status, error = status_of(exc, len(self.epochs))
            try:
                self.finish(status, error=error)
            except OSError as err:  # e.g. the disk that failed the run: say so, go on
                print(f"could not record status {status!r} in {self.path}: {err}", file=sys.stderr)
        return False


def write_meta(folder: str | Path, meta: dict) -> None:
    """The one writer of run.json (atomic; NaN stored as null)."""
    write_atomic(Path(folder) / "run.json",
                 json.dumps(_json_safe(meta), indent=2, sort_keys=True, default=str))


def update_meta(folder: str | Path, notes: dict | None = None, **fields: Any) -> dict:
    """Change a closed record's run.json (`fields` replaced, `notes` merged); the new meta."""
    meta = json.loads((Path(folder) / "run.json").read_text())
    meta.update(fields)
    if notes:
        _merge(meta.setdefault("notes", {}), notes)
    write_meta(folder, meta)
    return meta


def _merge(into: dict, values: dict) -> None:
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


# -- facts about the machine ------------------------------------------------------------
def machine_load() -> dict:
    """How busy the machine is: load averages and CPU times so far."""
    times = os.times()
    try:
        one, five, _ = os.getloadavg()
    except OSError:  # not on every platform
        one = five = None
    return {"loadavg_1m": one, "loadavg_5m": five, "process_cpu_s": times.user + times.system,
            "children_cpu_s": times.children_user + times.children_system,
            **_psutil_cpu_s(), "wall": _dt.datetime.now().timestamp(), "cpu_count": os.cpu_count()}


def _psutil_cpu_s() -> dict:
    """CPU seconds this process's running children (loader workers) have used so far, and
    all cores have spent busy since boot (no load average's lag); None without psutil."""
    try:
        import psutil
        children, t = psutil.Process().children(recursive=True), psutil.cpu_times()
    except Exception:  # no psutil, or a platform without process tables or counters
        return {"live_children_cpu_s": None, "cpu_busy_s": None}
    total = 0.0
    for child in children:
        try:
            times = child.cpu_times()
        except Exception:  # it ended meanwhile: its time is in children_cpu_s once waited for
            continue
        total += times.user + times.system
    return {"live_children_cpu_s": total, "cpu_busy_s": busy_and_total(t)[0]}


def busy_and_total(times) -> tuple:
    """(busy, total) CPU seconds of psutil cpu_times as psutil.cpu_percent counts them: guest
    time is already inside user/nice, iowait is idle time."""
    total = sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
    return total - times.idle - getattr(times, "iowait", 0.0), total


def versions(packages: Iterable[str] = PACKAGES) -> dict:
    """Installed versions of the packages that matter, plus Python's."""
    found = {"python": platform.python_version()}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def hardware() -> dict:
    """GPU names, driver and CPU facts (NVML if present; never raises)."""
    return {"gpus": nvml.gpus_info(), "driver": nvml.driver_version(),
            "cuda": nvml.cuda_driver_version(),
            "cpu_count": os.cpu_count(), "cpu_model": _cpu_model(), **cpu.record(),
            "hostname": socket.gethostname(), "platform": platform.platform()}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_info(root: Path = REPO_ROOT) -> dict:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=5)
            return out.stdout.strip() if out.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            return None
    commit = git("rev-parse", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(dirty) if dirty is not None else None}


# -- reading ----------------------------------------------------------------------------
class Run:
    """A run record read back: `.meta` (run.json) and pandas frames of the CSV files."""

    def __init__(self, path: str | Path):
        import pandas as pd
        self.path = Path(path)
        meta_file = self.path / "run.json"
        if not meta_file.exists():
            raise FileNotFoundError(f"{self.path} is not a run folder (no run.json)")
        try:
            self.meta = json.loads(meta_file.read_text())
        except ValueError as err:   # truncated or empty: name the file
            raise ValueError(f"{meta_file} is not a readable run record ({err}); {ASIDE}") from None
        if not isinstance(self.meta, dict):
            raise ValueError(f"{meta_file} holds a {type(self.meta).__name__}, not a JSON object; {ASIDE}")
        _check_shape(self.meta, meta_file)

        def frame(name: str, columns: list[str]):
            file = self.path / name
            if file.exists() and file.stat().st_size > 0:
                try:   # a line cut by a crash mid-append is dropped, not fatal
                    return pd.read_csv(file, on_bad_lines="skip")
                except ValueError as err:   # not text, not CSV
                    raise ValueError(f"{file} is not a readable CSV file ({err}); {ASIDE}") from None
            return pd.DataFrame(columns=columns)
        self.epochs, self.steps, self.gpu, self.host, self.markers = (
            frame(f"{name}.csv", columns) for name, columns in (
                ("epochs", EPOCH_COLUMNS), ("steps", STEP_COLUMNS), ("gpu", GPU_COLUMNS),
                ("host", HOST_COLUMNS), ("markers", MARKER_COLUMNS)))

    name = property(lambda self: self.meta.get("name", self.path.name))
    config = property(lambda self: self.meta.get("config", {}))
    summary = property(lambda self: self.meta.get("summary", {}))
    status = property(lambda self: self.meta.get("status"))

    def __repr__(self) -> str:
        return f"Run({self.name!r}, status={self.status!r}, path={str(self.path)!r})"


ASIDE = "move the folder aside or delete it"   # what to do with a damaged run folder
# the parts of run.json that readers use as objects or lists, by kind
SHAPE = {"config": dict, "summary": dict, "hardware": dict, "notes": dict, "ran": dict,
         "requested": dict, "versions": dict, "load": dict, "downgrades": list}


def _check_shape(meta: dict, meta_file: Path) -> None:
    """Refuse a run.json that is not this course's record, naming the part that is not."""
    if not isinstance(meta.get("config"), dict):
        found = (f"its config is a {type(meta['config']).__name__}" if "config" in meta
                 else "keys: " + ", ".join(sorted(map(str, meta))[:8]))
        raise ValueError(f"{meta_file} is not a run record of this course: it has no 'config' object "
                         f"({found}); {ASIDE}")
    for key, kind in SHAPE.items():
        if meta.get(key) is not None and not isinstance(meta[key], kind):
            want = "an object" if kind is dict else "a list"
            raise ValueError(f"{meta_file}: '{key}' holds a {type(meta[key]).__name__}, not {want}; {ASIDE}")


def load_run(path_or_id: str | Path, runs_dir: str | Path | None = None) -> Run:
    """Read one run from its folder, or from its run id under runs_dir."""
    path = Path(path_or_id)
    if not (path / "run.json").exists():
        candidate = runs_root(runs_dir) / str(path_or_id)
        if (candidate / "run.json").exists():
            path = candidate
    return Run(path)


def load_runs(runs_dir: str | Path | None = None) -> list[Run]:
    """Every run under runs_dir at any depth, oldest first."""
    root = runs_root(runs_dir)
    if not root.exists():
        return []
    runs = []
    for p in root.rglob("run.json"):
        try:
            runs.append(Run(p.parent))
        except (OSError, ValueError) as err:  # one damaged record must not hide the rest
            warnings.warn(f"skipping {p}: unreadable run record ({err})", stacklevel=2)
    # run ids start with their start time, so this is the order they ran in
    return sorted(runs, key=lambda r: (r.meta.get("started_at") or "", r.path.name))


def runs_table(runs: Iterable[Run]):
    """One row per run: the numbers people compare (as `metrics` defines them)."""
    import pandas as pd
    from ..analyse import metrics
    rows = []
    for run in runs:
        s, c = metrics.summary(run), run.config
        gpus = run.meta.get("hardware", {}).get("gpus", [])
        rows.append({
            "run_id": run.meta.get("run_id"), "name": metrics.label(run),
            "engine": run.meta.get("engine"), "status": run.status, "epochs": len(run.epochs),
            **{k: c.get(k) for k in ("batch_size", "num_workers", "num_gpus", "dtype", "graph")},
            **{k: s[k] for k in ("samples_per_sec", "epoch_time_s", "gpu_util", "data_wait_share",
                                 "val_acc")},
            "device": gpus[0].get("name") if gpus else "CPU",
            "started_at": run.meta.get("started_at"),
        })
    return pd.DataFrame(rows)
