"""Lesson 12's exercise: one setting of the profiled run changed, and the step timers'
verdict on it predicted."""
from __future__ import annotations

from ...analyse import alike, diagnose, metrics, noise
from ..l12_profilers import CEILINGS, NOT_INPUT_BOUND
from .base import MARK, Contradicted, NotYet, exercise
from .judge import finished_runs, wait_blocks, wait_words

INPUT_BOUND = CEILINGS["trainer"][1]
VERDICTS = (INPUT_BOUND, NOT_INPUT_BOUND)


@exercise("12.1", "Change one setting of the profiled run and predict the step timers' verdict "
                  "on it.")
def _verdict(runs, answer) -> str:
    before, after = finished_runs(runs, 2, "the exercise compares two runs: the run as profiled "
                                  "and your change of it")[:2]
    changed = alike.differences(before, after)
    changed.pop(alike.Aspect.LOAD, None)
    if not changed:
        raise NotYet(f"'{after.name}' ran as '{before.name}' did: nothing was changed (a setting "
                     "the device cannot run, float16 on a CPU say, runs as before). Change one "
                     f"setting at the line marked {MARK}.")
    if len(changed) > 1:
        raise NotYet(f"the runs differ in more than one thing: "
                     f"{alike.words(changed, before.name, after.name)}. Change one setting, so "
                     "that the verdict's move is its own.")
    blocks = wait_blocks(after), wait_blocks(before)
    if not all(blocks):
        raise NotYet(f"too few steady steps to judge the data wait (a verdict needs "
                     f"{noise.BLOCKS * noise.MIN_STEPS} a run). Give each run more images: "
                     "gc.sizes(\"12\", train_size=...), then run the exercise again.")
    if not isinstance(answer, str) or answer not in VERDICTS:
        raise NotYet(f"verdict={answer!r}: write down, before you run, what the step timers will "
                     f"say of '{after.name}': one of " + ", ".join(map(repr, VERDICTS)) + ".")
    bar = diagnose.INPUT_WAIT
    mine, theirs = (_ruled(b, bar) for b in blocks)
    shares = (f"'{after.name}' waited for data {wait_words(after)} of its steady step time "
              f"(blocks {min(blocks[0]):.0%}–{max(blocks[0]):.0%}), '{before.name}' "
              f"{wait_words(before)}; the loader is the limit from {bar:.0%}")
    if mine is not None and mine != answer:
        raise Contradicted(f"you predicted {answer}; the step timers say {mine.upper()}, every "
                           f"block of steps on that side of the line: {shares}. Where does the "
                           "loading run after your change, and how long does the model's part of "
                           "the step take to hide it? Then write the verdict the runs support.")
    said = (f"as you predicted, {answer.upper()}: {shares}." if mine == answer else
            f"you predicted {answer}; the runs' blocks of steps lie on both sides of the line: "
            f"{shares}. Not contradicted, not shown: more images (train_size) would tell.")
    what = alike.words(changed, before.name, after.name)
    if theirs is not None and mine is not None:
        said += (f" The change ({what}) moved the verdict from {theirs} to {mine}."
                 if theirs != mine else f" The change ({what}) left the verdict {mine}.")
    return said + (" torch.profiler's trace says it of its few profiled steps (the 'data wait' "
                   "annotation); the timers say it of every step of the run."
                   if metrics.engine(after) == "pytorch" else " The timers say it of every step "
                   "of the run, where MXNet's pip build has no profiler to ask.")


def _ruled(blocks: list[float], bar: float) -> str | None:
    """The verdict when every block lies on one side of the bar; None when they straddle it."""
    if min(blocks) >= bar:
        return INPUT_BOUND
    if max(blocks) < bar:
        return NOT_INPUT_BOUND
    return None
