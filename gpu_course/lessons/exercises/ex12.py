"""Lesson 12's exercise: one setting of the profiled run changed, the step timers' verdict predicted."""
from __future__ import annotations

from ...analyse import alike, diagnose, metrics
from ...show import findings
from ...show.findings import Page, Predict
from ..l12_profilers import CEILINGS, NOT_INPUT_BOUND
from .base import exercise
from .judge import enough_waits, expects, finished_runs, one_change, said, wait_words

PAGE = Page.of(__name__)   # the fixed sentences: text/ex12.md
INPUT_BOUND = CEILINGS["trainer"][1]
VERDICTS = (INPUT_BOUND, NOT_INPUT_BOUND)
TIMERS = Predict("verdict", dict.fromkeys(VERDICTS), PAGE.text("ask"), PAGE.means("timers"))
SAYS = PAGE.means("says", str)
PROFILER = PAGE.means("profiler", str)
RUNS = PAGE.text("runs")


@exercise("12.1")
def _verdict(runs, answer) -> str:
    """Change one setting of the profiled run; predict the step timers' verdict on it."""
    before, after = finished_runs(runs, 2, RUNS)[:2]
    changed = one_change(before, after, SAYS["same"])
    theirs, mine = enough_waits(before, after, "12", "train_size")
    expects(TIMERS, answer, b=after.name)
    bar = diagnose.INPUT_WAIT
    call, was = _ruled(mine, bar), _ruled(theirs, bar)
    shares = SAYS["shares"].format(after=after.name, after_wait=wait_words(after), low=min(mine),
                                   high=max(mine), before=before.name,
                                   before_wait=wait_words(before), bar=bar)
    text = said(TIMERS, findings.called(answer, call), answer=answer, ANSWER=answer.upper(),
                CALL=str(call).upper(), shares=shares)
    moved = "" if None in (was, call) else " " + SAYS["left" if was == call else "moved"].format(
        what=alike.words(changed, before.name, after.name), theirs=was, mine=call)
    return f"{text}{moved} " + PROFILER.get(metrics.engine(after), PROFILER["gluon"])


def _ruled(blocks: list[float], bar: float) -> str | None:
    """The verdict when every block lies on one side of the bar; None when they straddle it."""
    return INPUT_BOUND if min(blocks) >= bar else NOT_INPUT_BOUND if max(blocks) < bar else None
