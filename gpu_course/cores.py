"""How many CPU cores a process may use, and the loader workers each training process
gets: usable cores ÷ training processes on the host (the checklist's vCPUs ÷ GPUs).

`cpu_count() - 3` in *every* process, as one-process lessons use, asks 8 processes on a
64-vCPU, 8-GPU host for 8 × 61 loader workers: the host thrashes instead of loading.
"""
from __future__ import annotations

import os


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity: a container's or taskset's
    limit), else os.cpu_count()."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def loader_workers(procs_on_host: int, cores: int | None = None) -> int:
    """DataLoader workers per training process when `procs_on_host` of them share this
    host's cores: cores // processes, at least 1."""
    if procs_on_host < 1:
        raise ValueError(f"procs_on_host={procs_on_host!r} must be >= 1")
    cores = usable_cores() if cores is None else cores
    return max(1, cores // procs_on_host)


def threads_per_process(procs_on_host: int, cores: int | None = None) -> int:
    """Compute threads (OMP_NUM_THREADS) per CPU training process sharing the host:
    more threads than cores only wait for each other."""
    return loader_workers(procs_on_host, cores)
