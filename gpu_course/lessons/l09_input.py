"""Lesson 09: the input pipeline, one change a rung, on a folder of photos shaped like
Caltech-256: loose JPEGs with one loader worker, then more; the images resized once, out of
band; packed into one file; the whole set in memory (and on a GPU, in GPU memory). First,
the disk itself: sequential against random reads, cold and warm.

Each rung records its data format (`data_format`), so the table, the sentences and the
diagnosis read what a run read from its record, never from its name. A rung is "the
fastest" only when it beats every other rung beyond their noise; otherwise the closing
names the rungs that cannot be told apart. The first rung's two ceilings (mock trainer,
mock loader) are read with lesson 10's table and sentences (`l10_mocks`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

import pandas as pd

from ..analyse import diagnose, metrics
from ..show import report
from ..show.closing import Closing
from ..data import disk, packed
from ..data import folder as image_folder
from . import l10_mocks, talk

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
JPEGS_READ = 1000   # the data set's own files the disk test reads, at most


# -- the photos and the disk ------------------------------------------------------------------
def photo_folder(images: int, folder=None) -> Path:
    """The image folder lessons 09 and 10 read: `folder` when given (e.g. Caltech-256's
    256_ObjectCategories), else a generated Caltech-256-shaped one of `images` JPEGs,
    200-500 px a side, in ten class folders (written once, then reused)."""
    if folder:
        return Path(folder)
    return image_folder.generate_folder(
        image_folder.default_folder().with_name(f"caltech256-like-{images}"),
        per_class=images // 10)


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
    return pd.DataFrame([{"read": r.pattern, "cache": "cold" if r.evicted else "warm",
                          "MB": r.bytes / disk.MB, "reads": r.reads,
                          "KB a read": r.bytes / 1e3 / r.reads if r.reads else float("nan"),
                          "MB/s": r.mb_per_s} for r in reads])


# -- the table and the closing ---------------------------------------------------------------
def table(runs) -> pd.DataFrame:
    """The disk test's table (for `Reads`), else the rungs' ladder table (speed-up
    against the first rung: loose JPEGs, one worker)."""
    return disk_table(runs) if isinstance(runs, Reads) else report.ladder_table(runs)


def conclude(runs) -> Closing:
    """The disk test's sentences (for `Reads`), else the rungs': each against the first,
    the fastest only where it is beyond noise, what a CPU changes, and the diagnoses of the
    first rung (with whether its advice, where a rung ran it, helped) and of the fastest."""
    if isinstance(runs, Reads):
        return _disk(runs)
    runs = list(runs)
    say = Closing(report.ladder_table(runs), runs)
    first = runs[0]
    say(f"'{first.name}': {say.cell(0, 'samples_per_sec')} samples/s, waiting for data "
        f"{say.cell(0, 'data_wait_share')} of its steady step time. Each rung against it:")
    for i, run in enumerate(runs[1:], start=1):
        # the line names every setting the two differ in: the verdict may read across those
        verdict = say.compare(0, i, varies=l10_mocks.changed(first, run))
        say(f"  '{run.name}' ({l10_mocks.changes(say, first, run)}): {verdict}")
    top = _fastest(say, runs)
    _where(say, runs)
    l10_mocks.shared(say, runs)
    _diagnoses(say, runs, top)
    return say


def _fastest(say: Closing, runs):
    """Say which rung is fastest, only beyond noise; return the rung with the most samples/s."""
    done = [r for r in runs if metrics.samples_per_sec(r) > 0 and metrics.status(r) not in
            metrics.FAILED]
    if not done:
        say("No rung finished a steady step: nothing to rank.")
        return None
    top = max(done, key=metrics.samples_per_sec)
    others = [r for r in done if r is not top]
    if not others:
        return top
    verdicts = {r.name: say.compare(r, top, varies=l10_mocks.changed(r, top))  # top against each
                for r in others}
    ties = [r for r in others if verdicts[r.name].kind != "faster"]
    runner_up = max(others, key=metrics.samples_per_sec)
    if not ties:
        say(f"Fastest: '{top.name}', beyond the noise of every other rung (against the next, "
            f"'{runner_up.name}': {verdicts[runner_up.name]}); it waited for data "
            f"{say.cell(top, 'data_wait_share')} of its step time.")
    elif len(ties) == len(others):
        say(f"No fastest rung: '{top.name}' has the most samples/s, but not beyond the noise "
            f"of any other rung (against the next, '{runner_up.name}': "
            f"{verdicts[runner_up.name]}).")
    else:
        names = ", ".join(f"'{r.name}'" for r in [top, *ties])
        say(f"No single fastest rung: {names} cannot be told apart beyond their noise "
            f"('{top.name}' against '{runner_up.name}': {verdicts[runner_up.name]}); "
            f"'{top.name}' beats the other rungs beyond noise.")
    return top


def _where(say: Closing, runs) -> None:
    """What the machine the runs record changes in their reading."""
    first = runs[0]
    if not any(metrics.on_gpu(r) for r in runs):
        cores = (first.meta.get("hardware") or {}).get("cpu_count") or "its"
        say(f"No GPU here: the {first.config.get('model', '?')} net computes on the same "
            f"{cores} cores that decode, so a cheaper input pays only while the input is the "
            "slow part (the diagnosis below says which); on a GPU the computation moves off "
            "the CPU.")
        if metrics.engine(first) == "pytorch":
            say("The GPU-memory rung needs a GPU (lesson 8 and the ladder run it there).")


def _diagnoses(say: Closing, runs, top) -> None:
    """The first rung's diagnosis (its ceilings found next to it), whether its advice
    helped where a rung applied it (more workers: the rung that changed only those), and
    the fastest rung's diagnosis."""
    first = runs[0]
    if not len(first.epochs):   # it failed before an epoch: nothing to diagnose
        return
    d = diagnose.diagnose(first)
    print(f"\n{d}")
    workers_only = [r for r in runs[1:] if l10_mocks.changed(first, r) == ["num_workers"]]
    if d.next_rung == "workers" and workers_only:
        l10_mocks.outcome(say, d, first, workers_only[0])
    if top is not None and top is not first:
        print(f"\n{diagnose.explain(top)}")


