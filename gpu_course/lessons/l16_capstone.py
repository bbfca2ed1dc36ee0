"""Lesson 16, the capstone: a training job the course did not use, made steady with what the
lessons taught, graded by the course's own tools.

The job (the notebook's exercise cell) is a network no lesson trains on lesson 09's loose
JPEGs, one loader worker, float32, the loss read every step and an eager loop. `grade(given,
mine)` reads the final run against the job as given, from their records, on three criteria:
diagnose names nothing the course can fix there; the data wait (CPU) or GPU-Util (GPU) meets
diagnose's bar or the given job's; and the given job's final accuracy (less 2 standard
errors) is reached sooner beyond noise. An unmet one says which lesson's fix applies.
"""
from __future__ import annotations

from ..analyse.capstone import (GIVEN, JOB, LESSONS, Criterion, Mark, fix,  # noqa: F401
                                given_run, grade, is_given, job_differences)

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
