"""Every number the course reports, defined once, from a run record, so that the tables,
plots, report, `diagnose`, notebooks and SageMaker metric line read one run alike.
"Steady" steps are those after the run's warm-up; each function's docstring defines its
number. A run is a `records.Run` (`.epochs`, `.steps`, `.gpu` frames, `.meta`, `.name`).
"""
from __future__ import annotations

import math
import re
import statistics

import pandas as pd

from ..config import worded

BLOCKS = 5         # blocks of steady steps that stand in for repeats of one run
WAITED = 0.10      # a step "waited for data" when its data wait was over 10 % of its time
SHARED = 0.5       # load beyond the run's own above half a core: the machine was shared
STATUS_TEXT = {"oom": "out of memory"}  # how a status reads in tables, charts and sentences
FAILED = ("oom", "failed", "diverged")  # runs whose numbers do not count as a result
TABLE_COLUMNS = ["rung", "repeats", "ran", "samples_per_sec", "samples_per_sec_min",
                 "samples_per_sec_max", "samples_per_sec_all", "epoch_time_s", "gpu_util", "data_wait_share",
                 "spikiness", "speedup", "val_acc", "status"]


# -- plain arithmetic, shared by runs and single epochs -----------------------------------
def rate(samples: float, seconds: float) -> float:
    """samples / seconds, NaN when there is no time to divide by."""
    return samples / seconds if seconds and seconds > 0 else math.nan


share = rate   # part / whole as a fraction, NaN when whole is not positive


def epoch_numbers(row: dict) -> dict:
    """The per-epoch forms of the run-level numbers, from one epochs.csv row."""
    return {"samples_per_sec": rate(number(row.get("timed_samples")), number(row.get("timed_s"))),
            "samples_per_sec_all": rate(number(row.get("samples")),
                                        number(row.get("epoch_time_s"))),
            "data_wait_share": share(number(row.get("timed_wait_s")), number(row.get("timed_s"))),
            "epoch_time_s": number(row.get("epoch_time_s"))}


# -- one number per run -------------------------------------------------------------------
def samples_per_sec(run) -> float:
    """Samples of the steady steps over their time (with the epoch's closing sync)."""
    return rate(epochs_sum(run, "timed_samples"), epochs_sum(run, "timed_s"))


