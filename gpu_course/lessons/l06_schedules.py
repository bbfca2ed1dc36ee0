"""Lesson 06: learning-rate schedules on lesson 05's large batch, against the constant rate."""
from __future__ import annotations

import pandas as pd

from ..analyse import alike
from ..show import report
from ..show.closing import Closing
from ..show.findings import Compare, Expect, Gain, Lesson, Note, Page, judge
from . import workers

SIZES = {
    "full": dict(model="resnet20", train_size=50_000, test_size=10_000, epochs=12,
                 batch_size=640,                 # per device: lesson 5's large batch
                 lr_base_batch=128,              # lr = 0.1 at this batch, scaled linearly (lesson 5)
                 num_workers=workers(), warmup_steps=10, torch_threads=None),
    "smoke": dict(model="tiny", train_size=512, test_size=256, epochs=2, batch_size=64,
                  lr_base_batch=32, num_workers=0, warmup_steps=2, torch_threads=1),
    "check": dict(train_size=10_240, test_size=2_048, epochs=4),
}
OWN_SIZES = ("torch_threads",)
CONSTANT = "none"                                # the lr_scheduler the others are judged against
SCHEDULE_FIELDS = ("lr_scheduler", "lr_steps", "lr_factor")   # what a schedule is made of

PAGE = Page.of(__name__)   # the paragraphs: text/l06_schedules.md
LESSON = Lesson(
    compares=(Compare(varies=SCHEDULE_FIELDS + ("warmup_epochs",), gpu=Expect.SAME,
                      cpu=Expect.SAME, gains=Gain.HIGHER, means=PAGE.means("schedule"),
                      gained=PAGE.means("schedule_gained")),),
    baseline={"lr_scheduler": CONSTANT},
    notes=(Note("lr_scheduler", ("onecycle",), PAGE.text("one_cycle")),),
)


def table(runs) -> pd.DataFrame:
    """The ladder table against the constant rate, with each run's schedule and what else changed."""
    runs = list(runs)
    if not (found := [r for r in runs if (r.config.get("lr_scheduler") or CONSTANT) == CONSTANT]):
        have = [r.config.get("lr_scheduler") for r in runs]
        raise ValueError(f"no run has lr_scheduler={CONSTANT!r}; the runs' schedules: {have}")
    base = found[0]
    frame = report.ladder_table(runs, baseline=runs.index(base))
    report.put(frame, 1, "lr_scheduler", [r.config.get("lr_scheduler") or CONSTANT for r in runs])
    frame.insert(2, "differs_besides_the_schedule",
                 [", ".join(alike.settings(base, r, SCHEDULE_FIELDS)) or "–" for r in runs])
    return frame


def conclude(runs) -> Closing:
    """Each schedule against the constant rate, in accuracy and speed (`LESSON`)."""
    runs = list(runs)
    return judge(LESSON, runs, table(runs))
