"""When more devices stop paying: a data-parallel scaling model from measured numbers.

    t_allreduce(k) = 2(k-1)/k * grad_bytes / busbw + 2(k-1) * latency     (a ring)
    t_step(k)   = t_compute + (1 - overlap) * t_allreduce(k)
    efficiency  = t_compute / t_step(k)         speed-up = k * efficiency
"""
from __future__ import annotations

import math

K_MAX = 1024   # the most devices stops_paying tries


def allreduce_time(grad_bytes: float, k: int, busbw: float, latency: float = 0.0) -> float:
    """Seconds for a ring all-reduce of `grad_bytes` over k devices at `busbw` bytes/s."""
    if k < 1:
        raise ValueError(f"k={k!r} must be >= 1")
    if busbw <= 0:
        raise ValueError(f"busbw={busbw!r} must be > 0 bytes/s")
    if k == 1:
        return 0.0
    return 2 * (k - 1) / k * grad_bytes / busbw + 2 * (k - 1) * latency


def bus_bandwidth(nbytes: float, seconds: float, k: int) -> float:
    """nccl-tests' bus bandwidth of one all-reduce: bytes/s times 2(k-1)/k."""
    if seconds <= 0:
        raise ValueError(f"seconds={seconds!r} must be > 0")
    return nbytes / seconds * (2 * (k - 1) / k if k > 1 else 1.0)


def predict(ks, t_compute: float, grad_bytes: float, busbw: float, latency: float = 0.0,
            overlap: float = 0.0) -> list[dict]:
    """One row per device count: predicted step time, exposed communication, efficiency."""
    if t_compute <= 0:
        raise ValueError(f"t_compute={t_compute!r} must be > 0 seconds")
    if not 0 <= overlap <= 1:
        raise ValueError(f"overlap={overlap!r} must be in [0, 1]")
    rows = []
    for k in ks:
        t_ar = allreduce_time(grad_bytes, k, busbw, latency)
        exposed = (1 - overlap) * t_ar
        eff = t_compute / (t_compute + exposed)
        rows.append({"k": k, "t_compute_s": t_compute, "t_allreduce_s": t_ar,
                     "exposed_s": exposed, "t_step_s": t_compute + exposed,
                     "speedup": k * eff, "efficiency": eff})
    return rows


def stops_paying(t_compute: float, grad_bytes: float, busbw: float, latency: float = 0.0,
                 overlap: float = 0.0, min_efficiency: float = 0.7) -> int:
    """The largest k (up to K_MAX) still predicted at `min_efficiency`."""
    rows = predict(range(1, K_MAX + 1), t_compute, grad_bytes, busbw, latency, overlap)
    return max((row["k"] for row in rows if row["efficiency"] >= min_efficiency), default=1)


def measured_efficiency(samples_per_sec_1: float, samples_per_sec_k: float, k: int) -> float:
    """Scaling efficiency from two measured throughputs: speed-up / k."""
    return samples_per_sec_k / (k * samples_per_sec_1)


def implied_exposed_time(samples_per_sec_1: float, samples_per_sec_k: float, k: int,
                         batch_per_device: int) -> float:
    """Seconds per step that k devices lost against one, from throughputs alone."""
    return k * batch_per_device / samples_per_sec_k - batch_per_device / samples_per_sec_1


def implied_busbw(samples_per_sec_1: float, samples_per_sec_k: float, k: int,
                  batch_per_device: int, grad_bytes: float) -> float:
    """The bus bandwidth that would explain the loss as a non-overlapped all-reduce."""
    exposed = implied_exposed_time(samples_per_sec_1, samples_per_sec_k, k, batch_per_device)
    if exposed <= 0:
        return math.inf
    return 2 * (k - 1) / k * grad_bytes / exposed


def overlap_from_steps(t_step_sync: float, t_step_nosync: float, t_allreduce: float) -> float:
    """Share of the all-reduce hidden behind backward (steps with and without no_sync)."""
    if t_allreduce <= 0:
        raise ValueError(f"t_allreduce={t_allreduce!r} must be > 0 seconds")
    exposed = t_step_sync - t_step_nosync
    return min(1.0, max(0.0, 1 - exposed / t_allreduce))
