# %% [markdown]
# # 8. The whole ladder
#
# **What this notebook shows.** Every rung of the course side by side: samples/s, speed-up
# over the naive baseline, GPU utilisation and validation accuracy, for one coherent set of
# runs: the newest ladder that `gpu-course ladder` (or `make run`) recorded for the PyTorch
# track, one job walked up the fixes on one machine. With none recorded yet, this notebook
# walks the ladder itself (quick in smoke mode, as `gpu-course ladder --quick`). The
# lessons' own runs are not mixed in: they trained other networks at other sizes. Last, a
# warning about what "GPU-Util" does not measure, and the same ladder on an H200.
#
# **The talk's ladder** (Apache MXNet on V100s in 2019): naive 306 samples/s → 29 workers 663
# → hybridize 941 → float16 3,100 → batch 640 17,000 (one GPU) → 4 GPUs 50,000: about ×160
# from the same model and data. Your numbers come from your machine.
#
# **The rungs.** naive → more loader workers → `torch.compile` → bfloat16 autocast and
# channels_last → a large batch with LARS (on a GPU: batch 512, the learning rate scaled
# with it, warmed up, then decayed: without the decay its 3 epochs barely learn) → a
# one-cycle LR schedule → the data on the GPU → (on a GPU) the whole step as one CUDA graph. On a CPU the ladder trains the tiny network,
# reads photos (loose JPEGs, packed once, offline, at its "data-format" rung) and leaves out
# the rungs only a GPU can show. The data-on-GPU rung is the fix the fastest CIFAR-10
# trainers use: instead of a CPU loader decoding, cropping and flipping each image in Python
# and copying every batch, `gc.GpuLoader` copies the uint8 images to the device once and
# cuts each batch out of them with a few tensor operations for the whole batch:
#
# ```python
# train_iter = gc.GpuLoader(images, labels, gc.Batches(batch_size, dtype=torch.bfloat16,
#                                                      channels_last=True), device)   # no workers, no copies
# ```

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import os
from gpu_course import torch as gc
from gpu_course.lessons import l08_summary as lesson

# %% tags=["parameters"]
SIZES = gc.sizes("08")   # the full ladder; a quick one in CI (GPU_COURSE_SMOKE=1), as `gpu-course ladder --quick`
RUNS_DIR = None          # None: GPU_COURSE_RUNS or the repository's runs/
# should the ladder be walked here: inductor compiles (minutes on a CPU), aot_eager only traces
os.environ.setdefault(gc.COMPILE_BACKEND_ENV, SIZES.compile_backend)

# %% [markdown]
# ## The ladder
# What each rung changed is in the table's columns (every setting that differs between
# rungs, read from the records); speed-up is against the naive rung, and the talk's column
# is its V100 ladder's for the rungs it had.

# %%
runs = lesson.ladder("pytorch", SIZES, RUNS_DIR)   # the newest `gpu-course ladder` of this track, or one walked now

# %%
gc.show(runs, lesson="08")
gc.conclude("08", runs)   # the sentences, checked against the table: gpu_course/lessons/l08_summary.py

# %% [markdown]
# ## Where each step goes, and how long each rung took to learn
# Samples/s says how fast a rung pushes images; it does not say what holds a step, nor
# whether the rung learns as fast. The second table splits each rung's steady step into
# waiting for data, the host's own work (dispatching the step's operators) and, on a GPU,
# the time kernels ran (the step times GPU-Util): a step is data-bound, host-bound or
# GPU-bound, and only a fix aimed at what holds it can pay. Its last columns are the
# headline an attendee cares about: training time, compilation and warm-up included, to
# the accuracy the naive rung reached, against the naive rung's own.

# %%
lesson.anatomy(runs)

# %% [markdown]
# ## GPU-Util is not SM activity, and the same ladder on an H200
# NVIDIA's "GPU-Util" (what `nvidia-smi` shows) is the share of time in which *any* kernel
# was running: one small kernel keeping a single SM busy reads 100 %. Hopper GPUs (H100,
# H200) also report GPM metrics through NVML: the share of SMs that were busy and how much
# the tensor cores worked; where the monitor could read them they are the table's "SM
# active" and "tensor active" columns. The reference ladder below was recorded at full size
# on an NVIDIA H200 (`gpu_course/reference/pytorch-h200/`): its own table, its speed-ups
# against its own naive rung, and what it differs in from yours said underneath.

# %%
reference = lesson.latest_ladder("pytorch", gc.report.REFERENCE_ROOT / "pytorch-h200")
gc.show(reference, lesson="08")
gc.conclude("08", reference, beside=runs)

# %% [markdown]
# The reference's steps, taken apart the same way: at batch 64 its kernels run for a small
# part of each step while Python dispatches the next ones, so compiling or lowering the
# precision, which shorten the kernels, read as slow-downs; the whole-step CUDA graph
# removes the dispatch. Its time to target counts the tuned rung's longer run, so it is
# a separate line, not a like-for-like rung.

# %%
lesson.anatomy(reference)

# %% [markdown]
# ## Two regimes: which fix fits which bottleneck
# ResNet-20 at batch 64 is a small step: its kernels are short, and the host's dispatch of
# them holds the step. A wide network (wrn16_10, `gpu-course ladder --model wrn16_10`) does
# far more arithmetic an image: its kernels keep the GPU busy and the host waits for them.
# The same rungs on both, side by side: each rung's gain over the rung before it, and what
# held the step before it in each (the anatomy above). A fix pays where it removes what
# holds the step: fewer launches (a CUDA graph, a larger batch) on a host-bound step,
# cheaper arithmetic (bfloat16) on a GPU-bound one. The sentences count which gains beyond
# noise fit that rule, and name any that do not.

# %%
heavy = lesson.latest_ladder("pytorch", gc.report.REFERENCE_ROOT / f"pytorch-h200-{lesson.HEAVY_MODEL}")
lesson.regimes(reference, heavy)   # the reference's two ladders: gpu_course/lessons/l08_summary.py

# %% [markdown]
# ## Exercise 08.1: take one rung out of the top
# The ladder's table credits each rung with what it gained on top of the rungs under it.
# Is that what it is worth once every other fix is on? Below, the rungs of the ladder as
# `gpu-course ladder` walks them here, each an `Experiment`, on `SIZES.exercise_size`
# images (None: the ladder's own). At the line marked `# >>>` take **one** rung out of the
# top rung: set back the settings that rung changed (its columns in the table above) to
# the rung before's, e.g. `top.replace(graph=rungs["workers"].graph)`. **Before you run**,
# predict from the table your run's samples/s against the top rung: `"faster"`, `"slower"`
# or `"same"`. Once you have changed it, the cell trains the top rung and yours; the check
# wants the two to differ in one rung's settings, enough steady steps for a verdict against
# noise and a prediction the runs do not contradict, and sets your measurement beside
# the ladder's own row for that rung. `gc.solution("08.1")` shows one, after you have tried.

# %% tags=["exercise"]
rungs = lesson.exercise_ladder("pytorch", SIZES, gc.gpu_count())   # {rung: its Experiment}, in order
top = list(rungs.values())[-1]                                      # every rung on
mine = top.replace()         # >>> one rung out: its settings as the rung before had them, top.replace(...=...)
prediction = None            # >>> before you run: "faster", "slower" or "same" against the top rung
tried = [gc.train(cfg, verbose=False) for cfg in (top, mine.replace(name="exercise: one rung out"))] \
    if mine != top else []

# %% tags=["check"]
gc.check("08.1", tried, prediction)
