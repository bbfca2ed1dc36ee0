"""Lesson 08's reading of a ladder: a run per rung (repeats by their median run), the ladder's
own caption, and where each rung's step goes (`anatomy_table`)."""
from __future__ import annotations

from pathlib import Path

from ..config import Graph
from ..ladder import RUNG_SETTINGS
from ..rungs import GRAPH, PRECISION, RungName
from ..show import report
from . import alike, metrics, noise
from .anatomy import Bound

TO_TARGET = ("to_target_s", "to_target_speedup")


def rungs_of(runs) -> list:
    """A run per rung: a group of repeats stands by its median run."""
    return [metrics.representative(r) for r in runs]


def flat(runs) -> list:
    return [r for g in runs for r in (g if isinstance(g, (list, tuple)) else [g])]


def baseline(runs):
    return RungName.NAIVE if RungName.NAIVE in [r.name for r in rungs_of(runs)] else 0


def caption(runs) -> str:
    """The ladder's own conclusion as `gpu-course ladder` prints it; None for the reference's."""
    rungs = rungs_of(runs)
    reference = all(report.REFERENCE_ROOT in getattr(r, "path", Path()).parents for r in rungs)
    return None if reference else report.conclusion(runs, baseline=baseline(runs),
                                                     varies=RUNG_SETTINGS)


LIGHTER = tuple(PRECISION.values())   # 16-bit arithmetic: a shorter GPU part


def anatomy_table(runs) -> pd.DataFrame:
    """Where each rung's step goes, whether the next rung aims at it, its time to target."""
    rungs = rungs_of(runs)
    frame, _ = report.anatomy_table(runs, baseline(runs))
    if noise.at_chance(rungs[metrics.baseline_index(rungs, baseline(runs))]):
        frame = frame.drop(columns=list(TO_TARGET))
    frame["next rung aimed"] = ["no" if ": not aimed" in t else "yes" if t else ""
                                for t in frame["next_rung"]]
    frame["shorter GPU part, host-bound"] = [
        "yes" if bound == Bound.HOST and (r.name in LIGHTER or (
            r.name in GRAPH.values()
            and alike.value(r, "graph") == Graph.HYBRID)) else ""   # fusion, no CUDA graphs
        for r, bound in zip(rungs, frame["bound"])]
    return frame
