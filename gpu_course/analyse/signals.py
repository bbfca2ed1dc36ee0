"""What the GPU's own counters say beyond GPU-Util, from a run's gpu.csv: was it
throttled, was it memory-bound, were its SMs idle while GPU-Util read busy?

    for name, line in findings(run):   # e.g. ("throttled", "throttled: 41% of ...")

GPU-Util only says that *a* kernel ran in the sample period; GPM (Hopper and newer)
measures the share of SMs at work and of the DRAM bandwidth used, and the clock-event
reasons say why the clocks sit below their maximum. No framework here.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..page import Page
from .metrics import epoch_spans

PAGE = Page.of(__name__)   # what helps, by finding: text/signals.md
ADVICE = PAGE.means("advice", str)

THROTTLED_SHARE = 0.2   # throttled in >= 20 % of the training samples: say so
MEMORY_BOUND = 60.0     # GPM DRAM bandwidth >= 60 % of peak on average: memory-bound
SM_IDLE = 60.0          # GPU-Util busy but GPM SM activity under 60 %: SMs idle
FINDINGS = ("throttled", "memory-bound", "GPU busy but SMs idle")


# Clock-event reasons that mean the clocks were held down (not idle, not app settings).
THROTTLE_REASONS = ("sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal",
                    "hw_power_brake")


def throttled(rows: pd.DataFrame) -> np.ndarray:
    """Per sample: whether a throttle reason (THROTTLE_REASONS) was active."""
    if "clock_event_reasons" not in rows.columns:
        return np.zeros(len(rows), dtype=bool)
    text = rows["clock_event_reasons"].fillna("").astype(str)
    return text.apply(lambda r: any(x in r.split("|") for x in THROTTLE_REASONS)).to_numpy()


def training_samples(run) -> pd.DataFrame:
    """The GPU samples taken while epochs ran (all samples when no epoch is known)."""
    gpu = run.gpu
    if not len(gpu):
        return gpu
    t = pd.to_numeric(gpu["t"], errors="coerce")
    inside = pd.Series(False, index=gpu.index)
    for _, a, b in epoch_spans(run):
        inside |= (t >= a) & ((t <= b) if not math.isnan(b) else True)
    return gpu[inside] if inside.any() else gpu


def _mean(rows, column) -> float:
    if column not in rows.columns:
        return math.nan
    values = pd.to_numeric(rows[column], errors="coerce").dropna()
    return float(values.mean()) if len(values) else math.nan


def findings(run, gpu_busy: float = 90.0) -> list[tuple[str, str]]:
    """(finding, evidence line) for each of FINDINGS the run's samples show."""
    rows = training_samples(run)
    if not len(rows):
        return []
    out = []
    flags = throttled(rows)
    if flags.mean() >= THROTTLED_SHARE:
        held = rows[flags]
        reasons = sorted({r for text in held["clock_event_reasons"].dropna().astype(str)
                          for r in text.split("|") if r in THROTTLE_REASONS})
        clock, peak = _mean(held, "sm_clock_mhz"), _mean(held, "sm_clock_max_mhz")
        why = ", ".join(reasons)
        out.append(("throttled", f"throttled: {100 * flags.mean():.0f}% of samples ({why}), SM "
                    f"clock {clock:.0f} of {peak:.0f} MHz: {ADVICE['throttled']}"))
    util, sm, dram = (_mean(rows, c) for c in ("util_gpu", "sm_active", "dram_active"))
    if not np.isnan(dram) and dram >= MEMORY_BOUND:
        out.append(("memory-bound", f"memory-bound: DRAM bandwidth {dram:.0f}% of peak, SMs "
                    f"{sm:.0f}% active: {ADVICE['memory-bound']}"))
    if not np.isnan(sm) and not np.isnan(util) and util >= gpu_busy and sm < SM_IDLE:
        out.append(("GPU busy but SMs idle", f"GPU busy but SMs idle: GPU-Util {util:.0f}% "
                    f"but only {sm:.0f}% SM activity (GPM): {ADVICE['GPU busy but SMs idle']}"))
    return out
