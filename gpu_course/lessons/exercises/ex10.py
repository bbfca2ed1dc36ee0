"""Lesson 10's exercise: the loader made the bottleneck on purpose, diagnose's verdict predicted."""
from __future__ import annotations

import math

from ...analyse import alike, diagnose, metrics, noise
from ...show import findings
from ...show.findings import Outcome, Page, Predict
from .base import Contradicted, NotYet, exercise
from .judge import NOT_SHOWN, expects, finished_runs, one_change, said, wait_words

PAGE = Page.of(__name__)   # the fixed sentences: text/ex10.md
MOCKS = {"loader": "compute ceiling (mock='loader')", "trainer": "input ceiling (mock='trainer')"}
INPUT_BOUND, COMPUTE_BOUND, _ = diagnose.VERDICTS
HELD_BY = {"trainer": INPUT_BOUND, "loader": COMPUTE_BOUND}   # a run at that ceiling
DIAGNOSE = Predict("verdict", dict.fromkeys(diagnose.VERDICTS), "what diagnose will call '{b}'", {
    Outcome.EXPECTED: "as you predicted, {calls}: {numbers}.",
    Outcome.NONE: "you predicted {answer}; {calls}, but noise cannot rule {answer} out: {numbers}. "
                  + NOT_SHOWN,
    Outcome.OPPOSITE: "you predicted {answer}, but {calls}: {numbers}. " + PAGE.text("explain")})
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
    changed = one_change(base, mine, "'{b}' runs the same job as '{a}': nothing was changed.")
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
    numbers = (f"data wait {wait_words(mine)} of each step (input-bound from "
               f"{diagnose.INPUT_WAIT:.0%}); {n['samples_per_sec']:,.0f} samples/s, input ceiling "
               f"{n['input_ceiling']:,.0f}, compute ceiling {n['compute_ceiling']:,.0f}")
    calls = (f"'{mine.name}' ran above its {MOCKS[_mock(ceiling)]} within noise ({against}): "
             f"it is held at that ceiling, {verdict}" if held else
             f"diagnose calls '{mine.name}' {verdict}")
    found = findings.called(answer, verdict, also_supported(n, verdict, mine, compute, feed))
    text = said(DIAGNOSE, found, answer=answer, calls=calls, numbers=numbers)
    return (f"{text} Your change, {alike.words(changed, base.name, mine.name)}, took the data wait "
            f"from {wait_words(base)} to {wait_words(mine)}; next rung: {rung}"
            + (f" ({NO_GPU})" if not metrics.on_gpu(mine) else "") + ".")
