"""Profilers: cProfile of the input pipeline (`profile_input`), and the framework's trace of
a few steps (the adapters' `profile_steps` write it to the run's profile/ folder) read into
where a step's time went (`trace_split`) and a verdict checked against `diagnose`'s.
"""
from __future__ import annotations

import contextlib
import cProfile
import gzip
import itertools
import json
import linecache
import math
import os
import pstats
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pandas as pd

from ..page import Page
from . import diagnose
from .metrics import merged

PAGE = Page.of(__name__)   # text/profiling.md
AGREEMENT = PAGE.means("agreement", str)   # the trace's verdict against the ceilings'
PART = PAGE.means("parts", str)   # a step's parts, by the split's key
SAY = {name: PAGE.text(name) for name in ("folder", "input", "trace", "verdicts", "site")}

MAX_TRACE_MB = 25          # a gzipped trace above this is too big to open comfortably
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")   # trace events that run on the GPU
DATA_WAIT = "data wait"    # the name the adapters give the loader's part of a step
NO_STEPS = "no ProfilerStep# events in the trace: was prof.step() called?"
NO_KERNELS = "no GPU kernel in the trace: it was recorded without a GPU"


# -- cProfile ------------------------------------------------------------------------------
def profile_input(batches, steps: int, out) -> pd.DataFrame:
    """Fetch and drop `steps` batches under cProfile, save the profile to `out` (.prof) and
    return its top functions. Use a loader without workers: cProfile sees this process only."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in iterate(batches, steps):
        pass
    profiler.disable()
    profiler.dump_stats(str(out))
    return top_functions(out)


def iterate(batches, steps: int):
    """`steps` items from an iterable, starting it again when it runs out."""
    done = 0
    while done < steps:
        fetched = 0
        for item in itertools.islice(batches, steps - done):
            fetched += 1
            yield item
        if not fetched:
            raise ValueError("the loader gave no batches")
        done += fetched


def top_functions(prof) -> pd.DataFrame:
    """The 15 functions with the most own time (tottime) in a profile."""
    stats = prof if isinstance(prof, pstats.Stats) else pstats.Stats(str(prof))
    rows = []
    for (file, line, name), (calls, primitive, tottime, cumtime, _) in stats.stats.items():
        where = name if file == "~" else f"{Path(file).name}:{line}({name})"
        rows.append({"function": where, "calls": calls, "own_s": tottime,
                     "with_callees_s": cumtime,
                     "own_per_call_ms": 1000 * tottime / calls if calls else math.nan})
    table = pd.DataFrame(rows).sort_values("own_s", ascending=False).head(15).reset_index(drop=True)
    table["own_%"] = 100 * table["own_s"] / (stats.total_tt or math.nan)
    return table


# -- the profiler library's own log lines ------------------------------------------------------
# Kineto writes a line to stderr as each window starts and stops, and no setting turns it off
CHATTER = re.compile(r"^(?:STAGE|USDT):\d{4}-\d\d-\d\d \S+ \d+:\d+ \w+\.cpp:\d+\]")


def quiet_profiler():
    """Hold back the profiler library's start/stop log lines (CHATTER) (`held_stderr`)."""
    return held_stderr(CHATTER)


@contextlib.contextmanager
def held_stderr(drop: re.Pattern):
    """Hold back native writes to file descriptor 2 in the block; then pass on those `drop` misses."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no file descriptor 2 to hold back: nothing to do
        yield
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            kept = [line for line in held.read().decode(errors="replace").splitlines()
                    if not drop.search(line)]
            if kept:
                sys.stderr.write("\n".join(kept) + "\n")


# -- Chrome traces ---------------------------------------------------------------------------
def gzip_trace(path) -> Path:
    """Compress a Chrome trace to <path>.gz (about tenfold) and remove the original."""
    path = Path(path)
    target = path.with_name(path.name + ".gz")
    with open(path, "rb") as raw, gzip.open(target, "wb", compresslevel=6) as packed:
        shutil.copyfileobj(raw, packed)
    os.remove(path)
    return target


def load_trace(path) -> dict:
    """A Chrome trace's JSON (.json or .json.gz) as a dict with its traceEvents."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as file:
            data = json.load(file)
    except (OSError, EOFError, ValueError) as err:   # BadGzipFile, cut short, not JSON
        why = f"{type(err).__name__}: {err}"
        raise ValueError(f"{path} is not a readable Chrome trace ({why}); record it again") from None
    return data if isinstance(data, dict) else {"traceEvents": data}


def read_trace(path) -> list[dict]:
    """A Chrome trace's events; refused where a complete one lacks ts or dur (idle GPU time)."""
    events = load_trace(path).get("traceEvents", [])
    if not isinstance(events, list):
        raise ValueError(f"{path}: traceEvents is not a list; record the trace again")
    events = [e for e in events if isinstance(e, dict)]
    timed = [e for e in events if e.get("ph") == "X"]
    broken = [e for e in timed if not all(isinstance(e.get(k), (int, float))
                                          and not isinstance(e.get(k), bool) for k in ("ts", "dur"))]
    if broken:
        raise ValueError(f"{path}: {len(broken)} of its {len(timed)} complete events lack a "
                         f"numeric ts or dur (first: {broken[0].get('name')!r}); record it again")
    return events


