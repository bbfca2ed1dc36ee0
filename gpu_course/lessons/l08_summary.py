"""Lesson 08: the newest recorded ladder of the track (`ladder.ladder` walks one when none is
recorded), set beside the talk's and the reference machine's."""
from __future__ import annotations

import dataclasses
import pandas as pd

from ..analyse import alike, metrics
from ..analyse.anatomy import GPU_BUSY, INPUT_WAIT
from ..analyse.regimes import beside_table, network as _model, regimes_table
from ..analyse.summary import (anatomy_table, baseline as _baseline, caption,  # noqa: F401
                               flat as _flat, rungs_of as _rungs)
from ..ladder import (RUNG_SETTINGS, exercise_ladder, ladder,  # noqa: F401
                      latest_ladder)   # the notebooks' and exercise's
from ..rungs import RungName
from ..show import report
from ..show.findings import (Column, Compare, Expect, Lesson, Mark, Note, Page, Quote, Reading,
                             Said, Where, judge, read)
from . import talk

SIZES = {
    # the ladder's sizes (ladder.default_sizes) or --quick's; aot_eager only traces (seconds on a CPU)
    "full": dict(quick=False, ladder_train_size=None, ladder_test_size=None,
                 compile_backend="inductor", ladder_rungs=None,
                 exercise_rungs=None, exercise_size=None,   # exercise 08.1's (None: the ladder's)
                 exercise_epochs=1, exercise_batch=None, exercise_warmup_steps=None,
                 exercise_torch_threads=None),
    # the first four rungs: the summary's code path in a minute
    "smoke": dict(quick=True, ladder_train_size=512, ladder_test_size=256,
                  compile_backend="aot_eager", ladder_rungs=4,
                  # 26 steady steps after 6 of warm-up: a fresh process's first ran 10x slower
                  exercise_rungs=3, exercise_size=1_024, exercise_epochs=1, exercise_batch=32,
                  exercise_warmup_steps=6,
                  # beside two loader workers on CI's 2 cores, a thread a core ran 5x slower
                  exercise_torch_threads=1),
    "check": dict(quick=True, ladder_train_size=10_240, ladder_test_size=2_048,
                  exercise_size=5_120),
}
OWN_SIZES = ("compile_backend", "exercise_batch", "exercise_epochs", "exercise_rungs",
             "exercise_size", "exercise_torch_threads", "exercise_warmup_steps",
             "ladder_rungs", "ladder_test_size", "ladder_train_size", "quick")
TALK_COLUMN = "talk speed-up"
HEAVY_MODEL = "wrn16_10"   # `gpu-course ladder --model wrn16_10`: its step is GPU-bound


def table(runs) -> pd.DataFrame:
    """The ladder table over a run per rung (against 'naive'), with the talk's speed-ups."""
    rungs = _rungs(runs)
    frame = report.ladder_table(rungs, baseline=_baseline(runs))  # + what differs
    frame[TALK_COLUMN] = [f"×{talk.LADDER[r.name] / talk.LADDER[RungName.NAIVE]:.2f}"
                          if r.name in talk.LADDER else "–" for r in rungs]
    return frame


PAGE = Page.of(__name__)   # the paragraphs: text/l08_summary.md
LESSON = Lesson(
    compares=(Compare(varies=RUNG_SETTINGS, gpu=Expect.FASTER, cpu=Expect.SAME,
                      means=PAGE.means("ladder")),),
    notes=(Note("dataset", ("synthetic",), PAGE.text("synthetic_data")),
           Note("dataset", ("folder",), PAGE.text("generated_photos"))),
    about=(Column("sm_active", **PAGE.means("sm_active", str)),),
    cpu=PAGE.text("no_gpu"),
    notices=True, machine=True, source=talk.SOURCE, hardware=f"V100s ({talk.WORKLOAD})",
)
# the data moved to the device, against the rung before it
DATA_ON_GPU = Lesson(
    compares=(Compare(varies=RUNG_SETTINGS, gpu=Expect.FASTER, cpu=Expect.SAME,
                      means=PAGE.means("data_on_gpu")),),
    columns=PAGE.means("data_wait", str))
