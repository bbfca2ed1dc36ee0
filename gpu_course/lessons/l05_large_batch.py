"""Lesson 05: large batches (`SWEEP`), the changes that keep their accuracy (`CHANGES`) and the
optimizer race (`RACE`), told apart by `part`."""
from __future__ import annotations

import math

import pandas as pd

from ..analyse import alike, anatomy, metrics
from ..analyse.recipe import Part, changes_text, lr_used, part
from ..show import report
from ..show.closing import Closing
from ..show.findings import Compare, Expect, Gain, Lesson, Note, Page, Quote, judge
from . import talk, workers

SIZES = {
    "full": dict(model="resnet20", train_size=50_000, test_size=10_000, epochs=3,   # the talk's table: 3 epochs
                 warmup_steps=10, num_workers=workers(), torch_threads=None,
                 batches=(64, 128, 256, 640, 1280),   # per device; the last is "large"
                 base_batch=128,                      # lr = 0.1 at this batch, scaled linearly above it
                 large_warmup_epochs=1.0, race_epochs=6, race_train_size=50_000, race_batch=256,
                 exercise_size=10_240),               # 20+ steady steps at 128
    "smoke": dict(model="tiny", train_size=512, test_size=256, epochs=1, warmup_steps=2,
                  num_workers=0, batches=(32, 64, 128), base_batch=32, large_warmup_epochs=0.5,
                  race_epochs=2, race_train_size=256, race_batch=64, torch_threads=1,
                  exercise_size=1_536),               # 22 steady steps at batch 64: a noise verdict
    "check": dict(train_size=10_240, test_size=2_048, epochs=2, batches=(64, 256, 1280),
                  race_epochs=3, race_train_size=10_240, exercise_size=5_120),
}
OWN_SIZES = ("base_batch", "batches", "exercise_size", "large_warmup_epochs", "race_batch",
             "race_epochs", "race_train_size", "torch_threads")
TARGET = 0.9          # the race's target: this share of the best final accuracy
# final val acc by schedule after the warm-up, seeds 0 and 1 (reference/recipes-cpu/recipes.md)
RECORDS = {"constant": (0.215, 0.144), "cosine decay": (0.772, 0.804)}

PAGE = Page.of(__name__)   # the paragraphs: text/l05_large_batch.md
BATCH = Compare(varies=("batch_size",), gpu=Expect.FASTER, cpu=Expect.SAME, gains=Gain.LOWER,
                means=PAGE.means("batch"), gained=PAGE.means("batch_gained"))
SWEEP = Lesson(
    compares=(BATCH,),
    notes=(Note("batch_size", tuple(talk.BATCH_TABLE),
                f"The talk's {talk.WORKLOAD} on another machine: a shape, not a speed-up."),),
    columns=PAGE.means("epoch_time", str),
    cpu=PAGE.text("no_gpu"),
    quotes=(Quote(f"batch {talk.LARGE_BATCH} with {talk.WORKERS} loader workers",
                  talk.LARGE_BATCH_SAMPLES_PER_SEC, "{:,} samples/s"),
            Quote("with one worker (a large batch needs lesson 2's input pipeline)",
                  talk.LARGE_BATCH_ONE_WORKER, "≈{:,}")),
    hardware=talk.HARDWARE,
)
CHANGES = Lesson(
    chain=True,
    compares=(
        BATCH,
        Compare(varies=("lr_base_batch",), gpu=Expect.SAME, means=PAGE.means("same_step"),
                gains=Gain.HIGHER, gained=PAGE.means("scaled_rate_gained")),
        Compare(varies=("warmup_epochs",), gpu=Expect.SAME, means=PAGE.means("same_step"),
                gains=Gain.HIGHER, gained=PAGE.means("warmup_gained")),
        Compare(varies=("warmup_epochs", "lr_scheduler"), gpu=Expect.SAME,
                means=PAGE.means("same_step"), gains=Gain.HIGHER,
                gained=PAGE.means("decay_gained")),
        Compare(varies=("optimizer",), gpu=Expect.SAME, gains=Gain.HIGHER,
                means=PAGE.means("same_update"), gained=PAGE.means("same_update_gained")),
        Compare(varies=("optimizer", "optimizer_params"), gpu=Expect.SLOWER, cpu=Expect.SLOWER,
                gains=Gain.HIGHER, means=PAGE.means("per_layer"),
                gained=PAGE.means("per_layer_gained")),
    ),
    columns=PAGE.means("learning_rate", str),
    quotes=tuple(Quote(f"warm-up then {schedule} (seed {seed})", value, "{:.1%}")
                 for schedule, values in RECORDS.items() for seed, value in enumerate(values)),
    source="the course's own records",
    hardware="a CPU (ResNet-20, batch 512, LARS, three epochs)",
)
RACE = Lesson(
    compares=(Compare(
        varies=("optimizer", "lr", "momentum", "optimizer_params"), gpu=Expect.SAME,
        gains=Gain.HIGHER, means=PAGE.means("race"), gained=PAGE.means("race_gained")),),
    columns=PAGE.means("time_to_target", str),
)
LESSONS = {Part.SWEEP: SWEEP, Part.CHANGES: CHANGES, Part.RACE: RACE}


def table(runs, target: float = TARGET) -> pd.DataFrame:
    """The part's table, with the rate used: the talk's numbers beside each batch (sweep),
    what each row changed (changes), or each optimizer's time to the target (race)."""
    runs = list(runs)
    which, frame = part(runs), report.ladder_table(runs)
    report.put(frame, 1, "lr", [lr_used(r) for r in runs])
    if which is Part.SWEEP:
        batches = [int(r.config.get("batch_size") or 0) for r in runs]
        report.put(frame, 1, "batch_size", batches)
        talks = [talk.BATCH_TABLE.get(b, (math.nan, math.nan)) for b in batches]
        frame["talk_val_acc_pct"] = [100 * acc for acc, _ in talks]
        frame["talk_epoch_s"] = [seconds for _, seconds in talks]
    elif which is Part.CHANGES:
        frame.insert(1, "changed_from_the_row_above", ["–"] + [
            changes_text(alike.settings(a, b)) for a, b in zip(runs, runs[1:])])
    else:
        goal = target * pd.Series([metrics.val_acc(r) for r in runs], dtype=float).max()
        frame["time_to_target_s"] = [anatomy.time_to_accuracy(r, goal) for r in runs]
    return frame


def conclude(runs, target: float = TARGET) -> Closing:
    """The part's checked sentences (see `part`)."""
    runs = list(runs)
    return judge(LESSONS[part(runs)], runs, table(runs, target))
