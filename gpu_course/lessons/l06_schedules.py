"""Lesson 06: learning-rate schedules on the large-batch job of lesson 05.

The same job is trained once with a constant rate and once per schedule; each schedule's
accuracy is judged against the constant rate's (binomial noise on the validation
images), and its speed too (a schedule is one number per update: it should cost
nothing). The constant run is found by its config (`lr_scheduler="none"`), a winner by
the accuracy verdict's value, and a run that differs from the constant one in more than
its schedule (one-cycle brings its own warm-up) says so.
"""
from __future__ import annotations

import pandas as pd

from ..analyse import metrics, noise
from ..show import report
from ..show.closing import Closing
from . import workers
from .l05_large_batch import config_changes

SIZES = {
    "full": dict(model="resnet20", train_size=50_000, test_size=10_000, epochs=12,
                 batch_size=640,                 # per device: lesson 5's large batch
                 lr_base_batch=128,              # lr = 0.1 at this batch, scaled linearly (lesson 5)
                 num_workers=workers(), warmup_steps=10,
                 torch_threads=None),            # PyTorch's intra-op threads (None: its default)
    # a small network and one in-process loader, so that five runs fit CI's minute on 2 cores
    "smoke": dict(model="tiny", train_size=512, test_size=256, epochs=2, batch_size=64,
                  lr_base_batch=32, num_workers=0, warmup_steps=2, torch_threads=1),
    "check": dict(train_size=10_240, test_size=2_048, epochs=4),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("torch_threads",)
CONSTANT = "none"                                # lr_scheduler of the run the others are judged against
SCHEDULE_FIELDS = ("lr_scheduler", "lr_steps", "lr_factor")   # what a schedule is made of


def constant_run(runs):
    """The run with no schedule (`lr_scheduler="none"`): the base of every comparison."""
    found = [r for r in runs if (r.config.get("lr_scheduler") or CONSTANT) == CONSTANT]
    if not found:
        raise ValueError(f"no run has lr_scheduler={CONSTANT!r}; the runs' schedules: "
                         f"{[r.config.get('lr_scheduler') for r in runs]}")
    return found[0]


def called(run) -> str:
    """The run by what ran, with its schedule where the name does not say it."""
    schedule = run.config.get("lr_scheduler") or CONSTANT
    label = metrics.label(run)
    return label if run.name == f"lr_scheduler={schedule}" else f"{label} ({schedule})"


def table(runs) -> pd.DataFrame:
    """The ladder table with the constant rate as the speed-up's base, each run's schedule,
    and what else it changed from the constant run."""
    runs = list(runs)
    base = constant_run(runs)
    frame = report.ladder_table(runs, baseline=runs.index(base))
    report.put(frame, 1, "lr_scheduler", [r.config.get("lr_scheduler") or CONSTANT for r in runs])
    frame.insert(2, "differs_besides_the_schedule",
                 [", ".join(config_changes(base, r, SCHEDULE_FIELDS)) or "–" for r in runs])
    return frame


def conclude(runs) -> Closing:
    runs = list(runs)
    constant = constant_run(runs)
    say = Closing(table(runs), runs, varies=SCHEDULE_FIELDS + ("warmup_epochs",))
    epochs = constant.config.get("epochs")
    others = [r for r in runs if r is not constant]
    verdicts = {}
    for run in others:
        extra = config_changes(constant, run, SCHEDULE_FIELDS)
        verdicts[id(run)] = noise.accuracy_verdict(constant, run)
        say(f"{called(run)}: val acc {say.cell(run, 'val_acc')} against the constant rate's "
            f"{say.cell(constant, 'val_acc')}: {say.accuracy(constant, run)[1]}"
            + (f"; it differs from the constant run in {', '.join(extra)} too, so this is not "
               "the schedule's alone." if extra else "."))
    best = max(runs, key=metrics.val_acc)
    ahead = verdicts.get(id(best))
    if say.at_chance(runs):
        say(f"Every run is within noise of chance, the best too: {say.chance(best)} No schedule "
            "is named best at this size.")
    elif ahead is None or not (ahead.is_effect and ahead.points > 0):
        say(f"The best, {called(best)} at {say.cell(best, 'val_acc')}, is the constant rate or "
            f"within noise of it: no schedule is named the winner after {epochs} epoch(s).")
    else:
        say(f"Best after {epochs} epoch(s): {called(best)} at {say.cell(best, 'val_acc')}, beyond "
            "noise of the constant rate (its verdict above).")
    speeds = [(run, say.compare(constant, run)) for run in others]
    for run, verdict in speeds:
        say(f"{called(run)}, speed against the constant rate: {verdict}.")
    off = [run for run, v in speeds if v.is_effect]
    if off:
        say(f"{len(off)} of {len(speeds)} differ in speed beyond their steady-step spread, which "
            "a schedule cannot cost: this machine's load changed between the runs (one run's "
            "steady steps understate run-to-run noise).")
    else:
        say("No schedule changed the speed beyond noise: a schedule changes where training "
            "goes, not how fast each step runs.")
    return say
