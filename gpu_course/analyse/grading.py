"""A final run of a job graded against the job as first given (lesson 16's capstone): the
rungs the course can still take on the run's machine (`fixable`), the race of the two runs
to an accuracy judged against their noise (`race`), and the machine's load (`load_caveat`).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from ..measure.provenance import DEFAULTS
from ..rungs import GRAPH, RungName
from ..page import Page
from . import alike, anatomy, diagnose, metrics, noise

PAGE = Page.of(__name__)   # the race's caveat: text/grading.md
LOAD_CAVEAT = PAGE.text("load_caveat")


def setting(run, name: str):
    """A setting of the run as it ran (`alike.value`), else the Experiment's default."""
    found = alike.value(run, name)
    return DEFAULTS[name] if found is None else found


def fixable(d: diagnose.Diagnosis, run) -> RungName | None:
    """The next rung of `d` where the course can take it on the run's machine (an input rung
    it has the cores or GPU for; on a GPU a graph or a batch up to LARGE_BATCH), else None."""
    gpu = metrics.on_gpu(run)
    if d.verdict == "input-bound":
        no_cores = d.next_rung == RungName.WORKERS and (
            setting(run, "data_on_gpu")
            or diagnose.workers_advised(run.config, d.numbers) is None)
        return None if no_cores or (d.next_rung == RungName.DATA_ON_GPU and not gpu) \
            else d.next_rung
    small_batch = int(setting(run, "batch_size")) < diagnose.LARGE_BATCH
    if gpu and d.verdict != "compute-bound" and (
            d.next_rung in GRAPH.values()
            or (d.next_rung == RungName.LARGE_BATCH and small_batch)):
        return d.next_rung
    return None


@dataclass(frozen=True)
class Race:
    """Two runs' training time to an accuracy (NaN: never) and the second's speed against the first's."""

    given_s: float
    mine_s: float
    verdict: noise.Verdict | None


def race(given, mine, target: float) -> Race:
    """`mine` against `given` to `target`: each speed spread as its run's steady blocks spread."""
    t_given, t_mine = (anatomy.time_to_accuracy(r, target) for r in (given, mine))
    if math.isnan(t_mine):
        return Race(t_given, t_mine, None)
    return Race(t_given, t_mine, noise.compare_samples(
        _spread(given, t_given), _spread(mine, t_mine), f"{noise.BLOCKS} blocks of steady steps",
        1 / t_given, 1 / t_mine))


def load_caveat(given, mine) -> str:
    """A sentence when other programs shared the machine for one run only; "" otherwise."""
    load = alike.Aspect.LOAD
    a, b = alike.value(given, load), alike.value(mine, load)
    if a is None or b is None or a == b:
        return ""
    return " " + LOAD_CAVEAT.format(given=a, mine=b, name=mine.name)


def _spread(run, seconds: float) -> list[float]:
    rates = metrics.steady_block_rates(run)
    if not rates or not seconds > 0:
        return []
    middle = statistics.median(rates)
    return [rate / middle / seconds for rate in rates]
