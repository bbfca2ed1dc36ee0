"""Lesson 10's apparatus: each run's diagnosis in a table, the lecture's hand-timed steps, and
a configuration with the diagnosis's next rung applied (`follow`)."""
from __future__ import annotations

import math
import statistics

import pandas as pd

from ..rungs import RungName
from . import diagnose, metrics


def table(runs) -> pd.DataFrame:
    """A row a run, ceilings included: its numbers and `diagnose`'s verdict and next rung."""
    runs = list(runs)
    rows = []
    for run in runs:
        d = diagnose.diagnose(run) if len(run.epochs) else None   # none without an epoch
        rows.append({"rung": str(run.name), **metrics.throughput(run),
                     "data_wait_share": metrics.data_wait_share(run),
                     "gpu_util": metrics.gpu_util(run),
                     # one decimal: 99.96 % reads "100", not "100.0"
                     "cpu_busy_pct": round(d.numbers["cpu_percent"], 1) if d else math.nan,
                     "val_acc": metrics.val_acc(run),
                     "verdict": d.verdict if d else metrics.status(run),
                     "next_rung": (d.next_rung or diagnose.AGAIN) if d else ""})
    frame = pd.DataFrame(rows)
    if frame["gpu_util"].isna().all():  # no GPU: nothing to show
        frame = frame.drop(columns="gpu_util")
    return frame


def step_table(times) -> pd.DataFrame:
    """The lecture's hand-timed (t1, t2, t3) steps as wait and compute ms, with the later steps' means."""
    rows = [{"step": f"step {i + 1}", "wait_ms": 1000 * (t2 - t1), "compute_ms": 1000 * (t3 - t2)}
            for i, (t1, t2, t3) in enumerate(times)]
    if len(rows) > 1:
        rows.append({"step": f"mean of steps 2–{len(rows)}",
                     **{k: statistics.fmean(r[k] for r in rows[1:]) for k in ("wait_ms", "compute_ms")}})
    return pd.DataFrame(rows)


def follow(advice: diagnose.Diagnosis, cfg):
    """`cfg` with the diagnosis's next rung applied and named."""
    if advice.verdict == diagnose.UNRELIABLE:
        return cfg.replace(name="measured again")
    faster = diagnose.next_format(cfg.data_format) \
        if advice.next_rung == RungName.DATA_FORMAT else None
    if faster is not None:
        return cfg.replace(name=f"after the advice: {faster}", data_format=faster)
    recommended = diagnose.workers_advised({"num_workers": cfg.num_workers}, advice.numbers)
    if advice.next_rung == RungName.WORKERS and recommended is not None:
        return cfg.replace(name=f"after the advice: {recommended} workers",
                           num_workers=recommended)
    return cfg.replace(name="after the advice: standard augmentation",
                       augment="standard")
