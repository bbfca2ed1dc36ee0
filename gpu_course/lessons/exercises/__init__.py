"""The lessons' exercises: one change, a prediction, a measurement, and a check of it.

Each lesson ends with an exercise cell (tagged "exercise" in the notebook) whose lines
marked `# >>>` are the attendee's to change, and a check cell (tagged "check"):

    gc.check("02.1", runs, answer)    # judges the attendee's own runs, from their records
    gc.solution("02.1")               # prints this track's solution (notebooks/solutions/)

A check reads the runs' records, never the machine the notebook runs on, and never
compares with a typed number. It returns a `Result`: passed, with a sentence computed from
the runs, or "not yet", with what is wrong and how to fix it. It fails when the runs are
not the experiment asked for (missing, unfinished, a different change, or differing in
more than the one change) or too short to judge, and when the attendee's answer is
contradicted by the measurement beyond noise: samples/s by `noise.compare` (blocks of
steady steps), the data wait by the same rule on its blocks (`wait_blocks`), accuracy by
two binomial standard errors of the validation set (`noise.accuracy_se`). An answer the
runs cannot tell from its alternatives (within noise, at chance, or a machine shared with
other programs for one run) is accepted, and the sentence says it is untested and how to
test it. A "not yet" that rests on the machine's timings (raised as `Contradicted`) says so
in `Result.measured`: the same runs on a busier machine could say otherwise; one about how
the exercise was done does not. No deep-learning framework here.

base.py holds the registry and the solutions, judge.py what every check asks of the
runs, exNN.py lesson NN's checks (importing one registers its exercises); text/<module>.md
each module's fixed sentences (`findings.Page`), its templates with {fields} kept in code.

    01.1  another worker count in the naive script: the data wait's share, predicted
    02.1  a sweep of worker counts: its knee, named
    03.1  a third network as a graph: its samples/s, predicted
    04.1  the 16-bit type this device computes in: its samples/s, predicted; its accuracy, read
    05.1  a larger batch: its samples/s, predicted; its accuracy after the same epochs, read
    06.1  a race of learning-rate schedules: the first to the constant rate's accuracy, named
    07.1  the same batch split over more devices: its samples/s, predicted
    08.1  one rung taken out of the ladder's top rung: its samples/s, predicted from the table
    09.1  the photos in another data format than loose JPEGs: the data wait's share, predicted
    10.1  the loader made the bottleneck on purpose: diagnose's verdict, predicted
    11.1  another thread count than the usable cores: the forward pass's images/s, predicted
    12.1  one setting of the profiled run changed: the step timers' verdict on it, predicted
    13.1  a guard on the loss checked on the host every step: its cost in samples/s, predicted
    14.1  a batch size not yet measured: its peak memory, predicted from one that was
    15.1  a batch sweep of a served network: where its images/s stops growing, named
    16.1  the capstone: a job the course did not use, made steady; graded by diagnose, a
          target for the data wait (CPU) or GPU-Util (GPU), and the time to its accuracy
"""
from __future__ import annotations

from .base import (EXERCISES, MARK, SOLUTIONS, TRACKS, Contradicted, Exercise, NotYet, Result,
                   check, exercise, find, solution, solution_sections, solution_text)
from .judge import DIRECTIONS, wait_blocks

from . import ex01, ex02, ex03, ex04, ex05, ex06, ex07, ex08, ex09, ex10, ex11, ex12, ex13, ex14, ex15, ex16  # noqa: F401  (registers each lesson's exercises)

__all__ = ["EXERCISES", "MARK", "SOLUTIONS", "TRACKS", "DIRECTIONS", "Contradicted", "Exercise",
           "NotYet", "Result",
           "check", "exercise", "find", "solution", "solution_sections", "solution_text", "wait_blocks"]
