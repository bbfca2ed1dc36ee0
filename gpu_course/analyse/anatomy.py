"""Where a run's step goes (data wait, host, the GPU's share: step × GPU-Util, which
CUDA events cannot tell), which resource holds it (`Bound`), and its training time to
the accuracy a baseline reached, from its record.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import pandas as pd

from ..page import Page
from . import alike, metrics, noise

PAGE = Page.of(__name__)   # the sentence under the table: text/anatomy.md
SAY = {name: PAGE.text(name) for name in ("no_target", "target", "caption")}

INPUT_WAIT = 0.25   # data wait >= this share of the step: the loader holds it (diagnose's)
GPU_BUSY = 0.90     # GPU-Util >= this: kernels run through the step (the lecture's 90 %)


class Bound(StrEnum):
    DATA = "data-bound"     # data wait is INPUT_WAIT of the step or more
    HOST = "host-bound"     # the device idles between kernels while the host dispatches
    GPU = "GPU-bound"       # GPU-Util >= GPU_BUSY
    CPU = "CPU-bound"       # on a CPU the host is the device
    NO_UTIL = "no GPU-Util"   # a GPU run whose monitor read no utilisation
    TOO_FEW = "too few steps"


# the settings whose change is aimed at each bound: what the next rung should change
FIXES = {
    Bound.DATA: frozenset({"num_workers", "data_format", "data_on_gpu", "pin_memory",
                           "persistent_workers", "prefetch_factor", "threads"}),
    Bound.HOST: frozenset({"graph", "batch_size", "data_on_gpu"}),   # fewer dispatches a sample
    Bound.GPU: frozenset({"dtype", "channels_last", "graph", "num_gpus", "batch_size"}),
    Bound.CPU: frozenset({"graph", "threads", "dtype", "batch_size", "num_workers",
                          "data_format"}),
}


@dataclass(frozen=True)
class Anatomy:
    """Medians over a run's steady steps in ms (gpu_busy_ms: step × GPU-Util, NaN off a GPU)."""
    step_ms: float
    data_wait_ms: float
    host_ms: float
    gpu_busy_ms: float
    bound: Bound


def anatomy(run) -> Anatomy:
    """The anatomy of `run`'s steady steps (a group of repeats: its representative run)."""
    run = metrics.representative(run)
    timed = metrics._steady(run)
    if len(timed) < metrics.MIN_STEADY_STEPS:
        return Anatomy(math.nan, math.nan, math.nan, math.nan, Bound.TOO_FEW)
    wait, host = metrics._column(timed, "data_wait_s"), metrics._column(timed, "compute_s")
    step = 1e3 * float((wait + host).median())
    gpu = metrics.on_gpu(run)
    util = metrics.gpu_util(run) / 100 if gpu else math.nan
    numbers = dict(step_ms=step, data_wait_ms=1e3 * float(wait.median()),
                   host_ms=1e3 * float(host.median()), gpu_busy_ms=step * util)
    return Anatomy(**numbers, bound=_bound(numbers["data_wait_ms"] / step, util, gpu))


def _bound(wait_share: float, util: float, on_gpu: bool) -> Bound:
    if wait_share >= INPUT_WAIT:
        return Bound.DATA
    if not on_gpu:
        return Bound.CPU
    if math.isnan(util):
        return Bound.NO_UTIL
    return Bound.GPU if util >= GPU_BUSY else Bound.HOST


def time_to_accuracy(run, target: float) -> float:
    """Seconds of training (warm-up in, validation out) until `target`; NaN if never."""
    run = metrics.representative(run)
    epochs = run.epochs
    if math.isnan(target) or not len(epochs):
        return math.nan
    seconds = metrics._column(epochs, "epoch_time_s").cumsum()
    reached = metrics._column(epochs, "val_acc") >= target - 1e-9
    return float(seconds[reached].iloc[0]) if reached.any() else math.nan


def table(runs, baseline=0) -> pd.DataFrame:
    """One row a rung: its anatomy, epochs, accuracy and time to the baseline's final accuracy."""
    groups = metrics.as_groups(runs)
    base = metrics.representative(groups[metrics.baseline_index(groups, baseline)])
    # a baseline that learned nothing (within noise of chance) sets no target to race to
    target = math.nan if noise.at_chance(base) else metrics.val_acc(base)
    base_time = time_to_accuracy(base, target)
    rows = []
    for group in groups:
        run = metrics.representative(group)
        a = anatomy(run)
        seconds = time_to_accuracy(run, target)
        rows.append({"rung": str(run.name), "step_ms": a.step_ms, "data_wait_ms": a.data_wait_ms,
                     "host_ms": a.host_ms, "gpu_busy_ms": a.gpu_busy_ms, "bound": str(a.bound),
                     "compiled": compiled_text(run),
                     "epochs": len(run.epochs), "val_acc": metrics.val_acc(run),
                     "to_target_s": seconds,
                     "to_target_speedup": base_time / seconds if seconds > 0 else math.nan})
    frame = pd.DataFrame(rows)
    frame.insert(frame.columns.get_loc("bound") + 1, "next_rung",
                 next_rungs([metrics.representative(g) for g in groups], list(frame["bound"])))
    frame.attrs["target"] = target
    return frame


def next_rungs(runs, bounds) -> list[str]:
    """Whether each next run changes a setting aimed (FIXES) at what holds the run before it."""
    said = []
    for run, after, bound in zip(runs, runs[1:], bounds):
        fixes = FIXES.get(bound)
        changed = sorted(alike.settings(run, after, ignore=alike.SAME_WORK | {"epochs"}))
        if fixes is None or not changed:
            said.append("")
        elif fixes & set(changed):
            said.append(f"{after.name}: aimed ({', '.join(sorted(fixes & set(changed)))})")
        else:
            said.append(f"{after.name}: not aimed ({', '.join(changed[:3])})")
    return said + [""]


def compiled_text(run) -> str:
    """What torch.compile made of the run's network ("" when not compiled or not recorded)."""
    made = (run.meta.get("notes") or {}).get("compiled")
    if not made:
        return ""
    plural = lambda n, word: f"{n} {word}{'s' if n != 1 else ''}"   # noqa: E731
    return ", ".join([plural(made["graphs"], "graph"), plural(made["graph_breaks"], "break")]
                     + ([plural(made["recompiles"], "recompile")] if made["recompiles"] else [])
                     + (["CUDA graphs"] if made.get("mode") == "reduce-overhead" else []))


def target_line(frame: pd.DataFrame, baseline_name: str) -> str:
    """The sentence under the table: what the target is and where it comes from."""
    if math.isnan(frame.attrs["target"]):
        head = SAY["no_target"].format(baseline=baseline_name)
    else:
        head = SAY["target"].format(target=frame.attrs["target"], baseline=baseline_name)
    return SAY["caption"].format(head=head, wait=INPUT_WAIT, busy=GPU_BUSY)