def steady_block_rates(run) -> list[float]:
    """Steady samples/s of BLOCKS consecutive blocks of the steady steps ([] without per-step
    rows), scaled to add up to `samples_per_sec`'s time (closing sync included) to bracket it."""
    steady = _steady(run)
    seconds_each = step_seconds(steady)
    measured, steady_s = float(seconds_each.sum()), epochs_sum(run, "timed_s")
    if measured > 0 and steady_s > 0:
        seconds_each = seconds_each * (steady_s / measured)
    n = min(BLOCKS, len(steady))
    rates = []
    for i in range(n):
        part = slice(i * len(steady) // n, (i + 1) * len(steady) // n)
        seconds = float(seconds_each.iloc[part].sum())
        if seconds > 0:
            rates.append(float(_column(steady.iloc[part], "samples").sum()) / seconds)
    return rates


def throughput(run) -> dict:
    """samples_per_sec, and the slowest and fastest of `steady_block_rates` (NaN: under two)."""
    rates = steady_block_rates(run)
    low, high = (min(rates), max(rates)) if len(rates) > 1 else (math.nan, math.nan)
    return {"samples_per_sec": samples_per_sec(run), "samples_per_sec_min": low,
            "samples_per_sec_max": high}


def samples_per_sec_all(run) -> float:
    """Throughput over every epoch's whole time, warm-up and compile included."""
    return rate(epochs_sum(run, "samples"), epochs_sum(run, "epoch_time_s"))


def epoch_time_s(run) -> float:
    """Seconds per epoch, the first (start-up) epoch left out when there are several."""
    values = _column(run.epochs, "epoch_time_s").dropna()
    return float((values.iloc[1:] if len(values) > 1 else values).mean())


def warmup_s(run) -> float:
    """Seconds spent in the run's warm-up steps (compile, autotuning, worker start-up)."""
    steps = _steps(run)
    if not len(steps):
        return math.nan
    early = steps[_column(steps, "timed") == 0]
    return float((_column(early, "data_wait_s") + _column(early, "compute_s")).sum())


def preparation_s(run) -> float:
    """Seconds spent before the run making the copy its data format reads (0.0: none)."""
    made = ((run.meta.get("notes") or {}).get("prepared")) or {}
    if not made:
        return 0.0
    seconds = made.get("seconds")
    if seconds is None or (made.get("reused") and not seconds):
        return math.nan
    return float(seconds)


def data_wait_share(run) -> float:
    """Fraction of the steady steps' time spent waiting for the input pipeline."""
    return share(epochs_sum(run, "timed_wait_s"), epochs_sum(run, "timed_s"))


def wait_blocks(run) -> list[float]:
    """The data wait's share of the step time in each of BLOCKS blocks of the steady steps."""
    steady = _steady(run)
    wait = _column(steady, "data_wait_s").to_numpy()
    total = wait + _column(steady, "compute_s").to_numpy()
    size = len(steady) // BLOCKS
    if size < MIN_STEADY_STEPS // BLOCKS:
        return []
    return [float(wait[i * size:(i + 1) * size].sum() / total[i * size:(i + 1) * size].sum())
            for i in range(BLOCKS)]


def training_windows(run, steady: bool = True) -> list[tuple[float, float]]:
    """(t_from, t_to) of each finished epoch's training, from its first steady step."""
    epochs = run.epochs
    if not len(epochs) or "t_end" not in epochs.columns:
        return []
    starts = _column(epochs, "t_start")
    if steady and "t_steady" in epochs.columns:
        steady_from = _column(epochs, "t_steady")
        if "timed_steps" in epochs.columns:
            # older records leave t_steady empty where every step was timed
            timed = _column(epochs, "timed_steps")
            steady_from = steady_from.fillna(starts.where(timed > 0))
        starts = steady_from
    return [(a, b) for a, b in zip(starts, _column(epochs, "t_end")) if b > a]


def gpu_util(run) -> float:
    """Mean GPU-Util (%) over all GPUs while the run trained steadily (`steady_samples`)."""
    return _steady_mean(run, "util_gpu")


def gpm_activity(run) -> dict:
    """GPM's mean sm_active, tensor_active and dram_active (%) over the steady samples."""
    return {name: _steady_mean(run, name)
            for name in ("sm_active", "tensor_active", "dram_active")}


def steady_samples(run) -> pd.Series:
    """Which monitor samples lie wholly, with the period NVML averages them over, in the
    steady training windows (else the training's); windows closer than one period merge."""
    gpu = run.gpu
    t = _column(gpu, "t")
    interval = float(run.config.get("monitor_interval") or 0) if hasattr(run, "config") \
        else 0.0
    windows = training_windows(run) or training_windows(run, steady=False)
    inside = pd.Series(False, index=gpu.index)
    for a, b in merged(windows, interval):
        inside |= (t - interval >= a) & (t <= b)
    return inside


def during_epochs(run, frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of a monitor frame (gpu, host) taken while epochs ran; all without any."""
    if not len(frame):
        return frame
    t = _column(frame, "t")
    inside = pd.Series(False, index=frame.index)
    for _, a, b in epoch_spans(run):
        inside |= (t >= a) & ((t <= b) if not math.isnan(b) else True)
    return frame[inside] if inside.any() else frame


def merged(intervals, gap: float = 0.0) -> list[tuple[float, float]]:
    """The union of (start, end) intervals, those less than `gap` apart joined."""
    out = []
    for a, b in sorted(intervals):
        if out and a - out[-1][1] <= gap:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _steady_mean(run, column: str) -> float:
    return float(_column(run.gpu, column)[steady_samples(run)].mean())


def step_seconds(steps: pd.DataFrame) -> pd.Series:
    """Each step's time: the device's (`device_s`) where every row has it, else the host's
    (data wait + compute), which on a GPU is dispatch plus back-pressure, not the step's."""
    device = _column(steps, "device_s")
    if len(steps) and device.notna().all():
        return device
    return _column(steps, "data_wait_s") + _column(steps, "compute_s")


def median_step_ms(run, device: bool = False) -> float:
    """The median steady step in ms, by CUDA events (device=True) or the host's clock."""
    steady = _steady(run)
    values = _column(steady, "device_s") if device else \
        _column(steady, "data_wait_s") + _column(steady, "compute_s")
    return 1000 * float(values.median()) if len(values) and values.notna().all() else math.nan


def epochs_sum(run, column: str) -> float:
    """A column of the run's epochs summed; NaN where no epoch records it."""
    values = _column(run.epochs, column).dropna()
    return float(values.sum()) if len(values) else math.nan


MIN_STEADY_STEPS = 20   # steady steps a run needs before its samples/s is ruled on


def steady_steps(run) -> int:
    """How many steady (timed) steps the run's record holds."""
    return len(_steady(run))


def steadiness(run) -> dict:
    """Steady step-time p50 and p95, spikiness, and the share of steps that waited for data."""
    timed = _steady(run)
    if not len(timed):
        return {"step_p50_s": math.nan, "step_p95_s": math.nan, "spikiness": math.nan,
                "waited_share": math.nan, "steady_steps": 0}
    total = step_seconds(timed)
    p50, p95 = float(total.quantile(0.5)), float(total.quantile(0.95))
    waited = float((_column(timed, "data_wait_s") > WAITED * total).mean())
    return {"step_p50_s": p50, "step_p95_s": p95, "spikiness": share(p95, p50),
            "waited_share": waited, "steady_steps": len(timed)}


def val_acc(run) -> float:
    """Validation accuracy after the last epoch that measured it (fraction)."""
    values = _column(run.epochs, "val_acc").dropna()
    return float(values.iloc[-1]) if len(values) else math.nan


def status(run) -> str:
    """run.json's status: running, finished, interrupted, failed, oom or diverged."""
    return str(run.meta.get("status") or "unknown")


def summary(run) -> dict:
    """Every run-level number above, by name (what run.json's summary caches)."""
    return {**throughput(run), "samples_per_sec_all": samples_per_sec_all(run),
            "epoch_time_s": epoch_time_s(run), "warmup_s": warmup_s(run),
            "data_wait_share": data_wait_share(run), "gpu_util": gpu_util(run),
            **steadiness(run), "val_acc": val_acc(run), "epochs": len(run.epochs)}


def machine_load(run) -> dict:
    """How busy the machine was while the run ran, and whether other programs kept more
    than SHARED of a core busy beyond the run's processes and loader workers."""
    load = run.meta.get("load") or {}
    start, end = load.get("start") or {}, load.get("end") or {}
    spent = lambda key: number(end.get(key)) - number(start.get(key))   # noqa: E731
    wall = spent("wall")
    own, busy = share(spent("process_cpu_s"), wall), share(spent("cpu_busy_s"), wall)
    averages = [a for a in (number(x.get("loadavg_1m")) for x in (start, end)) if not math.isnan(a)]
    cfg = run.config or {}
    # a compute ceiling's loader workers sit idle; where measured, what the workers used
    workers = 0.0 if cfg.get("mock") == "loader" else number(cfg.get("num_workers")) or 0.0
    children = spent("live_children_cpu_s") + spent("children_cpu_s")
    if not math.isnan(children):
        workers = max(0.0, share(children, wall))
    mean = sum(averages) / len(averages) if averages else math.nan
    used = busy if not math.isnan(busy) else mean
    # a DDP job's record is its first process's; every process of it ran here alike
    world = number((run.meta.get("ran") or {}).get("world_size"))
    ranks = int(world) if world >= 1 else 1
    other = used - ranks * ((own if not math.isnan(own) else 1.0) + workers)
    return {"loadavg": mean, "busy_cores": busy, "own_cores": own, "other_load": other,
            "cpu_count": number(start.get("cpu_count")), "shared": bool(other > SHARED)}


def on_gpu(run) -> bool:
    """Whether the run trained on a GPU, by its recorded devices (else its hardware)."""
    devices = str((run.meta.get("notes") or {}).get("devices") or "")
    if devices:
        return "cuda" in devices or "gpu(" in devices
    gpus = (run.meta.get("hardware") or {}).get("gpus") or []
    return bool(gpus) and int(run.config.get("num_gpus") or 0) > 0


def engine(run) -> str:
    """The track that ran it: "gluon" or "pytorch"."""
    return str(run.meta.get("engine") or run.config.get("engine") or "gluon")


# -- what ran -----------------------------------------------------------------------------
def ran_as(run) -> dict:
    """{field: (requested, ran, why)} for every setting that did not run as requested."""
    return {d["field"]: (d["requested"], d["ran"], d.get("why", ""))
            for d in run.meta.get("downgrades") or []}


def ran_text(run) -> str:
    """What ran where it differs from the request ("dtype float32 ran, float16 requested")."""
    track = engine(run)
    changes = [f"{field} {worded(field, ran, track)} ran, {worded(field, requested, track)} "
               "requested" for field, (requested, ran, _) in ran_as(run).items()]
    tf32 = (run.meta.get("ran") or {}).get("tf32") or {}
    if tf32.get("convolutions"):
        changes.append("float32 convolutions ran in TF32")
    return "; ".join(changes)


def label(run) -> str:
    """The run's name with `ran_text` beside it."""
    text = ran_text(run)
    return f"{run.name} ({text})" if text else str(run.name)


# -- repeated runs -----------------------------------------------------------------------
def as_groups(runs) -> list[list]:
    """Each item of `runs` as a list of repeats: a run alone, or a list or tuple of runs."""
    groups = [list(item) if isinstance(item, (list, tuple)) else [item] for item in runs]
    empty = [i for i, group in enumerate(groups) if not group]
    if empty:
        raise ValueError(f"runs[{empty[0]}] is an empty list; a group needs at least one run")
    return groups


def representative(group):
    """The run with a group's median samples/s (the lower middle one), else its first."""
    if not isinstance(group, (list, tuple)):
        return group
    rated = sorted((r for r in group if not math.isnan(samples_per_sec(r))),
                   key=samples_per_sec)
    return rated[(len(rated) - 1) // 2] if rated else group[0]


# -- the ladder table ---------------------------------------------------------------------
def table(runs, baseline=0) -> pd.DataFrame:
    """One row per run or group of repeats (TABLE_COLUMNS), the speed-up over `baseline`; a
    group's samples/s is its runs' median, min and max, the rest its `representative`'s."""
    groups = as_groups(runs)
    if not groups:
        raise ValueError("runs is empty; pass at least one run record")
    rows = []
    for group in groups:
        run = representative(group)
        s = summary(run)
        rates = [v for v in map(samples_per_sec, group) if not math.isnan(v)]
        if len(group) > 1 and rates:
            s.update(samples_per_sec=statistics.median(rates), samples_per_sec_min=min(rates),
                     samples_per_sec_max=max(rates))
        rows.append({**s, "rung": str(run.name), "repeats": len(group), "ran": ran_text(run),
                     "status": status(run)})
    frame = pd.DataFrame(rows)
    base = frame["samples_per_sec"].iloc[baseline_index(groups, baseline)]
    frame["speedup"] = frame["samples_per_sec"] / base if base > 0 else math.nan
    return frame.reindex(columns=TABLE_COLUMNS)


def baseline_index(runs, baseline) -> int:
    """`baseline` (an index or a run's name) as a position in `runs`."""
    names = [representative(run).name for run in runs]
    if isinstance(baseline, str):
        if baseline not in names:
            raise ValueError(f"baseline={baseline!r} is not a run name; allowed: {names}")
        return names.index(baseline)
    if isinstance(baseline, bool) or not isinstance(baseline, int) \
            or not -len(runs) <= baseline < len(runs):
        raise ValueError(f"baseline={baseline!r} must be a run name or an index in 0..{len(runs) - 1}")
    return baseline % len(runs)


def epoch_spans(run) -> list[tuple[int, float, float]]:
    """(epoch, t_start, t_end) on the monitor clock, from epochs.csv, else markers.csv."""
    epochs = run.epochs
    spans = []
    if len(epochs) and {"epoch", "t_start", "t_end"} <= set(epochs.columns):
        rows = epochs[["epoch", "t_start", "t_end"]].apply(pd.to_numeric, errors="coerce")
        rows = rows.dropna(subset=["epoch", "t_start"])
        spans = [(int(e), float(a), float(b)) for e, a, b in rows.itertuples(index=False)]
    known = {epoch for epoch, _, _ in spans}
    return sorted(spans + [s for s in _marker_spans(run.markers) if s[0] not in known])


# -- small helpers ------------------------------------------------------------------------
def number(value) -> float:
    """`value` as a finite float, else NaN (None, text, inf)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return math.nan
    return x if math.isfinite(x) else math.nan


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    if name not in frame.columns:
        return pd.Series(math.nan, index=frame.index, dtype=float)
    return pd.to_numeric(frame[name], errors="coerce").astype(float)


def _steps(run) -> pd.DataFrame:
    steps = getattr(run, "steps", None)
    return steps if steps is not None else pd.DataFrame()


def _steady(run) -> pd.DataFrame:
    steps = _steps(run)
    return steps[_column(steps, "timed") == 1] if len(steps) else steps


def _marker_spans(markers: pd.DataFrame) -> list[tuple[int, float, float]]:
    starts, ends = {}, {}
    if len(markers) and {"t", "label"} <= set(markers.columns):
        for t, text in zip(markers["t"], markers["label"]):
            match = re.fullmatch(r"\s*epoch\s+(\d+)\s+(start|end)\s*", str(text), re.IGNORECASE)
            if match and not math.isnan(number(t)):
                which = starts if match.group(2).lower() == "start" else ends
                which[int(match.group(1))] = float(t)
    return [(n, starts[n], ends.get(n, math.nan)) for n in sorted(starts)]
