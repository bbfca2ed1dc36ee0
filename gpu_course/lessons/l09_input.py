"""Lesson 09: the input pipeline, one change a rung, on a folder of photos shaped like
Caltech-256: loose JPEGs with one loader worker, then more; the images resized once, out of
band; packed into one file; the whole set in memory (and on a GPU, in GPU memory). First,
the disk itself: sequential against random reads, cold and warm.

Each rung records its data format (`data_format`), so the table, the sentences and the
diagnosis read what a run read from its record, never from its name. A rung is "the
fastest" only when it beats every other rung beyond their noise. The first rung's two
ceilings (mock trainer, mock loader) are read with lesson 10's (`gc.conclude("10", ...)`).

Deeper, on the packed file (`data.order`): the page cache (every epoch's pages dropped
first, `page_cache="drop"`, against a file kept warm) and the sample order (random,
quasi-random, sequential), samples/s and accuracy judged against noise. The cache's
state is measured (mincore, in the runs' notes), never assumed: a drop the file system
ignores (tmpfs) is said, and no epoch is then called cold.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path

import pandas as pd

from ..config import PageCache, SampleOrder
from ..data import disk, packed
from ..data import folder as image_folder
from ..show import report
from ..show.closing import Closing
from ..show.findings import Compare, Expect, Lesson, Note, Outcome, Quote, Where, judge, judge_table
from . import talk

SIZES = {
    "full": dict(dataset="folder", images=3000,       # JPEGs to generate (200-500 px a side)
                 image_size=64, train_size=2400, test_size=500, batch_size=64, epochs=2,
                 warmup_steps=5,
                 disk_test_mb=512,                      # the disk test's scratch file (MiB)
                 ceiling_steps=100,                     # steps of each ceiling run
                 exercise_size=2400, exercise_batch=64,    # each exercise run
                 torch_threads=None),                   # PyTorch's intra-op threads (None: its default)
    # 25 steps of 16 images a run: enough steady steps for diagnose to rule, and quick
    "smoke": dict(dataset="folder", images=500, image_size=32, train_size=400, test_size=40,
                  batch_size=16, epochs=1, warmup_steps=2, disk_test_mb=32, ceiling_steps=24,
                  exercise_size=192, exercise_batch=8,       # 22 steady steps: a noise verdict
                  torch_threads=1),                          # the model's, beside one loader worker
    "check": dict(images=1000, train_size=800, test_size=200, epochs=1, exercise_size=800,
                  exercise_batch=32),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("ceiling_steps", "disk_test_mb", "exercise_batch", "exercise_size", "images",
             "torch_threads")
JPEGS_READ = 1000   # the data set's own files the disk test reads, at most
ORDERS = tuple(SampleOrder)   # the orders the lesson reads the packed file in
PAGE_CACHES = (PageCache.DROP, PageCache.KEEP)   # cold every epoch, then warm
COLD_AT_MOST = 0.10   # share of the file cached after a drop, at most, for a cold epoch
                      # (pages a process keeps mapped stay: reading one sample in the main
                      # process maps its neighbours, 64 KiB; a few % of a small file)
WARM_AT_LEAST = 0.95  # share cached at an epoch's start, at least, for a warm one


# -- the photos and the disk ------------------------------------------------------------------
def photo_folder(images: int, folder=None) -> Path:
    """The image folder lessons 09 and 10 read: `folder` when given (e.g. Caltech-256's
    256_ObjectCategories), else a generated Caltech-256-shaped one of `images` JPEGs,
    200-500 px a side, in ten class folders (written once, then reused)."""
    if folder:
        return Path(folder)
    return image_folder.generate_folder(
        image_folder.default_folder().with_name(f"caltech256-like-{images}"),
        image_folder.Photos(per_class=images // 10))


@dataclass
class Reads:
    """The disk test: a scratch file read in 1 MiB blocks in file order and at random, in
    32 KiB blocks (one JPEG's size) at random, and warm (from the page cache); then the
    data set's own JPEGs in sorted and in random order. Cold reads empty the page cache of
    the file first (`disk.evict`)."""

    sequential: disk.ReadSpeed
    random: disk.ReadSpeed
    small: disk.ReadSpeed
    warm: disk.ReadSpeed
    jpegs_sorted: disk.ReadSpeed
    jpegs_random: disk.ReadSpeed

    def __iter__(self):
        return (getattr(self, f.name) for f in fields(self))


def read_speeds(root, mb: int) -> Reads:
    """Measure the disk under the image folder `root`: a scratch file of `mb` MiB (written,
    read, deleted) and up to JPEGS_READ of the folder's JPEGs."""
    scratch = packed.prepared_dir(root) / "read-test.bin"
    scratch.parent.mkdir(parents=True, exist_ok=True)
    scratch.write_bytes(os.urandom(mb << 20))
    try:
        files = [disk.read_bandwidth(scratch, "sequential"), disk.read_bandwidth(scratch, "random"),
                 disk.read_bandwidth(scratch, "random", block_size=32 << 10),
                 disk.read_bandwidth(scratch, "sequential", cold=False)]
    finally:
        scratch.unlink()
    index = image_folder.scan_folder(root)
    jpegs = [index.path(i) for i in range(min(len(index), JPEGS_READ))]
    return Reads(*files, disk.read_files(jpegs, "sequential"), disk.read_files(jpegs, "random"))


def disk_table(reads: Reads) -> pd.DataFrame:
    """One row per read: what was read, cold or warm, how much, and how fast."""
    return pd.DataFrame([{"read": f"{r.pattern} ({'cold' if r.evicted else 'warm'})",
                          "MB": r.bytes / disk.MB, "reads": r.reads,
                          "KB a read": r.bytes / 1e3 / r.reads if r.reads else float("nan"),
                          "MB/s": r.mb_per_s} for r in reads])


# -- the table and the closing ---------------------------------------------------------------
def table(runs) -> pd.DataFrame:
    """The disk test's table (for `Reads`), else the rungs' ladder table (speed-up
    against the first rung), with the share of the packed file cached at each epoch's
    start (mean over epochs) where the runs recorded it."""
    if isinstance(runs, Reads):
        return disk_table(runs)
    runs = list(runs)
    frame = report.ladder_table(runs)
    if any(cached_shares(r) for r in runs):
        shares = [cached_shares(r) for r in runs]
        report.put(frame, frame.columns.get_loc("samples_per_sec"), "cached_at_start",
                   [sum(s) / len(s) if s else float("nan") for s in shares])
    return frame


def cached_shares(run) -> list[float]:
    """The share of its packed file the page cache held at each epoch's start, after any
    drop, as the run's notes keep it (`data.order.EpochOrder.note`); [] where unmeasured."""
    note = (run.meta.get("notes") or {}).get("page_cache") or {}
    return [float(c) for c in note.get("cached_at_epoch_start") or [] if c is not None]


def cache_state(run) -> str:
    """What the page cache held of the run's file at its epochs' start, by the measured
    shares: "cold" or "not cold" (dropped first), "warm" or "not warm" (kept), "unmeasured"
    (dropped, no share measured), "" (kept, none measured)."""
    shares, drop = cached_shares(run), run.config.get("page_cache") == PageCache.DROP
    if not shares:
        return "unmeasured" if drop else ""
    if drop:
        return "cold" if max(shares) <= COLD_AT_MOST else "not cold"
    return "warm" if min(shares) >= WARM_AT_LEAST else "not warm"


# -- what the lesson compares, and what each outcome means ----------------------------------
NO_GPU = ("No GPU here: the network computes on the same cores that decode, so a cheaper input "
          "pays only while the input is the slow part (the diagnosis below says which); on a GPU "
          "the computation moves off the CPU.")
RUNGS = Lesson(
    compares=(Compare(varies=("num_workers", "data_format", "data_on_gpu"), gpu=Expect.FASTER,
                      cpu=Expect.FASTER, means={
        Outcome.EXPECTED: "A rung that beat the first beyond noise removed work the loader did "
                          "for every sample (a worker's share of it, the resize, the decode, the "
                          "file opens) while the input was the slow part.",
        Outcome.NONE: "A rung within noise of the first saved nothing the noise can show: the "
                      "input was not the slow part there, or the change saved less than the "
                      "runs' noise; the diagnosis below says what held the first rung.",
        Outcome.OPPOSITE: "A rung slower than the first beyond noise cost more on this machine "
                          "than it saved; gpu-course diagnose RUN says what holds it."}),),
    changes=True, fastest=True, diagnose=True,
    columns={"data_wait_share": "Share of its steady time each rung waited for data"},
    cpu={"pytorch": NO_GPU + " The GPU-memory rung needs a GPU (lesson 8 and the ladder run it "
                             "there).", "gluon": NO_GPU})

CACHE_NOTES = (
    Note(cache_state, ("cold",), "Cold, checked: at each epoch's start the page cache held almost "
         "none of a dropped run's file, so its reads went to the disk, but for the pages a "
         "process kept mapped."),
    Note(cache_state, ("not cold",), "The drop did not take: the page cache still held much of a "
         "dropped run's file at its epochs' start. A file system that keeps files in memory "
         "(tmpfs) or ignores the advice does this: those epochs read memory, and no verdict here "
         "is read as cold against warm.", judged=False),
    Note(cache_state, ("unmeasured",), "The page cache's share of the file could not be measured "
         "here (no mincore): nothing shows a dropped run had a cold epoch, so no verdict here is "
         "read as cold against warm.", judged=False),
    Note(cache_state, ("warm",), "Warm, checked: the kept run started each epoch with nearly all "
         "of its file cached."),
    Note(cache_state, ("not warm",), "The kept run was not warm throughout: memory was short, or "
         "the file had not been read since it was dropped.", judged=False))
CACHED = {"cached_at_start": "Share of its file the page cache held at each epoch's start "
                             "(mean over epochs)"}
PAGE_CACHE = Lesson(
    compares=(Compare(varies=("page_cache",), gpu=Expect.FASTER, cpu=Expect.FASTER, means={
        Outcome.EXPECTED: "Reading from the disk cost the cold run samples/s: the input waited "
                          "on the disk. A data set that fits in memory pays this only in its "
                          "first epoch, one larger than memory in every epoch.",
        Outcome.NONE: "Reading this file from the disk cost nothing the runs' noise can show: the "
                      "disk (and its read-ahead) kept up with the reads of one packed file, which "
                      "the training step outweighs. A slower disk, a larger file or faster steps "
                      "(a GPU) can change that.",
        Outcome.OPPOSITE: "The cold run was the faster one: the disk cost nothing measurable "
                          "here, and something else (the machine's load) moved."}),),
    baseline={"page_cache": PageCache.DROP}, notes=CACHE_NOTES, columns=CACHED)
BY_ORDER = Lesson(
    compares=(Compare(varies=("sample_order",), gpu=Expect.FASTER, cpu=Expect.FASTER,
                      accuracy=True, means={
        Outcome.EXPECTED: "Neighbouring records read together: the disk's read-ahead fetches "
                          "the next ones before they are asked for, and each batch touches "
                          "fewer pages.",
        Outcome.NONE: "Where the training step, not the reads, sets the pace, the order of the "
                      "reads does not show in samples/s.",
        Outcome.OPPOSITE: "Slower than the shuffle beyond noise, which reading neighbouring "
                          "records does not explain: something else, such as the machine's "
                          "load, moved between the runs."},
                      worse="Batches of neighbouring records (the same order every epoch, or one "
                            "window of the file at a time) are less random than a shuffle, and "
                            "the model learns less from them."),),
    baseline={"sample_order": SampleOrder.RANDOM}, notes=CACHE_NOTES, columns=CACHED)

DISK = Lesson(
    compares=(),
    columns={"MB/s": "MB/s of each read", "KB a read": "KB a read on average"},
    quotes=(Quote("a disk reads about", talk.LECTURE_DISK_MB_S, "{:,} MB/s"),
            Quote("NVMe about", talk.LECTURE_NVME_MB_S, "{:,} MB/s")),
    source=talk.LECTURE,
    after="A loader that opens one file per sample reads like the small random reads (about one "
          "JPEG a read) at best, and a shuffled epoch of loose JPEGs like the JPEGs in random "
          "order; a data set that fits in memory is read from the page cache (the warm read) "
          "after its first epoch.")
UNEVICTED = replace(DISK, after="The page cache could not be emptied here (no posix_fadvise), so "
                                "every read above may have come from memory: none of them is the "
                                "disk's speed.")


def conclude(runs) -> Closing:
    """The disk test's sentences (for `Reads`: `DISK`); the page cache's (runs that differ in
    page_cache: `PAGE_CACHE`) or the sample orders' (runs that differ in sample_order:
    `BY_ORDER`); else the rungs' (`RUNGS`): each against the first, the fastest only beyond
    noise, what a CPU changes, and the diagnoses of the first rung and of the fastest."""
    if isinstance(runs, Reads):
        return judge_table(DISK if runs.sequential.evicted else UNEVICTED, disk_table(runs),
                           ("", Where.GPU))
    runs = list(runs)
    varied = [k for k in ("page_cache", "sample_order")
              if len({str(r.config.get(k)) for r in runs}) > 1]
    lesson = {"page_cache": PAGE_CACHE, "sample_order": BY_ORDER}.get(next(iter(varied), ""), RUNGS)
    return judge(lesson, runs, table(runs))
