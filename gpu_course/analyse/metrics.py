"""Every number the course reports, defined once, from a run record.

The summary line, the ladder table, the plots, the report, `diagnose`, the notebooks and
the SageMaker metric line all call these functions, so one run reads the same everywhere:

    samples_per_sec        steady state: samples of the steps after the run's warm-up,
                           divided by those steps' time (+ the epoch's closing sync)
    samples_per_sec_min,   the run's own spread: the slowest and fastest samples/s of BLOCKS
    samples_per_sec_max    equal blocks of its steady steps (NaN with fewer than 2 blocks)
    samples_per_sec_all    every sample over every epoch's whole time: warm-up, compile,
                           worker start-up and syncs included (what a user waits for)
    epoch_time_s           mean epoch time, the first epoch left out when there are more
    warmup_s               time of the warm-up steps (graph building, compile, autotuning)
    preparation_s          time spent before the run making the copy its data format reads
    data_wait_share        fraction (0-1) of the steady steps' time spent waiting for data
    gpu_util               mean GPU-Util (%) over the monitor's samples inside the steady
                           training windows (after warm-up, validation excluded); the whole
                           training windows when no step got past warm-up; NaN without GPU
    step_p50_s, step_p95_s median and 95th percentile of the steady steps' time
    spikiness              step_p95_s / step_p50_s (1.0 = perfectly steady)
    waited_share           fraction of steady steps whose data wait exceeded WAITED of
                           their time: how often the loader held a step up
    val_acc                validation accuracy after the last epoch (fraction)

A run is anything with `.epochs`, `.steps`, `.gpu` (pandas frames of the record's CSV
files), `.meta` and `.name`: a `records.Run`. No deep-learning framework here.
"""
from __future__ import annotations

import math
import re

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


def share(part: float, whole: float) -> float:
    """part / whole as a fraction, NaN when whole is not positive."""
    return part / whole if whole and whole > 0 else math.nan


def epoch_numbers(row: dict) -> dict:
    """The per-epoch forms of the run-level numbers, from one epochs.csv row (or the row
    the harness records): what the epoch line and the SageMaker metric line print."""
    return {"samples_per_sec": rate(number(row.get("timed_samples")), number(row.get("timed_s"))),
            "samples_per_sec_all": rate(number(row.get("samples")),
                                        number(row.get("epoch_time_s"))),
            "data_wait_share": share(number(row.get("timed_wait_s")), number(row.get("timed_s"))),
            "epoch_time_s": number(row.get("epoch_time_s"))}


# -- one number per run -------------------------------------------------------------------
def samples_per_sec(run) -> float:
    """Steady-state training throughput (see the module's table)."""
    return rate(_sum(run.epochs, "timed_samples"), _sum(run.epochs, "timed_s"))