BESIDE = Reading(key="what", text=(PAGE.text("beside"),))


def conclude(runs, beside=None) -> Said:
    """The fastest rung that ran as the naive one did, against it and beside the talk's; the data
    moved to the GPU; with beside= (the reference's ladder) what the two differ in."""
    runs = list(runs)
    if not runs:
        raise ValueError("runs is empty: no ladder to summarise (run `gpu-course ladder`)")
    rungs, frame = _rungs(runs), table(runs)
    base = rungs[metrics.baseline_index(rungs, _baseline(runs))]
    done = [r for i, r in enumerate(rungs) if frame.status.iloc[i] == "finished"   # and ran
            and frame.samples_per_sec.iloc[i] > 0                                  # as naive did
            and not set(alike.differences(base, r, RUNG_SETTINGS)) - {alike.Aspect.LOAD}] or [base]
    top = max(done, key=metrics.samples_per_sec)
    quotes = (Quote(f"'{top.name}' against '{RungName.NAIVE}'",
                    talk.LADDER[top.name] / talk.LADDER[RungName.NAIVE], "×{:.1f}"),) \
        if top is not base and top.name in talk.LADDER else ()
    said = Said([judge(dataclasses.replace(LESSON, quotes=quotes),
                       [r for r in _flat(runs) if r.name in (base.name, top.name)])])
    moved = [r for r in _flat(runs) if r.name in (RungName.LR_SCHEDULE, RungName.DATA_ON_GPU)]
    if {r.name for r in moved} == {RungName.LR_SCHEDULE, RungName.DATA_ON_GPU}:
        said.append(judge(DATA_ON_GPU, moved))
    if beside:
        said.append(read(BESIDE, beside_table(rungs, _rungs(beside))))
    return said


ANATOMY = Reading(
    key="rung",
    text=(PAGE.text("anatomy"),),
    groups=PAGE.means("anatomy_groups", str),
    marks=(Mark("next rung aimed", ("no",), PAGE.text("not_aimed")),
           Mark("shorter GPU part, host-bound", ("yes",), PAGE.text("shorter_gpu_part"))),
    about=(Column("to_target_s", **PAGE.means("time_to_target", str)),),
    quotes=(Quote("data-bound from a wait for data of", INPUT_WAIT, "{:.0%}"),
            Quote("GPU-bound from kernels running", GPU_BUSY, "{:.0%}")),
    source="the anatomy's bars")


def anatomy(runs):
    """`anatomy_table` shown, then what holds which rungs (`ANATOMY`)."""
    rungs = _rungs(runs)
    return read(ANATOMY, anatomy_table(runs), metrics.engine(rungs[0]),
                Where.GPU if any(metrics.on_gpu(r) for r in rungs) else Where.CPU)


REGIMES = Reading(
    key="rung",
    text=(PAGE.text("regimes"),),
    empty=f"No ladder of the GPU-bound regime shares a rung with this one yet: `gpu-course "
          f"ladder --model {HEAVY_MODEL}` on a GPU records one.")


def regimes(light, heavy):
    """The same ladder on two networks (`regimes_table`), then which fix paid on which
    bottleneck; heavy=[]: how to record one."""
    frame = regimes_table(light, heavy) if light and heavy else None
    models = (_model(light), _model(heavy)) if frame is not None else ()
    return read(dataclasses.replace(
        REGIMES, columns={f"gain beyond noise ({m})": f"On {m}, gains beyond noise"
                          for m in models},
        groups={"paid on": "Where each rung paid beyond noise",
                **{f"aimed ({m})": f"On {m}, whether each gain beyond noise came from a rung "
                                   "aimed at what held the step before it (anatomy.FIXES)"
                   for m in models}}), frame, "pytorch", Where.GPU)
