"""Lesson 05's exercise: a larger batch, its samples/s predicted and its accuracy cost read."""
from __future__ import annotations

from ...analyse import alike, metrics, noise
from ...show.findings import Note
from .base import NotYet, exercise
from .judge import finished_runs, judge_prediction, only_change, speed_verdict

# a CPU cannot test what a larger batch does to a GPU's samples/s
UNTESTED = (Note(metrics.on_gpu, (False,),
                 "{names} trained on a CPU, which a larger batch does not fill as it fills a "
                 "GPU: there the speed moves with caches and the threads' scheduling (Gluon's "
                 "pair of batches 32 and 64 measured x0.78 to x1.71 over nine repeats on the "
                 "course's 2-core CPU), so a CPU cannot test what lesson 05 is about. On a GPU "
                 "it can."),)


@exercise("05.1")
def _larger_batch(runs, answer) -> str:
    """Train a larger batch, predict its samples/s, and read what it cost in accuracy."""
    small, large = finished_runs(runs, 2, "the exercise compares two runs: the lesson's smallest batch "
                         "and your larger one")[:2]
    only_change(small, large, "batch_size")
    if int(alike.value(large, "batch_size")) < int(alike.value(small, "batch_size")):
        raise NotYet(f"'{large.name}' has the smaller batch: the exercise asks for a larger one "
                     "than the first run's.")
    said = judge_prediction(answer, speed_verdict(small, large, "batch_size", "05"), small,
                            large, UNTESTED)
    _, accuracy = noise.accuracy_change(small, large)
    steps = metrics.steady_steps(small), metrics.steady_steps(large)
    return (f"{said} Validation accuracy after the same epochs, the larger batch against the "
            f"smaller: {accuracy}. The larger batch took {steps[1]} steady steps where the smaller "
            f"took {steps[0]}: fewer updates at the same learning rate, which is why lesson 05 "
            "scales the rate with the batch and warms it up.")
