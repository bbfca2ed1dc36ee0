"""What the GPU's own counters say beyond GPU-Util (that *a* kernel ran), from a run's
gpu.csv: throttled (clock-event reasons), memory-bound or SMs idle (GPM, Hopper and newer).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..page import Page
from .metrics import _column, during_epochs

PAGE = Page.of(__name__)   # what helps, by finding: text/signals.md
ADVICE = PAGE.means("advice", str)
EVIDENCE = PAGE.means("evidence", str)   # each finding's line, its numbers and advice

THROTTLED_SHARE = 0.2   # throttled in >= 20 % of the training samples: say so
MEMORY_BOUND = 60.0     # GPM DRAM bandwidth >= 60 % of peak on average: memory-bound
SM_IDLE = 60.0          # GPU-Util busy but GPM SM activity under 60 %: SMs idle
FINDINGS = ("throttled", "memory-bound", "GPU busy but SMs idle")
# clock-event reasons that mean the clocks were held down (not idle, not app settings)
THROTTLE_REASONS = ("sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal",
                    "hw_power_brake")


def throttled(rows: pd.DataFrame) -> np.ndarray:
    """Per sample: whether a throttle reason (THROTTLE_REASONS) was active."""
    if "clock_event_reasons" not in rows.columns:
        return np.zeros(len(rows), dtype=bool)
    text = rows["clock_event_reasons"].fillna("").astype(str)
    return text.apply(lambda r: any(x in r.split("|") for x in THROTTLE_REASONS)).to_numpy()


def _mean(rows, column) -> float:
    return float(_column(rows, column).mean())


def findings(run, gpu_busy: float = 90.0) -> list[tuple[str, str]]:
    """(finding, evidence line) for each of FINDINGS the run's samples show."""
    rows = during_epochs(run, run.gpu)
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
        out.append(("throttled", EVIDENCE["throttled"].format(
            share=100 * flags.mean(), why=why, clock=clock, peak=peak,
            advice=ADVICE["throttled"])))
    util, sm, dram = (_mean(rows, c) for c in ("util_gpu", "sm_active", "dram_active"))
    if not np.isnan(dram) and dram >= MEMORY_BOUND:
        out.append(("memory-bound", EVIDENCE["memory-bound"].format(
            dram=dram, sm=sm, advice=ADVICE["memory-bound"])))
    if not np.isnan(sm) and not np.isnan(util) and util >= gpu_busy and sm < SM_IDLE:
        out.append(("GPU busy but SMs idle", EVIDENCE["GPU busy but SMs idle"].format(
            util=util, sm=sm, advice=ADVICE["GPU busy but SMs idle"])))
    return out
