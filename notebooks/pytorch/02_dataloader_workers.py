# %% [markdown]
# # 2. More DataLoader workers: feed the GPU
#
# **What this lesson measures.** The same job as the baseline while the number of loader
# processes (`num_workers`) grows from 0 (PyTorch's default: the training process loads
# the data itself) to `cpu_count() - 3`, the talk's advice (leave a few cores for the
# training loop and the system). For each count: samples/s, how spiky the GPU's utilisation
# is, where the curve stops paying (the knee) and what each worker costs in memory. Then
# the DataLoader's other knobs: `pin_memory`, `persistent_workers` and `prefetch_factor`.
#
# **The talk's numbers** (Apache MXNet on a V100 in 2019): 1 worker 306 samples/s, 40.97 s
# per epoch; **29 workers 663 samples/s, 18.59 s per epoch**. A second example in the same
# course (PyTorch, ResNet-50, Caltech-256): 1 worker 100 images/s with the GPU peaking at
# 50 %, 7 workers 300 images/s with the GPU at about 95 %. Your numbers come from your machine.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
DATASET = "synthetic"                 # "cifar10" where the real data set is in data/
TRAIN_SIZE = 768 if SMOKE else 50_000
TEST_SIZE = 256 if SMOKE else 10_000
EPOCHS = 1 if SMOKE else 2
KNOB_EPOCHS = 2 if SMOKE else 3       # the knobs run: persistent workers pay from the 2nd epoch
WORKER_COUNTS = None                  # None: 0, 1, 2, 4, 8, ... up to cpu_count() - 3 (0, 1, 2 in smoke mode)
LARGE_BATCH = 128 if SMOKE else 640   # the talk's batch per GPU, for its one-worker collapse

# %%
import numpy as np
import pandas as pd
import psutil
import torch
from torch.utils.data import DataLoader
import gpu_course
from gpu_course.tracks import torch as gc

recommended = max(2, os.cpu_count() - 3)   # the talk: cpu_count() - 3, at least 2
if WORKER_COUNTS is None:
    WORKER_COUNTS = sorted({0, 1, recommended} | {2 ** k for k in range(1, 8) if 2 ** k < recommended})
    if SMOKE:
        WORKER_COUNTS = [0, 1, 2]
print(f"{os.cpu_count()} CPU cores: the talk's advice is {recommended} workers; sweeping {WORKER_COUNTS}")

cfg = gc.Experiment(name="workers", engine="pytorch", dataset=DATASET, train_size=TRAIN_SIZE,
                    test_size=TEST_SIZE, epochs=EPOCHS, model="resnet20", batch_size=64,
                    warmup_steps=2 if SMOKE else 5, monitor_interval=0.2 if SMOKE else 0.5)
train_set, val_set = gc.load_datasets(cfg)
val_iter = gc.make_loader(val_set, cfg, train=False)

# %% [markdown]
# ## The one change: `num_workers`
# Each worker is a separate process that takes a batch's indices, reads and augments its
# images and hands the finished batch back through shared memory. With several workers,
# several batches are prepared at once, so the next one is ready when the GPU finishes the
# current one. With `num_workers=0` the training loop does all of that itself, between steps.
#
# Every step's data wait and compute are recorded with the run, so the spikiness shows on
# any machine, with or without a GPU.

# %%
runs = []
for n in WORKER_COUNTS:
    train_iter = DataLoader(train_set, batch_size=64, shuffle=True, drop_last=True,
                            num_workers=n)                       # <- the lesson
    runs.append(gc.train(cfg.replace(name=f"num_workers={n}", num_workers=n),
                         net=gc.get_model("resnet20"), train_iter=train_iter, val_iter=val_iter,
                         verbose=False))
    print(runs[-1].summary["summary_line"])

# %%
gc.plots.sweep(runs, x="num_workers")

# %% [markdown]
# Steps of the fewest and of the most workers: with too few, the slow steps are the ones
# that waited for data.

# %%
display(gc.plots.step_times(runs[0]), gc.plots.step_times(runs[-1]))

# %% [markdown]
# ## Spikiness and the knee
# A starved GPU alternates between 100 % (a batch arrived) and 0 % (waiting), so the
# standard deviation of its utilisation is high; a well-fed one stays flat near the top.
# The knee is the smallest worker count within 10 % of the best throughput: workers beyond
# it cost memory and CPU and buy little.

# %%
def util_spread(run):
    """Std of GPU-Util (%) over the samples inside the steady training windows (the ones
    `gc.metrics.gpu_util` averages); NaN without a GPU."""
    gpu = run.gpu.dropna(subset=["util_gpu"])
    inside = np.zeros(len(gpu), bool)
    for start, end in gc.metrics.training_windows(run):
        inside |= (gpu["t"] >= start).to_numpy() & (gpu["t"] <= end).to_numpy()
    return float(gpu["util_gpu"][inside].std()) if inside.sum() > 1 else float("nan")

