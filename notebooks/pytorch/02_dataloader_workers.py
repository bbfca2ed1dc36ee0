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

# %%
import torch
from torch.utils.data import DataLoader
from gpu_course import torch as gc
from gpu_course.lessons.l02_workers import worker_memory

# %% tags=["parameters"]
SIZES = gc.sizes("02")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("02", epochs=3)

# %% [markdown]
# ## The one change: `num_workers`
# Each worker is a separate process that takes a batch's indices, reads and augments its
# images and hands the finished batch back through shared memory. With several workers,
# several batches are prepared at once, so the next one is ready when the GPU finishes the
# current one. With `num_workers=0` the training loop does all of that itself, between steps.
#
# The counts: 0 (PyTorch's default), then `SIZES.worker_counts` below the talk's advice
# `gc.workers()` (`cpu_count() - 3`, at least 2), then the advice itself.

# %%
cfg = gc.Experiment(name="workers", model="resnet20", batch_size=64, **SIZES)
train_set, val_set = gc.load_datasets(cfg)
val_iter = gc.make_loader(val_set, cfg, train=False)
counts = [0, *(n for n in SIZES.worker_counts if n < gc.workers()), gc.workers()]
runs = []
for n in counts:
    train_iter = DataLoader(train_set, batch_size=64, shuffle=True, drop_last=True,
                            num_workers=n)                       # <- the lesson
    runs.append(gc.train(cfg.replace(name=f"num_workers={n}", num_workers=n),
                         net=gc.get_model("resnet20"), train_iter=train_iter, val_iter=val_iter,
                         verbose=False))

# %%
gc.plots.sweep(runs, x="num_workers")

# %% [markdown]
# Steps of the fewest and of the most workers: with too few, the slow steps are the ones
# that waited for data.

# %%
display(gc.plots.step_times(runs[0]), gc.plots.step_times(runs[-1]))

# %% [markdown]
# ## What a worker costs in memory
# Workers are forked processes. Their resident set (RSS) counts pages shared with the
# notebook; the unique set (USS) is what each worker adds on its own. `worker_memory`
# starts each loader, takes one batch, and reads its new processes (psutil).

# %%
memory = worker_memory(lambda n: DataLoader(train_set, batch_size=64, num_workers=n), counts)
gc.tables.show(memory)

# %% [markdown]
# ## Spikiness and the knee
# A starved GPU alternates between 100 % (a batch arrived) and 0 % (waiting), so the
# standard deviation of its utilisation is high; a well-fed one stays flat near the top
# (without a GPU, the spread of the step times stands in). The knee is the smallest worker
# count within 10 % of the best throughput: workers beyond it cost memory and CPU and buy
# little. Workers can only save the data wait; a gain larger than that, or one measured
# while other programs loaded the machine for one run and not the other, is not theirs,
# and the closing says so (`gpu_course/lessons/l02_workers.py`).

# %%
gc.show(runs, lesson="02", chart=False)
gc.conclude("02", runs, memory=memory)

# %% [markdown]
# ## A large batch with one worker
# The talk's sharpest number (its slide, not measured here): its 4-GPU job at batch 640 per
# GPU trained at 50,000 samples/s, 4.0 s an epoch, with 29 workers, and collapsed to about
# 1,500 samples/s, 60+ s an epoch, with **one** worker. A large batch needs many images
# per step, and one worker prepares them one after the other. The same two loaders here:
# batch `SIZES.large_batch` with one worker, then with the talk's advice.

# %%
big = cfg.replace(batch_size=SIZES.large_batch)
large = []
for n in (1, gc.workers()):
    big_iter = DataLoader(train_set, batch_size=big.batch_size, shuffle=True, drop_last=True,
                          num_workers=n)                         # <- a large batch, n workers
    large.append(gc.train(big.replace(name=f"batch {big.batch_size}, num_workers={n}", num_workers=n),
                          net=gc.get_model("resnet20"), train_iter=big_iter, val_iter=val_iter, verbose=False))
gc.show(large, lesson="02", chart=False)
gc.conclude("02", large)

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
# The tuned run is the ladder's "workers" rung, the one lesson 08 sums up.

# %%
knob_cfg = cfg.replace(epochs=SIZES.knob_epochs, num_workers=gc.workers())
plain_iter = DataLoader(train_set, batch_size=64, shuffle=True, drop_last=True,
                        num_workers=gc.workers())
tuned_iter = DataLoader(train_set, batch_size=64, shuffle=True, drop_last=True,
                        num_workers=gc.workers(), pin_memory=torch.cuda.is_available(),
                        persistent_workers=True, prefetch_factor=4)   # <- the knobs
plain = gc.train(knob_cfg.replace(name=f"num_workers={gc.workers()}, {SIZES.knob_epochs} epochs"),
                 net=gc.get_model("resnet20"), train_iter=plain_iter, val_iter=val_iter, verbose=False)
tuned = gc.train(knob_cfg.replace(name="workers", pin_memory=tuned_iter.pin_memory,
                                  persistent_workers=True, prefetch_factor=4),
                 net=gc.get_model("resnet20"), train_iter=tuned_iter, val_iter=val_iter, verbose=False)

# %%
gc.show([plain, tuned], lesson="02", chart=False)
gc.conclude("02", [plain, tuned])

# %% [markdown]
# ## Exercise 02.1: find the knee yourself
# Sweep the worker count on `SIZES.exercise_size` images: list at least three counts at
# the line marked `# >>>` (0, a few, the talk's `gc.workers()`, more if your machine has
# the cores), run, and read the table the check cell shows. Then name the knee: the
# fewest workers within 10 % of the best samples/s (or within its noise). Before you run,
# guess where it lies from the data wait of lesson 01, and afterwards explain it from the
# data wait column: workers can remove no more than the data wait.
#
# The check accepts any knee the measurement supports against its noise, and says what
# is wrong otherwise. `gc.solution("02.1")` shows one way, after you have tried.

# %% tags=["exercise"]
sweep_cfg = gc.Experiment(name="exercise", model=SIZES.exercise_model, batch_size=64,
                          **SIZES.replace(train_size=SIZES.exercise_size))
sweep_set, _ = gc.load_datasets(sweep_cfg)
counts = [1]                 # >>> three or more worker counts
mine = []
for n in counts:
    loader = DataLoader(sweep_set, batch_size=64, shuffle=True, drop_last=True, num_workers=n)   # <-
    mine.append(gc.train(sweep_cfg.replace(name=f"exercise: num_workers={n}", num_workers=n),
                         net=gc.get_model(sweep_cfg), train_iter=loader, verbose=False))

# %% tags=["check"]
gc.show(mine, lesson="02", chart=False)
knee = None                  # >>> the knee you read from the table
gc.check("02.1", mine, knee)
