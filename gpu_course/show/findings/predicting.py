"""A prediction an attendee wrote down, judged as a lesson's expectation is."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ...analyse import noise
from .declarations import Expect, Outcome
from .grouping import fires
from .judging import outcome
from .wording import text_for

# how far apart two runs of one job can land on a shared machine beyond their own blocks'
# spread: a 2-core machine measured x0.74 to x1.36 over repeated pairs (exercise 03.1)
DRIFT = 1.5


@dataclass(frozen=True)
class Predict:
    """A check of a prediction written down before the run: `answers` ({word: the `Expect` or
    call it names}), `ask` (what to write down) and a sentence for each `Outcome` (`says`)."""

    name: str
    answers: Mapping
    ask: str
    says: Mapping[Outcome, str]

    def wrong(self, answer, **fields) -> str:
        """Why `answer` is none of the answers, asking for one; "" where it is one."""
        if isinstance(answer, str) and answer in self.answers:
            return ""
        return (f"{self.name}={answer!r}: write down, before you run, "
                f"{self.ask.format(**fields)}: one of " + ", ".join(map(repr, self.answers)) + ".")


def predicted(expect: Expect, verdict: noise.Verdict, drift: float = 1.0) -> Outcome:
    """The outcome of `verdict` against `expect`; against it by less than ×`drift`: CANNOT_JUDGE."""
    found = outcome(verdict, expect)
    moved = verdict.ratio > 0 and max(verdict.ratio, 1 / verdict.ratio) < drift
    return Outcome.CANNOT_JUDGE if found is Outcome.OPPOSITE and moved else found


def called(answer, call, possible=()) -> Outcome:
    """A call against the `answer` predicted; NONE without a call or one `possible` answers."""
    if answer == call:
        return Outcome.EXPECTED
    return Outcome.NONE if call is None or answer in possible else Outcome.OPPOSITE


def untested(notes, runs) -> str:
    """The first of `notes` firing on `runs` (which cannot test the prediction), else ""."""
    for note in notes:
        names = [f"'{r.name}'" for r in runs if fires(note, [r])]
        if names:
            return text_for(note.text, None, None).format(names=" and ".join(names))
    return ""


def apart(xs, ys, how: str) -> noise.Verdict:
    """B's shares against A's (maybe 0): FASTER all above, SLOWER all below, else WITHIN_NOISE."""
    nan = float("nan")
    if not len(xs) or not len(ys):
        return noise.Verdict(nan, nan, nan, noise.Kind.NOT_MEASURED, how)
    kind = noise.Kind.FASTER if min(ys) > max(xs) else noise.Kind.SLOWER \
        if max(ys) < min(xs) else noise.Kind.WITHIN_NOISE
    return noise.Verdict(nan, nan, nan, kind, how)
