"""The capstone's check: the final run graded against the job as given (`l16_capstone.grade`)."""
from __future__ import annotations

from ...analyse import alike, grading
from ...measure.records import load_runs
from ...page import Page
from .. import l16_capstone as capstone
from .base import MARK, Contradicted, NotYet, exercise
from .judge import finished_runs

PAGE = Page.of(__name__)   # the fixed sentences: text/ex16.md
RUNS, SAYS = PAGE.text("runs"), PAGE.means("says", str)


@exercise("16.1", shipped_first=True)
def _steady(runs, answer) -> str:
    """Make a job you have not seen steady: diagnose, a target, and time to accuracy."""
    mine = finished_runs(runs, 1, RUNS)[-1]
    if (mock := alike.value(mine, "mock") or "none") != "none":
        raise NotYet(f"'{mine.name}' is a ceiling (mock={mock}), not training: grade the job.")
    if (given := capstone.given_run(mine)) is None:
        raise NotYet(_no_given(mine))
    marks = capstone.grade(given, mine)
    missing = [m for m in marks if not m.met]
    if given.path == mine.path:
        raise NotYet(f"'{mine.name}' is the job as given, the run yours is graded against: make it "
                     f"steady at {MARK}, then rerun. {_words(missing)}")
    if missing:   # measured only where every criterion missed is one the machine's load can move
        refuse = Contradicted if all(m.measured for m in missing) else NotYet
        raise refuse(f"{len(missing)} of {len(marks)} criteria not met, against '{given.name}' "
                     f"as given ({given.path.name}). {_words(missing)}")
    return (SAYS["steady"].format(given=given.name, file=given.path.name, marks=_words(marks))
            + grading.load_caveat(given, mine))


def _words(marks) -> str:
    return " ".join(f"{m.criterion.value.capitalize()}: {m.says}" for m in marks)


def _no_given(mine) -> str:
    """Why no run of the job as given is found beside `mine`: none, or another job (named)."""
    given = [r for r in load_runs(mine.path.parent) if capstone.is_given(r) and r.path != mine.path]
    settings = ", ".join(f"{k}={v}" for k, v in capstone.GIVEN.items())
    head = SAYS["no_given"].format(settings=settings, folder=mine.path.parent)
    if given:
        other = given[-1]
        differ = alike.words(capstone.job_differences(other, mine), other.name, mine.name)
        return SAYS["another"].format(head=head, other=other.name, differ=differ)
    return SAYS["none"].format(head=head)
