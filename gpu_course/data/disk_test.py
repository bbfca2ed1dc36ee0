"""Lesson 09's disk test and photo folder: the disk read in large and small blocks, in order
and at random, cold and warm, then the data set's own JPEGs (`disk.read_bandwidth`)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from . import disk, packed
from . import folder as image_folder

JPEGS_READ = 1000   # the data set's own files the disk test reads, at most


def photo_folder(images: int, folder=None) -> Path:
    """`folder` when given (e.g. Caltech-256's 256_ObjectCategories), else a generated one of
    `images` JPEGs, 200-500 px a side, in ten class folders (written once)."""
    if folder:
        return Path(folder)
    return image_folder.generate_folder(
        image_folder.default_folder().with_name(f"caltech256-like-{images}"),
        image_folder.Photos(per_class=images // 10))


class Reads(NamedTuple):
    """The disk test: a scratch file in 1 MiB blocks in order and at random, in 32 KiB blocks
    (a JPEG's size) at random, and warm; then the data set's JPEGs sorted and shuffled."""

    sequential: disk.ReadSpeed
    random: disk.ReadSpeed
    small: disk.ReadSpeed
    warm: disk.ReadSpeed
    jpegs_sorted: disk.ReadSpeed
    jpegs_random: disk.ReadSpeed


def read_speeds(root, mb: int) -> Reads:
    """Measure the disk under `root`: a scratch file of `mb` MiB and up to JPEGS_READ JPEGs."""
    scratch = packed.prepared_dir(root) / f"read-test-{os.getpid()}.bin"   # one per process
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
