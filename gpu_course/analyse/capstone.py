"""The capstone's grading (lesson 16): the final run against the job as given, a `Mark`
a `Criterion` that says, when unmet, what is wrong and which lesson's fix applies."""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from .. import rungs
from ..measure.provenance import DEFAULTS
from ..measure.records import load_runs
from ..page import Page
from . import alike, anatomy, diagnose, grading, metrics, noise

PAGE = Page.of(__name__)   # what the marks say, fixed: text/capstone.md

# what the job is, which the attendee keeps: its track, network and data, and the machine
JOB = ("engine", "model", "dataset", "data_dir", "train_size", "test_size", "image_size",
       "augment", alike.Aspect.MACHINE.value)
# how the job as given loads and runs: the Experiment's own defaults, one worker and all
GIVEN = {k: DEFAULTS[k] for k in ("num_workers", "data_format", "data_on_gpu", "graph",
                                  "dtype", "mock")}
LESSONS = PAGE.means("lessons", str)   # {number: what the lesson changes}
# how each track reads the loss on the host every step
SYNC_CALL = {"pytorch": "loss.item()", "gluon": "loss.asnumpy()"}


class Criterion(StrEnum):
    DIAGNOSIS = "diagnosis"
    TARGET = "target"
    TIME = "time to target"


@dataclass(frozen=True)
class Mark:
    """A criterion met or not, why, and whether an unmet one rests on a measurement."""

    criterion: Criterion
    met: bool
    says: str
    measured: bool = False


def lesson(number: str) -> str:
    return f"lesson {number} ({LESSONS[number]})"


# what the marks say, by case; the numbers come from the runs
LIMIT = PAGE.means("limit", str)
HELD = PAGE.means("held", anatomy.Bound)
RACED = PAGE.means("raced", noise.Kind)   # why a race was lost, measured
TOO_FEW = PAGE.text("too_few")
AT_CHANCE = " " + PAGE.text("at_chance")
GPU_BUSY = PAGE.text("gpu_busy")
CHANGE = PAGE.text("change_the_job")
SAY = {name: PAGE.text(name) for name in ("cannot_rule", "next_rung", "further", "few_steps",
                                          "waited", "own_bar", "wait_met", "wait_unmet",
                                          "no_cores", "no_util", "as_given", "util",
                                          "held_unknown", "accuracy", "is_given", "never",
                                          "reached")}


def is_given(run) -> bool:
    """Whether `run` loaded and ran as the job is given (GIVEN's settings)."""
    return all(grading.setting(run, k) == v for k, v in GIVEN.items())


def job_differences(a, b) -> dict:
    """{aspect: (a's, b's)} for what of the job itself (JOB) runs a and b differ in."""
    pairs = {k: (alike.value(a, k), alike.value(b, k)) for k in JOB}
    return {k: (x, y) for k, (x, y) in pairs.items() if x != y
            and not (k == alike.Aspect.MACHINE and None in (x, y))}


def given_run(run, runs=None):
    """The earliest finished run of the same job, as given, beside `run` (or among `runs`)."""
    runs = load_runs(Path(run.path).parent) if runs is None else runs
    return next((r for r in runs if metrics.status(r) == "finished" and is_given(r)
                 and not job_differences(r, run)), None)


def grade(given, mine) -> list[Mark]:
    """A Mark a Criterion for the final run `mine` against the job as given."""
    d = diagnose.diagnose(mine)
    return [_diagnosis(d, mine),
            (_util if metrics.on_gpu(mine) else _wait)(given, mine, d), _time(given, mine)]


def fix(d: diagnose.Diagnosis, run) -> str | None:
    """The lesson whose change answers what `d` names, where the course can fix it there."""
    return rungs.LESSON.get(grading.fixable(d, run))


def _diagnosis(d: diagnose.Diagnosis, run) -> Mark:
    """Met when diagnose rules and names nothing the course can fix on this machine."""
    head = f"diagnose calls '{run.name}' {d.verdict}"
    if d.verdict == diagnose.UNRELIABLE:
        why = "; ".join(diagnose.unreliable(d.numbers, str(grading.setting(run, "mock"))))
        return Mark(Criterion.DIAGNOSIS, False,
                    SAY["cannot_rule"].format(head=head, why=why, lesson=lesson("10")), True)
    number = fix(d, run)
    if number is not None:
        return Mark(Criterion.DIAGNOSIS, False,
                    SAY["next_rung"].format(head=head, rung=d.next_rung, advice=d.advice,
                                            lesson=lesson(number)), True)
    case = d.verdict if d.verdict == "input-bound" or metrics.on_gpu(run) else "cpu"
    why = LIMIT.get(case, LIMIT["overhead-bound"]).format(rung=d.next_rung, advice=d.advice)
    further = (" " + SAY["further"].format(rung=d.next_rung, advice=d.advice)
               if d.verdict == "compute-bound" and d.next_rung else "")
    return Mark(Criterion.DIAGNOSIS, True, f"{head}: {why}.{further}")


