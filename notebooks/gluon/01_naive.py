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

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
DATASET = "synthetic"                 # "cifar10" where the real data set is in data/
TRAIN_SIZE = 1024 if SMOKE else 50_000
TEST_SIZE = 256 if SMOKE else 10_000
EPOCHS = 1 if SMOKE else 3
CEILING_STEPS = 24 if SMOKE else 200  # steps of each "ceiling" run below (20+ steady: enough to bound)

# %%
import mxnet as mx
from mxnet import gluon
from gpu_course.tracks import gluon as gc

cfg = gc.Experiment(name="naive", dataset=DATASET, train_size=TRAIN_SIZE, test_size=TEST_SIZE,
                    epochs=EPOCHS, model="resnet20", batch_size=64, num_workers=1,
                    dtype="float32", graph="eager", warmup_steps=2 if SMOKE else 5,
                    monitor_interval=0.2 if SMOKE else 0.5)
print(f"{gc.gpu_count()} GPU(s) visible to MXNet {mx.__version__}")

# %% [markdown]
# ## The naive script
# Nothing clever: one worker process decodes and augments every image (random crop, flip,
# normalise) while the training loop waits for it, and the network runs operator by
# operator from Python. `gc.train` runs the loop and does the bookkeeping: a monitor samples
# the GPU and CPU twice a second in its own thread, a step timer splits each step into
# data wait and compute, and everything lands in a run record on disk.

# %%
train_set, val_set = gc.load_datasets(cfg)
train_iter = gluon.data.DataLoader(train_set, batch_size=64, shuffle=True,
                                   last_batch="discard", num_workers=1)
net = gc.get_model("resnet20")   # imperative: no hybridize()

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

# %%
steady = gc.metrics.steadiness(run)
print(f"The median step took {steady['step_p50_s'] * 1e3:.1f} ms and the slowest 5 % took "
      f"{steady['step_p95_s'] * 1e3:.1f} ms or more ({steady['spikiness']:.1f}x the median); "
      f"{steady['waited_share']:.0%} of the {steady['steady_steps']} steady steps waited for "
      f"data (more than {gc.metrics.WAITED:.0%} of the step).")

# %% [markdown]
# The talk's one-line summary, for this run:

# %%
print(run.summary["summary_line"])

# %% [markdown]
# ## Why the GPU waits
# The step timer charges the time spent inside `next(train_iter)` to *data wait* and the
# rest of the step to *compute*. Two short extra runs bound the speed from both sides:
# `mock="trainer"` fetches batches and drops them (how fast can the input pipeline deliver?),
# `mock="loader"` keeps one batch on the device and trains on it forever (how fast can the
# model compute?). A run can never beat the smaller of the two.

# %%
input_only = gc.train(cfg.replace(name="naive input-only", mock="trainer", epochs=1,
                                  max_steps=CEILING_STEPS), train_iter=train_iter, verbose=False)
compute_only = gc.train(cfg.replace(name="naive compute-only", mock="loader", epochs=1,
                                    max_steps=CEILING_STEPS), verbose=False)
runs = [run, input_only, compute_only]
table = gc.report.ladder_table(runs)
gc.tables.show(table)

# %% [markdown]
# What the table says, sentence by sentence. `gc.closing.Closing` prints a line only when
# every number in it is a cell of the table above (or a verdict on its runs, or a number
# whose source the line names), so the text cannot drift from the measurements.

# %%
say = gc.closing.Closing(table, runs)
ceilings = say.compare(compute_only, input_only)   # the input alone against the model alone
lower = min((input_only, compute_only), key=gc.report.samples_per_sec)
say(f"This run trained at {say.cell(run, 'samples_per_sec')} samples/s and spent "
    f"{say.cell(run, 'data_wait_share')} of its steady step time waiting for data.")
say(f"One worker can deliver {say.cell(input_only, 'samples_per_sec')} samples/s; the model could "
    f"consume {say.cell(compute_only, 'samples_per_sec')} samples/s: the input alone against the "
    f"model alone, {ceilings}.")
reached = say.ratio("samples_per_sec", lower, run, percent=True)
if ceilings.is_effect:
    say(f"So {'the input pipeline' if lower is input_only else 'the computation'} sets the pace: "
        f"this run reached {reached} of that ceiling.")
else:
    say(f"The two ceilings are within each other's noise, so neither is clearly the limit; this run "
        f"reached {reached} of the lower one.")
if gc.report.samples_per_sec(run) > gc.diagnose.ABOVE_CEILING * gc.report.samples_per_sec(lower):
    # a run cannot beat its ceiling: one number is wrong
    say("That is above the ceiling, which a run cannot beat: the ceiling or the run was mismeasured "
        "(too few steps, prefetched batches, or a machine busier for one than the other). Treat "
        "both numbers as unreliable and measure again with more steps.")
if gc.gpu_count():
    say(f"Mean GPU utilisation while training: {say.cell(run, 'gpu_util')}; the rest of the time "
        "the GPU idled.")
else:
    say(f"No GPU here: the CPU computes the model itself. On a GPU the model is far faster than "
        f"one worker can feed it: the talk's V100 waited for its one worker at "
        f"{say.quote('the talk', 306, '{:,} samples/s')} and reached "
        f"{say.quote('the talk', 663, '{:,} samples/s')} once it had 29.")
