"""Lesson 04: 16-bit arithmetic, each precision against float32 as its record says it ran."""
from __future__ import annotations

from ..analyse.precision import MASTER_COPY, SIXTEEN_BITS, TF32, asked, table  # noqa: F401
from ..env import cpu
from ..show.closing import Closing
from ..show.findings import Compare, Expect, Gain, Lesson, Page, Quote, Requires, judge
from . import talk, workers

SIZES = {
    "full": dict(model="resnet20", train_size=50_000, test_size=10_000, epochs=3, warmup_steps=10,
                 num_workers=workers(), torch_threads=None,
                 repeats=2,                    # each precision trained this many times, interleaved
                 exercise_size=20_480,         # 30 steady steps an epoch
                 exercise_batch=512),          # large enough for 16 bits to show on a GPU
    # small enough for the repeats to fit CI's minute on 2 cores (bfloat16 is slow on a CPU)
    "smoke": dict(model="tiny", train_size=384, test_size=256, epochs=1, warmup_steps=2,
                  num_workers=0, repeats=2, torch_threads=1,
                  exercise_size=192, exercise_batch=8),    # 22 steady steps: a noise verdict
    "check": dict(train_size=10_240, test_size=2_048, epochs=2, exercise_size=15_360),
}
OWN_SIZES = ("exercise_batch", "exercise_size", "repeats", "torch_threads")
PAGE = Page.of(__name__)   # the paragraphs: text/l04_precision.md
LESSON = Lesson(
    compares=(
        Compare(varies=("channels_last",), gpu=Expect.FASTER, cpu=Expect.SAME,
                means=PAGE.means("channels_last")),
        Compare(varies=(TF32,), gpu=Expect.FASTER, means=PAGE.means("tf32")),
        Compare(varies=(MASTER_COPY,), gpu=Expect.SAME, cpu=Expect.SAME, gains=Gain.HIGHER,
                means={}, gained=PAGE.means("master_copy_gained")),
        Compare(varies=("dtype", "channels_last", MASTER_COPY), gpu=Expect.FASTER,
                cpu=Expect.SAME, gains=Gain.SAME, means=PAGE.means("sixteen_bits"),
                gained=PAGE.means("sixteen_bits_gained")),
    ),
    baseline={"dtype": "float32"},
    ran=(TF32, MASTER_COPY),
    pairs=("channels_last", MASTER_COPY),
    requires=(Requires(cpu.Capability.BFLOAT16_INSTRUCTIONS, "dtype", ("bfloat16",),
                       **PAGE.means("bfloat16_instructions", str)),),
    cpu=PAGE.means("no_gpu", str),
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
