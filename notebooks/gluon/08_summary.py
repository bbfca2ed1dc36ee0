# %% [markdown]
# # 8. The whole ladder
#
# **What this notebook shows.** Every rung of the course side by side, read back from the
# run records the earlier notebooks wrote: samples/s, speed-up over the naive baseline, GPU
# utilisation and validation accuracy. Each lesson named the run that stands for its rung
# ("naive", "workers", "hybridize", "float16", "large-batch", "lr-schedule", "num-gpus");
# the latest run of each name is used. With no records at all (this notebook run on its
# own) it trains the ladder itself first; on a CPU that ladder reads photos and has a
# "data-format" rung (loose JPEGs packed once, offline: the talk's pre-processing rung).
#
# **The talk's ladder** (V100s in 2019): naive 306 samples/s → 29 workers 663 → hybridize
# 941 → float16 3,100 → batch 640 17,000 (one GPU) → 4 GPUs 50,000: about ×160 from the
# same model and data. Your numbers come from your machine.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
RUNS_DIR = None                       # None: GPU_COURSE_RUNS or the repository's runs/

# %%
import pandas as pd
from gpu_course.tracks import gluon as gc

RUNGS = ["naive", "workers", "data-format", "hybridize", "float16", "large-batch", "lr-schedule", "num-gpus", "all-gpus"]
latest = {run.name: run for run in gc.load_runs(RUNS_DIR, names=RUNGS)   # oldest first: the last wins
          if run.meta.get("engine") == "gluon"}   # this track's runs only (the folder may hold both)
runs = [latest[name] for name in RUNGS if name in latest]
if not runs:
    from gpu_course.ladder import run_ladder
    print("No recorded rungs found: training the ladder now" + (" (quick mode)" if SMOKE else ""))
    runs, report_paths = run_ladder("gluon", quick=SMOKE, runs_dir=RUNS_DIR)
print(f"{len(runs)} rung(s) of the {', '.join(sorted({r.meta['engine'] for r in runs}))} track: "
      + ", ".join(f"{r.name} ({r.meta['run_id']})" for r in runs))

# %% [markdown]
# ## The table
# What each rung changed (read from its recorded configuration) and what it bought.
# Speed-up is relative to the naive run; the talk's column is its V100 number for the same rung.

# %%
baseline = "naive" if "naive" in [r.name for r in runs] else 0
table = gc.report.ladder_table(runs, baseline=baseline)
for field in ("num_workers", "data_format", "graph", "dtype", "batch_size", "num_gpus", "optimizer", "lr_scheduler"):
    table[field] = [r.config.get(field) for r in runs]   # what really ran, as recorded
talk = {"naive": 306, "workers": 663, "hybridize": 941, "float16": 3100, "large-batch": 17000,
        "num-gpus": 50000, "all-gpus": 50000}
table["talk samples/s"] = table["rung"].map(talk)
table["talk speed-up"] = table["talk samples/s"] / talk["naive"]
changes = ["num_workers", "data_format", "graph", "dtype", "batch_size", "num_gpus", "optimizer", "lr_scheduler"]
gc.tables.show(table[["rung", *changes, "samples_per_sec", "speedup", "talk speed-up", "gpu_util",
                      "data_wait_share", "val_acc", "status"]])

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
    print(f"On the talk's V100s the same rung was ×{talk[top.rung] / talk['naive']:.1f} the naive run; "
          f"here '{top.rung}' against '{base_run.name}': {gc.noise.compare(base_run, top_run)}.")
if table.gpu_util.isna().all():
    print("No rung recorded GPU utilisation: the ladder ran without a GPU. Its fixes keep a GPU from "
          "waiting; where the CPU does the computing too, the computation is the bottleneck and "
          "most of them cannot show. Run the course on a GPU machine to see the ladder climb.")
notices = {}  # what a rung could not do on this machine, as its run recorded it
for run in runs:
    notice = (run.meta.get("notes") or {}).get("device_notice")
    if notice:
        notices.setdefault(notice, []).append(run.name)
for notice, names in notices.items():
    print(f"{notice} ({', '.join(names)})")
machines = gc.plots.hardware_caption(runs)
print(f"Measured on: {machines}.")