table = gc.report.ladder_table(runs)
table.insert(1, "num_workers", WORKER_COUNTS)
table["gpu_util_std"] = [util_spread(r) for r in runs]
table["step_ms_median"] = [1000 * gc.metrics.steadiness(r)["step_p50_s"] for r in runs]
table["waited_share"] = [gc.metrics.steadiness(r)["waited_share"] for r in runs]
gc.tables.show(table)

# %%
say = gc.closing.Closing(table, runs)   # prints a line only when its numbers are the table's
best = int(table["samples_per_sec"].idxmax())
gain = say.compare(0, best)
knee = int(table.index[table["samples_per_sec"] >= 0.9 * table["samples_per_sec"].max()][0])
say(f"{say.cell(0, 'num_workers')} worker(s): {say.cell(0, 'samples_per_sec')} samples/s; best: "
    f"{say.cell(best, 'samples_per_sec')} samples/s with {say.cell(best, 'num_workers')} worker(s): "
    f"{gain}.")
if gain.is_effect:
    say(f"The knee: {say.cell(knee, 'num_workers')} worker(s) already reach "
        f"{say.ratio('samples_per_sec', best, knee, percent=True)} of the best.")
else:
    say("The best is within noise of the first: no knee can be placed on this machine.")
spread = "gpu_util_std" if table["gpu_util_std"].notna().all() else "spikiness"
unit = "GPU-Util std" if spread == "gpu_util_std" else "p95/median step time"
say(f"Spikiness ({unit}): " + ", ".join(f"{say.cell(i, 'num_workers')} worker(s) {say.cell(i, spread)}"
                                        for i in range(len(table))))

# %% [markdown]
# ## A large batch with one worker
# The talk's sharpest number (its slide, not measured here): its 4-GPU job at batch 640 per
# GPU trained at 50,000 samples/s, 4.0 s an epoch, with 29 workers, and collapsed to about
# 1,500 samples/s, 60+ s an epoch, with **one** worker. A large batch needs many images
# per step, and one worker prepares them one after the other. The same two loaders here:
# batch `LARGE_BATCH` with one worker, then with the sweep's fastest count.

# %%
from gpu_course.scale.distributed import TALK
fastest = int(table.num_workers[table["samples_per_sec"].idxmax()])
many = fastest if fastest > 1 else recommended   # a count above one to set against one
large = []
for n in (1, many):
    train_iter = DataLoader(train_set, batch_size=LARGE_BATCH, shuffle=True, drop_last=True,
                            num_workers=n)
    large.append(gc.train(cfg.replace(name=f"batch {LARGE_BATCH}, num_workers={n}",
                                      batch_size=LARGE_BATCH, num_workers=n),
                          net=gc.get_model("resnet20"), train_iter=train_iter, val_iter=val_iter,
                          verbose=False))
large_table = gc.report.ladder_table(large)
gc.tables.show(large_table)

# %%
one, most = large_table.itertuples()
print(f"The talk ({TALK['k']} V100s, batch {TALK['batch']} a GPU, its slide): {TALK['workers']} workers "
      f"{TALK['samples_per_sec_k']:,} samples/s, {TALK['epoch_s_k']:.1f} s an epoch; 1 worker about "
      f"{TALK['samples_per_sec_k_one_worker']:,} samples/s, {TALK['epoch_s_k_one_worker']}+ s an epoch "
      f"(×{TALK['samples_per_sec_k'] / TALK['samples_per_sec_k_one_worker']:.0f}).")
print(f"This machine, batch {LARGE_BATCH}: 1 worker {one.samples_per_sec:,.0f} samples/s, "
      f"{one.epoch_time_s:.1f} s an epoch; {many} workers {most.samples_per_sec:,.0f} samples/s, "
      f"{most.epoch_time_s:.1f} s an epoch. {many} workers against 1: "
      f"{gc.noise.sentence(gc.noise.compare(*large))}.")

# %% [markdown]
# ## What a worker costs in memory
# Workers are forked processes. Their resident set (RSS) counts pages shared with the
# notebook; the unique set (USS) is what each worker adds on its own. We measure both while
# a loader is alive and has delivered a batch.

