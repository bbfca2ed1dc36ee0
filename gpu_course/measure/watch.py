"""`gpu-course watch -- python train.py --epochs 3`: any training command, run unchanged and
recorded (GPU monitor, the process tree's CPU time), then the talk's view of it. A Python
command also gets an import hook (`watch_hook/sitecustomize.py`) that times its DataLoader from
inside: the data wait that utilisation alone cannot tell from a slow step.
"""
from __future__ import annotations

import enum
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pandas as pd
import psutil

from ..analyse import metrics
from ..analyse.diagnose import CPU_SATURATED, GPU_BUSY, INPUT_WAIT
from ..config import OWN
from ..page import Page
from .monitor import GpuMonitor
from .records import Ran, Run, RunRecord, write_atomic

PAGE = Page.of(__name__)

HOOK = Path(__file__).with_name("watch_hook")
HOOK_STEPS = "loader-steps.csv"   # what the hook writes, every DataLoader of the command
HOOK_COLUMNS = ["framework", "loader", "pass", "step", "samples", "t", "wait_s", "compute_s"]
WARMUP_STEPS = 5        # the command's first steps (workers start, kernels are chosen)
SATURATED = 0.9         # share of the cores (or of one core, for one process) that is saturated
NOT_FOUND, NOT_RUN = 127, 126   # a shell's statuses for a command missing or not executable


@dataclass(frozen=True)
class Options:
    """Where the record goes, seconds between samples, the run's name (default: the command's)."""

    runs_dir: str | Path | None = None
    interval: float = 0.5
    name: str | None = None


class Limit(enum.Enum):
    """What GPU utilisation and the command's CPU load alone say of a job (`SAYS`)."""

    DEVICE = "device"
    FED = "fed"
    WAITS = "waits"
    CPU_BUSY = "cpu_busy"
    CPU_IDLE = "cpu_idle"


TOO_SHORT, NO_GPU = PAGE.text("too_short"), PAGE.text("no_gpu")
SAYS = PAGE.means("limit", Limit)
SATURATED_BY = PAGE.means("saturated_by", str)   # who held a saturated CPU
CANNOT_TELL, NO_LOADER = PAGE.text("cannot_tell"), PAGE.text("no_loader")
DATA_WAIT = PAGE.means("data_wait", str)         # what the hook's data wait says
LINES = PAGE.means("lines", str)                 # the report's lines, filled from its numbers


@dataclass
class Job:
    """What was measured of one watched command."""

    seconds: float
    status: int
    gpu: dict            # the monitor's summary: gpu_util_mean, sm_active_mean, ...
    util_std: float      # points of utilisation the samples swing by
    cores: float         # the process tree's CPU seconds / wall seconds
    busiest: float       # the busiest process's CPU seconds / wall seconds
    processes: int
    run: Run

    @property
    def has_gpu(self) -> bool:
        return self.gpu.get("gpu_util_mean") is not None

    @property
    def held_cores(self) -> bool:
        """Its processes held the cores, or one of them held a core (one Python thread)."""
        return self.cores >= SATURATED * (os.cpu_count() or 1) or self.busiest >= SATURATED

    @property
    def saturated(self) -> bool:
        """It held the cores, or the whole machine was busy (other programs took them)."""
        return self.held_cores or (self.gpu.get("cpu_percent_mean") or 0) >= CPU_SATURATED

    def view(self) -> str:
        """The limit in words, and who held the CPU where it was saturated."""
        return SAYS[self.limit()] + (", " + SATURATED_BY["command" if self.held_cores else "others"]
                                     if self.saturated else "")

    def limit(self) -> Limit:
        if not self.has_gpu:
            return Limit.CPU_BUSY if self.saturated else Limit.CPU_IDLE
        if self.gpu["gpu_util_mean"] >= GPU_BUSY:
            return Limit.DEVICE
        return Limit.FED if self.saturated else Limit.WAITS


