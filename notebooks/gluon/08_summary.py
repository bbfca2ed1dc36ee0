# %% [markdown]
# # 8. The whole ladder
#
# **What this notebook shows.** Every rung of the course side by side: samples/s, speed-up
# over the naive baseline, GPU utilisation and validation accuracy. The rungs are one
# coherent set: the newest ladder that `gpu-course ladder` (or `make run`) recorded for this
# track, one training job walked up the ladder of fixes on one machine, each rung changing
# one thing on top of the one before it. With none recorded yet, this notebook walks the
# ladder itself (quick in smoke mode, as `gpu-course ladder --quick`). On a CPU the ladder
# trains the tiny network, reads photos and has a "data-format" rung (loose JPEGs packed
# once, offline: the talk's pre-processing rung); the rungs only a GPU can show are left out.
# The lessons' own runs are not mixed in: they trained other networks at other sizes.
#
# **The talk's ladder** (V100s in 2019): naive 306 samples/s → 29 workers 663 → hybridize
# 941 → float16 3,100 → batch 640 17,000 (one GPU) → 4 GPUs 50,000: about ×160 from the
# same model and data. Your numbers come from your machine.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
from gpu_course import gluon as gc
from gpu_course.lessons import l08_summary as lesson

# %% tags=["parameters"]
SIZES = gc.sizes("08")   # the full ladder; a quick one in CI (GPU_COURSE_SMOKE=1), as `gpu-course ladder --quick`
RUNS_DIR = None          # None: GPU_COURSE_RUNS or the repository's runs/

# %% [markdown]
# ## The ladder
# What each rung changed is in the table's columns (every setting that differs between
# rungs, read from the records); speed-up is against the naive rung, and the talk's column
# is its V100 ladder's for the rungs it had.

# %%
runs = lesson.ladder("gluon", SIZES, RUNS_DIR)   # the newest `gpu-course ladder` of this track, or one walked now

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

# %%
gc.plots.curves(runs)

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
rungs = lesson.exercise_ladder("gluon", SIZES, gc.gpu_count())   # {rung: its Experiment}, in order
top = list(rungs.values())[-1]                                      # every rung on
mine = top.replace()         # >>> one rung out: its settings as the rung before had them, top.replace(...=...)
prediction = None            # >>> before you run: "faster", "slower" or "same" against the top rung
tried = [gc.train(cfg, verbose=False) for cfg in (top, mine.replace(name="exercise: one rung out"))] \
    if mine != top else []

# %% tags=["check"]
gc.check("08.1", tried, prediction)
