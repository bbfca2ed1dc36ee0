"""Lesson 09: the input pipeline, one change a rung, on a folder of photos shaped like
Caltech-256: loose JPEGs with one loader worker, then more; the images resized once, out of
band; packed into one file; the whole set in memory (and on a GPU, in GPU memory). First,
the disk itself: sequential against random reads, cold and warm.

Each rung records its data format (`data_format`), so the table, the sentences and the
diagnosis read what a run read from its record, never from its name. A rung is "the
fastest" only when it beats every other rung beyond their noise; otherwise the closing
names the rungs that cannot be told apart. The first rung's two ceilings (mock trainer,
mock loader) are read with lesson 10's table and sentences (`l10_mocks`).

Deeper, on the packed file (`data.order`): the page cache (every epoch's pages dropped
first, `page_cache="drop"`, against a file kept warm) and the sample order (random,
quasi-random, sequential), samples/s and accuracy judged against noise. The cache's
state is measured (mincore, in the runs' notes), never assumed: a drop the file system
ignores (tmpfs) is said, and no epoch is then called cold.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

import pandas as pd

from ..analyse import diagnose, metrics, noise
from ..config import PageCache, SampleOrder
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
    return pd.DataFrame([{"read": r.pattern, "cache": "cold" if r.evicted else "warm",
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


def conclude(runs) -> Closing:
    """The disk test's sentences (for `Reads`); the page cache's (runs that differ in
    page_cache) or the sample orders' (runs that differ in sample_order); else the
    rungs': each against the first, the fastest only where it is beyond noise, what a CPU
    changes, and the diagnoses of the first rung (with whether its advice, where a rung
    ran it, helped) and of the fastest."""
    if isinstance(runs, Reads):
        return _disk(runs)
    runs = list(runs)
    varied = {k for k in ("page_cache", "sample_order")
              if len({str(r.config.get(k)) for r in runs}) > 1}
    if "page_cache" in varied:
        return _page_cache(runs)
    if "sample_order" in varied:
        return _orders(runs)
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


# -- the page cache and the sample order ------------------------------------------------------
def _cache_state(run) -> str:
    """"cold" or "warm" (checked against the measured shares), "neither" or "unmeasured"."""
    shares = cached_shares(run)
    if not shares:
        return "unmeasured"
    cold = run.config.get("page_cache") == PageCache.DROP
    if cold and max(shares) <= COLD_AT_MOST:
        return "cold"
    if not cold and min(shares) >= WARM_AT_LEAST:
        return "warm"
    return "neither"


def _page_cache(runs) -> Closing:
    """Cold (the file dropped before every epoch) against warm: whether the drop took,
    by the shares measured at each epoch's start, then samples/s against noise."""
    say = Closing(table(runs), runs, varies=("page_cache",))
    # the first of each (conclude comes here only when page_cache varies: both are there)
    cold = next(i for i, r in enumerate(runs) if r.config.get("page_cache") == PageCache.DROP)
    warm = next(i for i, r in enumerate(runs) if r.config.get("page_cache") != PageCache.DROP)
    states = {i: _cache_state(runs[i]) for i in (cold, warm)}
    share = {i: say.cell(i, "cached_at_start") if cached_shares(runs[i]) else "" for i in (cold, warm)}
    lows = (say.setting("COLD_AT_MOST", COLD_AT_MOST, "{:.0%}"),
            say.setting("WARM_AT_LEAST", WARM_AT_LEAST, "{:.0%}"))
    if states[cold] == "unmeasured":
        say(f"The page cache's share of the file could not be measured here (no mincore): "
            f"'{runs[cold].name}' asked for a cold epoch, but nothing shows it had one, so "
            "the comparison below is not called cold against warm.")
    elif states[cold] != "cold":
        say(f"The drop did not take: after dropping, {share[cold]} of the file was still in "
            f"the page cache at the epochs' start of '{runs[cold].name}' (a cold epoch needs "
            f"at most {lows[0]}). A file system that keeps files in memory (tmpfs) or "
            "ignores the advice does this: no epoch here read the disk, and the runs below "
            "measure memory twice.")
    else:
        say(f"Cold, checked: at each epoch's start of '{runs[cold].name}' the page cache held "
            f"{share[cold]} of the file on average (a cold epoch: at most {lows[0]}), so its "
            "reads went to the disk, but for the pages a process kept mapped.")
    if states[warm] == "warm":
        say(f"Warm, checked: '{runs[warm].name}' started each epoch with at least {lows[1]} "
            f"of the file cached (mean {share[warm]}).")
    elif states[warm] == "neither":
        say(f"'{runs[warm].name}' was not warm throughout: {share[warm]} of the file cached "
            f"at its epochs' start on average (warm needs {lows[1]}); memory was short, or "
            "the file had not been read since it was dropped.")
    verdict = say.compare(cold, warm)   # warm against cold
    if states[cold] == "cold" and states[warm] == "warm":
        if verdict.kind == noise.Kind.FASTER:
            say(f"Reading from the disk cost '{runs[cold].name}' samples/s: warm against cold "
                f"{verdict}. The input waited on the disk; a data set that fits in memory "
                "pays this only in its first epoch, one larger than memory in every epoch.")
        elif verdict.is_effect:
            say(f"Warm against cold: {verdict}. The cold run was the faster one: the disk "
                "cost nothing measurable here, and something else (the machine's load) moved.")
        elif verdict.kind == noise.Kind.WITHIN_NOISE:
            say(f"Warm against cold: {verdict}. Reading this file from the disk cost nothing "
                "the runs' noise can show: the disk (and its read-ahead) kept up with the "
                "reads of one packed file, which the training step outweighs. A "
                "slower disk, a larger file or faster steps (a GPU) can change that.")
        else:
            say(f"Warm against cold: {verdict}.")
    else:
        say(f"Against each other, as measured (not cold against warm): {verdict}.")
    return say


