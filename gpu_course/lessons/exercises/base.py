"""An exercise's parts that every check shares: the registry (`exercise` registers a
check under its id), the Result a check returns, NotYet (what a check raises to say "not
yet" and why; Contradicted where what the machine measured says it), and the solutions
kept apart in notebooks/solutions/<track>/."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from ...measure.records import REPO_ROOT

SOLUTIONS = REPO_ROOT / "notebooks" / "solutions"   # <track>/<NN>_<lesson>.py, one section an exercise
TRACKS = ("gluon", "pytorch")
MARK = "# >>>"                                       # the attendee's lines in an exercise cell


class NotYet(Exception):
    """The runs or the answer do not do what the exercise asks; the message says what is
    wrong and how to fix it."""


class Contradicted(NotYet):
    """A "not yet" that rests on what the machine measured (a speed, a data wait's share,
    a knee, diagnose's verdict from the timings, the capstone's measured criteria), not on
    how the exercise was done: the same runs on a machine that other programs load can
    say otherwise."""


@dataclass(frozen=True)
class Result:
    """A check's outcome: passed or not, the sentence that says why, and whether a "not
    yet" rests on what the machine measured (Contradicted) rather than on the runs or the
    answer not being what the exercise asks."""

    exercise: str
    passed: bool
    message: str
    measured: bool = False

    def __str__(self) -> str:
        head = "passed" if self.passed else "not yet"
        return f"Exercise {self.exercise}, {head}: {self.message}"

    __repr__ = __str__

    def __bool__(self) -> bool:
        return self.passed


@dataclass(frozen=True)
class Exercise:
    """One exercise: its id ("02.1": lesson 02, first exercise) and the check (its
    docstring: what the exercise asks) that reads the attendee's runs and answer, returning
    the pass sentence or raising NotYet. shipped_first: as in the notebook, the exercise
    runs as shipped before it is solved, because the check depends on that: the capstone
    grades against the run as shipped; lesson 14's memory readings hold what the first run
    in a process allocates once, so its measured run must not be the process's first."""

    id: str
    judge: Callable
    shipped_first: bool = False

    @property
    def lesson(self) -> str:
        return self.id.split(".")[0]


EXERCISES: dict[str, Exercise] = {}


def exercise(id: str, shipped_first: bool = False):
    """Register the decorated function as exercise `id`'s check."""
    def register(judge):
        EXERCISES[id] = Exercise(id, judge, shipped_first)
        return judge
    return register


def find(id) -> Exercise:
    key = str(id).strip()
    if key not in EXERCISES:
        raise ValueError(f"exercise={id!r} is not an exercise; allowed: {', '.join(sorted(EXERCISES))}")
    return EXERCISES[key]


def check(id, runs, answer=None) -> Result:
    """Exercise `id`'s check on the attendee's `runs` and `answer`: a Result that passes
    with a sentence computed from the runs, or says what is not yet right."""
    ex = find(id)
    try:
        return Result(ex.id, True, ex.judge(runs, answer))
    except NotYet as why:
        return Result(ex.id, False, str(why), isinstance(why, Contradicted))


def solution_text(id, track: str) -> str:
    """The solution of exercise `id` in `track`: its section of
    notebooks/solutions/<track>/<NN>_*.py (the whole exercise cell, solved)."""
    ex = find(id)
    if track not in TRACKS:
        raise ValueError(f"track={track!r} is not a track; allowed: {', '.join(TRACKS)}")
    files = sorted((SOLUTIONS / track).glob(f"{ex.lesson}_*.py"))
    if len(files) != 1:
        raise FileNotFoundError(f"no solutions file for lesson {ex.lesson} in {SOLUTIONS / track}")
    sections = solution_sections(files[0].read_text())
    if ex.id not in sections:
        raise KeyError(f"{files[0]} has no section '# %% exercise {ex.id}'")
    return sections[ex.id]


def solution_sections(text: str) -> dict[str, str]:
    """{exercise id: code} of a solutions file, whose sections start `# %% exercise <id>`."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        found = re.match(r"# %% exercise (\d\d\.\d+)\s*$", line)
        if found:
            current = found.group(1)
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return {k: "\n".join(v).strip("\n") + "\n" for k, v in out.items()}


def solution(id, track: str) -> None:
    """Print exercise `id`'s solution for `track`, to compare with your own after trying."""
    print(solution_text(id, track))
