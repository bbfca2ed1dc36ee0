"""Realistic run folders in the run-record schema, for tests of plots and reports.

The files are the real format (run.json, epochs.csv, steps.csv, gpu.csv, host.csv,
markers.csv) with numbers shaped like real runs: a warm-up first epoch (its steps are the
warm-up, left out of the steady numbers) slower than the rest, idle GPU samples
while the loader is behind, memory that climbs to a plateau, a GPU lost mid-run, an OOM.

    paths = gpu_ladder(tmp_path)     # naive, 8 workers, float16, 2 GPUs (lost), batch 4096 (OOM)
    paths = cpu_ladder(tmp_path)     # two CPU-only runs, empty gpu.csv
    paths = batch_sweep(tmp_path)    # batch 64..512, then 2048 runs out of memory
    runs = [load(p) for p in paths]
"""
from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import numpy as np

EPOCH_COLUMNS = ["epoch", "epoch_time_s", "samples_per_sec", "data_wait_s", "compute_s",
                 "sync_s", "steps", "samples", "timed_steps", "timed_samples", "timed_s",
                 "timed_wait_s", "loss", "train_acc", "val_acc", "lr", "eval_s", "t_start",
                 "t_steady", "t_end"]
STEP_COLUMNS = ["epoch", "step", "samples", "data_wait_s", "compute_s", "timed", "device_s"]
GPU_COLUMNS = ["t", "gpu", "util_gpu", "util_mem", "mem_used_mib", "mem_total_mib", "power_w",
               "power_limit_w", "temp_c", "sm_clock_mhz", "sm_clock_max_mhz",
               "clock_event_reasons", "sm_active", "tensor_active", "dram_active", "error"]
HOST_COLUMNS = ["t", "cpu_percent", "cpu_per_core", "ram_used_mib", "ram_total_mib"]
MARKER_COLUMNS = ["t", "label"]

