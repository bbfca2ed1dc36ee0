"""Lesson 01's exercise: another worker count in the naive script, and the data wait's
share it brings, predicted."""
from __future__ import annotations

from ...analyse import alike, metrics, noise
from .base import NotYet, exercise
from .judge import finished_runs, only_change, wait_blocks, wait_words

WAIT_WORDS = {"more": "more of each step waiting for data", "less": "less of each step waiting",
              "same": "the same share waiting, within noise"}



@exercise("01.1", "Change the naive script's worker count and predict its data wait.")
def _naive_workers(runs, answer) -> str:
    before, after = finished_runs(runs, 2, "the exercise compares two runs: the naive script and your "
                          "change of it")[:2]
    only_change(before, after, "num_workers")
    xs, ys = wait_blocks(before), wait_blocks(after)
    if not xs or not ys:
        raise NotYet(f"'{after.name}' against '{before.name}': too few steady steps to judge the "
                     f"data wait (a verdict needs {noise.BLOCKS * noise.MIN_STEPS} a run). Give "
                     "each run more images: gc.sizes(\"01\", exercise_size=...), then run the "
                     "exercise again.")
    if not isinstance(answer, str) or answer not in WAIT_WORDS:
        raise NotYet(f"prediction={answer!r}: write down, before you run, what you expect of the "
                     f"share of each step spent waiting for data in '{after.name}' against "
                     f"'{before.name}': one of " + ", ".join(map(repr, WAIT_WORDS)) + ".")
    # the blocks' ranges apart or overlapping: the rule `noise.compare` applies to samples/s
    measured = "more" if min(ys) > max(xs) else "less" if max(ys) < min(xs) else "same"
    shares = (f"data wait {wait_words(before)} of the steady step time with "
              f"{alike.value(before, 'num_workers')} worker(s) (blocks {min(xs):.0%}–{max(xs):.0%}), "
              f"{wait_words(after)} with {alike.value(after, 'num_workers')} (blocks "
              f"{min(ys):.0%}–{max(ys):.0%})")
    if measured != answer and measured != "same":
        raise NotYet(f"you predicted {WAIT_WORDS[answer]}; the runs say {WAIT_WORDS[measured]}, "
                     f"beyond their noise: {shares}. Where does the loading happen with "
                     f"{alike.value(after, 'num_workers')} worker(s), and does the training loop "
                     "wait for it?")
    said = (f"as you predicted, {WAIT_WORDS[answer]}: {shares}." if measured == answer else
            f"you predicted {WAIT_WORDS[answer]}; the runs cannot tell it from the same share: "
            f"{shares}. Not contradicted, not shown: more images (exercise_size) would tell.")
    speed = noise.compare(before, after, varies=("num_workers",))
    said += f" Samples/s, '{after.name}' against '{before.name}': {speed}"
    if measured == "less" and not metrics.on_gpu(before) and speed.kind != noise.Kind.FASTER:
        said += (": without a GPU the workers and the model share the CPU's cores, so waiting "
                 "less need not mean training faster")
    return said + "."
