"""Lesson 01: the naive baseline, and the two ceilings that bound it.

The run is trained as a first script writes it (batch 64, one loader worker, float32, op
by op from Python). Two short runs of the same experiment bound it from both sides:
mock="trainer" fetches batches and drops them (the input alone: how fast the loader can
deliver) and mock="loader" trains on one batch kept on the device (the model alone). A run
cannot beat the lower of the two. The table gives the ceilings no speed-up (they bound
the run, they are not rungs), and the closing places the run against the lower ceiling by
their ranges (`noise.compare`: each run's slowest and fastest block of steady steps):

    the ranges overlap                    that ceiling sets the pace
    the run below it, beyond both ranges  neither ceiling holds it: overhead
    the run above ABOVE_CEILING of it     one of the two is mismeasured

It places the run on none of these from fewer than MIN_STEPS steady steps, or against a
ceiling that ran differently in more than its mock (its settings, threads, or a machine
shared with other programs for one and not the other): then it says why.
"""
from __future__ import annotations

import enum
import math

import pandas as pd

from ..analyse import alike, diagnose, metrics, noise
from ..show import report
from ..show.closing import Closing
from . import talk

SIZES = {
    "full": dict(train_size=50_000, test_size=10_000, epochs=3, warmup_steps=5,
                 ceiling_steps=200,    # steps of each ceiling run: 20+ steady ones to bound
                 exercise_size=10_240, exercise_model="resnet20"),   # each exercise run: a fifth of the set
    "smoke": dict(train_size=1024, test_size=256, epochs=1, warmup_steps=2, ceiling_steps=24,
                  exercise_size=1_536, exercise_model="tiny"),   # 22 steady steps: a noise verdict
    # the GPU check (GPU_COURSE_SIZE=check): full settings, a fifth of the images
    "check": dict(train_size=10_240, test_size=2_048, epochs=2, ceiling_steps=100,
                  exercise_size=5_120),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("ceiling_steps", "exercise_model", "exercise_size")
MIN_STEPS = diagnose.MIN_STEPS          # steady steps a run needs before it is ruled on
ABOVE_CEILING = diagnose.ABOVE_CEILING  # a run above this share of a ceiling: one is mismeasured
CEILING_FREE = ("mock", "epochs", "max_steps")  # what a ceiling changes by design
# the machine while a run ran (metrics.machine_load): "not shared" is what the record shows,
# which can miss other programs' load (it grants each loader worker a busy core of its own)
LOAD_WORDS = alike.LOAD_WORDS


class Role(enum.Enum):
    """What a row of the lesson's table is: the run, or one of the ceilings bounding it."""

    RUN = "the run"
    INPUT = "input ceiling"      # mock="trainer": batches fetched and dropped
    COMPUTE = "compute ceiling"  # mock="loader": one batch on the device, served forever


class Place(enum.Enum):
    """Where the run sits against the lower ceiling."""

    AT = "at"            # the ranges overlap: that ceiling sets the pace
    BELOW = "below"      # beyond both ranges: neither ceiling holds it
    ABOVE = "above"      # above ABOVE_CEILING of it: one of the two is mismeasured
    UNJUDGED = "unjudged"  # not measured


MOCKS = {"trainer": Role.INPUT, "loader": Role.COMPUTE}


def role(run) -> Role:
    """The run's role, from the mock its record says it ran with."""
    return MOCKS.get(str(run.config.get("mock") or "none"), Role.RUN)


def shared(run) -> bool:
    """Whether other programs kept the machine busy while the run ran (its record's load)."""
    return bool(metrics.machine_load(run)["shared"])


steady_steps = metrics.steady_steps


def table(runs) -> pd.DataFrame:
    """The run and its ceilings: the ladder table with what each row is, no speed-up for
    a ceiling (nor for the run when it is the only one), the steady steps behind each
    row and the run's step-time percentiles; whether the machine was shared, where any
    run's was."""
    runs = list(runs)
    frame = report.ladder_table(runs)
    roles = [role(r) for r in runs]
    frame.insert(1, "what", [r.value for r in roles])
    if sum(r is Role.RUN for r in roles) > 1:
        frame.loc[[r is not Role.RUN for r in roles], "speedup"] = math.nan
    else:  # one run against its own ceilings: a speed-up would only be ceilings over it
        frame = frame.drop(columns="speedup")
    steadiness = [metrics.steadiness(r) for r in runs]
    frame["steady_steps"] = [s["steady_steps"] for s in steadiness]
    frame["step_p50_ms"] = [1e3 * s["step_p50_s"] for s in steadiness]
    frame["step_p95_ms"] = [1e3 * s["step_p95_s"] for s in steadiness]
    frame["waited_share"] = [s["waited_share"] for s in steadiness]
    if any(shared(r) for r in runs) and alike.Aspect.LOAD not in frame.columns:
        frame[alike.Aspect.LOAD.value] = [LOAD_WORDS[shared(r)] for r in runs]
    return frame


def conclude(runs) -> Closing:
    runs = list(runs)
    by_role = {}
    for run in runs:
        by_role.setdefault(role(run), run)
    if Role.RUN not in by_role:
        raise ValueError(f"runs={[r.name for r in runs]} holds only ceilings (mock runs); "
                         "pass the run they bound as well")
    run = by_role[Role.RUN]
    say = Closing(table(runs), runs, varies=CEILING_FREE)
    say(f"This run trained at {say.cell(run, 'samples_per_sec')} samples/s and spent "
        f"{say.cell(run, 'data_wait_share')} of its steady step time waiting for data.")
    say(f"Its median step took {say.cell(run, 'step_p50_ms')} ms and the slowest (the 95th "
        f"percentile) {say.cell(run, 'step_p95_ms')} ms or more, "
        f"{say.cell(run, 'spikiness')} the median; {say.cell(run, 'waited_share')} of its "
        f"{say.cell(run, 'steady_steps')} steady steps waited for data (more than "
        f"{say.setting('metrics.WAITED', metrics.WAITED, '{:.0%}')} of the step).")
    feed, compute = by_role.get(Role.INPUT), by_role.get(Role.COMPUTE)
    if feed is not None and compute is not None:
        _ceilings(say, run, feed, compute)
    if metrics.on_gpu(run):
        gpus = int(run.config.get("num_gpus") or 1)
        say(f"Mean GPU utilisation while training{f' (over its {gpus} GPUs)' if gpus > 1 else ''}: "
            f"{say.cell(run, 'gpu_util')}; the rest of the time the GPU idled.")
    else:
        cores = (run.meta.get("hardware") or {}).get("cpu_count") or "its"
        say(f"No GPU here: the model computes on the same {cores} CPU cores the loader's "
            "worker needs. On a GPU the model is far faster than one worker can feed it: "
            f"{talk.SOURCE}'s V100 waited for its one worker at "
            f"{say.quote(talk.SOURCE, talk.NAIVE_SAMPLES_PER_SEC, '{:,} samples/s')} and reached "
            f"{say.quote(talk.SOURCE, talk.WORKERS_SAMPLES_PER_SEC, '{:,} samples/s')} once it "
            f"had {talk.WORKERS}.")
    return say


def _ceilings(say: Closing, run, feed, compute) -> None:
    """The two ceilings against each other, then the run against the lower one."""
    workers = int(run.config.get("num_workers") or 0)
    both = say.compare(compute, feed)   # the input alone against the model alone
    few = [c for c in (feed, compute) if steady_steps(c) < MIN_STEPS]
    apart = both.is_effect and not few
    judged = ("too few steady steps to tell whether that is beyond their noise ("
              + ", ".join(f"'{c.name}' {say.cell(c, 'steady_steps')}" for c in few)
              + f", fewer than {say.setting('MIN_STEPS', MIN_STEPS)})" if few else
              "beyond both ceilings' noise" if both.is_effect else
              "within the two ceilings' noise")
    say(f"{workers} loader worker(s) alone delivered {say.cell(feed, 'samples_per_sec')} "
        f"samples/s; the model alone consumed {say.cell(compute, 'samples_per_sec')} "
        f"samples/s: the input can feed {say.ratio('samples_per_sec', compute, feed)} what "
        f"the model takes, {judged}.")
    lower = feed if metrics.samples_per_sec(feed) < metrics.samples_per_sec(compute) else compute
    what = "the input pipeline" if lower is feed else "the computation"
    reached = say.ratio("samples_per_sec", lower, run, percent=True)
    ranges = (f"its min–max {say.cell(run, 'samples_per_sec_min')}–"
              f"{say.cell(run, 'samples_per_sec_max')} samples/s against the ceiling's "
              f"{say.cell(lower, 'samples_per_sec_min')}–{say.cell(lower, 'samples_per_sec_max')}")
    few = [r for r in (run, lower) if steady_steps(r) < MIN_STEPS]
    differ = say.unlike(run, lower)
    if few:
        say(f"This run reached {reached} of the lower ceiling, {what}'s; "
            + ", ".join(f"'{r.name}' has {say.cell(r, 'steady_steps')} steady steps"
                        for r in few)
            + f", fewer than the {say.setting('MIN_STEPS', MIN_STEPS)} a verdict needs: too "
            "few steps to say which ceiling holds it. More steps would tell: a larger "
            "train_size, more epochs or ceiling_steps (gc.sizes(\"01\", ...)).")
        return
    if differ:
        say(f"This run reached {reached} of the lower ceiling, {what}'s, but the two ran "
            f"differently in more than the ceiling's mock: {differ}. "
            "Which ceiling holds the run is not said across that difference: measure both "
            "again alike (on a quiet machine).")
        return
    where = _place(say.compare(lower, run), run, lower)
    if where is Place.ABOVE:
        say(f"This run reached {reached} of the lower ceiling, {what}'s: above it, which a "
            "run cannot beat, so the ceiling or the run was mismeasured (too few steps, "
            "prefetched batches, or a machine busier for one than the other). Neither "
            "number rules here: measure again with more steps.")
    elif where is Place.BELOW:
        why = ("the host issuing the work (Python, kernel launches) or moving the batches"
               if metrics.on_gpu(run) else
               "on a CPU most likely the loader's worker and the model taking turns on the "
               "same cores, which each ceiling had to itself")
        say(f"Neither ceiling holds it: this run reached only {reached} of the lower "
            f"ceiling, {what}'s, {ranges}, below it beyond both ranges. The time goes to "
            f"overhead, work that neither the input alone nor the model alone does: {why}.")
    elif where is Place.AT and apart:
        say(f"So {what} sets the pace: this run reached {reached} of that ceiling, "
            f"{ranges}, within each other's range.")
    elif where is Place.AT:
        say(f"This run reached {reached} of the lower ceiling, {ranges}, within each "
            "other's range; but the two ceilings are not shown apart (above), so neither "
            "is clearly the limit.")
    else:
        say(f"This run reached {reached} of the lower ceiling; the steps to place it "
            "against it were not measured.")


def _place(verdict, run, ceiling) -> Place:
    """Where `run` sits against `ceiling`, from `noise.compare(ceiling, run)`."""
    if metrics.samples_per_sec(run) > ABOVE_CEILING * metrics.samples_per_sec(ceiling):
        return Place.ABOVE
    if verdict.kind == noise.Kind.SLOWER:
        return Place.BELOW
    if verdict.kind == noise.Kind.WITHIN_NOISE:
        return Place.AT
    return Place.UNJUDGED
