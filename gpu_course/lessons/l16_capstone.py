"""Lesson 16, the capstone: an unseen job made steady, graded by `analyse.capstone.grade`."""
from __future__ import annotations

from ..analyse.capstone import (GIVEN, JOB, LESSONS, Criterion, Mark, fix,  # noqa: F401
                                given_run, grade, is_given, job_differences)

SIZES = {
    "full": dict(dataset="folder", images=3000, image_size=32, train_size=2400, test_size=500,
                 batch_size=64, epochs=3, warmup_steps=5, torch_threads=None,
                 network="wrn16_10",     # the job's network: a wide ResNet no lesson trains
                 cpu_network="tiny"),    # without a GPU: cheap enough for the input to show
    # 150 steps of 8: with 400 images one pause of the machine failed CI; with 2 warm-up
    # steps the first steady block still warmed up and spread the race to "within noise"
    "smoke": dict(dataset="folder", images=1500, image_size=16, train_size=1200, test_size=64,
                  batch_size=8, epochs=1, warmup_steps=6, network="tiny", cpu_network="tiny",
                  torch_threads=1),
    # three epochs of 12 steps: 31 steady ones, enough for diagnose to rule
    "check": dict(images=1000, train_size=800, test_size=200),
}
OWN_SIZES = ("cpu_network", "images", "network", "torch_threads")