def watch(command: list, options: Options = Options()) -> int:
    """Run `command` unchanged, record it, say what limits it; its exit status (127: not found)."""
    if not command:
        raise ValueError("no command to watch; put it after --: gpu-course watch -- python train.py")
    if not options.interval > 0:
        raise ValueError(f"--interval={options.interval} must be > 0 seconds")
    if shutil.which(command[0]) is None:
        print(f"gpu-course watch: {command[0]}: command not found", file=sys.stderr)
        return NOT_FOUND
    monitor = GpuMonitor(interval=options.interval, warn=False)   # said once below, as one line
    name = options.name or " ".join(Path(w).name for w in command[:2])
    record = RunRecord({"name": name, "warmup_steps": WARMUP_STEPS, "model": OWN, "dataset": OWN,
                        "monitor_interval": options.interval},
                       Ran(facts={"command": list(command)}), options.runs_dir, monitor)
    env = dict(os.environ, GPU_COURSE_WATCH_STEPS=str(record.path / HOOK_STEPS),
               PYTHONPATH=os.pathsep.join(filter(None, [str(HOOK), os.environ.get("PYTHONPATH")])))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    monitor.start()
    # at a terminal, Ctrl-C reaches the command's process group directly (and it can read
    # the terminal: pdb); elsewhere it gets a group of its own and SIGINT from us
    own_group = not sys.stdin.isatty()
    try:
        child = subprocess.Popen(command, env=env, process_group=0 if own_group else None)
    except OSError as err:
        monitor.stop()
        shutil.rmtree(record.path, ignore_errors=True)
        print(f"gpu-course watch: {command[0]}: cannot run it ({err.strerror or err})", file=sys.stderr)
        return NOT_RUN
    def forward(signum, _):
        if own_group or signum != signal.SIGINT:
            child.send_signal(signum)
    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        tree = follow(child, monitor)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    seconds = monitor.now()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)   # every reaped process of the tree
    cpu_s = max(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
                tree.cpu_s.max() if len(tree) else 0.0)
    status = 128 - child.returncode if child.returncode < 0 else child.returncode   # 128 + N: signal N
    run = _record(record, monitor, tree, status)
    util = pd.to_numeric(run.gpu["util_gpu"], errors="coerce") if len(run.gpu) else pd.Series([])
    job = Job(seconds, status, monitor.summary(), float(util.std()) if util.count() > 1 else math.nan,
              cpu_s / seconds if seconds else 0.0, tree.busiest.max() / seconds if len(tree) else 0.0,
              int(tree.processes.max()) if len(tree) else 1, run)
    print("\n".join(lines(job, command, monitor.notice)), flush=True)
    return status


def follow(child: subprocess.Popen, monitor: GpuMonitor) -> pd.DataFrame:
    """Until `child` ends, each monitor interval: t, its process tree's CPU seconds so far,
    cores (over the interval before), processes, busiest (one process's CPU seconds)."""
    root, seen, rows = psutil.Process(child.pid), {}, []
    while child.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:   # ended between poll and here
            tree = []
        for process in tree:
            try:
                times = process.cpu_times()
                seen[process.pid] = times.user + times.system
            except psutil.Error:
                pass
        rows.append((monitor.now(), sum(seen.values()), len(tree), max(seen.values(), default=0.0)))
        try:
            child.wait(monitor.interval)
        except subprocess.TimeoutExpired:
            pass
    frame = pd.DataFrame(rows, columns=["t", "cpu_s", "processes", "busiest"])
    frame.insert(2, "cores", (frame.cpu_s.diff() / frame.t.diff()).round(3))
    return frame


def _record(record: RunRecord, monitor: GpuMonitor, tree: pd.DataFrame, status: int) -> Run:
    """The record closed with the hook's passes as epochs, process.csv and timeline.png."""
    steps = read_steps(record.path / HOOK_STEPS, monitor.t0_wall)
    for row, rows in epochs_of(steps):
        record.add_epoch(row, rows)
    if len(steps):
        record.meta["engine"] = steps.framework.iloc[0]
    write_atomic(record.path / "process.csv", tree.to_csv(index=False))
    record.note(exit_status=status)
    ended = "finished" if status == 0 else "interrupted" if status in (130, 143) else "failed"
    record.finish(ended, error=None if status == 0 else f"exit status {status}")
    run = Run(record.path)
    from ..show import plots
    plots.utilisation_timeline(run, save=record.path / "timeline.png")
    return run


