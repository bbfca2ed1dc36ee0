"""The timing trap (lesson 13): passes, each (block, timer, images, seconds), timed without
a sync, with one, and by CUDA events."""
from __future__ import annotations

import math
import statistics

import pandas as pd

from ..show.findings import Samples
from . import metrics

WITHOUT, WITH, EVENTS = "without a sync", "with a sync", "CUDA events"
TIMERS = (WITHOUT, WITH, EVENTS)


def trap_table(passes) -> pd.DataFrame:
    """One row per block and timer: the passes, the median pass in ms and its images/s."""
    rows: dict = {}
    for block, timer, images, seconds in _checked(passes):
        rows.setdefault((block, timer), (images, []))[1].append(seconds)
    return pd.DataFrame([{"rung": f"{block}, {timer}", "images": images, "passes": len(s),
                          "pass_ms": 1000 * statistics.median(s), "pass_ms_min": 1000 * min(s),
                          "pass_ms_max": 1000 * max(s),
                          "images_per_sec": metrics.rate(images, statistics.median(s))}
                         for (block, timer), (images, s) in rows.items()])


def where(device) -> tuple[str, bool]:
    """(track, on a GPU) of a device's name: PyTorch's "cpu", "cuda:0"; MXNet's "cpu(0)"."""
    name = str(device).strip()
    if not name:
        raise ValueError("device= is needed, e.g. 'cpu', 'cuda:0', 'cpu(0)', 'gpu(0)'")
    return ("gluon" if name.endswith(")") else "pytorch"), name.startswith(("cuda", "gpu"))


def trap_pairs(passes, compares: dict) -> list[Samples]:
    """Each block's other timers against its clock with a sync, judged by compares[timer]."""
    timers: dict = {}
    for block, timer, _, _ in _checked(passes):
        timers.setdefault(block, []).append(timer)
    pairs = []
    for block, have in timers.items():
        if not {WITHOUT, WITH} <= set(have):
            raise ValueError(f"block {block!r} needs both timers, {WITHOUT!r} and {WITH!r}; "
                             f"it has {sorted(set(have))}")
        how = f"{have.count(WITH)} timed passes each"
        pairs += [Samples(f"{block}, {WITH}", f"{block}, {timer}", _rates(passes, block, WITH),
                          _rates(passes, block, timer), how, "images_per_sec", compare)
                  for timer, compare in compares.items() if timer in have]
    return pairs


def _checked(passes):
    for item in passes:
        if len(item) != 4:
            raise ValueError(f"a timed pass is (block, timer, images, seconds); got {item!r}")
        block, timer, images, seconds = item
        if timer not in TIMERS:
            raise ValueError(f"timer={timer!r}; allowed: {', '.join(TIMERS)}")
        if not (isinstance(seconds, (int, float)) and seconds >= 0 and math.isfinite(seconds)):
            raise ValueError(f"{block}, {timer}: seconds={seconds!r} must be a time >= 0")
        yield item


def _rates(passes, block: str, timer: str) -> tuple:
    return tuple(metrics.rate(n, s) for b, t, n, s in passes if b == block and t == timer)
