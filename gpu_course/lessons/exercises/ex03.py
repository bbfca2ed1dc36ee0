"""Lesson 03's exercise: a third network as a graph, and its samples/s predicted."""
from __future__ import annotations

from ...analyse import alike, metrics
from ...show.findings import Note
from .base import NotYet, exercise
from .judge import finished_runs, judge_prediction, only_change, speed_verdict

BACKEND = alike.Aspect.COMPILE_BACKEND
# a backend that compiles nothing cannot test a prediction of what a graph does
UNTESTED = (Note(lambda run: alike.value(run, BACKEND), ("aot_eager",),
                 "the compile backend aot_eager traces the graph and runs the same operators, "
                 "generating no kernel of its own, so what it changes is a little Python around "
                 "each operator: less than a shared machine's noise between two runs. Compile "
                 "with inductor (the lesson's backend at full size) to test it."),)


@exercise("03.1")
def _graph(runs, answer) -> str:
    """Turn a network the lesson did not into a graph and predict its samples/s."""
    before, after = finished_runs(runs, 2, "the exercise compares two runs: the network as written and "
                          "the same network as a graph")[:2]
    only_change(before, after, "graph", also=(BACKEND,))
    if alike.value(before, "graph") != "eager":
        raise NotYet(f"'{before.name}' ran with graph={alike.shown(before, 'graph')}: the first "
                     "run is the network as written (eager / imperative), the second its graph.")
    verdict = speed_verdict(before, after, "graph", "03", also=(BACKEND,))
    said = judge_prediction(answer, verdict, before, after, UNTESTED)
    model = alike.value(before, "model")
    step = metrics.steadiness(before)["step_p50_s"]
    batch = int(before.config.get("batch_size") or 0)
    return (f"{said} {model}'s median step as written: {1e3 * step:.3g} ms for {batch} images; "
            f"a graph saves the Python work around each operator, which matters most where the "
            f"operators themselves are short.")
