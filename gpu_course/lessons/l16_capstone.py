"""Lesson 16, the capstone: a training job the course did not use, made steady with what
the lessons taught, and graded by the course's own tools.

The job is the notebook's exercise cell, plain framework code: a network no lesson trains
(`network`: a wide ResNet whose step keeps a GPU busy; without a GPU the tiny convnet stands
in, `cpu_network`, as in lesson 09), lesson 09's photo folder of loose JPEGs, one loader
worker, float32, the running loss read every step (a sync: lesson 13) and an eager loop.
The attendee changes it until it is steady; `grade(given, mine)` reads their final run
against the job as given, both from their records:

    diagnosis  `analyse.diagnose` on the final run names no bottleneck the course can fix
               there (`fix`): the device is the limit, or no rung is left
    target     on a CPU the data wait's share below diagnose's INPUT_WAIT (where the job
               as given already waited less: no more than it, beyond noise); on a GPU,
               GPU-Util at diagnose's GPU_BUSY (or no lower than the job as given)
    time       the time to the final validation accuracy of the job as given (less 2
               standard errors of its validation set, for both runs:
               `anatomy.time_to_accuracy`) shorter beyond noise: each time spread as its
               run's steady blocks spread

Each criterion not met says what is wrong and which lesson's fix applies. `given_run`
finds the job as given among the runs recorded beside the final one. No deep-learning
framework here.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ..analyse import alike, anatomy, diagnose, metrics, noise
from ..measure.provenance import DEFAULTS
from ..measure.records import load_runs

SIZES = {
    "full": dict(dataset="folder", images=3000, image_size=32, train_size=2400, test_size=500,
                 batch_size=64, epochs=3, warmup_steps=5,
                 network="wrn16_10",     # the job's network: a wide ResNet no lesson trains
                 cpu_network="tiny",     # without a GPU: cheap enough for the input to show
                 torch_threads=None),    # PyTorch's intra-op threads (None: its default)
    # 150 steps of 8 images a run, small enough that decoding the photos holds the job;
    # with 400 images the steady solution's blocks lasted 0.06 s, and one pause of the
    # machine put a block at ×0.58 of the job as given (a CI failure). 6 warm-up steps: with
    # 2, the solution's first steady block ran at 0.4 of its others (477 against ~1,200
    # samples/s, its steps 3-30 still warming up) and spread the race to "within noise"
    "smoke": dict(dataset="folder", images=1500, image_size=16, train_size=1200, test_size=64,
                  batch_size=8, epochs=1, warmup_steps=6, network="tiny", cpu_network="tiny",
                  torch_threads=1),
    # the GPU check (GPU_COURSE_SIZE=check): lesson 09's check folder; three epochs of 12
    # steps leave 31 steady ones, enough for diagnose to rule
    "check": dict(images=1000, train_size=800, test_size=200),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("cpu_network", "images", "network", "torch_threads")
# what the job is, which the attendee keeps: its track, network and data, and the machine
JOB = ("engine", "model", "dataset", "data_dir", "train_size", "test_size", "image_size",
       "augment", alike.Aspect.MACHINE.value)
# how the job as given loads and runs: the Experiment's own defaults, one worker and all
GIVEN = {k: DEFAULTS[k] for k in ("num_workers", "data_format", "data_on_gpu", "graph",
                                  "dtype", "mock")}
LESSONS = {"02": "DataLoader workers", "03": "a graph: hybridize or torch.compile",
           "04": "lower precision", "05": "a larger batch", "06": "learning-rate schedules",
           "07": "more GPUs", "09": "the input pipeline", "10": "diagnose",
           "13": "sync points"}
# the lesson whose change each of diagnose's rungs is
RUNG_LESSON = {"workers": "02", "pre-processing": "09", "packed format": "09",
               "in memory": "09", "data on GPU": "09", "hybridize/compile": "03",
               "lower precision": "04", "larger batch": "05", "more GPUs": "07"}
# how each track reads the loss on the host every step
SYNC_CALL = {"pytorch": "loss.item()", "gluon": "loss.asnumpy()"}


class Criterion(StrEnum):
    DIAGNOSIS = "diagnosis"
    TARGET = "target"
    TIME = "time to target"


@dataclass(frozen=True)
class Mark:
    """One criterion's outcome: met or not, the sentence that says why (with its numbers;
    when not met, what is wrong and which lesson's fix applies), and whether an unmet one
    rests on what the machine measured (a verdict from timings, a share, a race), which
    the same job on a machine that other programs load can read otherwise."""

    criterion: Criterion
    met: bool
    says: str
    measured: bool = False


def lesson(number: str) -> str:
    return f"lesson {number} ({LESSONS[number]})"


# -- the job as given ---------------------------------------------------------------------------
def is_given(run) -> bool:
    """Whether `run` loaded and ran as the job is given (GIVEN's settings; a record that
    lacks one had the Experiment's default)."""
    return all(_value(run, k) == v for k, v in GIVEN.items())


def job_differences(a, b) -> dict:
    """{aspect: (a's, b's)} for what of the job itself (JOB) runs a and b differ in (a
    machine only where both recorded it)."""
    pairs = {k: (alike.value(a, k), alike.value(b, k)) for k in JOB}
    return {k: (x, y) for k, (x, y) in pairs.items() if x != y
            and not (k == alike.Aspect.MACHINE and None in (x, y))}


def given_run(run, runs=None):
    """The job as given that `run` is graded against: the earliest finished run recorded
    beside it (in its runs folder, or among `runs`) that loaded and ran as the job is
    given and is the same job (JOB); None when there is none."""
    if runs is None:
        runs = load_runs(Path(run.path).parent)
    return next((r for r in runs if metrics.status(r) == "finished" and is_given(r)
                 and not job_differences(r, run)), None)


def _value(run, setting: str):
    found = alike.value(run, setting)
    return DEFAULTS[setting] if found is None else found


# -- the grading ----------------------------------------------------------------------------------
def grade(given, mine) -> list[Mark]:
    """The three criteria (Criterion), each a Mark, for the final run `mine` against the
    job as given `given`; both finished runs of the same job."""
    d = diagnose.diagnose(mine)
    return [diagnosis_mark(d, mine), target_mark(given, mine, d), time_mark(given, mine)]


def fix(d: diagnose.Diagnosis, run) -> str | None:
    """The lesson whose change answers what diagnosis `d` of `run` names, where the course
    can fix it on that machine; None where the device is the limit or no rung is left:

    input-bound: every input rung but more cores than the machine has (more workers once
        they are as many as diagnose advises, or for data already on the device; data on a
        GPU without one);
    on a CPU, compute- and overhead-bound: the CPU both computes and dispatches the
        steps, so either way the device holds them;
    on a GPU, compute-bound: the GPU is the limit; overhead-bound: a graph (eager to
        hybrid to static) and a larger batch up to diagnose's LARGE_BATCH."""
    gpu = metrics.on_gpu(run)
    if d.verdict == "input-bound":
        if d.next_rung == "workers" and (_value(run, "data_on_gpu") or diagnose.workers_advised(
                run.config, d.numbers) is None):   # no loader to give workers, or no cores
            return None
        if d.next_rung == "data on GPU" and not gpu:
            return None
        return RUNG_LESSON[d.next_rung]
    if not gpu or d.verdict == "compute-bound":
        return None
    if d.next_rung == "hybridize/compile":
        return RUNG_LESSON[d.next_rung]
    if d.next_rung == "larger batch" and int(_value(run, "batch_size")) < diagnose.LARGE_BATCH:
        return RUNG_LESSON[d.next_rung]
    return None


def diagnosis_mark(d: diagnose.Diagnosis, run) -> Mark:
    """Met when diagnose rules and names nothing the course can fix on this machine."""
    head = f"diagnose calls '{run.name}' {d.verdict}"
    if d.verdict == diagnose.UNRELIABLE:
        why = "; ".join(diagnose.unreliable(d.numbers, str(_value(run, "mock"))))
        return Mark(Criterion.DIAGNOSIS, False,
                    f"{head}: it cannot rule ({why}). Give the run more steady steps (more "
                    f"epochs or images) on a machine nothing else uses: {lesson('10')}.",
                    measured=True)
    number = fix(d, run)
    if number is not None:
        return Mark(Criterion.DIAGNOSIS, False,
                    f"{head}: the next rung, {d.next_rung} ({d.advice}), is {lesson(number)}, "
                    "and this run has not taken it.", measured=True)
    if d.verdict == "input-bound":
        why = (f"its next rung, {d.next_rung}, asks more of this machine than it has "
               f"({d.advice}): no rung of the course's is left")
    elif not metrics.on_gpu(run):
        why = ("without a GPU the CPU both computes and dispatches the steps: the device is "
               "the limit, no longer the input")
    elif d.verdict == "compute-bound":
        why = "the GPU is the limit"
    else:
        why = f"no rung of the course's is left (next: {d.next_rung}, {d.advice})"
    further = (f" Further speed, not asked for: {d.next_rung}, {d.advice}."
               if d.verdict == "compute-bound" and d.next_rung else "")
    return Mark(Criterion.DIAGNOSIS, True, f"{head}: {why}.{further}")


def target_mark(given, mine, d: diagnose.Diagnosis) -> Mark:
    """The data wait's share on a CPU, GPU-Util on a GPU: the target that the device the
    final run trained on calls for."""
    return (_util_mark if metrics.on_gpu(mine) else _wait_mark)(given, mine, d)


def _wait_mark(given, mine, d) -> Mark:
    xs, ys = metrics.wait_blocks(given), metrics.wait_blocks(mine)
    share, before = metrics.data_wait_share(mine), metrics.data_wait_share(given)
    if not ys:
        return Mark(Criterion.TARGET, False,
                    f"'{mine.name}' has too few steady steps to measure its data wait in "
                    f"{noise.BLOCKS} blocks ({metrics.MIN_STEADY_STEPS} a run): train on more "
                    "images or epochs.")
    said = (f"data wait {share:.0%} of the steady step time (blocks {min(ys):.0%}–{max(ys):.0%}) "
            f"against {before:.0%} as given, on a CPU")
    if before >= diagnose.INPUT_WAIT or not xs:
        goal = (f"below {diagnose.INPUT_WAIT:.0%}, the share from which diagnose calls the "
                "loader the limit")
        met = share < diagnose.INPUT_WAIT
    else:   # the job as given already waited less: it is the bar, within its noise
        goal = f"no more than the job as given (its blocks up to {max(xs):.0%})"
        met = min(ys) <= max(xs)
    if met:
        return Mark(Criterion.TARGET, True, f"{said}: the target, {goal}, is met.")
    fixes = []
    if diagnose.workers_advised(mine.config, d.numbers) is not None:
        fixes.append(f"more loader workers, {lesson('02')}")
    if _value(mine, "data_format") != "memory":
        fixes.append(f"the images decoded once (pre-resized, packed or in memory), {lesson('09')}")
    return Mark(Criterion.TARGET, False,
                f"{said}: the target is {goal}. The loop still waits for the loader: "
                + ("; ".join(fixes) if fixes else "its cores are all busy, so a cheaper "
                   f"pipeline ({lesson('09')}) or a machine with more cores") + ".",
                measured=True)


def _util_mark(given, mine, d) -> Mark:
    util, before = metrics.gpu_util(mine), metrics.gpu_util(given)
    if math.isnan(util):
        return Mark(Criterion.TARGET, False,
                    f"no GPU-Util was recorded for '{mine.name}' (NVML read none): the target "
                    "cannot be judged; run where the course's monitor reads the GPU.")
    goal_value = diagnose.GPU_BUSY if not before >= diagnose.GPU_BUSY else before
    goal = (f"{goal_value:.0f}%, " + ("the lecture's share of a GPU kept busy (diagnose's "
                                      "GPU_BUSY)" if goal_value == diagnose.GPU_BUSY
                                      else "what the job as given already had"))
    said = (f"GPU-Util {util:.0f}% while training steadily, against {before:.0f}% as given; "
            f"the target is {goal}")
    if util >= goal_value:
        return Mark(Criterion.TARGET, True, f"{said}: met.")
    held = anatomy.anatomy(mine)
    if held.bound == anatomy.Bound.DATA:
        what = (f"the GPU waits for data ({held.data_wait_ms:.1f} of {held.step_ms:.1f} ms a "
                f"step): more loader workers, {lesson('02')}; the images decoded once or held "
                f"on the GPU, {lesson('09')}")
    elif held.bound == anatomy.Bound.HOST:
        what = ("the GPU idles between kernels while the host issues them: no read of the "
                f"loss in every step ({SYNC_CALL.get(str(_value(mine, 'engine')), 'a sync')}), "
                f"{lesson('13')}; a graph, {lesson('03')}; a larger batch, {lesson('05')}")
    else:
        what = f"the step's anatomy cannot say why ({held.bound})"
    return Mark(Criterion.TARGET, False, f"{said}: not met: {what}.", measured=True)


def time_mark(given, mine) -> Mark:
    """Met when the final run reaches the final validation accuracy of the job as given
    (less 2 standard errors) in a shorter training time, beyond both runs' noise."""
    acc, images = metrics.val_acc(given), int(given.config.get("test_size") or 0)
    goal = acc - 2 * noise.accuracy_se(acc, images)
    head = (f"the target accuracy is {goal:.1%}: the final validation accuracy of the job as "
            f"given, {acc:.1%}, less 2 standard errors on its {images:,} validation images")
    if Path(mine.path) == Path(given.path):
        return Mark(Criterion.TIME, False,
                    f"'{mine.name}' is the job as given: the race is against it. Change the "
                    "job at the lines marked # >>> and run it again.")
    t_given, t_mine = (anatomy.time_to_accuracy(r, goal) for r in (given, mine))
    chance = noise.at_chance(given)
    after = (" The job as given ended within noise of chance: the race is to the end of its "
             "first epoch, not to an accuracy that tells; train more epochs for one."
             if chance else "")
    if math.isnan(t_mine):
        return Mark(Criterion.TIME, False,
                    f"{head}; '{mine.name}' never reached it (its final val acc "
                    f"{metrics.val_acc(mine):.1%} after {len(mine.epochs)} epochs). A larger "
                    f"batch learns less per epoch: scale its learning rate with a warm-up "
                    f"({lesson('05')}, {lesson('06')}), or train more epochs.{after}")
    v = noise.compare_samples(_race_spread(given, t_given), _race_spread(mine, t_mine),
                              f"{noise.BLOCKS} blocks of steady steps", 1 / t_given, 1 / t_mine)
    race = (f"{head}; '{mine.name}' reached it after {t_mine:.1f} s of training, the job as "
            f"given after {t_given:.1f} s: {noise.sentence(v)}")
    if v.kind == noise.Kind.FASTER:
        return Mark(Criterion.TIME, True, f"{race}.{after}")
    raced = {noise.Kind.SLOWER: ("what the changes cost (a compiler's first steps, a larger "
                                 "batch's extra epochs) is not paid back"),
             noise.Kind.WITHIN_NOISE: "not shorter beyond the runs' noise"}
    why = raced.get(v.kind, "too few steady steps to tell: train on more images or epochs")
    return Mark(Criterion.TIME, False, f"{race}: {why}.{after}", measured=v.kind in raced)


def _race_spread(run, seconds: float) -> list[float]:
    """The run's speed to the target (1 / its time), spread as its steady blocks spread."""
    rates = metrics.steady_block_rates(run)
    if not rates or not seconds > 0:
        return []
    middle = statistics.median(rates)
    return [rate / middle / seconds for rate in rates]


def load_caveat(given, mine) -> str:
    """A sentence when other programs shared the machine while one run ran and not the
    other (by the records): the race between them is then untested; "" otherwise."""
    load = alike.Aspect.LOAD
    a, b = alike.value(given, load), alike.value(mine, load)
    if a is None or b is None or a == b:
        return ""
    return (f" But the machine was {a} with other programs while the job as given ran and "
            f"{b} while '{mine.name}' ran (by the records): the race is untested; run both "
            "again on a quiet machine to test it.")
