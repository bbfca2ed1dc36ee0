"""What limits a profiled run, by two methods (lesson 12): the profiler's verdict (the
trace's split, else the step timers, which say only input-bound or not) against lesson 10's
mock ceilings, each judged by `diagnose`'s thresholds alone.
"""
from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import pandas as pd

from ..page import Page
from . import diagnose, metrics
from .profiling import split_table, trace_verdict

PAGE = Page.of(__name__)   # the verdicts' fixed words: text/limits.md

NOT_INPUT_BOUND = "not input-bound"   # all the step timers can say against input-bound
INPUT_BOUND, COMPUTE_BOUND, OVERHEAD_BOUND = "input-bound", "compute-bound", "overhead-bound"
TOO_FEW = PAGE.text("too_few")
CEILINGS = {"loader": ("compute ceiling", COMPUTE_BOUND),    # mock="loader": one batch, forever
            "trainer": ("input ceiling", INPUT_BOUND)}       # mock="trainer": fetch and drop
ABOVE, LAUNCH_BOUND = PAGE.text("above"), PAGE.text("launch_bound")
INTEGERS = ("steady steps", "steady steps needed", "profiled steps")


class Ceilings(StrEnum):
    """What the mock ceilings alone say, and why."""

    NOT_MEASURED = "the ceilings not measured"
    NO_VERDICT = "no verdict from the ceilings"
    SHARED_COMPUTE = "compute-bound: no GPU, every core busy, the model costs more a sample"
    SHARED_INPUT = "input-bound: no GPU, every core busy, the input costs more a sample"
    NEAR_COMPUTE = "compute-bound: near the compute ceiling, the lower"
    NEAR_INPUT = "input-bound: near the input ceiling, the lower"
    NEITHER = "overhead-bound: well below both ceilings"


class Agreement(StrEnum):
    AGREE = "the two methods agree"
    TRACE = "the trace and the ceilings disagree"
    TIMERS = "the step timers and the ceilings disagree"


def mock(run) -> str:
    return (run.config or {}).get("mock") or "none"


def timers_verdict(run) -> str:
    """The step timers' verdict: input-bound or not (TOO_FEW under MIN_STEPS steady steps)."""
    if metrics.steady_steps(run) < diagnose.MIN_STEPS:
        return TOO_FEW
    return INPUT_BOUND if metrics.data_wait_share(run) >= diagnose.INPUT_WAIT else NOT_INPUT_BOUND


def ceilings_verdict(n: dict) -> Ceilings:
    """What the run's samples/s and its two ceilings alone say (`diagnose`'s numbers)."""
    if diagnose.unreliable(n):
        return Ceilings.NO_VERDICT
    compute, feed, rate = n["compute_ceiling"], n["input_ceiling"], n["samples_per_sec"]
    fed = feed < compute   # the input ceiling is the lower
    if diagnose.shared_cpu(n):
        return Ceilings.SHARED_INPUT if fed else Ceilings.SHARED_COMPUTE
    if rate >= diagnose.NEAR_CEILING * min(compute, feed):
        return Ceilings.NEAR_INPUT if fed else Ceilings.NEAR_COMPUTE
    return Ceilings.NEITHER


def table(runs, split: dict | None = None) -> pd.DataFrame:
    """The run and its ceilings a row each, both verdicts on the run's row; then `split`'s parts."""
    runs = list(runs)
    ceilings = {mock(r): r for r in runs if mock(r) in CEILINGS}
    rows = []
    for run in runs:
        rows.append({"rung": run.name, **metrics.throughput(run),
                     "data_wait_share": metrics.data_wait_share(run),
                     "steady steps": metrics.steady_steps(run),
                     "steady steps needed": diagnose.MIN_STEPS,
                     "steps": TOO_FEW if metrics.steady_steps(run) < diagnose.MIN_STEPS else "",
                     **(_verdicts(run, ceilings, split) if mock(run) == "none" else {})})
    parts = split_table(split).rename(columns={"part": "rung"}) if split else None
    frame = pd.concat([pd.DataFrame(rows), parts], ignore_index=True)
    return frame.astype({c: "Int64" for c in INTEGERS if c in frame.columns})


def _verdicts(run, ceilings: dict, split: dict | None) -> dict:
    timers, trace = timers_verdict(run), trace_verdict(split) if split else ""
    found = trace or (timers if timers != TOO_FEW else "")
    out = {"step timers": "" if split else timers, "trace": trace,
           "input_bound_from": diagnose.INPUT_WAIT, "profiler": found,
           "ceilings": Ceilings.NOT_MEASURED, "ceilings verdict": ""}
    if split:
        out.update({"profiled steps": split["steps"], "trace file": str(
                        Path(Path(run.path).name) / "profile" / "trace.json.gz"),
                    "host launch calls (s)": split["host_launch_s"],
                    "device kernels (s)": split["device_kernels_s"],
                    "launch": LAUNCH_BOUND if split["on_device"]
                    and split["host_launch_s"] > split["device_kernels_s"] else ""})
    if set(ceilings) != set(CEILINGS):
        return out
    n = diagnose.diagnose(run, compute_ceiling=ceilings["loader"],
                          input_ceiling=ceilings["trainer"], search=False).numbers
    reading = ceilings_verdict(n)
    verdict = "" if reading is Ceilings.NO_VERDICT else reading.value.split(":")[0]
    rate, compute, feed = n["samples_per_sec"], n["compute_ceiling"], n["input_ceiling"]
    above = max(rate / compute, rate / feed) > diagnose.ABOVE_CEILING
    agree = verdict == found or (found == NOT_INPUT_BOUND and verdict != INPUT_BOUND)
    out.update({"compute ceiling (samples/s)": compute, "input ceiling (samples/s)": feed,
                "of_compute_ceiling": rate / compute, "of_input_ceiling": rate / feed,
                "ceilings": reading, "ceilings verdict": verdict, "above": ABOVE if above else "",
                "agreement": "" if not (verdict and found) else Agreement.AGREE if agree
                else Agreement.TRACE if split else Agreement.TIMERS})
    return out

