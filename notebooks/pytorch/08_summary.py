# %% [markdown]
# # 8. The whole ladder
#
# **What this notebook shows.** Every rung of the course side by side, read back from the
# run records the earlier notebooks wrote: samples/s, speed-up over the naive baseline, GPU
# utilisation and validation accuracy. Each lesson named the run that stands for its rung
# ("naive", "workers", "compile", "bfloat16" or "float16", "large-batch", "lr-schedule",
# "num-gpus"); the latest run of each name is used. One rung is new here and is trained
# now: the whole dataset and its augmentation on the GPU ("data-on-gpu"), the fix the
# fastest CIFAR-10 trainers use. With no records at all (this notebook run on its own) it
# trains the ladder itself first (on a CPU that ladder reads photos and has a "data-format"
# rung: loose JPEGs packed once, offline). Last, a warning about what "GPU-Util" does not
# measure.
#
# **The talk's ladder** (Apache MXNet on V100s in 2019): naive 306 samples/s → 29 workers 663
# → hybridize 941 → float16 3,100 → batch 640 17,000 (one GPU) → 4 GPUs 50,000: about ×160
# from the same model and data. Your numbers come from your machine.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
RUNS_DIR = None                       # None: GPU_COURSE_RUNS or the repository's runs/
# if the ladder must be trained here: aot_eager only traces (seconds on a CPU), inductor compiles
COMPILE_BACKEND = "aot_eager" if SMOKE else "inductor"

# %%
import numpy as np
import pandas as pd
import torch
import gpu_course
from gpu_course import data
from gpu_course.tracks import torch as gc

os.environ.setdefault(gc.COMPILE_BACKEND_ENV, COMPILE_BACKEND)
RUNGS = ["naive", "workers", "data-format", "compile", "bfloat16", "float16", "large-batch", "lr-schedule",
         "data-on-gpu", "cuda-graphs", "num-gpus"]

def pick_rungs(runs):
    """The latest run of each rung name, in ladder order; of the two precisions the faster."""
    latest = {r.name: r for r in runs if r.name in RUNGS and r.meta.get("engine") == "pytorch"}
    precision = [latest.pop(p) for p in ("bfloat16", "float16") if p in latest]
    if precision:
        latest["precision"] = max(precision, key=gc.report.samples_per_sec)
    order = [n if n not in ("bfloat16", "float16") else "precision" for n in RUNGS]
    return [latest[n] for n in dict.fromkeys(order) if n in latest]

runs = pick_rungs(gc.load_runs(RUNS_DIR))
if not [r for r in runs if r.name != "num-gpus"]:   # none, or only lesson 07's multi-process run
    from gpu_course.ladder import run_ladder
    print("No recorded rungs found: training the ladder now" + (" (quick mode)" if SMOKE else ""))
    ladder_runs, report_paths = run_ladder("pytorch", quick=SMOKE, runs_dir=RUNS_DIR)
    runs = pick_rungs(ladder_runs)
print(f"{len(runs)} rung(s) of the {', '.join(sorted({r.meta['engine'] for r in runs}))} track: "
      + ", ".join(f"{r.name} ({r.meta['run_id']})" for r in runs))

# %% [markdown]
# ## The tuned rung: data on the GPU
# A CPU loader decodes, crops, flips and normalises each image in Python and copies every
# batch to the GPU. `gc.GpuLoader` copies the uint8 images to the device once and cuts each
# batch out of them with a few tensor operations for the whole batch (one gather crops and
# flips every image at once). No worker processes, no copy per step. It trains on top of the
# last single-device rung's configuration, read from its record.

# %%
if "data-on-gpu" not in [r.name for r in runs]:
    single = [r for r in runs if r.name != "num-gpus"]
    base = gc.Experiment.from_dict(single[-1].config)
    cfg = base.replace(name="data-on-gpu", data_on_gpu=True, num_workers=0, pin_memory=False,
                       persistent_workers=False, num_gpus=1)
    device = gc.try_devices(1)[0][0]
    arrays = data.load(cfg.dataset, root=cfg.data_dir, train_size=cfg.train_size,
                       test_size=cfg.test_size, seed=cfg.seed)
    dtype = torch.bfloat16 if cfg.dtype == "bfloat16" else torch.float32
    train_iter = gc.GpuLoader(arrays.train_x, arrays.train_y, cfg.batch_size, device=device,
                              train=True, dtype=dtype, channels_last=cfg.channels_last, seed=cfg.seed)   # <- the rung
    val_iter = gc.GpuLoader(arrays.test_x, arrays.test_y, cfg.batch_size, device=device,
                            train=False, dtype=dtype, channels_last=cfg.channels_last)
    print(f"{cfg.train_size:,} training images on {device}: "
          f"{train_iter.images.numel() * train_iter.images.element_size() / 2**20:,.0f} MiB (uint8, padded)")
    gc.train(cfg, train_iter=train_iter, val_iter=val_iter, devices=[device], runs_dir=RUNS_DIR)
    runs = pick_rungs(gc.load_runs(RUNS_DIR))

# %% [markdown]
# ## The table
# What each rung changed (read from its recorded configuration) and what it bought.
# Speed-up is relative to the naive run; the talk's column is its V100 number for the same rung.

# %%
baseline = "naive" if "naive" in [r.name for r in runs] else 0
table = gc.report.ladder_table(runs, baseline=baseline)
for field in ("num_workers", "data_format", "data_on_gpu", "graph", "dtype", "batch_size", "num_gpus", "optimizer",
              "lr_scheduler"):
    table[field] = [r.config.get(field) for r in runs]