H100 = {"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559, "compute_capability": "9.0"}
H100_POWER_LIMIT_W = 700.0
STARTUP_S = 4.0      # monitor running, model and loader not yet stepping
VALIDATION_S = 2.0   # between epochs


def write_run(runs_dir, name, *, engine="pytorch", status="finished", error=None,
              num_gpus=1, machine_gpus=None, epochs=3, samples_per_sec=600.0, busy=40.0,
              data_wait_share=0.5, gpm=True, lost_gpu=None, stop_after=None, summary=True,
              config=None, cpu_count=16, interval=1.0, seed=0, index=0) -> Path:
    """Write one run folder and return its path.

    busy: GPU utilisation % while the GPU has work; the loader starves it for a share of
    the samples that grows with data_wait_share. lost_gpu=(gpu, t): from t on, that GPU's
    samples are NaN with error "GPU is lost". stop_after=t: the run ends at t (a crash).
    summary=False leaves run.json's summary values null, so readers must use epochs.csv.
    """
    rng = np.random.RandomState(seed)
    machine_gpus = num_gpus if machine_gpus is None else machine_gpus
    cfg = {"name": name, "engine": engine, "dataset": "synthetic", "train_size": 50_000,
           "test_size": 10_000,
           "model": "resnet20", "batch_size": 128, "num_workers": 0, "graph": "eager",
           "dtype": "float32", "num_gpus": num_gpus, "optimizer": "sgd", "lr": 0.1,
           "lr_scheduler": "none", "epochs": epochs, "monitor_interval": interval}
    cfg.update(config or {})
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "run"
    run_id = f"20261121-{101500 + 100 * index:06d}-{slug}-{seed:04x}"
    path = Path(runs_dir) / run_id
    path.mkdir(parents=True)

    epoch_rows, t = _epochs(cfg, epochs, samples_per_sec, data_wait_share, rng)
    end = (t + 2.0) if epochs else STARTUP_S + 3.0   # an OOM dies a few seconds in
    if stop_after is not None:
        epoch_rows = [row for row in epoch_rows if row["t_end"] <= stop_after]
        end = stop_after
    times = np.arange(0.0, end, interval)
    spans = [(row["t_start"], row["t_end"]) for row in epoch_rows]
    if stop_after is not None:  # the epoch that was running when the run died
        done = spans[-1][1] if spans else STARTUP_S
        spans.append((done + VALIDATION_S, end))
    gpu_rows = [] if num_gpus == 0 else _gpu_samples(times, spans, num_gpus, busy,
                                                     data_wait_share, gpm, lost_gpu,
                                                     oom=status == "oom", rng=rng)
    host_rows = _host_samples(times, spans, cpu_count, data_wait_share, rng)
    markers = [(t0, f"epoch {row['epoch']} {what}") for row in epoch_rows
               for t0, what in ((row["t_start"], "start"), (row["t_end"], "end"))]
    if stop_after is not None:
        markers.append((spans[-1][0], f"epoch {len(epoch_rows) + 1} start"))

    _write_csv(path / "epochs.csv", EPOCH_COLUMNS, epoch_rows)
    _write_csv(path / "steps.csv", STEP_COLUMNS, _steps(epoch_rows, data_wait_share, rng))
    _write_csv(path / "gpu.csv", GPU_COLUMNS, gpu_rows)
    _write_csv(path / "host.csv", HOST_COLUMNS, host_rows)
    _write_csv(path / "markers.csv", MARKER_COLUMNS,
               [{"t": round(t0, 3), "label": label} for t0, label in markers])
    meta = {
        "run_id": run_id, "name": name, "engine": engine, "status": status, "error": error,
        "started_at": f"2026-11-21T10:{15 + index:02d}:00+00:00",
        "ended_at": f"2026-11-21T10:{15 + index:02d}:{min(59, int(end) % 60):02d}+00:00",
        "config": cfg,
        "versions": ({"python": "3.10.12", "torch": "2.5.1", "numpy": "1.26.4",
                      "gpu_course": "0.1.0"} if engine == "pytorch" else
                     {"python": "3.10.12", "mxnet": "1.9.1", "gluoncv": "0.10.5",
                      "numpy": "1.23.5", "gpu_course": "0.1.0"}),
        "hardware": {"gpus": [dict(H100, index=i) for i in range(machine_gpus)],
                     "driver": "550.54.15" if machine_gpus else None,
                     "cuda": "12.4" if machine_gpus else None,
                     "cpu_count": cpu_count,
                     "cpu_model": "Intel(R) Xeon(R) Platinum 8480C" if machine_gpus
                     else "Intel(R) Xeon(R) CPU @ 2.20GHz",
                     "hostname": "trainer-01", "platform": "Linux-5.15-x86_64"},
        "git": {"commit": "3f2a9c1d0b7e", "dirty": False},
        "summary": _summary(cfg, epoch_rows, gpu_rows, spans) if summary else
        dict.fromkeys(["samples_per_sec", "epoch_time_s", "data_wait_share", "gpu_util",
                       "val_acc", "summary_line"]),
        "notes": {},
    }
    (path / "run.json").write_text(json.dumps(meta, indent=2))
    return path


def gpu_ladder(runs_dir) -> list[Path]:
    """Five rungs on a 2 x H100 machine: three good ones, a crash and an OOM."""
    common = dict(machine_gpus=2, engine="pytorch")
    return [
        write_run(runs_dir, "naive", samples_per_sec=640.0, busy=45, data_wait_share=0.62,
                  seed=1, index=0, **common),
        write_run(runs_dir, "8 workers", samples_per_sec=2100.0, busy=88, data_wait_share=0.12,
                  config={"num_workers": 8}, seed=2, index=1, **common),
        write_run(runs_dir, "float16", samples_per_sec=5200.0, busy=97, data_wait_share=0.03,
                  config={"num_workers": 8, "dtype": "float16"}, seed=3, index=2, **common),
        # GPU 1 falls off the bus in epoch 2; the run dies with it a few seconds later
        write_run(runs_dir, "2 GPUs", num_gpus=2, samples_per_sec=9800.0, busy=95,
                  data_wait_share=0.05, lost_gpu=(1, 12.5), stop_after=15.0, status="failed",
                  error="CUDA error: unspecified launch failure (GPU 1 is lost)",
                  config={"num_workers": 8, "dtype": "float16"}, seed=4, index=3, **common),
        write_run(runs_dir, "batch 4096", epochs=0, status="oom", busy=60, data_wait_share=0.0,
                  error="CUDA out of memory. Tried to allocate 3.06 GiB (GPU 0; 79.10 GiB total)",
                  config={"num_workers": 8, "dtype": "float16", "batch_size": 4096},
                  seed=5, index=4, **common),
    ]


def cpu_ladder(runs_dir) -> list[Path]:
    """Two Gluon rungs on a 2-core machine without a GPU; summaries left null."""
    common = dict(num_gpus=0, machine_gpus=0, engine="gluon", cpu_count=2, gpm=False,
                  summary=False, interval=2.0)
    return [
        write_run(runs_dir, "cpu naive", samples_per_sec=95.0, data_wait_share=0.35,
                  seed=6, index=5, **common),
        write_run(runs_dir, "cpu hybridize", samples_per_sec=160.0, data_wait_share=0.4,
                  config={"graph": "hybrid"}, seed=7, index=6, **common),
    ]


def batch_sweep(runs_dir) -> list[Path]:
    """A batch-size sweep on one H100: throughput grows with the batch until 2048 OOMs."""
    speeds = {64: 2900.0, 128: 5200.0, 256: 7400.0, 512: 8300.0}
    paths = [write_run(runs_dir, f"batch {b}", samples_per_sec=v, busy=min(99, 70 + b / 16),
                       data_wait_share=0.03, config={"batch_size": b, "num_workers": 8,
                                                     "dtype": "float16"},
                       seed=20 + i, index=10 + i) for i, (b, v) in enumerate(speeds.items())]
    paths.append(write_run(runs_dir, "batch 2048", epochs=0, status="oom", busy=60,
                           error="CUDA out of memory. Tried to allocate 12.25 GiB",
                           config={"batch_size": 2048, "num_workers": 8, "dtype": "float16"},
                           seed=30, index=15))
    return paths


def load(path):
    """Read a folder back with the course's own loader."""
    from gpu_course.measure.records import load_run
    return load_run(path)


# -- the pieces ------------------------------------------------------------------------

def busy(run, other_cores):
    """Record on a loaded run that other programs kept `other_cores` cores of 16 busy while
    it ran (its process one core, each loader worker one; a ceiling's workers idle)."""
    workers = 0 if run.config.get("mock") == "loader" else run.config.get("num_workers", 0)
    run.meta["load"] = {"start": {"wall": 0.0, "cpu_busy_s": 0.0, "process_cpu_s": 0.0,
                                  "cpu_count": 16},
                        "end": {"wall": 10.0, "cpu_busy_s": 10.0 * (1 + workers + other_cores),
                                "process_cpu_s": 10.0}}
    return run


def _epochs(cfg, epochs, samples_per_sec, data_wait_share, rng):
    rows, t = [], STARTUP_S
    samples = cfg["train_size"]
    skill = rng.uniform(-0.05, 0.02)  # runs differ a little in how well they learn
    steps = math.ceil(samples / cfg["batch_size"])
    for epoch in range(1, epochs + 1):
        # the first epoch carries cuDNN autotuning and worker start-up
        speed = samples_per_sec * (0.82 if epoch == 1 else rng.uniform(0.97, 1.03))
        took = samples / speed
        warm = epoch == 1  # the first epoch's steps are the run's warm-up
        rows.append({
            "epoch": epoch, "epoch_time_s": round(took, 3),
            "samples_per_sec": "" if warm else round(speed, 2),
            "data_wait_s": round(took * data_wait_share, 3),
            "compute_s": round(took * (1 - data_wait_share), 3), "sync_s": 0.0,
            "steps": steps, "samples": samples,
            "timed_steps": 0 if warm else steps, "timed_samples": 0 if warm else samples,
            "timed_s": 0.0 if warm else round(took, 3),
            "timed_wait_s": 0.0 if warm else round(took * data_wait_share, 3),
            "eval_s": VALIDATION_S, "t_steady": "" if warm else round(t, 3),
            "loss": round(1.9 * (0.62 - skill) ** (epoch - 1), 4),
            "train_acc": round(0.93 + skill - 0.6 * 0.6 ** epoch, 4),
            "val_acc": round(0.90 + skill - 0.6 * 0.62 ** epoch, 4), "lr": cfg["lr"],
            "t_start": round(t, 3), "t_end": round(t + took, 3)})
        t += took + VALIDATION_S
    return rows, t


def _steps(epoch_rows, data_wait_share, rng):
    """Per-step rows adding up to each epoch's time, with a few slow (spiky) steps."""
    rows = []
    for e in epoch_rows:
        n = e["steps"]
        times = rng.gamma(20.0, 1.0, n)
        times = times / times.sum() * e["epoch_time_s"]
        for i, total in enumerate(times):
            wait = total * min(0.95, max(0.0, rng.normal(data_wait_share, 0.05)))
            rows.append({"epoch": e["epoch"], "step": i, "samples": e["samples"] // n,
                         "data_wait_s": round(wait, 6), "compute_s": round(total - wait, 6),
                         "timed": 0 if e["timed_steps"] == 0 else 1, "device_s": ""})
    return rows


def _gpu_samples(times, spans, num_gpus, busy, data_wait_share, gpm, lost_gpu, oom, rng):
    rows = []
    total = H100["memory_total_mib"]
    for t in times:
        training = any(a <= t <= b for a, b in spans)
        for gpu in range(num_gpus):
            if lost_gpu is not None and gpu == lost_gpu[0] and t >= lost_gpu[1]:
                rows.append({"t": round(t, 3), "gpu": gpu, "clock_event_reasons": "",
                             "error": "GPU is lost"})
                continue
            starved = rng.rand() < data_wait_share * 0.8
            if oom:  # allocations grow until the one that does not fit
                util, mem = rng.uniform(20, 60), min(total - 300, 9000 + 25000 * t)
            elif training:
                util = rng.uniform(0, 12) if starved else np.clip(rng.normal(busy, 4), 0, 100)
                mem = 14500 + rng.uniform(-40, 40)
            else:
                util, mem = (rng.uniform(0, 3), 600 + 2000 * min(t, 3.0))
            util = float(np.clip(util, 0, 100))
            power = 75 + (H100_POWER_LIMIT_W - 75) * util / 100 * 0.85 + rng.normal(0, 6)
            rows.append({
                "t": round(t, 3), "gpu": gpu, "util_gpu": round(util),
                "util_mem": round(util * 0.45), "mem_used_mib": round(mem),
                "mem_total_mib": total, "power_w": round(power, 1),
                "power_limit_w": H100_POWER_LIMIT_W, "temp_c": round(34 + util * 0.3),
                "sm_clock_mhz": 1980 if util < 90 else 1755, "sm_clock_max_mhz": 1980,
                "clock_event_reasons": "sw_power_cap" if util >= 90 else "",
                # GPM: the share of SMs busy and of tensor pipes busy, far below GPU-Util
                "sm_active": round(util * 0.52, 1) if gpm else "",
                "tensor_active": round(util * 0.21, 1) if gpm else "",
                "dram_active": round(util * 0.3, 1) if gpm else "", "error": ""})
    return rows


def _host_samples(times, spans, cpu_count, data_wait_share, rng):
    rows = []
    for t in times:
        training = any(a <= t <= b for a, b in spans)
        level = 35 + 50 * data_wait_share if training else 8
        cores = np.clip(rng.normal(level, 15, cpu_count), 0, 100)
        cores[0] = min(100, cores[0] + 30)  # the training process's own core
        rows.append({"t": round(t, 3), "cpu_percent": round(float(cores.mean()), 1),
                     "cpu_per_core": ";".join(f"{c:.1f}" for c in cores),
                     "ram_used_mib": round(9000 + (2500 if training else 0) + rng.normal(0, 30)),
                     "ram_total_mib": 257_000 if cpu_count > 2 else 24_000})
    return rows


def _summary(cfg, epoch_rows, gpu_rows, spans):
    steady = epoch_rows[1:] if len(epoch_rows) > 1 else epoch_rows
    utils = [r["util_gpu"] for r in gpu_rows if "util_gpu" in r
             and any(a <= r["t"] <= b for a, b in spans)]
    wait = sum(r["data_wait_s"] for r in epoch_rows)
    busy = wait + sum(r["compute_s"] for r in epoch_rows)
    rates = [r["samples_per_sec"] for r in steady if r["samples_per_sec"] != ""]
    sps = float(np.mean(rates)) if rates else None
    epoch_time = float(np.mean([r["epoch_time_s"] for r in steady])) if steady else None
    return {"samples_per_sec": sps, "epoch_time_s": epoch_time,
            "data_wait_share": wait / busy if busy else None,
            "gpu_util": float(np.mean(utils)) if utils else None,
            "val_acc": epoch_rows[-1]["val_acc"] if epoch_rows else None,
            "summary_line": None if sps is None else
            (f"NUM_GPU: {cfg['num_gpus']}, NUM_WORKER: {cfg['num_workers']}, "
             f"BATCH_SIZE_PER_GPU: {cfg['batch_size']}, TYPECAST: {cfg['dtype']}, "
             f"Samples/Sec: {sps:.2f}, epoch time: {epoch_time:.2f}")}


def _write_csv(path, columns, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows(rows)
