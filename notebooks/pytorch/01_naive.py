# %% [markdown]
# # 1. The naive baseline: how busy is the GPU?
#
# **What this lesson measures.** One training job as a first PyTorch script writes it:
# ResNet-20 on CIFAR-10-sized images, batch 64, **one** DataLoader worker, float32, an
# eager (not compiled) network. We record samples/s, epoch time and the GPU's utilisation
# while it trains, and split every step into *waiting for data* and *computing*.
#
# **The talk's number** ("The Steady State", Apache MXNet on a V100 in 2019): this setup
# trained at **306 samples/s, 40.97 s per epoch**, and with 4 GPUs at only 392 samples/s:
# four times the compute bought 28 % more speed, because the GPUs waited for the one
# worker. This track runs the same lessons in PyTorch; your numbers come from your machine.
# The question is the same: what does the GPU wait for?

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
from torch.utils.data import DataLoader
from gpu_course import torch as gc

# %% tags=["parameters"]
SIZES = gc.sizes("01")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("01", epochs=5)

# %% [markdown]
# ## The naive script
# Nothing clever: one worker process reads and augments every image (random crop, flip,
# normalise) while the training loop waits for it, and the network runs layer by layer
# from Python. `gc.train` runs the loop and does the bookkeeping: a monitor samples the GPU
# and CPU in its own thread, a step timer splits each step into data wait and compute, and
# everything lands in a run record on disk.

# %%
cfg = gc.Experiment(name="naive", model="resnet20", batch_size=64, num_workers=1,
                    dtype="float32", graph="eager", **SIZES)
train_set, val_set = gc.load_datasets(cfg)
train_iter = DataLoader(train_set, batch_size=64, shuffle=True, drop_last=True,
                        num_workers=1)           # <- one loader worker, as the talk's naive script
net = gc.get_model("resnet20")                   # <- eager: no torch.compile
run = gc.train(cfg, net=net, train_iter=train_iter)

# %% [markdown]
# ## What the GPU did
# GPU utilisation, memory and power over time, with the CPU below; epochs are shaded.
# A naive run shows a saw-tooth: bursts of work while a batch is there, gaps while the
# single worker prepares the next one. (On a machine without a GPU only the CPU panel has data.)

# %%
gc.plots.utilisation_timeline(run)

# %% [markdown]
# ## Step by step: the spikiness itself
# Every step is recorded: how long the host waited for the batch (data wait) and how long
# the rest of the step took (compute: issuing the work, plus any wait for the device).
# Left: each step over time, the warm-up shaded; right: the steady steps' histogram.
# A steady run has one narrow peak; a starved one has slow outliers, steps that waited.

# %%
gc.plots.step_times(run)

# %% [markdown]
# ## Why the GPU waits
# The step timer charges the time spent inside `next(train_iter)` to *data wait* and the
# rest of the step to *compute*. Two short extra runs bound the speed from both sides:
# `mock="trainer"` fetches batches and drops them (how fast can the input pipeline deliver?),
# `mock="loader"` keeps one batch on the device and trains on it again and again (how fast
# can the model compute?). A run can never beat the smaller of the two. These are
# ceilings, not rungs: the table gives them no speed-up.

# %%
input_only = gc.train(cfg.replace(name="naive input-only", mock="trainer", epochs=1,
                                  max_steps=SIZES.ceiling_steps), train_iter=train_iter, verbose=False)
compute_only = gc.train(cfg.replace(name="naive compute-only", mock="loader", epochs=1,
                                    max_steps=SIZES.ceiling_steps), verbose=False)

# %% [markdown]
# What the table says, sentence by sentence: the run's steadiness, then the run against
# its ceilings. Where it sits within the lower ceiling's range, that ceiling sets the pace;
# below both, beyond their noise, neither holds it (overhead); from too few steps, or
# against a ceiling measured differently (another setting, a machine busy with other
# programs), the lesson says so instead of ruling. The sentences are checked against the
# table: `gpu_course/lessons/l01_naive.py`.
#
# The reference machine's ladder (`gpu_course/reference/pytorch-h200/`) has a "naive"
# rung too: a different job (50,000 images, three epochs, an H200), so it is not set
# beside this run here; its report is in `gpu_course/reference/pytorch-h200/report/`.

# %%
runs = [run, input_only, compute_only]
gc.show(runs, lesson="01", chart=False)
gc.conclude("01", runs)

# %% [markdown]
# ## Exercise 01.1: fewer workers, or more?
# Predict, then measure. The naive script once more, on `SIZES.exercise_size` images: set
# the worker count at the line marked `# >>>` (0: the training process prepares every
# batch itself, between its steps; 2, 4...: several batches in the making at once) and,
# **before you run it**, write down what you expect of the share of each step spent
# waiting for data, against one worker: `"more"`, `"less"` or `"same"`. The check then
# tells you what that did to samples/s, and why the two need not move together.
#
# The check reads both runs' records: it asks for the worker count changed and nothing
# else, enough steady steps for a verdict against noise (the data wait of five blocks of
# each run's steps), and a prediction the measurement does not contradict. When it says
# "not yet", it says why. `gc.solution("01.1")` shows one answer, once you have tried.

# %% tags=["exercise"]
ex_cfg = gc.Experiment(name="exercise", model=SIZES.exercise_model, batch_size=64, dtype="float32",
                       graph="eager", **SIZES.replace(train_size=SIZES.exercise_size))
ex_set, _ = gc.load_datasets(ex_cfg)
workers = 1                  # >>> the worker count you try instead of 1
prediction = None            # >>> before you run: data wait "more", "less" or "same" than 1 worker
mine = []
for n in dict.fromkeys((1, workers)):   # 1 worker, then yours (once if the same)
    loader = DataLoader(ex_set, batch_size=64, shuffle=True, drop_last=True, num_workers=n)   # <-
    mine.append(gc.train(ex_cfg.replace(name=f"exercise: num_workers={n}", num_workers=n),
                         net=gc.get_model(ex_cfg), train_iter=loader, verbose=False))

# %% tags=["check"]
gc.check("01.1", mine, prediction)
