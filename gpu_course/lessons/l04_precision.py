"""Lesson 04: 16-bit arithmetic, `net.cast('float16')` + `multi_precision` (Gluon) /
`torch.autocast` + `GradScaler`, bfloat16, channels_last and TF32 (PyTorch).

Each precision is trained `repeats` times, interleaved, and every variant is judged
against float32 over those repeats (`LESSON`). What a variant is comes from its record,
not its name: the dtype it asked for and the dtype that ran (float16 runs as float32 on a
Gluon CPU and as bfloat16 on a PyTorch one), its layout, whether TF32 ran and whether the
optimizer kept a float32 master copy. A dtype that did not run is never credited with a
speed-up or an accuracy: the engine says what ran instead.
"""
from __future__ import annotations

import pandas as pd

from ..analyse import alike, metrics
from ..env import cpu
from ..show import report
from ..show.closing import Closing
from ..show.findings import (Compare, Expect, Gain, Lesson, Outcome, Quote, Requires, Where,
                             judge)
from . import talk, workers

SIZES = {
    "full": dict(model="resnet20", train_size=50_000, test_size=10_000, epochs=3, warmup_steps=10,
                 num_workers=workers(),
                 repeats=2,                    # each precision trained this many times, interleaved
                 torch_threads=None,           # PyTorch's intra-op threads (None: its default)
                 exercise_size=20_480,         # images of each exercise run: 30 steady steps an epoch
                 exercise_batch=512),          # large enough for 16 bits to show on a GPU
    # a small network, 6 steps of 64 a run and one in-process loader: the repeats fit CI's
    # minute on 2 cores (bfloat16 is slow on a CPU)
    "smoke": dict(model="tiny", train_size=384, test_size=256, epochs=1, warmup_steps=2,
                  num_workers=0, repeats=2, torch_threads=1,
                  exercise_size=192, exercise_batch=8),    # 22 steady steps: a noise verdict
    "check": dict(train_size=10_240, test_size=2_048, epochs=2, exercise_size=15_360),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("exercise_batch", "exercise_size", "repeats", "torch_threads")
SIXTEEN_BITS = ("float16", "bfloat16")
TF32 = "tf32.convolutions"                     # what ran: float32 convolutions in TF32
MASTER_COPY = "optimizer.multi_precision"      # what ran: float32 master weights (Gluon)


def asked(run, field: str):
    """What the run asked for: the request where it did not run as asked, else what ran."""
    change = metrics.ran_as(run).get(field)
    return change[0] if change else (run.config or {}).get(field)


AT_CHANCE = ("Both accuracies are within noise of chance: neither precision is credited or "
             "blamed for one. Train at full size to see what 16 bits do to it.")
THIS_CPU = ("This is the CPU's own verdict, not a GPU's: a CPU with instructions for bfloat16 "
            "computes in it faster than in float32; one without converts each operator to "
            "float32 and back, and pays for it.")
LESSON = Lesson(
    compares=(
        Compare(varies=("channels_last",), gpu=Expect.FASTER, cpu=Expect.SAME,
                means={Outcome.EXPECTED: {Where.GPU: "Tensor cores read channels_last (NHWC) "
                                                     "directly; in NCHW each 16-bit convolution "
                                                     "first transposes its input."},
                       Outcome.NONE: "The layout made no difference beyond noise here: the "
                                     "step's time is not in the convolutions' transposes.",
                       Outcome.OPPOSITE: {Where.GPU: "The layout slowed the step: check that "
                                                     "the weights and every batch are "
                                                     "channels_last, or each layer converts.",
                                          Where.CPU: "The layout changed this CPU's speed: its "
                                                     "convolution library prefers one layout "
                                                     "and copies the other into it."}}),
        Compare(varies=(TF32,), gpu=Expect.FASTER,
                means={Outcome.EXPECTED: "TF32 runs float32's convolutions on tensor cores with "
                                         "a shorter mantissa: float32's code, much of 16 bits' "
                                         "speed.",
                       Outcome.NONE: "TF32 made no difference beyond noise: the step's time is "
                                     "not in its float32 convolutions (see what held it back)."}),
        Compare(varies=(MASTER_COPY,), gpu=Expect.SAME, cpu=Expect.SAME, gains=Gain.HIGHER,
                means={},
                gained={Outcome.EXPECTED: "The float32 master copy kept the small updates that "
                                          "float16 weights round away: that is the accuracy it "
                                          "keeps.",
                        Outcome.NONE: "The master copy's accuracy is within noise here: the "
                                      "updates float16 rounds away add up over longer training.",
                        Outcome.CANNOT_JUDGE: AT_CHANCE}),
        Compare(varies=("dtype", "channels_last", MASTER_COPY), gpu=Expect.FASTER,
                cpu=Expect.SAME, gains=Gain.SAME,
                means={Outcome.EXPECTED: {Where.GPU: "Tensor cores multiply 16-bit numbers "
                                                     "several times faster than float32 ones, "
                                                     "and half the bytes cross memory."},
                       Outcome.NONE: {Where.GPU: "No difference beyond noise: the step's time "
                                                 "is elsewhere (its input, or kernels too small "
                                                 "to keep tensor cores busy: a larger batch)."},
                       Outcome.OPPOSITE: {Where.GPU: "A slow-down: check that the GPU has tensor "
                                                     "cores (Volta or newer, bfloat16 from "
                                                     "Ampere) and that the input pipeline keeps "
                                                     "up (lessons 02 and 09).",
                                          Where.CPU: THIS_CPU}},
                gained={Outcome.OPPOSITE: "16 bits cost accuracy here beyond noise: float16 "
                                          "without loss scaling loses its smallest gradients "
                                          "(the first cell), and without a master copy rounds "
                                          "small updates away.",
                        Outcome.CANNOT_JUDGE: AT_CHANCE}),
    ),
    baseline={"dtype": "float32"},
    ran=(TF32, MASTER_COPY),
    pairs=("channels_last", MASTER_COPY),
    requires=(Requires(cpu.Capability.BFLOAT16_INSTRUCTIONS, "dtype", ("bfloat16",),
                       has="This CPU has instructions for bfloat16, so it can pay here:",
                       lacks="This CPU has no instructions for bfloat16, so expect it to cost "
                             "here, not to pay:"),),
    cpu={"pytorch": "No GPU here: TF32 needs an Ampere or newer GPU, and what tensor cores add "
                    "to 16 bits needs one to show; the talk's figures below are a GPU's.",
         "gluon": "No GPU here: float16's speed-up and the master copy's accuracy need a GPU "
                  "with tensor cores (Volta and newer); the talk's figures below are one's."},
    quotes=(Quote("float16", talk.FLOAT16_SAMPLES_PER_SEC, "{:,} samples/s"),
            Quote("float32", talk.FLOAT32_SAMPLES_PER_SEC, "{:,}"),
            Quote("a speed-up of", talk.FLOAT16_SAMPLES_PER_SEC / talk.FLOAT32_SAMPLES_PER_SEC,
                  "×{:.1f}")),
    hardware=talk.HARDWARE,
)


def table(runs) -> pd.DataFrame:
    """Every run (each repeat a row) with the dtype that ran and what it changed from the
    first float32 run, as its record says."""
    runs = list(runs)
    base = next((r for r in runs if alike.value(r, "dtype") == "float32"), runs[0])
    frame = report.ladder_table(runs)
    report.put(frame, 1, "dtype", [r.config.get("dtype") for r in runs])
    frame.insert(2, "differs_from_float32", [_differs(base, r) for r in runs])
    return frame


def conclude(runs) -> Closing:
    """Each precision's repeats against float32's, in speed and accuracy (`LESSON`)."""
    runs = list(runs)
    return judge(LESSON, runs, table(runs) if runs else None)


def _differs(base, run) -> str:
    changes = [f"{k} {a} → {b}" for k, (a, b) in alike.settings(base, run).items()]
    names = {TF32: "TF32 convolutions", MASTER_COPY: "master copy"}
    changes += [f"{names[k]} {_ran(base, k)} → {_ran(run, k)}" for k in names
                if _ran(run, k) is not None and _ran(run, k) != _ran(base, k)]
    return "; ".join(changes) or "–"


def _ran(run, name: str):
    value = run.meta.get("ran") or {}
    for part in name.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value
