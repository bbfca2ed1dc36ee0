"""Lesson 06's exercise: a race of schedules, the first to the constant rate's accuracy named."""
from __future__ import annotations

import pandas as pd

from ...analyse import alike, metrics, noise
from ...page import Page
from .base import NotYet, exercise
from .judge import alike_but, finished_runs

PAGE = Page.of(__name__)   # the fixed sentences: text/ex06.md
AT_CHANCE, RUNS = " " + PAGE.text("at_chance"), PAGE.text("runs")
PASSED = PAGE.text("passed")


@exercise("06.1")
def _race(runs, answer) -> str:
    """Race schedules: which first reaches the accuracy the constant rate ends with?"""
    from ..l06_schedules import CONSTANT, SCHEDULE_FIELDS
    runs = finished_runs(runs, 2, RUNS)
    schedule = {r: alike.value(r, "lr_scheduler") for r in runs}
    if (constant := next((r for r in runs if schedule[r] == CONSTANT), None)) is None:
        raise NotYet(f"no run has the constant rate, lr_scheduler='{CONSTANT}': add one.")
    if len(set(schedule.values())) < len(runs):
        ran = ", ".join(sorted(map(str, schedule.values())))
        raise NotYet(f"a schedule ran twice ({ran}): race each one once.")
    for run in runs:
        alike_but(constant, run, (*SCHEDULE_FIELDS, "warmup_epochs"), "their schedule")
    by_name = {schedule[r]: r for r in runs}
    if not isinstance(answer, str) or answer not in by_name:
        raise NotYet(f"first={answer!r}: name the schedule ({', '.join(map(repr, by_name))}) whose "
                     "val acc first reached the constant rate's final one.")
    target, images = metrics.val_acc(constant), int(constant.config.get("test_size") or 0)
    margin = 2 * noise.accuracy_se(target, images)
    curves = {name: list(pd.to_numeric(r.epochs["val_acc"], errors="coerce")) for name, r in by_name.items()}
    reached = {name: next((i + 1 for i, acc in enumerate(accs) if acc >= target), None)
               for name, accs in curves.items()}
    where = "; ".join(f"{name} " + (f"epoch {e}" if e else "never") for name, e in reached.items())
    if (mine := reached[answer]) is None:
        raise NotYet(f"'{answer}' never reached the target, {target:.1%}: {where}.")
    ahead = [(name, e) for name, e in reached.items()
             if e is not None and e < mine and curves[answer][e - 1] < target - margin]
    if ahead:
        name, e = min(ahead, key=lambda p: p[1])
        raise NotYet(f"'{name}' reached the target, {target:.1%}, at epoch {e}, when '{answer}' was "
                     f"at {curves[answer][e - 1]:.1%}, more than 2 standard errors ({margin:.1%} on "
                     f"{images:,} images) below. Reached: {where}.")
    seconds = pd.to_numeric(by_name[answer].epochs["epoch_time_s"], errors="coerce").iloc[:mine].sum()
    return PASSED.format(answer=answer, target=target, epoch=mine, seconds=seconds, margin=margin,
                         images=images, where=where) + AT_CHANCE * noise.at_chance(constant)
