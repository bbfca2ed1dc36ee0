"""Lesson 02: more DataLoader workers (`num_workers`), and what each one costs.

A sweep of worker counts up to the talk's advice (`gc.workers()`), the same at a large batch
beside the talk's slide (`SWEEP`, `LARGE`), and (PyTorch) the loader's other knobs
(`KNOBS_LESSON`). A gain beyond what removing all the data wait could buy is not credited
to the workers. The table marks the knee and what each worker costs.
"""
from __future__ import annotations

import pandas as pd

from ..analyse import alike, metrics
from ..analyse.workers import (KNEE, knee, later_epochs_s, util_spread, worker_memory,  # noqa: F401
                               workers)
from ..scale.distributed import TALK as SLIDE   # the talk's 4-GPU, batch-640 slide
from ..show import report
from ..show.closing import Closing
from ..show.findings import Compare, Expect, Lesson, Outcome, Quote, Versus, Where, judge
from . import talk

SIZES = {
    "full": dict(train_size=50_000, test_size=10_000, epochs=2, warmup_steps=5,
                 worker_counts=(1, 2, 4, 8, 16, 32, 64),   # those below gc.workers(), then it
                 large_batch=640,                           # the talk's batch a GPU
                 knob_epochs=3,                             # persistent workers pay from epoch 2
                 exercise_size=10_240, exercise_model="resnet20"),   # each exercise run
    "smoke": dict(train_size=384, test_size=256, epochs=1, warmup_steps=2,
                  worker_counts=(1,), large_batch=128, knob_epochs=4,   # 22 steady steps: a verdict
                  exercise_size=1_536, exercise_model="tiny"),   # 22 steady steps: a noise verdict
    "check": dict(train_size=10_240, test_size=2_048, epochs=1, worker_counts=(1, 4),
                  knob_epochs=2, exercise_size=5_120),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("exercise_model", "exercise_size", "knob_epochs", "large_batch", "worker_counts")
BATCH = 64          # the lesson's batch, the talk's: a sweep at a larger one is its slide's
KNOBS = ("pin_memory", "persistent_workers", "prefetch_factor")   # DataLoader's other knobs


def table(runs, memory: pd.DataFrame | None = None) -> pd.DataFrame:
    """The ladder table with each run's workers, GPU-Util spread, median step, waited share
    and steady steps; the knee, the later epochs, the machine's load, and `memory`'s
    columns (`worker_memory`) where they apply."""
    runs = list(runs)
    frame = report.ladder_table(runs)   # a column for whatever differs between the runs
    if "num_workers" not in frame.columns:
        frame.insert(1, "num_workers", [workers(r) for r in runs])
    frame["gpu_util_std"] = [util_spread(r) for r in runs]
    frame["step_ms_median"] = [1e3 * metrics.steadiness(r)["step_p50_s"] for r in runs]
    frame["waited_share"] = [metrics.steadiness(r)["waited_share"] for r in runs]
    frame["steady_steps"] = [metrics.steady_steps(r) for r in runs]
    if len({workers(r) for r in runs}) > 1:
        frame["knee"] = knee(runs)
    if all(len(r.epochs) > 1 for r in runs):
        frame["later_epochs_s"] = [later_epochs_s(r) for r in runs]
    frame = alike.with_load(frame, runs)
    if memory is not None and len(memory):
        frame = frame.merge(memory, on="num_workers", how="left")
    return frame


MORE_WORKERS = Compare(
    varies=("num_workers",), feeds=True, gpu=Expect.FASTER, cpu=Expect.FASTER,
    means={Outcome.EXPECTED: "More workers fed the step faster: several batches are prepared "
                             "at once, so the next is ready when a step ends. Past the knee "
                             "(below) more workers cost memory and cores and buy little; a "
                             "knee at the most workers tried means more might still pay.",
           Outcome.NONE: "The step waited too little for its data for workers to shorten it "
                         "on this machine.",
           Outcome.OPPOSITE: {
               Where.GPU: "More workers were slower: they took cores from the host's other "
                          "work.",
               Where.CPU: "More workers were slower: they took cores from the model, which "
                          "computes on the same CPU."},
           Outcome.CANNOT_JUDGE: "No verdict (above), so the workers are credited with "
                                 "nothing."})
COLUMNS = {"data_wait_share": "Data wait by run",
           "gpu_util_std": {Where.GPU: "How spiky the GPU's utilisation was by run (its std in "
                                       "points: a starved GPU swings between busy and idle)"},
           "spikiness": {Where.CPU: "How spiky the steps were by run (the 95th percentile "
                                    "step over the median)"},
           "uss_mib_per_worker": "What each worker adds on its own by run, in MiB (its unique "
                                 "set, pages shared with the notebook left out)",
           "share_of_ram_pct": "All of a run's workers as a share of this machine's RAM, in "
                               "percent"}
SHARED_CORES = ("No GPU here: each extra worker takes a core from the model, which computes on "
                "the same CPU. On a GPU machine the cores are free to feed the GPU: that is "
                "where the talk's gain came from.")
SWEEP = Lesson(
    compares=(MORE_WORKERS,), versus=Versus.BEST, columns=COLUMNS, cpu=SHARED_CORES,
    marks={"knee": "The knee, the fewest workers within a tenth of the best samples/s or "
                   "within its noise"},
    quotes=(Quote("one worker", talk.NAIVE_SAMPLES_PER_SEC, "{:,} samples/s"),
            Quote(f"{talk.WORKERS} workers", talk.WORKERS_SAMPLES_PER_SEC, "{:,} samples/s")),
    hardware=talk.HARDWARE)
LARGE = Lesson(
    compares=(MORE_WORKERS,), versus=Versus.BEST, columns=COLUMNS, cpu=SHARED_CORES,
    quotes=(Quote(f"{SLIDE['workers']} workers", SLIDE["samples_per_sec_k"], "{:,} samples/s"),
            Quote("an epoch", SLIDE["epoch_s_k"], "{:.1f} s"),
            Quote("one worker", SLIDE["samples_per_sec_k_one_worker"], "about {:,} samples/s"),
            Quote("an epoch", SLIDE["epoch_s_k_one_worker"], "{}+ s")),
    hardware=f"its slide's {SLIDE['k']} V100s at batch {SLIDE['batch']} a GPU, where one worker "
             "prepares a large batch's many images one after the other")
KNOBS_LESSON = Lesson(
    compares=(Compare(
        varies=KNOBS, feeds=True, gpu=Expect.FASTER, cpu=Expect.SAME,
        means={Outcome.EXPECTED: {
                   Where.GPU: "The tuned loader fed the GPU faster: pinned batches copy to it "
                              "without a detour, overlapping the computation, and persistent "
                              "workers are not started again each epoch.",
                   Where.CPU: "The same, as a CPU allows: persistent workers show at an "
                              "epoch's start (the later epochs, below), not in its steady "
                              "steps."},
               Outcome.NONE: "The plain loader already kept up: its knobs had nothing left to "
                             "remove.",
               Outcome.OPPOSITE: {
                   Where.GPU: "The tuned loader was slower: pinned pages and more prefetched "
                              "batches cost host memory and cores that the step needed.",
                   Where.CPU: "Persistent workers and deeper prefetching hold cores and "
                              "memory beside a model computing on the same CPU."},
               Outcome.CANNOT_JUDGE: "No verdict on the knobs (above)."}),),
    columns={"later_epochs_s": "Mean time of the epochs after the first (which starts the "
                               "workers) by run, in seconds"},
    cpu="No GPU here: pinned memory only speeds up copies to a GPU, so the notebook leaves it "
        "off.")


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
