"""The registry of checks (`exercise`), the Result a check returns, NotYet (Contradicted:
what the machine measured says so), and the solutions in notebooks/solutions/<track>/."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from ...measure.records import REPO_ROOT

SOLUTIONS = REPO_ROOT / "notebooks" / "solutions"   # <track>/<NN>_<lesson>.py, one section an exercise
TRACKS = ("gluon", "pytorch")
MARK = "# >>>"                                       # the attendee's lines in an exercise cell


class NotYet(Exception):
    """The runs or the answer are not what the exercise asks; the message says how to fix it."""


class Contradicted(NotYet):
    """A "not yet" that rests on what the machine measured, not on how the exercise was done:
    the same runs on a busier machine could say otherwise."""


@dataclass(frozen=True)
class Result:
    """A check's outcome, its sentence, and whether a "not yet" was measured (Contradicted)."""

    exercise: str
    passed: bool
    message: str
    measured: bool = False

    def __str__(self) -> str:
        return f"Exercise {self.exercise}, {'passed' if self.passed else 'not yet'}: {self.message}"

    __repr__ = __str__

    def __bool__(self) -> bool:
        return self.passed


@dataclass(frozen=True)
class Exercise:
    """An exercise's id ("02.1") and check (docstring: what it asks; returns the pass sentence or
    raises NotYet); shipped_first: the check needs the exercise run as shipped first."""

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
    """Exercise `id`'s check on the attendee's `runs` and `answer`, as a Result."""
    ex = find(id)
    try:
        return Result(ex.id, True, ex.judge(runs, answer))
    except NotYet as why:
        return Result(ex.id, False, str(why), isinstance(why, Contradicted))


def solution_text(id, track: str) -> str:
    """Exercise `id`'s solved cell: its section of notebooks/solutions/<track>/<NN>_*.py."""
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
    parts = re.split(r"^# %% exercise (\d\d\.\d+)[ \t\r]*$", text, flags=re.M)
    return {k: v.strip("\n") + "\n" for k, v in zip(parts[1::2], parts[2::2])}


def solution(id, track: str) -> None:
    """Print exercise `id`'s solution for `track`."""
    print(solution_text(id, track))
