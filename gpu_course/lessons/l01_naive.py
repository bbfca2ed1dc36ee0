"""Lesson 01: the naive baseline, placed against its input and compute ceilings (mock runs)."""
from __future__ import annotations

import enum
import math

import pandas as pd

from ..analyse import alike, diagnose, metrics
from ..show import report
from ..show.closing import Closing
from ..show.findings import Ceilings, Lesson, Page, Place, Quote, judge
from . import talk

SIZES = {
    "full": dict(train_size=50_000, test_size=10_000, epochs=3, warmup_steps=5,
                 ceiling_steps=200,    # steps of each ceiling run: 20+ steady ones to bound
                 exercise_size=10_240, exercise_model="resnet20"),   # a fifth of the set
    "smoke": dict(train_size=512, test_size=256, epochs=1, warmup_steps=2, ceiling_steps=24,
                  exercise_size=1_536, exercise_model="tiny"),   # 22 steady steps: a noise verdict
    "check": dict(train_size=10_240, test_size=2_048, epochs=2, ceiling_steps=100,
                  exercise_size=5_120),
}
OWN_SIZES = ("ceiling_steps", "exercise_model", "exercise_size")


class Role(enum.Enum):
    """What a row of the lesson's table is: the run, or one of the ceilings bounding it."""

    RUN = "the run"
    INPUT = "input ceiling"      # mock="trainer": batches fetched and dropped
    COMPUTE = "compute ceiling"  # mock="loader": one batch on the device, served forever


MOCKS = {"trainer": Role.INPUT, "loader": Role.COMPUTE}


def table(runs) -> pd.DataFrame:
    """The run and its ceilings (no speed-up for a ceiling): steady steps, step times, load."""
    runs = list(runs)
    roles = [MOCKS.get(str(r.config.get("mock") or "none"), Role.RUN) for r in runs]
    frame = report.ladder_table(runs)
    frame.insert(1, "what", [r.value for r in roles])
    if sum(r is Role.RUN for r in roles) > 1:
        frame.loc[[r is not Role.RUN for r in roles], "speedup"] = math.nan
    else:  # one run against its own ceilings: a speed-up would only be ceilings over it
        frame = frame.drop(columns="speedup")
    steadiness = [metrics.steadiness(r) for r in runs]
    for column, key, scale in (("steady_steps", "steady_steps", 1), ("step_p50_ms", "step_p50_s", 1e3),
                               ("step_p95_ms", "step_p95_s", 1e3), ("waited_share", "waited_share", 1)):
        frame[column] = [scale * s[key] for s in steadiness]
    return alike.with_load(frame, runs)


PAGE = Page.of(__name__)   # the paragraphs: text/l01_naive.md
LESSON = Lesson(
    compares=(),
    ceilings=Ceilings(
        setting="mock", varies=diagnose.CEILING_FREE,
        alone={"trainer": "the input pipeline", "loader": "the computation"},
        means=PAGE.means("ceilings", Place)),
    columns=PAGE.means("columns", str),
    cpu=PAGE.text("no_gpu"),
    quotes=(Quote("one loader worker", talk.NAIVE_SAMPLES_PER_SEC, "{:,} samples/s"),
            Quote(f"{talk.WORKERS} workers", talk.WORKERS_SAMPLES_PER_SEC, "{:,} samples/s")),
    hardware=talk.HARDWARE,
)


def conclude(runs) -> Closing:
    """The run against its input and compute ceilings (`LESSON`)."""
    runs = list(runs)
    return judge(LESSON, runs, table(runs))
