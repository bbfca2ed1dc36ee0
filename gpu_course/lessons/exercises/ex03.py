"""Lesson 03's exercise: a third network as a graph, and its samples/s predicted."""
from __future__ import annotations

from ...analyse import alike, metrics
from ...show.findings import Note, Page
from .base import NotYet, exercise
from .judge import finished_runs, judge_prediction, only_change, speed_verdict

PAGE = Page.of(__name__)   # the fixed sentences: text/ex03.md
RUNS, GRAPH = PAGE.text("runs"), PAGE.text("graph")
BACKEND = alike.Aspect.COMPILE_BACKEND
# a backend that compiles nothing cannot test a prediction of what a graph does
UNTESTED = (Note(lambda run: alike.value(run, BACKEND), ("aot_eager",), PAGE.text("aot_eager")),)


@exercise("03.1")
def _graph(runs, answer) -> str:
    """Turn a network the lesson did not into a graph and predict its samples/s."""
    before, after = finished_runs(runs, 2, RUNS)[:2]
    only_change(before, after, "graph", also=(BACKEND,))
    if alike.value(before, "graph") != "eager":
        raise NotYet(f"'{before.name}' ran with graph={alike.shown(before, 'graph')}: the first run "
                     "is as written (eager).")
    verdict = speed_verdict(before, after, "graph", "03", also=(BACKEND,))
    said = judge_prediction(answer, verdict, before, after, UNTESTED)
    step, batch = metrics.steadiness(before)["step_p50_s"], int(before.config.get("batch_size") or 0)
    return (f"{said} {alike.value(before, 'model')}'s median step as written: {1e3 * step:.3g} ms "
            f"for {batch} images. {GRAPH}")