def _intervals(events, test) -> list[tuple[float, float]]:
    return [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events
            if e.get("ph") == "X" and "dur" in e and test(e)]


def _length(intervals) -> float:
    return sum(b - a for a, b in intervals)


def _clip(intervals, windows) -> list[tuple[float, float]]:
    """The parts of `intervals` that lie inside `windows` (both merged)."""
    out = []
    windows = merged(windows)
    for a, b in merged(intervals):
        for wa, wb in windows:
            lo, hi = max(a, wa), min(b, wb)
            if lo < hi:
                out.append((lo, hi))
    return out


def trace_split(events) -> dict:
    """Where the profiled steps' time went, in seconds: data wait, device kernels and copies,
    host launch and sync calls, host operators (a CPU's compute) and other host time."""
    step_events = _intervals(events, _is_step)
    steps = merged(step_events)
    if not steps:
        raise ValueError(NO_STEPS)
    wait = _clip(_intervals(events, lambda e: e.get("name") == DATA_WAIT), steps)
    kernels = _clip(_intervals(events, lambda e: e.get("cat") == "kernel"), steps)
    copies = _clip(_intervals(events, lambda e: e.get("cat") in ("gpu_memcpy", "gpu_memset")), steps)
    runtime = ("cuda_runtime", "cuda_driver")
    launch = _clip(_intervals(events, lambda e: e.get("cat") in runtime and not _sync(e)), steps)
    sync = _clip(_intervals(events, lambda e: e.get("cat") in runtime and _sync(e)), steps)
    ops = _clip(_intervals(events, lambda e: e.get("cat") == "cpu_op"), steps)
    step_s, wait_s = _length(steps) / 1e6, _length(wait) / 1e6   # trace times are in us
    if step_s <= 0:
        raise ValueError("the trace's profiled steps last no time; record it again")
    ops_s = max(0.0, _length(ops) - _length(_clip(ops, wait))) / 1e6
    device, device_s = bool(kernels or copies), _length(merged(kernels + copies)) / 1e6
    return {"steps": len(step_events), "step_s": step_s, "data_wait_s": wait_s,
            "device_kernels_s": _length(merged(kernels)) / 1e6,
            "memcpy_s": _length(merged(copies)) / 1e6, "host_launch_s": _length(launch) / 1e6,
            "host_sync_s": _length(sync) / 1e6, "device_busy_s": device_s,
            "host_ops_s": ops_s, "on_device": device,
            "other_host_s": max(0.0, step_s - wait_s - (device_s if device else ops_s))}


def _sync(event) -> bool:
    """A runtime call in which the host waits for the device (cuda*Synchronize)."""
    return "Synchronize" in str(event.get("name", ""))


def _is_step(event) -> bool:
    """A ProfilerStep window on the host (not the GPU's copy of it)."""
    return str(event.get("name", "")).startswith("ProfilerStep#") \
        and event.get("cat") != "gpu_user_annotation"


def trace_verdict(split: dict) -> str:
    """The diagnosis's verdict from a trace split: data wait's share, then the busy share."""
    step = split["step_s"]
    if split["data_wait_s"] / step >= diagnose.INPUT_WAIT:
        return "input-bound"
    busy = (split["device_kernels_s"] + split["memcpy_s"]) if split["on_device"] \
        else split["host_ops_s"]
    busy_share = busy / (step - split["data_wait_s"])
    limit = diagnose.GPU_BUSY / 100 if split["on_device"] else diagnose.BELOW_COMPUTE
    return "compute-bound" if busy_share >= limit else "overhead-bound"


def split_table(split: dict) -> pd.DataFrame:
    """The split as rows (part, seconds, % of the step time)."""
    parts = [(PART["data_wait_s"], split["data_wait_s"])]
    if split["on_device"]:
        parts += [(PART["device_kernels_s"], split["device_kernels_s"]),
                  (PART["memcpy_s"], split["memcpy_s"]),
                  (PART["host_launch_s"], split["host_launch_s"]),
                  (PART["host_sync_s"], split.get("host_sync_s", 0.0))]
    else:
        parts += [(PART["host_ops_s"], split["host_ops_s"])]
    parts.append((PART["other_host_s"], split["other_host_s"]))
    table = pd.DataFrame(parts, columns=["part", "seconds"])
    table["% of step"] = 100 * table["seconds"] / split["step_s"]
    return table


# What a kernel computes, from its name (first match wins)
KERNEL_KINDS = (
    ("fused by Inductor (BatchNorm, ReLU, adds)", re.compile(r"^triton_")),
    ("BatchNorm (cuDNN)", re.compile(r"bn_fw|bn_bw|batch_norm")),
    ("convolutions (cuDNN)", re.compile(r"fprop|dgrad|wgrad|implicit_gemm|implicit_convolve"
                                         r"|winograd|nchwToNhwc|nhwcToNchw|nhwcAddPadding"
                                         r"|cask_|cudnn")),
    ("optimizer (multi-tensor)", re.compile(r"multi_tensor_apply|foreach")),
    ("other (copies, indexing, elementwise)", re.compile(r"")),
)


