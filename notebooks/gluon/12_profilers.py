# %% [markdown]
# # 12. Profilers: where a step's time goes
#
# **What this lesson measures.** The profiling lecture climbs from easy to hard:
# monitoring (lesson 1), manual instrumentation and mock components (lesson 10), and
# last the **profilers**. `cProfile` shows which Python functions of the input pipeline
# cost the most; the framework's profiler records every operator of a few steps as a
# Chrome trace, where the MXNet build has one (the pip wheel does not: we detect that and
# profile the steps with `cProfile` and the course's step timers instead). Then we split
# a step's time and check it against the mock-ceiling diagnosis of the same run.
#
# **The numbers to compare with.** The lecture's sample profile of a DenseNet-121 forward
# pass on a CPU: `mkldnn_convolution` about 10 ms, `max_pool2d_with_indices` 29 ms,
# `batch_norm` 1.2 ms per call. Your operators and times come from your machine.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
MODEL = "tiny" if SMOKE else "resnet20"   # smoke: a small CNN, so that 24 steps a run stay quick
TRAIN_SIZE = 768 if SMOKE else 10_000   # smoke: 24 steps, enough for diagnose to rule
BATCH = 32 if SMOKE else 64           # images per step
INPUT_STEPS = 8 if SMOKE else 100     # batches fetched under cProfile
CEILING_STEPS = 24 if SMOKE else 100  # steps of each mock-ceiling run (20+ steady: enough to bound)
WAIT, WARMUP, ACTIVE = 1, 1, (2 if SMOKE else 5)   # the profiler's schedule, in steps

# %%
import pstats
import mxnet as mx
from gpu_course.tracks import gluon as gc
from gpu_course.analyse import diagnose, profiling

cfg = gc.Experiment(name="profiled", engine="gluon", model=MODEL,
                    train_size=TRAIN_SIZE, test_size=64,
                    epochs=1, batch_size=BATCH, num_workers=1, warmup_steps=1,
                    monitor_interval=0.2 if SMOKE else 0.5)
run = gc.train(cfg, verbose=False, progress=False)
for mock in ("loader", "trainer"):   # the two ceilings of lesson 10, for the diagnosis
    gc.train(cfg.replace(name=f"{cfg.name}: mock {mock}", mock=mock, max_steps=CEILING_STEPS),
             verbose=False, progress=False)
folder = run.path / "profile"          # the profiles live in the run's folder
print(run.summary["summary_line"])

# %% [markdown]
# ## cProfile of the input pipeline
# A mock trainer (fetch each batch, drop it) under `cProfile`, with the loader in this
# process (`num_workers=0`): cProfile sees one process only, and with workers the
# decoding would happen in theirs. The `.prof` file opens in `snakeviz input.prof` or,
# as the lecture does, `pyprof2calltree -k -i input.prof` (KCachegrind).

# %%
train_set, _ = gc.load_datasets(cfg)
loader = gc.make_loader(train_set, cfg.replace(num_workers=0))
top = profiling.profile_input(loader, INPUT_STEPS, folder / "input.prof")
stats = pstats.Stats(str(folder / "input.prof"))
print(f"{stats.total_calls:,} calls in {stats.total_tt:.2f} s for {INPUT_STEPS} batches: "
      f"{INPUT_STEPS * BATCH / stats.total_tt:,.0f} samples/s on one core, profiler included.")
top.head(10)

# %%
print(f"The most expensive function is {top.function[0]}: {top['own_%'][0]:.0f}% of the time "
      f"in its own code, {top.own_per_call_ms[0]:.3f} ms per call.")

# %% [markdown]
# ## MXNet's profiler, where the build has it
# `mx.profiler` records every operator into a Chrome trace, but only in a build compiled
# with it. The pip wheels are not: `mx.runtime.Features()` lists `PROFILER` as off, and
# `mx.profiler.dump()` then writes a file with metadata and no events. Ask first:

# %%
has_profiler = mx.runtime.Features().is_enabled("PROFILER")
print(f"MXNet {mx.__version__}: PROFILER {'on' if has_profiler else 'off'} in this build")

# %% [markdown]
# `gc.profile_steps` trains `WAIT + WARMUP + ACTIVE` steps and records the last `ACTIVE`
# with `mx.profiler` (`set_config(profile_all=True, aggregate_stats=True)`, `set_state`,
# `dump`) where the build has it; without it, it profiles the same steps with `cProfile`,
# which still shows where the Python side of a step goes: the operator calls (MXNet
# queues them asynchronously), the loader, and the `waitall()` where the host waits for
# the engine to finish the queued work.

# %%
window = gc.profile_steps(cfg, folder, wait=WAIT, warmup=WARMUP, active=ACTIVE)
print(window["note"] or f"trace: {window['trace']}")
window["ops"].head(12) if window["ops"] is not None else print(window["table"])

# %% [markdown]
# ## From the profile to a verdict
# With a trace, `profiling.trace_split` splits the steps as the PyTorch lesson does. Without
# one, the course's own step timers (lesson 10's manual instrumentation, on every step
# of every run) split each step into waiting for the loader and computing: the same
# question the trace answers, for the whole run.

# %%
if window["trace"] is not None:
    split = profiling.trace_split(profiling.read_trace(window["trace"]))
    verdict = profiling.trace_verdict(split)
    print(profiling.split_table(split))
else:
    share = gc.metrics.data_wait_share(run)   # the steady steps, as the diagnosis reads them
    verdict = "input-bound" if share >= diagnose.INPUT_WAIT else "not input-bound"
    print(f"step timers: {100 * share:.0f}% of the steady steps' time waiting for data "
          f"(input-bound from {100 * diagnose.INPUT_WAIT:.0f}%)")

# %%
d = diagnose.diagnose(run)
print(d)
print()
agree = verdict == d.verdict or (verdict == "not input-bound" and d.verdict != "input-bound")
source = "trace" if window["trace"] is not None else "step timers"
if d.verdict == diagnose.UNRELIABLE:
    print(f"The {source} say {verdict.upper()}; the mock ceilings give no verdict to compare it "
          "with (the diagnosis above says why): run longer and ask again.")
else:
    print(f"The {source} say {verdict.upper()}; the mock ceilings say {d.verdict.upper()}: "
          + ("the two methods agree." if agree else "they disagree: the profiled window is a few "
             "steps, the ceilings whole runs (and on a busy CPU every step differs)."))

# %% [markdown]
# `gpu-course profile` (the flags of `gpu-course run`) does all of this lesson in one go:
# the run, its ceilings, the input profile, the profiled steps and the verdict.
