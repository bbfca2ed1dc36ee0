"""Lesson 04: 16-bit arithmetic, `net.cast('float16')` + `multi_precision` (Gluon) /
`torch.autocast` + `GradScaler`, bfloat16, channels_last and TF32 (PyTorch).

Each precision is trained `repeats` times, interleaved, and judged against float32 (`LESSON`).
A variant is what its record says ran (float16 runs as float32 on a Gluon CPU, as bfloat16 on
a PyTorch one): a dtype that did not run is never credited.
"""
from __future__ import annotations

from ..analyse.precision import MASTER_COPY, SIXTEEN_BITS, TF32, asked, table  # noqa: F401
from ..env import cpu
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
AT_CHANCE = ("Both accuracies are within noise of chance: neither precision is credited or "
             "blamed; full size shows what 16 bits do to it.")
THIS_CPU = ("The CPU's own verdict, not a GPU's: whether 16 bits pay on a CPU turns on its "
            "bfloat16 instructions (below).")
LESSON = Lesson(
    compares=(
        Compare(varies=("channels_last",), gpu=Expect.FASTER, cpu=Expect.SAME,
                means={Outcome.EXPECTED: {Where.GPU: "Tensor cores read channels_last (NHWC) "
                                                     "directly; in NCHW each 16-bit convolution "
                                                     "first transposes its input."},
                       Outcome.NONE: "The step's time is not in the convolutions' transposes.",
                       Outcome.OPPOSITE: {Where.GPU: "The layout slowed the step: check that "
                                                     "the weights and every batch are "
                                                     "channels_last, or each layer converts.",
                                          Where.CPU: "The layout changed this CPU's speed: its "
                                                     "convolution library copies the other "
                                                     "layout into the one it prefers."}}),
        Compare(varies=(TF32,), gpu=Expect.FASTER,
                means={Outcome.EXPECTED: "TF32 runs float32's convolutions on tensor cores with "
                                         "a shorter mantissa: float32's code, much of 16 bits' "
                                         "speed.",
                       Outcome.NONE: "The step's time is not in its float32 convolutions (see "
                                     "what held it back)."}),
        Compare(varies=(MASTER_COPY,), gpu=Expect.SAME, cpu=Expect.SAME, gains=Gain.HIGHER,
                means={},
                gained={Outcome.EXPECTED: "The float32 master copy kept the small updates that "
                                          "float16 weights round away.",
                        Outcome.NONE: "The updates float16 rounds away add up over longer "
                                      "training than this.",
                        Outcome.CANNOT_JUDGE: AT_CHANCE}),
        Compare(varies=("dtype", "channels_last", MASTER_COPY), gpu=Expect.FASTER,
                cpu=Expect.SAME, gains=Gain.SAME,
                means={Outcome.EXPECTED: {Where.GPU: "Tensor cores multiply 16-bit numbers "
                                                     "several times faster than float32 ones, "
                                                     "and half the bytes cross memory."},
                       Outcome.NONE: {Where.GPU: "The step's time is elsewhere: its input, or "
                                                 "kernels too small to keep tensor cores busy "
                                                 "(a larger batch)."},
                       Outcome.OPPOSITE: {Where.GPU: "A slow-down: check that the GPU has tensor "
                                                     "cores (Volta or newer, bfloat16 from "
                                                     "Ampere) and that the input keeps up "
                                                     "(lessons 02 and 09).",
                                          Where.CPU: THIS_CPU}},
                gained={Outcome.OPPOSITE: "16 bits cost accuracy: float16 without loss scaling "
                                          "loses its smallest gradients (the first cell), and "
                                          "without a master copy rounds small updates away.",
                        Outcome.CANNOT_JUDGE: AT_CHANCE}),
    ),
    baseline={"dtype": "float32"},
    ran=(TF32, MASTER_COPY),
    pairs=("channels_last", MASTER_COPY),
    requires=(Requires(cpu.Capability.BFLOAT16_INSTRUCTIONS, "dtype", ("bfloat16",),
                       has="This CPU has bfloat16 instructions, so it can pay here:",
                       lacks="This CPU has no bfloat16 instructions, so expect a cost, not a "
                             "gain:"),),
    cpu={"pytorch": "No GPU here: TF32 needs an Ampere or newer GPU, and what tensor cores add "
                    "to 16 bits needs one to show; the talk's figures below are a GPU's.",
         "gluon": "No GPU here: float16's speed-up and the master copy's accuracy need tensor "
                  "cores (Volta and newer); the talk's figures below are one's."},
    quotes=(Quote("float16", talk.FLOAT16_SAMPLES_PER_SEC, "{:,} samples/s"),
            Quote("float32", talk.FLOAT32_SAMPLES_PER_SEC, "{:,}"),
            Quote("a speed-up of", talk.FLOAT16_SAMPLES_PER_SEC / talk.FLOAT32_SAMPLES_PER_SEC,
                  "×{:.1f}")),
    hardware=talk.HARDWARE,
)


def conclude(runs) -> Closing:
    """Each precision's repeats against float32's, in speed and accuracy (`LESSON`)."""
    runs = list(runs)
    return judge(LESSON, runs, table(runs) if runs else None)
