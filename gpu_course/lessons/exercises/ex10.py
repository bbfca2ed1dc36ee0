"""Lesson 10's exercise: the loader made the bottleneck on purpose, diagnose's verdict predicted."""
from __future__ import annotations

import math

from ...analyse import alike, diagnose, metrics, noise
from ...show import findings
from ...show.findings import Page, Predict
from .base import Contradicted, NotYet, exercise
from .judge import NOT_SHOWN, expects, finished_runs, one_change, said, wait_words

PAGE = Page.of(__name__)   # the fixed sentences: text/ex10.md
MOCKS, SAYS = PAGE.means("mocks", str), PAGE.means("says", str)
INPUT_BOUND, COMPUTE_BOUND, _ = diagnose.VERDICTS
HELD_BY = {"trainer": INPUT_BOUND, "loader": COMPUTE_BOUND}   # a run at that ceiling
DIAGNOSE = Predict("verdict", dict.fromkeys(diagnose.VERDICTS), PAGE.text("ask"),
                   PAGE.means("verdict"))
RUNS, TRAIN_CEILING, MORE_STEPS, NO_GPU = (
    PAGE.text(n) for n in ("runs", "train_ceiling", "more_steps", "no_gpu"))


def _mock(run) -> str:
    return str(run.config.get("mock") or "none")


def also_supported(n: dict, verdict: str, run, compute, feed) -> set:
    """The verdicts besides `verdict` the run's noise cannot rule out: data wait blocks on both
    sides of the input-bound line, or (sharing a CPU) two ceilings within noise. n: diagnose's numbers."""
    blocks = metrics.wait_blocks(run)
    straddles = bool(blocks) and min(blocks) < diagnose.INPUT_WAIT <= max(blocks)
    tied = diagnose.shared_cpu(n) and \
        noise.compare(compute, feed, varies=("mock",)).kind == noise.Kind.WITHIN_NOISE
    return (({INPUT_BOUND} if straddles else set())
            | ({INPUT_BOUND, COMPUTE_BOUND} if tied else set())) - {verdict}


def held_at(n: dict, run, ceilings):
    """(verdict, ceiling, the run against it) for a run diagnose would not rule on only because
    it measured above a ceiling within noise: it is held at that ceiling. Else None."""
    steps = (n["steady_steps"], n["input_ceiling_steps"], n["compute_ceiling_steps"])
    short = any(not math.isnan(s) and s < diagnose.MIN_STEPS for s in steps)
    above = [c for c in ceilings if not short
             and n["samples_per_sec"] > diagnose.ABOVE_CEILING * metrics.samples_per_sec(c)]
    against = noise.compare(above[0], run, varies=("mock",)) if above else None
    held = against is not None and against.kind == noise.Kind.WITHIN_NOISE
    return (HELD_BY[_mock(above[0])], above[0], against) if held else None


@exercise("10.1")
def _bottleneck(runs, answer) -> str:
    """Make the loader the bottleneck on purpose, and predict diagnose's verdict."""
    runs = finished_runs(runs, 4, RUNS)
    jobs = [r for r in runs if _mock(r) == "none"]
    if len(jobs) != 2:
        raise NotYet(f"{len(jobs)} run(s) without a mock among {len(runs)}: the exercise needs "
                     "two, the job as it is and your change of it, then your job's ceilings.")
    base, mine = jobs
    changed = one_change(base, mine, SAYS["same"])
    compute, feed = diagnose.find_ceilings(mine, runs)
    if missing := [MOCKS[m] for m, c in (("loader", compute), ("trainer", feed)) if c is None]:
        raise NotYet(f"'{mine.name}' has no {' and no '.join(missing)} among the runs: {TRAIN_CEILING}")
    expects(DIAGNOSE, answer, b=mine.name)
    d = diagnose.diagnose(mine, compute_ceiling=compute, input_ceiling=feed, search=False)
    n = d.numbers   # diagnose's numbers
    held = held_at(n, mine, (feed, compute)) if d.verdict == diagnose.UNRELIABLE else None
    if d.verdict == diagnose.UNRELIABLE and held is None:
        shared = [r.name for r in (mine, feed, compute)
                  if r.meta.get("load") and metrics.machine_load(r)["shared"]]
        quiet = f"{', '.join(map(repr, shared))} shared the machine: rerun when it is quiet, or "
        raise Contradicted(f"diagnose does not rule on '{mine.name}': "
                           + "; ".join(diagnose.unreliable(n)) + ". "
                           + (quiet if shared else "") + MORE_STEPS)
    verdict, ceiling, against = held or (d.verdict, None, None)
    rung = diagnose.next_rung(verdict, dict(mine.config), n)[0] if held else d.next_rung
    numbers = SAYS["numbers"].format(wait=wait_words(mine), input_wait=diagnose.INPUT_WAIT, n=n)
    calls = (SAYS["held"].format(name=mine.name, ceiling=MOCKS[_mock(ceiling)], against=against,
                                 verdict=verdict) if held else
             SAYS["calls"].format(name=mine.name, verdict=verdict))
    found = findings.called(answer, verdict, also_supported(n, verdict, mine, compute, feed))
    text = said(DIAGNOSE, found, answer=answer, calls=calls, numbers=numbers, not_shown=NOT_SHOWN)
    return text + " " + SAYS["change"].format(
        change=alike.words(changed, base.name, mine.name), before=wait_words(base),
        after=wait_words(mine), rung=rung, no_gpu="" if metrics.on_gpu(mine) else f" ({NO_GPU})")
