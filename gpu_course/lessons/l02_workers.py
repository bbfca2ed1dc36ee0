"""Lesson 02: more DataLoader workers, a sweep to its knee (`SWEEP`, `LARGE`), and the loader's
other knobs (`KNOBS_LESSON`)."""
from __future__ import annotations

import pandas as pd

from ..analyse import alike, metrics
from ..analyse.workers import (KNEE, knee, later_epochs_s, util_spread, worker_memory,  # noqa: F401
                               workers)
from ..scale.distributed import TALK as SLIDE   # the talk's 4-GPU, batch-640 slide
from ..show import report
from ..show.closing import Closing
from ..show.findings import Compare, Expect, Lesson, Page, Quote, Versus, judge
from . import talk

SIZES = {
    "full": dict(train_size=50_000, test_size=10_000, epochs=2, warmup_steps=5,
                 worker_counts=(1, 2, 4, 8, 16, 32, 64),   # those below gc.workers(), then it
                 large_batch=640,                           # the talk's batch a GPU
                 knob_epochs=3,                             # persistent workers pay from epoch 2
                 exercise_size=10_240, exercise_model="resnet20"),
    # 22 steady steps: a noise verdict
    "smoke": dict(train_size=384, test_size=256, epochs=1, warmup_steps=2, worker_counts=(1,),
                  large_batch=128, knob_epochs=4, exercise_size=1_536, exercise_model="tiny"),
    "check": dict(train_size=10_240, test_size=2_048, epochs=1, worker_counts=(1, 4),
                  knob_epochs=2, exercise_size=5_120),
}
OWN_SIZES = ("exercise_model", "exercise_size", "knob_epochs", "large_batch", "worker_counts")
BATCH = 64          # the lesson's batch, the talk's: a sweep at a larger one is its slide's
KNOBS = ("pin_memory", "persistent_workers", "prefetch_factor")   # DataLoader's other knobs


def table(runs, memory: pd.DataFrame | None = None) -> pd.DataFrame:
    """The ladder table with each run's workers, GPU-Util spread, step, waits and steady
    steps; the knee, later epochs, load and `memory`'s columns where they apply."""
    runs = list(runs)
    frame = report.ladder_table(runs)
    if "num_workers" not in frame.columns:
        frame.insert(1, "num_workers", [workers(r) for r in runs])
    steadiness = [metrics.steadiness(r) for r in runs]
    frame["gpu_util_std"] = [util_spread(r) for r in runs]
    frame["step_ms_median"] = [1e3 * s["step_p50_s"] for s in steadiness]
    frame["waited_share"] = [s["waited_share"] for s in steadiness]
    frame["steady_steps"] = [metrics.steady_steps(r) for r in runs]
    if len({workers(r) for r in runs}) > 1:
        frame["knee"] = knee(runs)
    if all(len(r.epochs) > 1 for r in runs):
        frame["later_epochs_s"] = [later_epochs_s(r) for r in runs]
    frame = alike.with_load(frame, runs)
    if memory is not None and len(memory):
        frame = frame.merge(memory, on="num_workers", how="left")
    return frame


PAGE = Page.of(__name__)   # the paragraphs: text/l02_workers.md
MORE_WORKERS = Compare(varies=("num_workers",), feeds=True, gpu=Expect.FASTER,
                       cpu=Expect.FASTER, means=PAGE.means("more_workers"))
SWEEP = Lesson(
    compares=(MORE_WORKERS,), versus=Versus.BEST, columns=PAGE.means("columns", str),
    cpu=PAGE.text("shared_cores"), marks=PAGE.means("knee", str),
    quotes=(Quote("one worker", talk.NAIVE_SAMPLES_PER_SEC, "{:,} samples/s"),
            Quote(f"{talk.WORKERS} workers", talk.WORKERS_SAMPLES_PER_SEC, "{:,} samples/s")),
    hardware=talk.HARDWARE)
LARGE = Lesson(
    compares=(MORE_WORKERS,), versus=Versus.BEST, columns=PAGE.means("columns", str),
    cpu=PAGE.text("shared_cores"),
    quotes=(Quote(f"{SLIDE['workers']} workers", SLIDE["samples_per_sec_k"], "{:,} samples/s"),
            Quote("an epoch", SLIDE["epoch_s_k"], "{:.1f} s"),
            Quote("one worker", SLIDE["samples_per_sec_k_one_worker"], "about {:,} samples/s"),
            Quote("an epoch", SLIDE["epoch_s_k_one_worker"], "{}+ s")),
    hardware=f"its slide's {SLIDE['k']} V100s at batch {SLIDE['batch']} a GPU")
KNOBS_LESSON = Lesson(
    compares=(Compare(varies=KNOBS, feeds=True, gpu=Expect.FASTER, cpu=Expect.SAME,
                      means=PAGE.means("knobs")),),
    columns=PAGE.means("later_epochs", str), cpu=PAGE.text("pinned_memory"))


def conclude(runs, memory: pd.DataFrame | None = None) -> Closing:
    """A worker sweep (`SWEEP`, `LARGE` above the talk's batch) or the loader's knobs
    (`KNOBS_LESSON`), with what a worker costs where `memory` is given."""
    runs = list(runs)
    if len(runs) < 2:
        raise ValueError(f"runs has {len(runs)} run(s); the lesson compares two or more")
    knobs = any(set(alike.differences(runs[0], r)) & set(KNOBS) for r in runs[1:])
    big = int(runs[0].config.get("batch_size") or BATCH) > BATCH
    lesson = KNOBS_LESSON if knobs else LARGE if big else SWEEP
    return judge(lesson, runs, table(runs, memory))
