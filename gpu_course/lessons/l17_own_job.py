"""Lesson 17: your own job. A plain script (notebooks/jobs/<track>/text_job.py) diagnosed
unchanged (`gpu-course watch`) and through `gc.watch(loader)`; the fix it names, judged.
"""
from __future__ import annotations

from ..show.findings import Compare, Expect, Lesson, Outcome, judge

SIZES = {
    "full": dict(train_size=20_000, epochs=3, warmup_steps=5),
    "smoke": dict(train_size=1_536, epochs=2, warmup_steps=3),   # 45 steady steps
    "check": dict(train_size=10_000, epochs=2),
}
OWN_SIZES = ()

LESSON = Lesson(compares=(Compare(
    varies=("num_workers",), feeds=True, gpu=Expect.FASTER, cpu=Expect.FASTER,
    means={Outcome.EXPECTED: "Tokenizing in loader workers, beside the step instead of before "
                             "it, fed the step faster: the data wait the diagnosis named was "
                             "the job's limit.",
           Outcome.NONE: "No gain beyond the noise: the step, not the tokenizer, held this "
                         "job, the workers had no free cores, or the runs swung too much to "
                         "show it.",
           Outcome.OPPOSITE: "Workers were slower here: they took the cores the step computes on.",
           Outcome.CANNOT_JUDGE: "No verdict: more examples (gc.sizes(\"17\", train_size=...)) on "
                                 "a quiet machine would tell."}),),
    empty="No runs: run the loop with gc.watch first.")


def conclude(runs=None):
    """The job with loader workers against the job as written."""
    return judge(LESSON, runs)
