# %% [markdown]
# # 1. The naive baseline: how busy is the GPU?
#
# **What this lesson measures.** One training job exactly as a first script would write it:
# ResNet-20 on CIFAR-10-sized images, batch 64, **one** DataLoader worker, float32, an
# imperative (not hybridized) network. We record samples/s, epoch time and the GPU's
# utilisation while it trains, and split every step into *waiting for data* and *computing*.
#
# **The talk's number** (a V100 in 2019, "The Steady State"): this setup trained at
# **306 samples/s, 40.97 s per epoch**, and with 4 GPUs only 392 samples/s: four times the
# compute bought 28 % more speed, because the GPUs were waiting for the one worker.
# Your numbers come from your machine; the question is the same: what does the GPU wait for?

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
from mxnet import gluon
from gpu_course import gluon as gc

# %% tags=["parameters"]
SIZES = gc.sizes("01")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("01", epochs=5)

# %% [markdown]
# ## The naive script
# Nothing clever: one worker process decodes and augments every image (random crop, flip,
# normalise) while the training loop waits for it, and the network runs operator by
# operator from Python. `gc.train` runs the loop and does the bookkeeping: a monitor samples
# the GPU and CPU twice a second in its own thread, a step timer splits each step into
# data wait and compute, and everything lands in a run record on disk.

# %%
cfg = gc.Experiment(name="naive", model="resnet20", batch_size=64, num_workers=1,
                    dtype="float32", graph="imperative", **SIZES)
train_set, val_set = gc.load_datasets(cfg)
train_iter = gluon.data.DataLoader(train_set, batch_size=64, shuffle=True,
                                   last_batch="discard", num_workers=1)   # <- one loader process
net = gc.get_model("resnet20")   # <- imperative: no net.hybridize()
run = gc.train(cfg, net=net, train_iter=train_iter)

# %% [markdown]
# ## What the GPU did
# Utilisation, memory and power of the GPU over time, the CPU in the panel below, the
# epochs shaded. Expect a saw-tooth from a naive run: the GPU busy while a batch is
# there, idle while the single worker makes the next. (Without a GPU only the CPU panel
# has data.)

# %%
gc.plots.utilisation_timeline(run)

# %% [markdown]
# ## Step by step: the spikiness itself
# Each step's data wait (the host waiting for its batch) and compute (the rest: issuing
# the operators, and waiting for the device when MXNet's engine falls behind) are in the
# record. On the left every step over time, warm-up shaded; on the right the histogram of
# the steady ones. One narrow peak is a steady run; slow outliers are steps that waited.

# %%
gc.plots.step_times(run)

# %% [markdown]
# ## Why the GPU waits
# What `next(train_iter)` takes is *data wait*; the rest of the step is *compute*. Two
# short runs of the same experiment bound the run from both sides: with
# `mock="trainer"` it fetches batches and drops them (the input pipeline alone), with
# `mock="loader"` it trains on one batch kept on the device, over and over (the model
# alone). No run beats the lower of the two; as bounds, neither gets a speed-up.

# %%
ceiling_cfg = cfg.replace(epochs=1, max_steps=SIZES.ceiling_steps)
compute_only = gc.train(ceiling_cfg.replace(name="naive compute-only", mock="loader"),
                        verbose=False)
input_only = gc.train(ceiling_cfg.replace(name="naive input-only", mock="trainer"),
                      train_iter=train_iter, verbose=False)

# %% [markdown]
# The closing reads the table: first how steady the run was, then where it sits against
# the lower ceiling. Inside that ceiling's range, the ceiling sets the pace; below both,
# beyond their noise, neither does and the rest is overhead; with too few steps, or
# against a ceiling that ran differently (other settings, or other programs busy on the
# machine for one of them), it says that and rules on nothing. Every number is a cell of
# the table; the reasoning is in `gpu_course/lessons/l01_naive.py`.

# %%
gc.show([run, input_only, compute_only], lesson="01", chart=False)
gc.conclude("01", [run, input_only, compute_only])

# %% [markdown]
# ## Exercise 01.1: one loader process, none, or several?
# First a prediction, then the measurement. Below, the naive job again on
# `SIZES.exercise_size` images. At the line marked `# >>>` pick another number of loader
# processes (0 makes the training loop decode and augment every batch itself; 2 or more
# prepare batches side by side), and **before running** write your guess of how much of
# each step will go to waiting for a batch, against one process: `"more"`, `"less"` or
# `"same"`. The check adds what happened to samples/s, which need not follow.
#
# The check cell reads the two run records. It wants the process count changed and
# nothing else, steps enough to judge against noise (five blocks of each run's steps),
# and a guess the runs do not contradict; otherwise it explains what to fix. After
# trying, `gc.solution("01.1")` prints a worked answer.

# %% tags=["exercise"]
few = SIZES.replace(train_size=SIZES.exercise_size)   # fewer images than the lesson
ex = gc.Experiment(name="exercise", model=SIZES.exercise_model, batch_size=64, num_workers=1, **few)
images, _ = gc.load_datasets(ex)
count = 1                    # >>> how many loader processes to try instead of 1
guess = None                 # >>> written before running: data wait "more", "less" or "same" than 1
tried = []
for n in dict.fromkeys((1, count)):   # one process, then your count (once if it is 1)
    batches = gluon.data.DataLoader(images, batch_size=64, shuffle=True, last_batch="discard",
                                    num_workers=n)                       # <-
    tried.append(gc.train(ex.replace(name=f"exercise: {n} loader process(es)", num_workers=n),
                          net=gc.get_model(ex), train_iter=batches, verbose=False))

# %% tags=["check"]
gc.check("01.1", tried, guess)