def read_steps(path: Path, t0_wall: float) -> pd.DataFrame:
    """The steps of the loader with the most, on the monitor's clock; empty where none ran."""
    if not path.exists() or not path.stat().st_size:
        return pd.DataFrame(columns=HOOK_COLUMNS)
    steps = pd.read_csv(path, names=HOOK_COLUMNS, on_bad_lines="skip")
    steps["t"] -= t0_wall
    train = steps.groupby("loader").step.count().idxmax()
    return steps[steps.loader == train].reset_index(drop=True)


def epochs_of(steps: pd.DataFrame) -> Iterator[tuple]:
    """(epoch row, step rows) per pass, as the harness records them; the first WARMUP_STEPS not steady."""
    steps = steps.assign(timed=(steps.index >= WARMUP_STEPS).astype(int))
    for k, (_, one) in enumerate(steps.groupby("pass", sort=True)):
        timed = one[one.timed == 1]
        start, end = one.t.iloc[0], float((one.t + one.wait_s + one.compute_s).iloc[-1])
        row = {"epoch": k, "epoch_time_s": end - start, "data_wait_s": one.wait_s.sum(),
               "compute_s": one.compute_s.sum(), "sync_s": 0.0, "steps": len(one),
               "samples": int(one.samples.sum()), "timed_steps": len(timed),
               "timed_samples": int(timed.samples.sum()),
               "timed_s": float((timed.wait_s + timed.compute_s).sum()),
               "timed_wait_s": float(timed.wait_s.sum()), "t_start": start, "t_end": end,
               "t_steady": float(timed.t.iloc[0]) if len(timed) else math.nan}
        row["samples_per_sec"] = metrics.epoch_numbers(row)["samples_per_sec"]
        yield row, one.rename(columns={"wait_s": "data_wait_s"}).assign(epoch=k, step=range(len(one)))[
            ["epoch", "step", "samples", "data_wait_s", "compute_s", "timed"]].to_dict("records")


def lines(job: Job, command: list, notice: str | None) -> list:
    """The talk's view of a watched job: GPU, CPU, what those say, the hook's data wait."""
    run, gpu = job.run, job.gpu
    out = [LINES["ran"].format(command=" ".join(command), seconds=job.seconds, status=job.status,
                               path=run.path)]
    if job.seconds < 2 * run.meta["config"].get("monitor_interval", 0.5) and not len(run.epochs):
        out.append("  " + TOO_SHORT)
        return out
    if job.has_gpu:
        sm = gpu.get("sm_active_mean")
        out.append("  " + LINES["gpu"].format(
            util=gpu["gpu_util_mean"], sm=f"; SM activity {sm:.0f}%" if sm is not None else "",
            spikiness=f"±{job.util_std:.0f} points" if math.isfinite(job.util_std) else "unknown",
            memory=(gpu.get("mem_used_max_mib") or 0) / 1024,
            power=f", {gpu['power_w_mean']:.0f} W" if gpu.get("power_w_mean") else ""))
    else:
        out.append("  " + LINES["no_gpu"].format(notice=notice or "no GPU") + " " + NO_GPU)
    machine = gpu.get("cpu_percent_mean") or 0
    out.append("  " + LINES["cpu"].format(processes=job.processes, cores=job.cores,
                                          all=os.cpu_count(), busiest=job.busiest, machine=machine))
    out.append("  " + LINES["view"].format(view=job.view()) + " " + CANNOT_TELL)
    share, steps = metrics.data_wait_share(run), int(run.epochs.steps.sum())
    if not len(run.epochs):
        out.append("  " + NO_LOADER)
    elif math.isfinite(share):
        side = DATA_WAIT["input" if share >= INPUT_WAIT else "step"]
        spiky, engine = metrics.steadiness(run)["spikiness"], run.meta.get("engine")
        out.append("  " + LINES["inside"].format(steps=steps, engine=engine, share=share, spiky=spiky,
                                                 side=side, path=run.path))
    else:
        out.append("  " + LINES["too_few"].format(steps=steps))
    return out