def steady_block_rates(run, blocks: int = BLOCKS) -> list[float]:
    """Steady samples/s of `blocks` consecutive blocks of the run's steady steps (fewer
    blocks when it has fewer steps; step times as `step_seconds` reads them); [] without
    per-step rows. A machine that drifts or is shared shows as blocks far apart.

    An asynchronous engine (MXNet, CUDA) leaves part of the work to the epoch's closing
    sync, which no step's host time holds; the steps' times are scaled to add up to the
    steady time `samples_per_sec` divides by, so the blocks bracket it."""
    steps = _steps(run)
    if not len(steps) or "timed" not in steps.columns:
        return []
    steady = steps[_column(steps, "timed") == 1]
    seconds_each = step_seconds(steady)  # device times on a GPU
    measured, steady_s = float(seconds_each.sum()), _sum(run.epochs, "timed_s")
    if measured > 0 and steady_s > 0:
        seconds_each = seconds_each * (steady_s / measured)  # the sync spread over the steps
    n = min(blocks, len(steady))
    rates = []
    for i in range(n):
        part = slice(i * len(steady) // n, (i + 1) * len(steady) // n)
        seconds = float(seconds_each.iloc[part].sum())
        if seconds > 0:
            rates.append(float(_column(steady.iloc[part], "samples").sum()) / seconds)
    return rates


def samples_per_sec_range(run) -> tuple[float, float]:
    """(slowest, fastest) of `steady_block_rates`: the spread every table and plot shows
    beside samples/s; (NaN, NaN) with fewer than two blocks."""
    rates = steady_block_rates(run)
    return (min(rates), max(rates)) if len(rates) > 1 else (math.nan, math.nan)


def samples_per_sec_all(run) -> float:
    """Throughput over the whole of every epoch, warm-up and compile included."""
    return rate(_sum(run.epochs, "samples"), _sum(run.epochs, "epoch_time_s"))


def epoch_time_s(run) -> float:
    """Seconds per epoch, the first (start-up) epoch left out when there are several."""
    values = _column(run.epochs, "epoch_time_s").dropna()
    if len(values) > 1:
        values = values.iloc[1:]
    return float(values.mean()) if len(values) else math.nan


def warmup_s(run) -> float:
    """Seconds spent in the run's warm-up steps (compile, autotuning, worker start-up)."""
    steps = _steps(run)
    if not len(steps):
        return math.nan
    early = steps[_column(steps, "timed") == 0]
    return float((_column(early, "data_wait_s") + _column(early, "compute_s")).sum())


def preparation_s(run) -> float:
    """Seconds that making the copy of its data that the run's format reads took
    (offline pre-processing: resizing, packing, done before the run), as the ladder
    recorded it; a copy an earlier run made counts that run's time. 0.0 when the run read
    its data as they were, NaN when the copy's making was never timed."""
    made = ((run.meta.get("notes") or {}).get("prepared")) or {}
    if not made:
        return 0.0
    seconds = made.get("seconds")
    if seconds is None or (made.get("reused") and not seconds):  # not timed (older notes: 0)
        return math.nan
    return float(seconds)


def data_wait_share(run) -> float:
    """Fraction of the steady steps' time spent waiting for the input pipeline."""
    return share(_sum(run.epochs, "timed_wait_s"), _sum(run.epochs, "timed_s"))


def wait_blocks(run) -> list[float]:
    """The data wait's share of the step time in each of BLOCKS equal blocks of the run's
    steady steps: the spread that stands in for repeats of one run (as samples/s's blocks
    do in `noise.compare`); [] when a block would hold fewer than MIN_STEADY_STEPS /
    BLOCKS steps."""
    steps = _steps(run)
    if not len(steps):
        return []
    steady = steps[_column(steps, "timed") == 1]
    wait = _column(steady, "data_wait_s").to_numpy()
    total = wait + _column(steady, "compute_s").to_numpy()
    size = len(steady) // BLOCKS
    if size < MIN_STEADY_STEPS // BLOCKS:
        return []
    return [float(wait[i * size:(i + 1) * size].sum() / total[i * size:(i + 1) * size].sum())
            for i in range(BLOCKS)]


def training_windows(run, steady: bool = True) -> list[tuple[float, float]]:
    """(t_from, t_to) on the monitor clock for each finished epoch's training: from its
    first steady step (or its start, steady=False) to its end, before validation."""
    epochs = run.epochs
    if not len(epochs) or "t_end" not in epochs.columns:
        return []
    starts = _column(epochs, "t_start")
    if steady and "t_steady" in epochs.columns:
        steady_from = _column(epochs, "t_steady")
        if "timed_steps" in epochs.columns:
            # records before 2026-11-23 left t_steady empty in epochs that were steady
            # throughout (every step timed): those are steady from their start
            timed = _column(epochs, "timed_steps")
            steady_from = steady_from.fillna(starts.where(timed > 0))
        starts = steady_from
    windows = []
    for a, b in zip(starts, _column(epochs, "t_end")):
        if not (math.isnan(a) or math.isnan(b)) and b > a:
            windows.append((a, b))
    return windows


def gpu_util(run) -> float:
    """Mean GPU-Util (%) over all GPUs while the run trained steadily (`steady_samples`)."""
    return _steady_mean(run, "util_gpu")


def gpm_activity(run) -> dict:
    """GPM's view of the same samples (Hopper and newer; NaN elsewhere): the mean share
    of the SMs busy (sm_active, %), of the tensor cores (tensor_active) and of DRAM
    bandwidth (dram_active). GPU-Util counts time with any kernel running, so a small
    kernel on one SM reads 100% there and ~1% here."""
    return {name: _steady_mean(run, name)
            for name in ("sm_active", "tensor_active", "dram_active")}


def steady_samples(run) -> pd.Series:
    """Which monitor samples describe steady training: NVML averages each reading over
    the sample period before it, so a sample counts when that whole period lies in a
    training window (from its first steady step, else its start, to its end). Windows
    closer together than one period (a short validation between epochs) count as one.
    A run without steady steps is read over its training. None when no period lies
    wholly in those windows (a run shorter than a period: a sample inside it averaged the
    warm-up before it, so it would say what the run was not)."""
    gpu = run.gpu
    t = _column(gpu, "t")
    interval = float(run.config.get("monitor_interval") or 0) if hasattr(run, "config") \
        else 0.0
    # a run with steady steps is read over them alone; one without, over its training
    windows = training_windows(run) or training_windows(run, steady=False)
    inside = pd.Series(False, index=gpu.index)
    for a, b in _merged(windows, interval):
        inside |= (t - interval >= a) & (t <= b)
    return inside


def _merged(windows, gap: float) -> list[tuple[float, float]]:
    out = []
    for a, b in sorted(windows):
        if out and a - out[-1][1] < gap:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _steady_mean(run, column: str) -> float:
    gpu = run.gpu
    if not len(gpu) or column not in gpu.columns:
        return math.nan
    values = _column(gpu, column)[steady_samples(run)].dropna()
    return float(values.mean()) if len(values) else math.nan


def step_seconds(steps: pd.DataFrame) -> pd.Series:
    """Each step's time: the device's (CUDA events, `device_s`) where every row has it,
    else the host's (data wait + compute). On a GPU the host's time of a step is its
    dispatch plus any back-pressure: a step that queues ahead reads as fast and the one
    that waits for the queue as slow, so only the device's times are the step's own."""
    device = _column(steps, "device_s")
    if len(steps) and device.notna().all():
        return device
    return _column(steps, "data_wait_s") + _column(steps, "compute_s")


def median_step_ms(run, device: bool = False) -> float:
    """The median steady step in milliseconds: by CUDA events (device: `device_s`, NaN
    unless every steady step has it) or by the host's clock (data wait + compute)."""
    steps = _steps(run)
    steady = steps[_column(steps, "timed") == 1] if len(steps) else steps
    values = _column(steady, "device_s") if device else \
        _column(steady, "data_wait_s") + _column(steady, "compute_s")
    return 1000 * float(values.median()) if len(values) and values.notna().all() else math.nan


def epochs_sum(run, column: str) -> float:
    """A column of the run's epochs summed (`sync_s`: what each epoch's closing sync
    waited); NaN where no epoch records it."""
    return _sum(run.epochs, column)


MIN_STEADY_STEPS = 20   # steady steps a run needs before its samples/s is ruled on


def steady_steps(run) -> int:
    """How many steady (timed) steps the run's record holds."""
    steps = _steps(run)
    return int((_column(steps, "timed") == 1).sum()) if len(steps) else 0


def steadiness(run) -> dict:
    """Step-time percentiles, spikiness (p95/p50) and the share of steady steps that
    waited for data; NaN without per-step rows. Step times as `step_seconds` reads them."""
    steps = _steps(run)
    timed = steps[_column(steps, "timed") == 1] if len(steps) else steps
    if not len(timed):
        return {"step_p50_s": math.nan, "step_p95_s": math.nan, "spikiness": math.nan,
                "waited_share": math.nan, "steady_steps": 0}
    wait = _column(timed, "data_wait_s")
    total = step_seconds(timed)
    p50, p95 = float(total.quantile(0.5)), float(total.quantile(0.95))
    return {"step_p50_s": p50, "step_p95_s": p95, "spikiness": share(p95, p50),
            "waited_share": float((wait > WAITED * total).mean()), "steady_steps": len(timed)}


def val_acc(run) -> float:
    """Validation accuracy after the last epoch that measured it (fraction)."""
    values = _column(run.epochs, "val_acc").dropna()
    return float(values.iloc[-1]) if len(values) else math.nan


def status(run) -> str:
    """run.json's status: running, finished, interrupted, failed, oom or diverged."""
    return str(run.meta.get("status") or "unknown")


def summary(run) -> dict:
    """Every run-level number above, by name (what run.json's summary caches)."""
    low, high = samples_per_sec_range(run)
    return {"samples_per_sec": samples_per_sec(run),
            "samples_per_sec_min": low, "samples_per_sec_max": high,
            "samples_per_sec_all": samples_per_sec_all(run),
            "epoch_time_s": epoch_time_s(run), "warmup_s": warmup_s(run),
            "data_wait_share": data_wait_share(run), "gpu_util": gpu_util(run),
            **steadiness(run), "val_acc": val_acc(run), "epochs": len(run.epochs)}


def machine_load(run) -> dict:
    """How busy the machine was while the run ran: the mean 1-minute load average at its
    start and end, the cores the whole machine kept busy (busy CPU time / wall time, where
    recorded), the cores the run's own process used (CPU time / wall time), the cores its
    loader workers used (their CPU time, where recorded; else one core a worker), and
    whether something else shared the machine: more than SHARED of a core busy beyond the
    run's process and its workers, times the processes of a DDP job. The busy time
    decides where it was recorded (the load average trails by a minute); older records
    fall back to the load average."""
    load = run.meta.get("load") or {}
    start, end = load.get("start") or {}, load.get("end") or {}
    averages = [number(x.get("loadavg_1m")) for x in (start, end)]
    averages = [a for a in averages if not math.isnan(a)]
    wall = number(end.get("wall")) - number(start.get("wall"))
    own = share(number(end.get("process_cpu_s")) - number(start.get("process_cpu_s")), wall)
    busy = share(number(end.get("cpu_busy_s")) - number(start.get("cpu_busy_s")), wall)
    workers = number((run.config or {}).get("num_workers")) or 0.0
    if (run.config or {}).get("mock") == "loader":
        workers = 0.0  # a compute ceiling serves one batch: its loader's workers sit idle
    kids = [number(x.get("live_children_cpu_s")) + number(x.get("children_cpu_s"))
            for x in (start, end)]
    if not any(math.isnan(k) for k in kids):
        workers = max(0.0, share(kids[1] - kids[0], wall))   # what they used, measured
    mean = sum(averages) / len(averages) if averages else math.nan
    used = busy if not math.isnan(busy) else mean
    # the run itself accounts for its own process and its loader workers; a DDP job's
    # record is its first process's, and every process of it ran here, each alike
    world = number((run.meta.get("ran") or {}).get("world_size"))
    ranks = int(world) if world >= 1 else 1
    other = used - ranks * ((own if not math.isnan(own) else 1.0) + workers)
    return {"loadavg": mean, "busy_cores": busy, "own_cores": own, "other_load": other,
            "cpu_count": number(start.get("cpu_count")), "shared": bool(other > SHARED)}


def on_gpu(run) -> bool:
    """Whether the run trained on a GPU: the devices it recorded ("cuda:0", "[gpu(0)]"),
    else a GPU in its hardware and num_gpus above 0 (older records)."""
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
    """{field: (requested, ran, why)} for every setting that did not run as requested
    (float16 on a CPU, say); {} when everything ran as asked."""
    return {d["field"]: (d["requested"], d["ran"], d.get("why", ""))
            for d in run.meta.get("downgrades") or []}


def ran_text(run) -> str:
    """What ran where it differs from the request, e.g. "dtype float32 ran, float16
    requested"; the TF32 note for float32 convolutions on a GPU; "" when as asked."""
    track = engine(run)   # each value in its track's words (the graph: compile, hybridize...)
    changes = [f"{field} {worded(field, ran, track)} ran, {worded(field, requested, track)} "
               "requested" for field, (requested, ran, _) in ran_as(run).items()]
    tf32 = (run.meta.get("ran") or {}).get("tf32") or {}
    if tf32.get("convolutions"):
        changes.append("float32 convolutions ran in TF32")
    return "; ".join(changes)


def label(run) -> str:
    """The run's name with `ran_text` beside it, e.g.
    "float16 (dtype float32 ran, float16 requested)"."""
    text = ran_text(run)
    return f"{run.name} ({text})" if text else str(run.name)


# -- repeated runs -----------------------------------------------------------------------
def as_groups(runs) -> list[list]:
    """Each item of `runs` as the list of its repeats: a run is a group of one, a list or
    tuple of runs of one configuration (`gc.repeat`, `gpu-course ladder --repeats`) one
    group."""
    groups = [list(item) if isinstance(item, (list, tuple)) else [item] for item in runs]
    empty = [i for i, group in enumerate(groups) if not group]
    if empty:
        raise ValueError(f"runs[{empty[0]}] is an empty list; a group needs at least one run")
    return groups


def representative(group):
    """The run that stands for a group of repeats (or the run itself): the one with the
    median samples/s (the lower of the two middle ones), else the first."""
    if not isinstance(group, (list, tuple)):
        return group
    rated = sorted((r for r in group if not math.isnan(samples_per_sec(r))),
                   key=samples_per_sec)
    return rated[(len(rated) - 1) // 2] if rated else group[0]


# -- the ladder table ---------------------------------------------------------------------
def table(runs, baseline=0) -> pd.DataFrame:
    """One row per run (or group of repeats, see `as_groups`), in order: its name
    ("rung"), how many runs it has ("repeats"), what ran where it differs from the request
    ("ran"), the numbers, and the speed-up of samples/s over `baseline` (an index or a run
    name). A group's samples/s is its runs' median and its min–max their slowest and
    fastest; its other numbers are its `representative` run's. data_wait_share and
    val_acc are fractions, gpu_util a percent."""
    groups = as_groups(runs)
    if not groups:
        raise ValueError("runs is empty; pass at least one run record")
    rows = []
    for group in groups:
        run = representative(group)
        s = summary(run)
        rates = [v for v in map(samples_per_sec, group) if not math.isnan(v)]
        if len(group) > 1 and rates:
            s.update(samples_per_sec=_median(rates), samples_per_sec_min=min(rates),
                     samples_per_sec_max=max(rates))
        rows.append({"rung": str(run.name), "repeats": len(group), "ran": ran_text(run),
                     **{c: s.get(c) for c in TABLE_COLUMNS
                        if c not in ("rung", "repeats", "ran", "speedup", "status")},
                     "status": status(run)})
    frame = pd.DataFrame(rows, columns=[c for c in TABLE_COLUMNS if c != "speedup"])
    base = frame["samples_per_sec"].iloc[baseline_index(groups, baseline)]
    frame.insert(TABLE_COLUMNS.index("speedup"), "speedup",
                 frame["samples_per_sec"] / base if base > 0 else math.nan)
    return frame


def baseline_index(runs, baseline) -> int:
    """`baseline` as a position in `runs` (runs or groups of repeats): an index, or a
    run's name."""
    names = [representative(run).name for run in runs]
    if isinstance(baseline, str):
        if baseline not in names:
            raise ValueError(f"baseline={baseline!r} is not a run name; allowed: {names}")
        return names.index(baseline)
    if isinstance(baseline, bool) or not isinstance(baseline, int) \
            or not -len(runs) <= baseline < len(runs):
        raise ValueError(f"baseline={baseline!r} must be a run name or an index "
                         f"in 0..{len(runs) - 1}")
    return baseline % len(runs)


def epoch_spans(run) -> list[tuple[int, float, float]]:
    """(epoch, t_start, t_end) on the monitor clock, from epochs.csv or else markers.csv.
    An epoch that started but never ended (a crash) gets t_end NaN."""
    epochs = run.epochs
    spans = []
    if len(epochs) and {"epoch", "t_start", "t_end"} <= set(epochs.columns):
        rows = epochs[["epoch", "t_start", "t_end"]].apply(pd.to_numeric, errors="coerce")
        rows = rows.dropna(subset=["epoch", "t_start"])
        spans = [(int(e), float(a), float(b)) for e, a, b in rows.itertuples(index=False)]
    known = {epoch for epoch, _, _ in spans}
    # markers also tell about the epoch a crash interrupted, which epochs.csv lacks
    return sorted(spans + [s for s in _marker_spans(run.markers) if s[0] not in known])


# -- small helpers ------------------------------------------------------------------------
def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


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


def _sum(frame: pd.DataFrame, name: str) -> float:
    values = _column(frame, name).dropna()
    return float(values.sum()) if len(values) else math.nan


def _steps(run) -> pd.DataFrame:
    steps = getattr(run, "steps", None)
    return steps if steps is not None else pd.DataFrame()


def _marker_spans(markers: pd.DataFrame) -> list[tuple[int, float, float]]:
    starts, ends = {}, {}
    if len(markers) and {"t", "label"} <= set(markers.columns):
        for t, text in zip(markers["t"], markers["label"]):
            match = re.fullmatch(r"\s*epoch\s+(\d+)\s+(start|end)\s*", str(text), re.IGNORECASE)
            if match and not math.isnan(number(t)):
                which = starts if match.group(2).lower() == "start" else ends
                which[int(match.group(1))] = float(t)
    return [(n, starts[n], ends.get(n, math.nan)) for n in sorted(starts)]
