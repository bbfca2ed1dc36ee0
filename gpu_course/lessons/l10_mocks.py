"""Lesson 10: mock components and an automatic diagnosis.

A mock trainer (batches fetched and dropped) measures the input pipeline alone, a mock
loader (one batch kept on the device, served forever) the model alone: two ceilings, not
rungs, so their table has no speed-up column and their ratio is read as "the input can
deliver so much of what the model consumes", never as a slow-down. `gpu_course.analyse.diagnose`
turns a run and its ceilings into a verdict and the next rung; `follow` applies that rung
to the experiment, and the closing judges against the runs' noise whether it helped.
Lesson 09 reads its first rung's ceilings with this module's table and sentences.
"""
from __future__ import annotations

import math

import pandas as pd

from ..analyse import alike, diagnose, metrics, noise
from ..show.closing import Closing
from .l01_naive import CEILING_FREE

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
# the rungs of the diagnosis that a data format answers, and that format
FORMAT_OF = {"pre-processing": "preresized", "packed format": "packed", "in memory": "memory"}
RULE = "the lecture's rule (the I/O rate must exceed the training rate)"
# config keys that never change what a run measured


# -- the table -------------------------------------------------------------------------------
def table(runs) -> pd.DataFrame:
    """One row per run, mock ceilings included, and what `diagnose` makes of it (its
    ceilings found next to it): samples/s with its blocks' spread, data wait, CPU (and GPU)
    load, validation accuracy, the verdict and the next rung. No speed-up column: a ceiling
    bounds a run, it is not a rung above it."""
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
                     "next_rung": d.next_rung if d else ""})
    frame = pd.DataFrame(rows)
    if frame["gpu_util"].isna().all():  # no GPU: nothing to show
        frame = frame.drop(columns="gpu_util")
    return frame


def _diagnosis(run) -> diagnose.Diagnosis | None:
    """The run's diagnosis, its ceilings found next to it; None for a run that finished
    no epoch (nothing to diagnose)."""
    return diagnose.diagnose(run) if len(run.epochs) else None


def step_table(times) -> pd.DataFrame:
    """The hand-timed steps of the lecture's loop, (t1, t2, t3) each: t2 - t1 waiting for
    the batch, t3 - t2 computing, in milliseconds; and their means without the first step
    (the loader's workers start during it)."""
    rows = [{"step": f"step {i + 1}", "wait_ms": 1000 * (t2 - t1), "compute_ms": 1000 * (t3 - t2)}
            for i, (t1, t2, t3) in enumerate(times)]
    if len(rows) > 1:
        later = rows[1:]
        rows.append({"step": f"mean of steps 2–{len(rows)}",
                     "wait_ms": sum(r["wait_ms"] for r in later) / len(later),
                     "compute_ms": sum(r["compute_ms"] for r in later) / len(later)})
    return pd.DataFrame(rows)


# -- the closing -------------------------------------------------------------------------------
def conclude(runs, advice: diagnose.Diagnosis | None = None) -> Closing:
    """Without `advice`: each run's two ceilings read against each other and against the
    run. With `advice` (the diagnosis that was followed): whether following it helped, for
    each run that is not the diagnosed one nor a ceiling, judged against the runs' noise."""
    runs = list(runs)
    say = Closing(table(runs), runs)
    if advice is None:
        for run in runs:
            if not is_mock(run):
                ceilings(say, run, runs)
    else:
        before = next((r for r in runs if r.name == advice.run_name), None)
        if before is None:
            raise ValueError(f"advice is the diagnosis of {advice.run_name!r}, which is not "
                             f"among the runs: {[r.name for r in runs]}")
        for after in runs:
            if after is not before and not is_mock(after):
                outcome(say, advice, before, after)
    shared(say, runs)
    return say


def ceilings(say: Closing, run, runs) -> None:
    """The two ceilings of `run` found among `runs`, against each other (the lecture's
    rule) and against the run (which cannot beat either)."""
    compute, feed = diagnose.find_ceilings(run, runs)
    if compute is None or feed is None:
        return
    # the input alone against the model alone: ceilings differ in their mock by design
    verdict = say.compare(compute, feed, varies=CEILING_FREE)
    where = {"faster": f"above it beyond both ranges: {RULE} is met.",
             "slower": f"below it beyond both ranges: {RULE} is broken; the input cannot "
                       "keep up with the model.",
             "within noise": f"within both ranges of it: {RULE} is neither met nor broken "
                             "beyond noise."}.get(verdict.kind, noise.no_verdict(verdict) + ".")
    say(f"'{run.name}' trained at {say.cell(run, 'samples_per_sec')} samples/s. Alone, the "
        f"input pipeline ('{feed.name}') delivers {say.cell(feed, 'samples_per_sec')} samples/s "
        f"({_spread(say, feed)} over its blocks of steps) and the model ('{compute.name}') "
        f"consumes {say.cell(compute, 'samples_per_sec')} ({_spread(say, compute)}): the input "
        f"ceiling is {say.ratio('samples_per_sec', compute, feed)} the compute ceiling, {where}")
    shares = {kind: metrics.samples_per_sec(run) / metrics.samples_per_sec(c)
              for kind, c in (("input", feed), ("compute", compute))}
    line = (f"'{run.name}' reaches {say.ratio('samples_per_sec', feed, run, percent=True)} of "
            f"its input ceiling and {say.ratio('samples_per_sec', compute, run, percent=True)} "
            "of its compute ceiling")
    above = [kind for kind, s in shares.items() if s > diagnose.ABOVE_CEILING]
    if above:
        line += (f": above its {' and '.join(above)} ceiling, which it cannot beat, so one of "
                 "the two is mismeasured (a ceiling over few steps, or a busier machine while "
                 "one of them ran); the diagnosis will not rule on it.")
    else:
        line += "."
    say(line)


