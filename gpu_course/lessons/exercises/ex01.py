"""Lesson 01's exercise: another worker count in the naive script, its data wait predicted."""
from __future__ import annotations

from ...analyse import alike, metrics, noise
from ...page import Page
from .base import exercise
from .judge import finished_runs, only_change, wait_prediction

PAGE = Page.of(__name__)   # the fixed sentences: text/ex01.md
RUNS, SHARED_CORES = PAGE.text("runs"), " " + PAGE.text("shared_cores")


@exercise("01.1")
def _naive_workers(runs, answer) -> str:
    """Change the naive script's worker count and predict its data wait."""
    before, after = finished_runs(runs, 2, RUNS)[:2]
    only_change(before, after, "num_workers")
    workers = alike.value(before, "num_workers"), alike.value(after, "num_workers")
    measured, said = wait_prediction(
        answer, before, after, "01", (f"with {workers[0]} worker(s)", f"with {workers[1]}"),
        f"Where does the loading run with {workers[1]} worker(s), and does the loop wait for it?")
    speed = noise.compare(before, after, varies=("num_workers",))
    shared = measured == "less" and not metrics.on_gpu(before) and speed.kind != noise.Kind.FASTER
    return f"{said} Samples/s, '{after.name}' against '{before.name}': {speed}." + SHARED_CORES * shared
