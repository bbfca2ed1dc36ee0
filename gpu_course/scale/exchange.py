"""Lesson 07's records and benchmarks as tables (what they mean is the lesson's)."""
from __future__ import annotations

import math

import pandas as pd

from ..analyse import metrics
from . import distributed, scaling
from .distributed import HOP_LATENCY_S

MODEL_KS = (8, 64)        # the device counts the model's table gives efficiencies for
MIN_EFFICIENCY = 0.7      # the efficiency below which more devices "stop paying"
GPU_LINKS = {"NVLink"}    # links between GPUs only: no model row for a CPU step over them
UPTO = f"above {MIN_EFFICIENCY:.0%} up to k"   # the model table's column of stops_paying
NEAREST = "◀ the gradients' size"   # the bench row whose rate the model uses
WITHIN, BEYOND, SHORTER = "within the spread", "beyond the spread", "shorter, beyond the spread"


# -- what the records say ------------------------------------------------------------------
def devices(run) -> int:
    """The devices a run trained on (workers times their GPUs, processes, or devices)."""
    notes = run.meta.get("notes") or {}
    if notes.get("workers"):
        return int(notes["workers"]) * max(1, int(run.config.get("num_gpus") or 0))
    world = (run.meta.get("ran") or {}).get("world_size")
    return int(world or run.config.get("num_gpus") or 1)


def hosts(run) -> int:
    """The local "hosts" of a multi-host PyTorch job (1 for any other run)."""
    return int((run.meta.get("notes") or {}).get("nodes") or 1)


def ranks(run) -> pd.DataFrame:
    """Each process's own timings in a multi-process run (its notes' "ranks")."""
    rows = []
    for r in (run.meta.get("notes") or {}).get("ranks") or []:
        epochs = r.get("epochs") or []
        row = {"rank": r.get("rank")}
        if "group_rank" in r:
            row["host"] = r["group_rank"]
        row.update({k: sum(e.get(k) or 0 for e in epochs) for k in ("steps", "data_wait_s", "compute_s")})
        row["step_s"] = (row["data_wait_s"] + row["compute_s"]) / row["steps"] \
            if row["steps"] else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


# -- the exchange, measured ------------------------------------------------------------------
def _size(nbytes: float) -> str:
    return f"{nbytes / 2**20:g} MiB" if nbytes >= 2**20 else f"{nbytes / 2**10:g} KiB"


def allreduce(rows) -> bool:
    """Rows of bench.allreduce (bus bandwidth), else of gluon.dist's push and pull."""
    return "busbw_GBps" in rows[0]


def bench_table(rows, grad_bytes: float | None = None) -> pd.DataFrame:
    """The exchange against the array's size, the row nearest grad_bytes marked."""
    r = pd.DataFrame(rows)
    rate = r["busbw_GBps" if allreduce(rows) else "worker_GBps"]
    frame = pd.DataFrame({
        "size": [_size(b) for b in r.bytes], "time (ms)": 1e3 * r.time_s,
        "bus bandwidth (GB/s)" if allreduce(rows) else "GB/s": rate,
        "slowest (GB/s)": rate * r.time_s / r.time_max_s, "fastest (GB/s)": rate * r.time_s / r.time_min_s})
    if grad_bytes is not None:
        frame["the model's rate"] = [NEAREST if i == near(rows, grad_bytes) else "" for i in range(len(rows))]
    return frame


def buckets_table(rows) -> pd.DataFrame:
    """DDP's step with and without the all-reduce, per gradient bucket size."""
    r = pd.DataFrame(rows)
    return pd.DataFrame({
        "bucket (MB)": [f"{mb:g}" for mb in r.bucket_cap_mb], "buckets": r.buckets,
        **{f"{name} (ms)": 1e3 * r[key] for name, key in (
            ("step", "t_step_sync_s"), ("no_sync", "t_step_nosync_s"), ("all-reduce alone", "t_allreduce_s"),
            ("exposed", "exposed_s"), ("spread", "spread_s"))},
        "hidden (%)": 100 * r.overlap,
        "exposed is": [WITHIN if abs(e) <= spread else BEYOND for e, spread in zip(r.exposed_s, r.spread_s)]})


def near(rows, nbytes: float) -> int:
    """The row whose array is closest to `nbytes`."""
    return min(range(len(rows)), key=lambda i: abs(rows[i]["bytes"] - nbytes))


def _rate(rows, i: int) -> float:
    """The row's bandwidth in bytes/s."""
    return 1e9 * rows[i]["busbw_GBps" if allreduce(rows) else "worker_GBps"]


def _exchange_s(rows, grad_bytes: float, k: int) -> float:
    """Seconds to exchange every gradient alone at the measured rate nearest their size."""
    rate = _rate(rows, near(rows, grad_bytes))
    if allreduce(rows):
        return scaling.allreduce_time(grad_bytes, k, rate)
    return 2 * grad_bytes / rate


