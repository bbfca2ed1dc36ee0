"""Lesson 10: mock components (two ceilings, not rungs) and `analyse.diagnose`'s verdict."""
from __future__ import annotations

from dataclasses import replace

from ..analyse import diagnose
from ..analyse.advice import follow, step_table, table  # noqa: F401  (the notebooks')
from ..show.closing import Closing
from ..show.findings import Compare, Expect, Lesson, Note, Page, judge

SIZES = {
    "full": dict(dataset="folder", images=3000, image_size=32, train_size=2400, test_size=500,
                 batch_size=64, epochs=2, warmup_steps=5, ceiling_steps=100, exercise_size=2400,
                 exercise_batch=64, torch_threads=None),
    "smoke": dict(dataset="folder", images=1800, image_size=32, train_size=1600, test_size=40,
                  batch_size=64, epochs=1, warmup_steps=2, ceiling_steps=24,
                  exercise_size=256, exercise_batch=8,     # 30 steady steps: diagnose rules
                  torch_threads=1),                        # the model's, beside one loader worker
    "check": dict(images=2000, train_size=1600, test_size=200, epochs=1, exercise_size=1600),
}
OWN_SIZES = ("ceiling_steps", "exercise_batch", "exercise_size", "images", "torch_threads")

PAGE = Page.of(__name__)   # the paragraphs: text/l10_mocks.md
LESSON = Lesson(
    compares=(),
    bounds=Compare(varies=("mock",), gpu=Expect.FASTER, cpu=Expect.FASTER,
                   means=PAGE.means("bounds")),
    above_ceiling=PAGE.text("above_ceiling"))
ADVICE = Lesson(
    compares=(Compare(varies=("data_format", "num_workers", "augment"), gpu=Expect.FASTER,
                      cpu=Expect.FASTER, means=PAGE.means("advice")),),
    changes=True,
    notes=(Note("augment", ("standard",), PAGE.text("standard_augmentation")),))


def conclude(runs, advice: diagnose.Diagnosis | None = None) -> Closing:
    """Without `advice`: the ceilings against each other and the run (`LESSON`). With it (the
    diagnosis followed): each other run against the diagnosed one (`ADVICE`)."""
    runs = list(runs)
    if advice is None:
        return judge(LESSON, runs, table(runs))
    if advice.run_name not in (names := [r.name for r in runs]):
        raise ValueError(f"advice is the diagnosis of {advice.run_name!r}, not among the runs: {names}")
    return judge(replace(ADVICE, baseline={"name": advice.run_name}), runs, table(runs))