def _disk(reads: Reads) -> Closing:
    say = Closing(disk_table(reads), key="read")
    rows = {f.name: i for i, f in enumerate(fields(reads))}
    seq = rows["sequential"]
    if reads.sequential.evicted:
        rate = reads.sequential.mb_per_s
        kind = ("slower than a disk" if rate < talk.LECTURE_DISK_MB_S else
                "between a disk and NVMe" if rate < talk.LECTURE_NVME_MB_S else
                "as fast as NVMe or faster")
        say(f"From the disk (this file's pages dropped from the page cache first), "
            f"'{reads.sequential.pattern}' ran at {say.cell(seq, 'MB/s')} MB/s: {kind} by "
            f"{talk.LECTURE}'s rule of thumb (a disk about "
            f"{say.quote(talk.LECTURE, talk.LECTURE_DISK_MB_S, '{:,} MB/s')}, NVMe about "
            f"{say.quote(talk.LECTURE, talk.LECTURE_NVME_MB_S, '{:,} MB/s')}).")
    else:
        say("The page cache could not be emptied here (no posix_fadvise), so every read "
            "below may come from memory: none of them is the disk's speed.")
    say(f"'{reads.small.pattern}' (about one JPEG a read): {say.cell(rows['small'], 'MB/s')} "
        f"MB/s, {say.ratio('MB/s', seq, rows['small'], percent=True)} of sequential; a loader "
        "that opens one file per sample reads like this at best.")
    say(f"The data set's own JPEGs, {say.cell(rows['jpegs_random'], 'KB a read')} KB each on "
        f"average: {say.cell(rows['jpegs_random'], 'MB/s')} MB/s in random order (a shuffled "
        f"epoch) against {say.cell(rows['jpegs_sorted'], 'MB/s')} MB/s sorted.")
    say(f"From the page cache: {say.cell(rows['warm'], 'MB/s')} MB/s; a data set that fits in "
        "memory is read from there after its first epoch.")
    return say
