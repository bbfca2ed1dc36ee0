"""Lesson 17: your own job. A plain script (notebooks/jobs/<track>/text_job.py) diagnosed
unchanged (`gpu-course watch`) and through `gc.watch(loader)`; the fix it names, judged."""
from __future__ import annotations

from ..show.findings import Compare, Expect, Lesson, Page, judge

SIZES = {
    "full": dict(train_size=20_000, epochs=3, warmup_steps=5),
    "smoke": dict(train_size=1_536, epochs=2, warmup_steps=3),   # 45 steady steps
    "check": dict(train_size=10_000, epochs=2),
}
OWN_SIZES = ()

PAGE = Page.of(__name__)   # the paragraphs: text/l17_own_job.md
LESSON = Lesson(compares=(Compare(
    varies=("num_workers",), feeds=True, gpu=Expect.FASTER, cpu=Expect.FASTER,
    means=PAGE.means("loader_workers")),), empty=PAGE.text("no_runs"))


def conclude(runs=None):
    """The job with loader workers against the job as written."""
    return judge(LESSON, runs)
