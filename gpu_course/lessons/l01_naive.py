"""Lesson 01: the naive baseline, and the two ceilings that bound it.

The run is trained as a first script writes it (batch 64, one loader worker, float32, op by
op from Python). Two short runs bound it: mock="trainer" fetches batches and drops them (the
input alone), mock="loader" trains on one batch kept on the device (the model alone). A run
cannot beat the lower; `findings.Ceilings` places it against that one.
"""
from __future__ import annotations

import enum
import math

import pandas as pd

from ..analyse import alike, diagnose, metrics
from ..show import report
from ..show.closing import Closing
from ..show.findings import Ceilings, Lesson, Place, Quote, Where, judge
from . import talk

SIZES = {
    "full": dict(train_size=50_000, test_size=10_000, epochs=3, warmup_steps=5,
                 ceiling_steps=200,    # steps of each ceiling run: 20+ steady ones to bound
                 exercise_size=10_240, exercise_model="resnet20"),   # each exercise run: a fifth of the set
    "smoke": dict(train_size=512, test_size=256, epochs=1, warmup_steps=2, ceiling_steps=24,
                  exercise_size=1_536, exercise_model="tiny"),   # 22 steady steps: a noise verdict
    # the GPU check (GPU_COURSE_SIZE=check): full settings, a fifth of the images
    "check": dict(train_size=10_240, test_size=2_048, epochs=2, ceiling_steps=100,
                  exercise_size=5_120),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("ceiling_steps", "exercise_model", "exercise_size")
# the old names, for lessons that import them from here until they are converted
CEILING_FREE, MIN_STEPS, LOAD_WORDS = diagnose.CEILING_FREE, diagnose.MIN_STEPS, alike.LOAD_WORDS
shared, steady_steps = alike.shared, metrics.steady_steps


class Role(enum.Enum):
    """What a row of the lesson's table is: the run, or one of the ceilings bounding it."""

    RUN = "the run"
    INPUT = "input ceiling"      # mock="trainer": batches fetched and dropped
    COMPUTE = "compute ceiling"  # mock="loader": one batch on the device, served forever


MOCKS = {"trainer": Role.INPUT, "loader": Role.COMPUTE}


def role(run) -> Role:
    """The run's role, from the mock its record says it ran with."""
    return MOCKS.get(str(run.config.get("mock") or "none"), Role.RUN)


def table(runs) -> pd.DataFrame:
    """The run and its ceilings (no speed-up for a ceiling), with each row's steady steps,
    step-time percentiles and the machine's load."""
    runs = list(runs)
    frame = report.ladder_table(runs)
    roles = [role(r) for r in runs]
    frame.insert(1, "what", [r.value for r in roles])
    if sum(r is Role.RUN for r in roles) > 1:
        frame.loc[[r is not Role.RUN for r in roles], "speedup"] = math.nan
    else:  # one run against its own ceilings: a speed-up would only be ceilings over it
        frame = frame.drop(columns="speedup")
    steadiness = [metrics.steadiness(r) for r in runs]
    frame["steady_steps"] = [s["steady_steps"] for s in steadiness]
    frame["step_p50_ms"] = [1e3 * s["step_p50_s"] for s in steadiness]
    frame["step_p95_ms"] = [1e3 * s["step_p95_s"] for s in steadiness]
    frame["waited_share"] = [s["waited_share"] for s in steadiness]
    return alike.with_load(frame, runs)


OVERHEAD = ("Neither ceiling holds it: the time goes to overhead, work neither the input nor "
            "the model alone does, ")
LESSON = Lesson(
    compares=(),
    ceilings=Ceilings(
        setting="mock", varies=CEILING_FREE,
        alone={"trainer": "the input pipeline", "loader": "the computation"},
        means={
            Place.AT: "So that ceiling sets the pace: the run trains as fast as it lets it.",
            Place.AT_BOTH: "The run is within the lower ceiling's range, but the ceilings are "
                           "not shown apart (above), so neither is clearly the limit.",
            Place.BELOW: {
                Where.GPU: OVERHEAD + "most likely the host issuing the work (Python, kernel "
                                      "launches) or moving the batches.",
                Where.CPU: OVERHEAD + "on a CPU most likely the loader's worker and the model "
                                      "taking turns on cores each ceiling had to itself."},
            Place.ABOVE: "Above a ceiling it cannot beat: the ceiling or the run was "
                         "mismeasured (too few steps, prefetched batches, a busier machine): "
                         "measure again with more steps.",
            Place.CANNOT_JUDGE: "Which ceiling holds the run is not said (above): more steady "
                                "steps (ceiling_steps too) on a quiet machine would tell."}),
    columns={"data_wait_share": "Share of the steady step time spent waiting for data",
             "spikiness": "The slowest steps (the 95th percentile) against the median",
             "gpu_util": {Where.GPU: "Mean GPU utilisation while training, over all its GPUs "
                                     "(the rest of the time they idled)"}},
    cpu="No GPU here: the model computes on the cores the loader's worker needs. On a GPU the "
        "model is far faster than one worker can feed it, and the GPU waits.",
    quotes=(Quote("one loader worker", talk.NAIVE_SAMPLES_PER_SEC, "{:,} samples/s"),
            Quote(f"{talk.WORKERS} workers", talk.WORKERS_SAMPLES_PER_SEC, "{:,} samples/s")),
    hardware=talk.HARDWARE,
)


def conclude(runs) -> Closing:
    """The run placed against its input and compute ceilings (`LESSON`)."""
    runs = list(runs)
    return judge(LESSON, runs, table(runs))