# %%
me = psutil.Process()
memory = []
for n in [n for n in WORKER_COUNTS if n > 0]:
    before = {p.pid for p in me.children(recursive=True)}
    loader = DataLoader(train_set, batch_size=64, shuffle=True, drop_last=True, num_workers=n)
    batches = iter(loader)
    next(batches)                              # the workers are up and have done real work
    workers = [p for p in me.children(recursive=True) if p.pid not in before]
    infos = [w.memory_full_info() for w in workers]
    memory.append({"num_workers": n, "processes": len(workers),
                   "rss_mib_per_worker": np.mean([i.rss for i in infos]) / 2**20,
                   "uss_mib_per_worker": np.mean([i.uss for i in infos]) / 2**20})
    del batches, loader
memory = pd.DataFrame(memory)
gc.tables.show(memory)

# %%
per_worker = memory["uss_mib_per_worker"].mean()
print(f"Each worker adds about {per_worker:,.0f} MiB of its own memory (RSS "
      f"{memory['rss_mib_per_worker'].mean():,.0f} MiB including pages shared with the notebook): "
      f"{recommended} workers cost about {recommended * per_worker:,.0f} MiB of RAM "
      f"on this {psutil.virtual_memory().total / 2**30:,.0f} GiB machine.")

# %% [markdown]
# ## PyTorch's other loader knobs
# Three more arguments of `DataLoader`, tried at the talk's worker count:
#
# - `pin_memory=True`: workers' batches are copied into page-locked host memory, from
#   which the GPU copies without a detour, and `tensor.to(device, non_blocking=True)`
#   (what `gc.train` does) lets that copy overlap with the computation.
# - `persistent_workers=True`: the workers stay alive between epochs instead of being
#   started again (and re-importing, re-forking) at the start of every epoch.
# - `prefetch_factor=4`: each worker keeps 4 batches ready instead of 2, to ride out slow batches.
#
# The combined run is the ladder's "workers" rung.

# %%
knob_cfg = cfg.replace(epochs=KNOB_EPOCHS, num_workers=recommended)
plain_iter = DataLoader(train_set, batch_size=64, shuffle=True, drop_last=True,
                        num_workers=recommended)
tuned_iter = DataLoader(train_set, batch_size=64, shuffle=True, drop_last=True,
                        num_workers=recommended, pin_memory=torch.cuda.is_available(),
                        persistent_workers=True, prefetch_factor=4)   # <- the knobs
plain = gc.train(knob_cfg.replace(name=f"num_workers={recommended}, {KNOB_EPOCHS} epochs"),
                 net=gc.get_model("resnet20"), train_iter=plain_iter, val_iter=val_iter, verbose=False)
tuned = gc.train(knob_cfg.replace(name="workers", pin_memory=tuned_iter.pin_memory,
                                  persistent_workers=True, prefetch_factor=4),
                 net=gc.get_model("resnet20"), train_iter=tuned_iter, val_iter=val_iter, verbose=False)
knobs = gc.report.ladder_table([plain, tuned])
knobs["epoch 2+ time (s)"] = [r.epochs.epoch_time_s.iloc[1:].mean() for r in (plain, tuned)]
gc.tables.show(knobs)

# %%
say = gc.closing.Closing(knobs, [plain, tuned])
say(f"pin_memory + persistent_workers + prefetch_factor=4 at {recommended} workers against the plain "
    f"loader: {say.cell(0, 'samples_per_sec')} → {say.cell(1, 'samples_per_sec')} samples/s, "
    f"{say.compare(0, 1)}; epochs after the first {say.cell(0, 'epoch 2+ time (s)', '{:.2f} s')} → "
    f"{say.cell(1, 'epoch 2+ time (s)', '{:.2f} s')}.")
if not torch.cuda.is_available():
    say(f"No GPU here: pinned memory only speeds up copies to a GPU, so it was left off "
        f"(pin_memory={tuned_iter.pin_memory}); the workers and the model share {os.cpu_count()} "
        "CPU cores, where on a GPU machine the cores only feed the GPU.")

# %% [markdown]
# ## Beside the reference machine
# Runs of these notebooks at full size on an NVIDIA H200, when recorded, are kept in
# `gpu_course/reference/pytorch-h200/` (its worker counts follow its own cores).

# %%
mine = runs + [plain, tuned]
latest = gc.report.reference_runs("num_workers=", "workers")
if latest:
    display(gc.tables.show(gc.report.beside_reference(mine, latest)))
    ref = latest.get("workers")
    if ref is not None:
        print(f"The H200 reference's tuned loader ({ref.config['num_workers']} workers) trained at "
              f"{gc.report.samples_per_sec(ref):,.0f} samples/s, waiting for data {gc.report.data_wait_share(ref):.0%} "
              f"of each step; this machine: {gc.report.samples_per_sec(tuned):,.0f} samples/s, "
              f"{gc.report.data_wait_share(tuned):.0%}.")
else:
    print(gc.report.no_reference_line())
