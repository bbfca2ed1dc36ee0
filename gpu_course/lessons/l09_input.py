"""Lesson 09: the input pipeline, one change a rung, on a folder of photos; the disk, the page
cache and the sample order. What is said reads each rung's record, never its name."""
from __future__ import annotations

from dataclasses import replace

import pandas as pd

from ..config import PageCache, SampleOrder
from ..data.disk_test import JPEGS_READ, Reads, disk_table, photo_folder, read_speeds  # noqa: F401
from ..show import report
from ..show.closing import Closing
from ..show.findings import Compare, Expect, Lesson, Note, Page, Quote, Where, judge, judge_table
from . import talk

SIZES = {
    "full": dict(dataset="folder", images=3000,       # JPEGs to generate (200-500 px a side)
                 image_size=64, train_size=2400, test_size=500, batch_size=64, epochs=2,
                 warmup_steps=5, ceiling_steps=100, exercise_size=2400, exercise_batch=64,
                 disk_test_mb=512,                      # the disk test's scratch file (MiB)
                 torch_threads=None),
    "smoke": dict(dataset="folder", images=500, image_size=32, train_size=400, test_size=40,
                  batch_size=16, epochs=1, warmup_steps=2, disk_test_mb=32, ceiling_steps=24,
                  exercise_size=192, exercise_batch=8,       # 22 steady steps: a noise verdict
                  torch_threads=1),                          # the model's, beside one loader worker
    "check": dict(images=1000, train_size=800, test_size=200, epochs=1, exercise_size=800,
                  exercise_batch=32),
}
OWN_SIZES = ("ceiling_steps", "disk_test_mb", "exercise_batch", "exercise_size", "images",
             "torch_threads")
ORDERS = tuple(SampleOrder)   # the orders the lesson reads the packed file in
PAGE_CACHES = (PageCache.DROP, PageCache.KEEP)   # cold every epoch, then warm
COLD_AT_MOST = 0.10   # share cached after a drop, at most, for a cold epoch (mapped pages stay)
WARM_AT_LEAST = 0.95  # share cached at an epoch's start, at least, for a warm one


def table(runs) -> pd.DataFrame:
    """The disk test's table (for `Reads`), else the rungs' ladder table, with the share of the
    packed file cached at each epoch's start where recorded."""
    if isinstance(runs, Reads):
        return disk_table(runs)
    runs = list(runs)
    frame, shares = report.ladder_table(runs), [cached_shares(r) for r in runs]
    if any(shares):
        report.put(frame, frame.columns.get_loc("samples_per_sec"), "cached_at_start",
                   [sum(s) / len(s) if s else float("nan") for s in shares])
    return frame


def cached_shares(run) -> list[float]:
    """The share of its file cached at each epoch's start, from its notes; [] where unmeasured."""
    note = (run.meta.get("notes") or {}).get("page_cache") or {}
    return [float(c) for c in note.get("cached_at_epoch_start") or [] if c is not None]


def cache_state(run) -> str:
    """"cold"/"not cold" (dropped), "warm"/"not warm" (kept), "unmeasured" or "" by the shares."""
    shares, drop = cached_shares(run), run.config.get("page_cache") == PageCache.DROP
    if not shares:
        return "unmeasured" if drop else ""
    if drop:
        return "cold" if max(shares) <= COLD_AT_MOST else "not cold"
    return "warm" if min(shares) >= WARM_AT_LEAST else "not warm"


PAGE = Page.of(__name__)   # the paragraphs: text/l09_input.md
RUNGS = Lesson(
    compares=(Compare(varies=("num_workers", "data_format", "data_on_gpu"), gpu=Expect.FASTER,
                      cpu=Expect.FASTER, means=PAGE.means("rungs")),),
    changes=True, fastest=True, diagnose=True, columns=PAGE.means("rungs_columns", str),
    cpu=PAGE.means("no_gpu", str))

CACHE_NOTES = tuple(Note(cache_state, (state,), text, judged=state in ("cold", "warm"))
                    for state, text in PAGE.means("cache_notes", str).items())
CACHED = PAGE.means("cached_columns", str)
PAGE_CACHE = Lesson(
    compares=(Compare(varies=("page_cache",), gpu=Expect.FASTER, cpu=Expect.FASTER,
                      means=PAGE.means("page_cache")),),
    baseline={"page_cache": PageCache.DROP}, notes=CACHE_NOTES, columns=CACHED)
BY_ORDER = Lesson(
    compares=(Compare(varies=("sample_order",), gpu=Expect.FASTER, cpu=Expect.FASTER,
                      accuracy=True, means=PAGE.means("sample_order"),
                      worse=PAGE.text("sample_order_worse")),),
    baseline={"sample_order": SampleOrder.RANDOM}, notes=CACHE_NOTES, columns=CACHED)

DISK = Lesson(
    compares=(),
    columns=PAGE.means("disk_columns", str),
    quotes=(Quote("a disk reads about", talk.LECTURE_DISK_MB_S, "{:,} MB/s"),
            Quote("NVMe about", talk.LECTURE_NVME_MB_S, "{:,} MB/s")),
    source=talk.LECTURE, after=PAGE.text("disk_after"))
UNEVICTED = replace(DISK, after=PAGE.text("unevicted_after"))


def conclude(runs) -> Closing:
    """`DISK` for `Reads`; `PAGE_CACHE` or `BY_ORDER` for runs differing in page_cache or
    sample_order; else `RUNGS`: each rung against the first."""
    if isinstance(runs, Reads):
        return judge_table(DISK if runs.sequential.evicted else UNEVICTED, disk_table(runs),
                           ("", Where.GPU))
    runs = list(runs)
    varied = [k for k in ("page_cache", "sample_order")
              if len({str(r.config.get(k)) for r in runs}) > 1]
    lesson = {"page_cache": PAGE_CACHE, "sample_order": BY_ORDER}.get(next(iter(varied), ""), RUNGS)
    return judge(lesson, runs, table(runs))
