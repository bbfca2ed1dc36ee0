"""A prediction an attendee wrote down, judged as a lesson's expectation is."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ...analyse import noise
from .declarations import Expect, Outcome
from .grouping import fires
from .judging import outcome
from .wording import text_for

# how far apart two runs of one job made one after the other can land while other programs
# share the machine, beyond what each run's own blocks show: their load moves between the
# runs. The course's 2-core machine, other programs running, measured x0.74 to x1.36 over
# repeated pairs (exercise 03.1 with aot_eager) and x0.82 to x1.19 (Gluon's 05.1)
DRIFT = 1.5


@dataclass(frozen=True)
class Predict:
    """What an exercise's check says of a prediction written down before the run: `name`
    (the check's argument), `answers` ({a word the attendee may write: the `Expect` it
    makes, or the call it names}), `ask` (what to write down, with the check's fields), and
    a sentence for each `Outcome` (`says`; OPPOSITE's is raised as the contradiction)."""

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
    """The outcome of `verdict` against a prediction that expects `expect`; one against it
    by less than ×`drift` either way is CANNOT_JUDGE (other programs' load, `DRIFT`)."""
    found = outcome(verdict, expect)
    moved = verdict.ratio > 0 and max(verdict.ratio, 1 / verdict.ratio) < drift
    return Outcome.CANNOT_JUDGE if found is Outcome.OPPOSITE and moved else found


def called(answer, call, possible=()) -> Outcome:
    """A call named in words (diagnose's verdict) against the `answer` predicted: EXPECTED
    where they are one, NONE where there is no call (None) or it cannot rule the answer out
    (among `possible`), else OPPOSITE."""
    if answer == call:
        return Outcome.EXPECTED
    return Outcome.NONE if call is None or answer in possible else Outcome.OPPOSITE


def untested(notes, runs) -> str:
    """The first of `notes` (runs that cannot test what is predicted) that fires on any of
    `runs`, its text with {names}: the runs it fires on, quoted; "" where none does."""
    for note in notes:
        names = [f"'{r.name}'" for r in runs if fires(note, [r])]
        if names:
            return text_for(note.text, None, None).format(names=" and ".join(names))
    return ""


def apart(xs, ys, how: str) -> noise.Verdict:
    """B's measurements against A's (shares per block, which may be zero) by `noise.compare`'s
    rule: FASTER (more) where every one of B's is above every one of A's, SLOWER where every
    one is below, else WITHIN_NOISE; NOT_MEASURED where a side has none. No ratio."""
    nan = float("nan")
    if not len(xs) or not len(ys):
        return noise.Verdict(nan, nan, nan, noise.Kind.NOT_MEASURED, how)
    kind = noise.Kind.FASTER if min(ys) > max(xs) else noise.Kind.SLOWER \
        if max(ys) < min(xs) else noise.Kind.WITHIN_NOISE
    return noise.Verdict(nan, nan, nan, kind, how)