def outcome(say: Closing, advice: diagnose.Diagnosis, before, after) -> None:
    """Whether `after` (the diagnosis `advice` of `before` followed, or for an unreliable
    diagnosis the same configuration measured again) is faster, against the two runs' noise;
    the sentence names what differs between them."""
    verdict = say.compare(before, after, varies=changed(before, after))  # the head names them
    head = f"'{after.name}' against '{before.name}' ({changes(say, before, after)}): {verdict}."
    if advice.verdict == diagnose.UNRELIABLE:
        tail = ("That was the same configuration measured again, as the diagnosis asked: "
                + ("the two runs agree within their noise." if verdict.kind == noise.Kind.WITHIN_NOISE
                   else "the two runs disagree beyond their noise, so this machine is not "
                   "steady enough to rule." if verdict.is_effect else
                   f"no verdict: {noise.no_verdict(verdict)}."))
    else:
        # the lesson takes no compute rung: a cheaper augmentation stands in for one
        stand_in = (before.config.get("augment") != after.config.get("augment")
                    and advice.next_rung != "workers")
        change = (f"The change (a cheaper augmentation standing in for '{advice.next_rung}', "
                  "a compute rung this lesson does not take)" if stand_in
                  else f"The advice ('{advice.next_rung}')")
        tail = {"faster": f"{change} helped, beyond the runs' noise.",
                "slower": f"{change} made it slower here, beyond the runs' noise: it did not "
                          "lift the limit on this machine; the new run's diagnosis says what "
                          "holds it.",
                }.get(verdict.kind, f"Whether {change[0].lower()}{change[1:]} helped is not "
                                    "shown: " + (noise.no_verdict(verdict) or "the difference "
                                                 "is within the runs' noise") + "; longer "
                                    "runs (more epochs) would tell.")
    say(f"{head} {tail}")


def shared(say: Closing, runs) -> None:
    """A sentence naming the runs during which another program used the machine."""
    busy = [r.name for r in runs if metrics.machine_load(r)["shared"]]
    if busy:
        say(f"Another program shared the machine during {', '.join(repr(n) for n in busy)} "
            "(the machine busier than the run's own use): their numbers are pessimistic and "
            "noisier, and a comparison with them says as much about the machine as about the "
            "change.")


# -- following the advice ----------------------------------------------------------------------
def follow(advice: diagnose.Diagnosis, cfg):
    """`cfg` with the diagnosis's next rung applied, renamed for it: the same configuration
    measured again (an unreliable diagnosis), a pre-processed data format, more loader
    workers where cores are free, or (a compute rung, which this lesson does not cover) the
    cheaper standard augmentation."""
    if advice.verdict == diagnose.UNRELIABLE:
        return cfg.replace(name="measured again")
    if advice.next_rung in FORMAT_OF:
        return cfg.replace(name=f"after the advice: {advice.next_rung}",
                           data_format=FORMAT_OF[advice.next_rung])
    n = advice.numbers
    cores = n.get("cpu_count", math.nan)
    recommended = max(2, int(cores) - 3) if cores == cores else 2   # the talk's cpu_count() - 3
    cpu_free = not n.get("cpu_percent", math.nan) >= diagnose.CPU_SATURATED
    if advice.next_rung == "workers" and cfg.num_workers < recommended and cpu_free:
        return cfg.replace(name=f"after the advice: {recommended} workers",
                           num_workers=recommended)
    return cfg.replace(name="after the advice: standard augmentation",
                       augment="standard")


# -- helpers both lessons 09 and 10 use --------------------------------------------------------
def is_mock(run) -> bool:
    """Whether the run is a ceiling (mock="loader" or "trainer"), not a rung."""
    return run.config.get("mock", "none") != "none"


def changes(say: Closing, a, b) -> str:
    """What differs between two runs' configurations (the name aside), each value cited
    as the setting it is: "num_workers 1 → 2", or "the same configuration"."""
    diff = changed(a, b)
    if not diff:
        return "the same configuration"
    return ", ".join(f"{k} {say.setting(k, a.config.get(k))} → {say.setting(k, b.config.get(k))}"
                     for k in diff)


def changed(a, b) -> list[str]:
    """The settings whose values differ between two runs as they ran (`alike.settings`),
    sorted: what a comparison of the two names."""
    return sorted(alike.settings(a, b))


def _spread(say: Closing, run) -> str:
    """The run's slowest–fastest block samples/s, as the table's min–max column writes it."""
    return f"{say.cell(run, 'samples_per_sec_min')}–{say.cell(run, 'samples_per_sec_max')}"