def _step_spread_s(run) -> float:
    """Half the range of the run's step time over its blocks of steady steps."""
    blocks = [b for b in metrics.steady_block_rates(run) if b > 0]
    rate = metrics.samples_per_sec(run)
    if len(blocks) < 2 or not rate > 0:
        return math.nan
    step = distributed.step_seconds(run)
    return step * (rate / min(blocks) - rate / max(blocks)) / 2


def measured_table(runs, bench, grad_bytes: float) -> pd.DataFrame:
    """The model's terms, measured: a row per run, and the talk's 4 V100s."""
    base = runs[0]
    t1 = distributed.step_seconds(base)
    s1 = metrics.samples_per_sec(base)
    spread = _step_spread_s(base)
    rate = _rate(bench, near(bench, grad_bytes))
    rows = []
    for run in runs:
        k, step = devices(run), distributed.step_seconds(run)
        lost = step - t1
        exchange = _exchange_s(bench, grad_bytes, k) if k > 1 else math.nan
        rows.append({
            "rung": run.name, "devices": k, "samples_per_sec": metrics.samples_per_sec(run),
            "efficiency (%)": 100 * scaling.measured_efficiency(s1, metrics.samples_per_sec(run), k),
            "step (ms)": 1e3 * step, "± (ms)": 1e3 * _step_spread_s(run),
            "lost a step (ms)": 1e3 * lost if k > 1 else math.nan,
            "lost is": "" if k == 1 else WITHIN if not abs(lost) > spread  # NaN: within
            else BEYOND if lost > 0 else SHORTER,
            "implied bandwidth (GB/s)": 2 * (k - 1) / k * grad_bytes / lost / 1e9
            if k > 1 and lost > 0 else math.nan,
            "exchange alone (ms)": 1e3 * exchange,
            "hidden (%)": 100 * scaling.overlap_from_steps(step, t1, exchange)
            if k > 1 and not allreduce(bench) else math.nan,
            "model (%)": 100 * scaling.predict([k], t1, grad_bytes, rate)[0]["efficiency"]
            if k > 1 else math.nan,
            "steady steps": metrics.steady_steps(run)})
    t = distributed.TALK
    s1, sk, k, batch = t["samples_per_sec_1"], t["samples_per_sec_k"], t["k"], t["batch"]
    rows.append({
        "rung": talk_row(), "devices": k, "samples_per_sec": sk,
        "efficiency (%)": 100 * scaling.measured_efficiency(s1, sk, k), "step (ms)": 1e3 * k * batch / sk,
        "lost a step (ms)": 1e3 * scaling.implied_exposed_time(s1, sk, k, batch), "lost is": "",
        "implied bandwidth (GB/s)": scaling.implied_busbw(s1, sk, k, batch, t["grad_bytes"]) / 1e9})
    return pd.DataFrame(rows)


def talk_row() -> str:
    """The measured table's row of the talk's V100s."""
    return f"the talk, {distributed.TALK['k']} V100s"


# -- the exchange, modelled ------------------------------------------------------------------
def _upto(t_compute: float, grad_bytes: float, gbps: float) -> str:
    """stops_paying's k as the table writes it: the search's cap is no limit found."""
    k = scaling.stops_paying(t_compute, grad_bytes, gbps * 1e9, latency=HOP_LATENCY_S,
                             min_efficiency=MIN_EFFICIENCY)
    if k >= scaling.K_MAX:
        return f"≥ {scaling.K_MAX} (all it tried)"
    return "none: below from k = 2" if k == 1 else str(k)


def model_table(runs, grad_bytes: float, steps=()) -> pd.DataFrame:
    """The model's outputs for this machine's step and `steps`, over the lecture's links."""
    base = runs[0]
    steps = [("this machine's step", distributed.step_seconds(base), grad_bytes,
              metrics.on_gpu(base))] + [(*s, True) for s in steps]
    rows = []
    for label, t_compute, nbytes, gpu in steps:
        for link, gbps in distributed.LINKS.items():
            if link in GPU_LINKS and not gpu:
                continue
            effs = scaling.predict(MODEL_KS, t_compute, nbytes, gbps * 1e9, latency=HOP_LATENCY_S)
            rows.append({"model": f"{label}, {link}", "step (ms)": 1e3 * t_compute,
                         "gradients (MiB)": nbytes / 2**20, "link (GB/s)": gbps,
                         "latency a hop (µs)": 1e6 * HOP_LATENCY_S,
                         **{f"{e['k']} devices (%)": 100 * e["efficiency"] for e in effs},
                         UPTO: _upto(t_compute, nbytes, gbps)})
    return pd.DataFrame(rows)