talk = {"naive": 306, "workers": 663, "compile": 941, "bfloat16": 3100, "float16": 3100,
        "large-batch": 17000, "num-gpus": 50000}
table["talk samples/s"] = table["rung"].map(talk)
table["talk speed-up"] = table["talk samples/s"] / talk["naive"]
gc.tables.show(table)

# %%
gc.plots.ladder(runs, baseline=baseline)

# %%
gc.plots.curves(runs)

# %% [markdown]
# ## What it adds up to

# %%
print(gc.report.conclusion(runs, baseline=baseline))
done = table[table.status == "finished"]
top = done.loc[done.speedup.idxmax()] if done.speedup.notna().any() else None
if top is not None and top.rung in talk and top.rung != "naive":
    base_run, top_run = runs[gc.metrics.baseline_index(runs, baseline)], runs[int(top.name)]
    print(f"On the talk's V100s the same rung was ×{talk[top.rung] / talk['naive']:.0f} the naive run; "
          f"here '{top.rung}' against '{base_run.name}': {gc.noise.compare(base_run, top_run)}.")
if table.gpu_util.isna().all():
    print("No rung recorded GPU utilisation: the ladder ran without a GPU. Its fixes keep a GPU from "
          "waiting; where the CPU does the computing too, the computation is the bottleneck and "
          "most of them cannot show, so the factors above (and the talk's V100 one) are not "
          "comparable. The H200 reference below is the same ladder on a GPU.")
rows = table.set_index("rung")
if {"data-on-gpu", "lr-schedule"} <= set(rows.index):
    named = {r.name: r for r in runs}
    print(f"Moving the data to the {'GPU' if gc.gpu_count() else 'device (here the CPU)'}, samples/s: "
          f"{gc.noise.compare(named['lr-schedule'], named['data-on-gpu'])}; the data wait went "
          f"from {rows.data_wait_share['lr-schedule']:.1%} to {rows.data_wait_share['data-on-gpu']:.1%} of each step.")
notices = {}  # what a rung could not do on this machine, as its run recorded it
for run in runs:
    notice = (run.meta.get("notes") or {}).get("device_notice")
    if notice:
        notices.setdefault(notice, []).append(run.name)
for notice, names in notices.items():
    print(f"{', '.join(names)}: {notice}")
print(f"Measured on: {gc.plots.hardware_caption(runs)}.")

# %% [markdown]
# ## GPU-Util is not SM activity
# NVIDIA's "GPU-Util" (what `nvidia-smi` shows) is the share of time in which *any* kernel
# was running: one small kernel keeping a single SM busy reads 100 %. Hopper GPUs (H100,
# H200) also report GPM metrics through NVML: the share of SMs that were busy and how much
# the tensor cores worked. Where the monitor could read them, they stand beside GPU-Util.

# %%
def activity(runs):
    """GPU-Util beside GPM's SM and tensor-core activity, over the same steady samples
    (`gc.metrics.gpu_util`, `gc.metrics.gpm_activity`: the definitions every table uses)."""
    return pd.DataFrame({"rung": [r.name for r in runs],
                         "gpu_util": [gc.metrics.gpu_util(r) for r in runs],
                         **{c: [gc.metrics.gpm_activity(r)[c] for r in runs]
                            for c in ("sm_active", "tensor_active")}})

def gpm_sentence(frame, where):
    worst = frame.loc[(frame.gpu_util - frame.sm_active).idxmax()]
    tensor = f" and the tensor cores {worst.tensor_active:.0f}%" if not np.isnan(worst.tensor_active) else ""
    return (f"{where}'{worst.rung}': GPU-Util said {worst.gpu_util:.0f}% while the SMs were active "
            f"{worst.sm_active:.0f}%{tensor} of the time: GPU-Util counts time with any kernel running, "
            "not how much of the chip worked.")

here = activity(runs).dropna(subset=["sm_active"])
h200 = activity(pick_rungs(list(gc.report.reference_runs().values()))).dropna(subset=["sm_active"])
if len(here):
    display(gc.tables.show(here))
    print(gpm_sentence(here, ""))
    gc.plots.utilisation_timeline(next(r for r in runs if r.name == here.loc[
        (here.gpu_util - here.sm_active).idxmax()].rung))
else:
    devices = {g.get("name") for r in runs for g in (r.meta.get("hardware") or {}).get("gpus") or []}
    print("SM and tensor-core activity (GPM) are not available on this machine "
          f"({', '.join(sorted(devices)) if devices else 'no GPU'}): they need a Hopper GPU "
          "and a driver that exposes GPM; only GPU-Util could be recorded"
          + ("." if devices else ", and here not even that."))
if len(h200):
    print("On the H200 reference:")
    display(gc.tables.show(h200))
    print(gpm_sentence(h200, "On the H200 reference, "))

# %% [markdown]
# ## Beside the reference machine
# The same ladder at full size on an NVIDIA H200, when recorded, is kept in
# `gpu_course/reference/pytorch-h200/`.

# %%
reference = pick_rungs(list(gc.report.reference_runs().values()))
if reference:
    display(gc.tables.show(pd.concat({"this machine": table.set_index("rung")[["samples_per_sec", "speedup", "gpu_util", "val_acc"]],
                       "H200 reference": gc.report.ladder_table(reference).set_index("rung")[
                           ["samples_per_sec", "speedup", "gpu_util", "val_acc"]]}, axis=1)))
    print(f"On the H200 reference: {gc.report.conclusion(reference)}")
    gc.plots.ladder(reference)
else:
    print(gc.report.no_reference_line())