def kernel_kinds(events) -> pd.DataFrame:
    """The GPU kernels by KERNEL_KINDS: ms a step, share of kernel time, kernels a step."""
    steps = sum(map(_is_step, events))
    if not steps:
        raise ValueError(NO_STEPS)
    kernels = [e for e in events if e.get("cat") == "kernel" and "dur" in e]
    if not kernels:
        raise ValueError(NO_KERNELS)
    time, count = Counter(), Counter()
    for e in kernels:
        kind = next(k for k, pattern in KERNEL_KINDS if pattern.search(str(e.get("name", ""))))
        time[kind] += float(e["dur"])
        count[kind] += 1
    total = sum(time.values())
    rows = [{"kind": kind, "ms_per_step": time[kind] / 1e3 / steps,
             "share": time[kind] / total, "kernels_per_step": count[kind] / steps}
            for kind, _ in KERNEL_KINDS if kind in time]
    return pd.DataFrame(rows)


def gpu_busy_share(events) -> float:
    """The share of the GPU's own span (first kernel to last) in which a kernel or copy ran:
    unlike `trace_split`, right for work launched ahead of the host's step windows."""
    work = merged(_intervals(events, lambda e: e.get("cat") in GPU_CATEGORIES))
    if not work:
        raise ValueError(NO_KERNELS)
    return _length(work) / (work[-1][1] - work[0][0])


# -- the whole procedure ----------------------------------------------------------------------
def profile_run(gc, cfg, runs_dir=None, active: int = 3, input_steps: int = 20,
                ceiling_steps: int | None = None) -> dict:
    """What `gpu-course profile` does: train, both mock ceilings, diagnose, trace, cProfile."""
    run = gc.train(cfg, runs_dir=runs_dir, progress=False, verbose=False)
    steps = ceiling_steps or cfg.warmup_steps + diagnose.MIN_STEPS  # enough to rule on
    for mock in ("loader", "trainer"):
        gc.train(cfg.replace(name=f"{cfg.name}: mock {mock}", mock=mock, epochs=1,
                             max_steps=steps), runs_dir=runs_dir, progress=False, verbose=False)
    d = diagnose.diagnose(run)
    folder = Path(run.path) / "profile"
    window = gc.profile_steps(cfg, folder, active=active)
    train_set, _ = gc.load_datasets(cfg)
    loader = gc.make_loader(train_set, cfg.replace(num_workers=0))  # cProfile sees one process
    top = profile_input(loader, input_steps, folder / "input.prof")
    result = {"run": run, "diagnosis": d, "folder": folder, "prof": folder / "input.prof",
              "top_functions": top, **window, "split": None, "trace_verdict": None}
    if window.get("trace"):
        result["split"] = trace_split(read_trace(window["trace"]))
        result["trace_verdict"] = trace_verdict(result["split"])
    result["agrees"] = None if d.verdict == diagnose.UNRELIABLE else \
        result["trace_verdict"] in (None, d.verdict)
    return result


def format_result(result: dict) -> str:
    """What `gpu-course profile` prints."""
    d = result["diagnosis"]
    lines = [str(d), "", SAY["folder"].format(**result), SAY["input"].format(**result),
             result["top_functions"].head(8).to_string(index=False, float_format="{:.3f}".format)]
    if result.get("note"):
        lines += ["", result["note"]]
    if result.get("trace"):
        size = Path(result["trace"]).stat().st_size / 1e6
        agreement = AGREEMENT["none" if result["agrees"] is None else
                              "agree" if result["agrees"] else "disagree"]
        lines += ["", SAY["trace"].format(trace=result["trace"], size=size),
                  split_table(result["split"]).to_string(index=False, float_format="{:.3f}".format),
                  SAY["verdicts"].format(trace=result["trace_verdict"].upper(),
                                         ceilings=d.verdict.upper(), agreement=agreement)]
    return "\n".join(lines)


# -- the lines that synced ------------------------------------------------------------------
SYNC_WARNING = "synchronizing"   # torch's words: "called a synchronizing CUDA operation"


def sync_sites(caught) -> list[dict]:
    """The lines `set_sync_debug_mode("warn")` warned at, most calls first, with their calls."""
    counts = Counter((w.filename, w.lineno) for w in caught if SYNC_WARNING in str(w.message))
    return [{"line": SAY["site"].format(place=_place(name), line=n, source=linecache.getline(
                 name, n).strip() or "(source not available)"), "calls": calls}
            for (name, n), calls in counts.most_common()]


def _place(filename: str) -> str:
    path = Path(filename)
    if filename.startswith("<") or path.parent.name.startswith("ipykernel_"):
        return "this notebook"
    return path.name