def _wait(given, mine, d) -> Mark:
    """On a CPU: the data wait below INPUT_WAIT, or no more than the job as given's."""
    xs, ys = metrics.wait_blocks(given), metrics.wait_blocks(mine)
    share, before = metrics.data_wait_share(mine), metrics.data_wait_share(given)
    if not ys:
        return Mark(Criterion.TARGET, False,
                    SAY["few_steps"].format(name=mine.name))
    said = SAY["waited"].format(share=share, low=min(ys), high=max(ys), before=before)
    own_bar = not before >= diagnose.INPUT_WAIT and bool(xs)   # the job as given waited less
    goal = (SAY["own_bar"].format(high=max(xs)) if own_bar else
            f"below {diagnose.INPUT_WAIT:.0%}")
    if (min(ys) <= max(xs)) if own_bar else (share < diagnose.INPUT_WAIT):
        return Mark(Criterion.TARGET, True, SAY["wait_met"].format(said=said, goal=goal))
    fixes = [lesson("02")] * (diagnose.workers_advised(mine.config, d.numbers) is not None) \
        + [lesson("09")] * (grading.setting(mine, "data_format") != "memory")
    return Mark(Criterion.TARGET, False,
                SAY["wait_unmet"].format(said=said, goal=goal,
                                         fixes="; ".join(fixes) or SAY["no_cores"]), True)


def _util(given, mine, d) -> Mark:
    """On a GPU, GPU-Util: diagnose's GPU_BUSY, or what the job as given already had."""
    util, before = metrics.gpu_util(mine), metrics.gpu_util(given)
    if math.isnan(util):
        return Mark(Criterion.TARGET, False,
                    SAY["no_util"].format(name=mine.name))
    goal_value = before if before >= diagnose.GPU_BUSY else diagnose.GPU_BUSY
    goal = f"{goal_value:.0f}%, " + (GPU_BUSY if goal_value == diagnose.GPU_BUSY
                                     else SAY["as_given"])
    said = SAY["util"].format(util=util, before=before, goal=goal)
    if util >= goal_value:
        return Mark(Criterion.TARGET, True, f"{said}: met.")
    held = anatomy.anatomy(mine)
    what = HELD.get(held.bound, SAY["held_unknown"]).format(
        data_wait_ms=held.data_wait_ms, step_ms=held.step_ms, bound=held.bound,
        sync=SYNC_CALL.get(str(grading.setting(mine, "engine")), "a sync"),
        **{f"l{n}": lesson(n) for n in ("02", "03", "05", "09", "13")})
    return Mark(Criterion.TARGET, False, f"{said}: not met: {what}.", True)


def _time(given, mine) -> Mark:
    """Met when `mine` reaches the job as given's final accuracy sooner, beyond noise."""
    acc, images = metrics.val_acc(given), int(given.config.get("test_size") or 0)
    goal = acc - 2 * noise.accuracy_se(acc, images)
    head = SAY["accuracy"].format(goal=goal, acc=acc, images=images)
    if Path(mine.path) == Path(given.path):
        return Mark(Criterion.TIME, False,
                    SAY["is_given"].format(name=mine.name, change=CHANGE))
    race, after = grading.race(given, mine, goal), AT_CHANCE * noise.at_chance(given)
    if race.verdict is None:
        return Mark(Criterion.TIME, False,
                    SAY["never"].format(head=head, name=mine.name, acc=metrics.val_acc(mine),
                                        epochs=len(mine.epochs), l05=lesson("05"),
                                        l06=lesson("06"), after=after))
    v = race.verdict
    said = SAY["reached"].format(head=head, name=mine.name, mine_s=race.mine_s,
                                 given_s=race.given_s, verdict=noise.sentence(v))
    why = "" if v.kind == noise.Kind.FASTER else ": " + RACED.get(v.kind, TOO_FEW)
    return Mark(Criterion.TIME, v.kind == noise.Kind.FASTER, f"{said}{why}.{after}",
                v.kind in RACED)

