"""Lesson 05's exercise: a larger batch, its samples/s predicted and its accuracy cost read."""
from __future__ import annotations

from ...analyse import alike, metrics, noise
from ...show.findings import Note, Page
from .base import NotYet, exercise
from .judge import finished_runs, judge_prediction, only_change, speed_verdict

PAGE = Page.of(__name__)   # the fixed sentences: text/ex05.md
# a CPU cannot test what a larger batch does to a GPU's samples/s
UNTESTED = (Note(metrics.on_gpu, (False,), PAGE.text("cpu_batch")),)
RUNS, PASSED = PAGE.text("runs"), PAGE.text("passed")


@exercise("05.1")
def _larger_batch(runs, answer) -> str:
    """Train a larger batch, predict its samples/s, and read what it cost in accuracy."""
    small, large = finished_runs(runs, 2, RUNS)[:2]
    only_change(small, large, "batch_size")
    if int(alike.value(large, "batch_size")) < int(alike.value(small, "batch_size")):
        raise NotYet(f"'{large.name}' has the smaller batch: the second run needs the larger one.")
    said = judge_prediction(answer, speed_verdict(small, large, "batch_size", "05"), small, large, UNTESTED)
    _, accuracy = noise.accuracy_change(small, large)
    steps = metrics.steady_steps(small), metrics.steady_steps(large)
    return PASSED.format(said=said, accuracy=accuracy, steps=steps[1], fewer=steps[0])