def _orders(runs) -> Closing:
    """Each sample order against the first run's (random): samples/s and validation
    accuracy, each against its noise; first, whether runs asked to read cold did."""
    say = Closing(table(runs), runs, varies=("sample_order",))
    first = runs[0]
    asked_cold = [r for r in runs if r.config.get("page_cache") == PageCache.DROP]
    if asked_cold:
        at_most = say.setting("COLD_AT_MOST", COLD_AT_MOST, "{:.0%}")
        not_cold = [r for r in asked_cold if _cache_state(r) != "cold"]
        if not not_cold:
            say(f"Every order read its file from the disk: each run's file was dropped from "
                f"the page cache before every epoch and held at most {at_most} of it after "
                "(checked).")
        else:
            names = ", ".join(f"'{r.name}'" for r in not_cold)
            say(f"Not checked cold: {names} (the drop did not take, or could not be measured: "
                f"a cold epoch holds at most {at_most} of the file); those reads may have come "
                "from memory, so their order's cost on a disk is not measured here.")
    say(f"'{first.name}' ({first.config.get('sample_order')} order): "
        f"{say.cell(0, 'samples_per_sec')} samples/s, val acc {say.cell(0, 'val_acc')}. "
        "Each order against it:")
    faster, worse = [], []
    for i, run in enumerate(runs[1:], start=1):
        speed = say.compare(0, i)
        points, acc = say.accuracy(0, i)
        say(f"  '{run.name}': samples/s {speed}; accuracy {acc}")
        if speed.kind == noise.Kind.FASTER:
            faster.append(run)
        if noise.accuracy_verdict(first, run).is_effect and points < 0:
            worse.append(run)
    if say.at_chance(list(range(len(runs)))):
        say("Every order's accuracy is within noise of chance: these runs are too short to "
            "say what an order does to learning (more epochs and a larger validation set can).")
    if not faster:
        say("No order read faster beyond the runs' noise: where the training step, not the "
            "reads, sets the pace, the order of the reads does not show in samples/s.")
    else:
        names = ", ".join(f"'{r.name}'" for r in faster)
        say(f"Faster beyond noise: {names}. Neighbouring records read together: the disk's "
            "read-ahead fetches the next ones before they are asked for, and each batch "
            "touches fewer pages.")
    if worse:
        names = ", ".join(f"'{r.name}'" for r in worse)
        say(f"Lower accuracy beyond noise: {names}: batches of neighbouring records (the "
            "same order every epoch, or one window of the file at a time) are less random "
            "than a shuffle, and the model learns less from them.")
    return say
