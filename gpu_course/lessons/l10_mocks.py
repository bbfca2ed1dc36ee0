"""Lesson 10: mock components and an automatic diagnosis.

A mock trainer (batches fetched and dropped) measures the input alone, a mock loader (one
batch served forever) the model alone: two ceilings, not rungs, so no speed-up column.
`analyse.diagnose` turns a run and its ceilings into a verdict and the next rung; `follow`
applies it. Lesson 09 reads its first rung's ceilings here.
"""
from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd

from ..analyse import diagnose, metrics
from ..rungs import RungName
from ..show.closing import Closing
from ..show.findings import Compare, Expect, Lesson, Note, Outcome, judge

SIZES = {
    "full": dict(dataset="folder", images=3000, image_size=32, train_size=2400, test_size=500,
                 batch_size=64, epochs=2, warmup_steps=5,
                 ceiling_steps=100,                   # steps of each ceiling run
                 exercise_size=2400, exercise_batch=64,    # each exercise run
                 torch_threads=None),                   # PyTorch's intra-op threads (None: its default)
    # 25 steps of 64 images a run: enough steady steps for diagnose to rule
    "smoke": dict(dataset="folder", images=1800, image_size=32, train_size=1600, test_size=40,
                  batch_size=64, epochs=1, warmup_steps=2, ceiling_steps=24,
                  exercise_size=256, exercise_batch=8,     # 30 steady steps: diagnose rules
                  torch_threads=1),                        # the model's, beside one loader worker
    "check": dict(images=2000, train_size=1600, test_size=200, epochs=1, exercise_size=1600),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("ceiling_steps", "exercise_batch", "exercise_size", "images", "torch_threads")


def table(runs) -> pd.DataFrame:
    """A row a run, ceilings included: samples/s, data wait, load, accuracy, and what
    `diagnose` makes of it (verdict, next rung)."""
    runs = list(runs)
    rows = []
    for run in runs:
        d = _diagnosis(run)
        low, high = metrics.samples_per_sec_range(run)
        rows.append({"rung": str(run.name), "samples_per_sec": metrics.samples_per_sec(run),
                     "samples_per_sec_min": low, "samples_per_sec_max": high,
                     "data_wait_share": metrics.data_wait_share(run),
                     "gpu_util": metrics.gpu_util(run),
                     # one decimal: 99.96 % reads "100", not "100.0"
                     "cpu_busy_pct": round(d.numbers["cpu_percent"], 1) if d else math.nan,
                     "val_acc": metrics.val_acc(run),
                     "verdict": d.verdict if d else metrics.status(run),
                     "next_rung": (d.next_rung or diagnose.AGAIN) if d else ""})
    frame = pd.DataFrame(rows)
    if frame["gpu_util"].isna().all():  # no GPU: nothing to show
        frame = frame.drop(columns="gpu_util")
    return frame


def _diagnosis(run) -> diagnose.Diagnosis | None:
    """The run's diagnosis; None for a run that finished no epoch."""
    return diagnose.diagnose(run) if len(run.epochs) else None


def step_table(times) -> pd.DataFrame:
    """The lecture's hand-timed steps, (t1, t2, t3) each: waiting t2 - t1, computing t3 - t2,
    in ms; their means without the first (the workers start during it)."""
    rows = [{"step": f"step {i + 1}", "wait_ms": 1000 * (t2 - t1), "compute_ms": 1000 * (t3 - t2)}
            for i, (t1, t2, t3) in enumerate(times)]
    if len(rows) > 1:
        later = rows[1:]
        rows.append({"step": f"mean of steps 2–{len(rows)}",
                     "wait_ms": sum(r["wait_ms"] for r in later) / len(later),
                     "compute_ms": sum(r["compute_ms"] for r in later) / len(later)})
    return pd.DataFrame(rows)


RULE = "The lecture's rule (the I/O rate must exceed the training rate) is "
LESSON = Lesson(
    compares=(),
    bounds=Compare(varies=("mock",), gpu=Expect.FASTER, cpu=Expect.FASTER, means={
        Outcome.EXPECTED: RULE + "met: the input alone delivers more than the model alone "
                          "consumes.",
        Outcome.OPPOSITE: RULE + "broken: the input cannot keep up with the model.",
        Outcome.NONE: RULE + "neither met nor broken beyond noise."}),
    above_ceiling="A run cannot beat its ceilings, so one is mismeasured (a ceiling over few "
                  "steps, or a busier machine): the diagnosis will not rule on it.")
NOT_SHOWN = "Whether the change helped is not shown: longer runs (more epochs) would tell."
ADVICE = Lesson(
    compares=(Compare(varies=("data_format", "num_workers", "augment"), gpu=Expect.FASTER,
                      cpu=Expect.FASTER, means={
        Outcome.EXPECTED: "Following the advice helped.",
        Outcome.OPPOSITE: "The change made the job slower: it did not lift the limit on this "
                          "machine; the new run's diagnosis says what holds it.",
        Outcome.NONE: NOT_SHOWN, Outcome.CANNOT_JUDGE: NOT_SHOWN}),),
    changes=True,
    notes=(Note("augment", ("standard",),
                "The cheaper standard augmentation stands in for the rung the diagnosis named, "
                "which this lesson does not take (a compute rung, or workers with no core free)."),))


def conclude(runs, advice: diagnose.Diagnosis | None = None) -> Closing:
    """Without `advice`: the ceilings against each other and the run (`LESSON`). With it (the
    diagnosis followed): each other run against the diagnosed one (`ADVICE`)."""
    runs = list(runs)
    if advice is None:
        return judge(LESSON, runs, table(runs))
    if advice.run_name not in [r.name for r in runs]:
        raise ValueError(f"advice is the diagnosis of {advice.run_name!r}, which is not "
                         f"among the runs: {[r.name for r in runs]}")
    return judge(replace(ADVICE, baseline={"name": advice.run_name}), runs, table(runs))


def follow(advice: diagnose.Diagnosis, cfg):
    """`cfg` with the diagnosis's next rung applied and named: measured again (unreliable), a
    faster data format, more workers where cores are free, else standard augmentation."""
    if advice.verdict == diagnose.UNRELIABLE:
        return cfg.replace(name="measured again")
    faster = diagnose.next_format(cfg.data_format) \
        if advice.next_rung == RungName.DATA_FORMAT else None
    if faster is not None:
        return cfg.replace(name=f"after the advice: {faster}", data_format=faster)
    n = advice.numbers
    cores = n.get("cpu_count", math.nan)
    recommended = max(2, int(cores) - 3) if cores == cores else 2   # the talk's cpu_count() - 3
    cpu_free = not n.get("cpu_percent", math.nan) >= diagnose.CPU_SATURATED
    if advice.next_rung == RungName.WORKERS and cfg.num_workers < recommended and cpu_free:
        return cfg.replace(name=f"after the advice: {recommended} workers",
                           num_workers=recommended)
    return cfg.replace(name="after the advice: standard augmentation",
                       augment="standard")
