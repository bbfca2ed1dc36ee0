"""Cores a process may use, and loader workers per training process: usable cores ÷
training processes on the host (`cpu_count() - 3` in every process would thrash it)."""
from __future__ import annotations

import os
import platform


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity), else os.cpu_count()."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def thread_counts(n: int) -> list[int]:
    """1, 2, 4, ... below n, and n itself: the thread (or device) counts to try."""
    return [2 ** i for i in range(n.bit_length()) if 2 ** i < n] + [n]


def loader_workers(procs_on_host: int, cores: int | None = None) -> int:
    """DataLoader workers per training process when `procs_on_host` share the cores."""
    if procs_on_host < 1:
        raise ValueError(f"procs_on_host={procs_on_host!r} must be >= 1")
    cores = usable_cores() if cores is None else cores
    return max(1, cores // procs_on_host)


# training processes a core may run where each stands in for a GPU or a host (DDP on the
# CPU, the local multi-host job): each needs a core to make progress
CPU_PROCESSES_PER_CORE = 2


def _over_limit(count: int, per_core: int, cores: int | None) -> int | None:
    """None when `count` processes fit `per_core` a core, else the limit."""
    limit = per_core * (usable_cores() if cores is None else cores)
    return None if count <= limit else limit


def check_training_processes(count: int, what: str, cores: int | None = None) -> None:
    """ValueError for more CPU training processes than this machine's cores can run."""
    limit = _over_limit(count, CPU_PROCESSES_PER_CORE, cores)
    if limit:
        raise ValueError(f"{what} starts {count} training processes; allowed: up to {limit} "
                         f"({CPU_PROCESSES_PER_CORE} a core)")


# loader workers a core may carry (the talk ran 3.6 a core); far beyond this they only
# queue, and thousands of forked processes exhaust memory (MXNet aborts with signal 6)
LOADER_WORKERS_PER_CORE = 8


def check_loader_workers(num_workers: int, cores: int | None = None) -> None:
    """ValueError for more loader workers than this machine's cores can carry."""
    limit = _over_limit(num_workers, LOADER_WORKERS_PER_CORE, cores)
    if limit:
        raise ValueError(f"num_workers={num_workers} is more loader workers than the cores carry; "
                         f"allowed: 0..{limit} ({LOADER_WORKERS_PER_CORE} a core); see gc.workers()")


threads_per_process = loader_workers   # OMP_NUM_THREADS per CPU training process: the same share


def check_thread_variables(environ=None) -> None:
    """Refuse an OMP_NUM_THREADS or MXNET_OMP_MAX_THREADS that is no thread count: MXNet aborts on it."""
    environ = os.environ if environ is None else environ
    for name in ("OMP_NUM_THREADS", "MXNET_OMP_MAX_THREADS"):
        text = environ.get(name)
        if text is None or not text.strip():
            continue
        parts = [p.strip() for p in text.split(",")] if name == "OMP_NUM_THREADS" else [text.strip()]
        if not all(p.isdigit() and int(p) >= 1 for p in parts):
            raise ValueError(f"{name}={text!r} is not a number of threads; set it to >= 1, or unset it")


def mxnet_threads(cores: int, environ=None) -> tuple[int, str]:
    """(count, source): MXNet 1.x's CPU operator threads under `environ` (engine/openmp.cc)."""
    environ = os.environ if environ is None else environ
    omp = (environ.get("OMP_NUM_THREADS") or "").split(",")[0].strip()
    if omp.isdigit():
        return max(1, int(omp)), "OMP_NUM_THREADS"
    cap = (environ.get("MXNET_OMP_MAX_THREADS") or "").strip()
    if cap.isdigit():
        return max(1, int(cap)), "MXNET_OMP_MAX_THREADS"
    if platform.machine().lower() in ("x86_64", "amd64", "i386", "i686"):
        return max(1, cores // 2), "MXNet's default on x86: half the cores"
    return cores, "MXNet's default: one a core"


BUSY_LOAD = 1.0   # a load average at or above this before a measurement: something else ran


def busy(load_average, usable: int) -> bool:
    """Whether a measurement started on a busy machine (a load average >= the cores)."""
    return (load_average or 0) >= max(BUSY_LOAD, usable)
