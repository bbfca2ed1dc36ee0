"""How fast the disk reads: sequential against random, cold (`evict`: posix_fadvise) or warm."""
from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MB = 1e6


def block_shuffle(n: int, block: int, seed: int = 0) -> np.ndarray:
    """0..n-1 as blocks of `block` records in a random order, each shuffled inside."""
    if block < 1:
        raise ValueError(f"block={block!r} must be >= 1")
    rng = np.random.default_rng(seed)
    starts = rng.permutation(np.arange(0, n, block))
    return np.concatenate([start + rng.permutation(min(block, n - start))
                           for start in starts]) if n else np.arange(0)


@dataclass
class ReadSpeed:
    """One read measurement."""

    pattern: str
    bytes: int
    seconds: float
    evicted: bool     # the page cache was emptied of this data first (a cold read)
    reads: int

    @property
    def mb_per_s(self) -> float:
        return self.bytes / MB / self.seconds if self.seconds > 0 else float("nan")

    def __str__(self) -> str:
        cache = "cold (evicted from the page cache)" if self.evicted else "warm (page cache)"
        return (f"{self.pattern}: {self.mb_per_s:,.0f} MB/s ({self.bytes / MB:,.1f} MB in {self.reads:,} reads, "
                f"{cache})")


def evict(path) -> bool:
    """Drop this file's pages from the page cache; False where the OS cannot."""
    if not hasattr(os, "posix_fadvise"):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)   # dirty pages cannot be dropped: write them out first
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def cached_share(path) -> float | None:
    """The share of `path`'s pages in the page cache now (0..1, `mincore`), or None."""
    size, libc = Path(path).stat().st_size, _libc()
    if libc is None or size == 0:
        return None
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    vec = ctypes.create_string_buffer(pages)
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr is None or addr == ctypes.c_void_p(-1).value:
            return None
        try:
            if libc.mincore(addr, size, vec) != 0:
                return None
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)
    return sum(b & 1 for b in vec.raw) / pages


def _libc():
    """The C library with mmap/mincore/munmap typed, or None (not Linux-like)."""
    if not (name := ctypes.util.find_library("c")) or not hasattr(mmap, "PROT_READ"):
        return None
    libc = ctypes.CDLL(name, use_errno=True)
    if not hasattr(libc, "mincore"):
        return None
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


def read_bandwidth(path, pattern: str = "sequential", block_size: int = 1 << 20,
                   cold: bool = True, seed: int = 0) -> ReadSpeed:
    """Time reading `path` in blocks, "sequential" or "random"; cold=True evicts it first."""
    if pattern not in ("sequential", "random"):
        raise ValueError(f"pattern={pattern!r} is not allowed; allowed: sequential, random")
    if block_size < 1:
        raise ValueError(f"block_size={block_size!r} must be >= 1 byte")
    size = Path(path).stat().st_size
    offsets = np.arange(0, size, block_size)
    if pattern == "random":
        offsets = np.random.default_rng(seed).permutation(offsets)
    evicted, total = evict(path) if cold else False, 0
    fd = os.open(path, os.O_RDONLY)
    try:
        if pattern == "random" and hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no read-ahead to help it
        view = memoryview(bytearray(block_size))
        start = time.perf_counter()
        for offset in offsets.tolist():
            total += os.preadv(fd, [view[:min(block_size, size - offset)]], offset)
        seconds = time.perf_counter() - start
    finally:
        os.close(fd)
    return ReadSpeed(f"{pattern} reads of {_human(block_size)}", total, seconds, evicted,
                     len(offsets))


def read_files(paths, order: str = "sequential", cold: bool = True,
               seed: int = 0) -> ReadSpeed:
    """Time reading whole files in sorted or random order, each evicted first when cold."""
    if order not in ("sequential", "random"):
        raise ValueError(f"order={order!r} is not allowed; allowed: sequential, random")
    paths = sorted(str(p) for p in paths)
    if order == "random":
        paths = [paths[i] for i in np.random.default_rng(seed).permutation(len(paths))]
    evicted, total = all([evict(p) for p in paths]) if cold else False, 0
    start = time.perf_counter()
    for p in paths:
        with open(p, "rb") as f:
            total += len(f.read())
    return ReadSpeed(f"{len(paths):,} files in {order} order", total, time.perf_counter() - start,
                     evicted, len(paths))


def _human(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"
