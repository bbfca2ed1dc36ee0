# %% [markdown]
# # 12. Profilers: where a step's time goes
#
# **What this lesson measures.** The profiling lecture climbs from easy to hard:
# monitoring (lesson 1), manual instrumentation and mock components (lesson 10), and
# last the **profilers**. `cProfile` shows which Python functions of the input pipeline
# cost the most; the framework's profiler records every operator (and on a GPU every
# kernel and copy) of a few steps as a Chrome trace. From that trace we split a step into
# device kernels, memory copies, host-side launch overhead and waiting for data, and
# check the split against the mock-ceiling diagnosis of the same run.
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
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from gpu_course.tracks import torch as gc
from gpu_course.analyse import diagnose, profiling

cfg = gc.Experiment(name="profiled", engine="pytorch", model=MODEL,
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
# ## torch.profiler around a few steps
# The schedule skips `WAIT` steps, records `WARMUP` steps and throws them away (the
# profiler's own start-up), then keeps `ACTIVE` steps: a bounded window, however long the
# run. The loader's share of each step is annotated `data wait`. On a GPU the CUDA
# activity adds kernels and copies, and one sync per step keeps each step's kernels
# inside its window. The trace goes to the run's folder, gzipped.

# %%
device = gc.try_devices(1)[0][0]
net = gc.get_model(cfg).to(device)
optimizer = gc.make_optimizer(net, cfg)
loss_fn = nn.CrossEntropyLoss()
train_iter = gc.make_loader(train_set, cfg)
activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
raw = folder / "trace.json"
batches = profiling.iterate(train_iter, WAIT + WARMUP + ACTIVE)
with profile(activities=activities, schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
             on_trace_ready=lambda p: p.export_chrome_trace(str(raw))) as prof:
    for _ in range(WAIT + WARMUP + ACTIVE):
        with record_function("data wait"):
            x, y = next(batches)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = loss_fn(net(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)   # sync point: the step's kernels end in its window
        prof.step()
trace = profiling.gzip_trace(raw)
print(f"trace: {trace} ({trace.stat().st_size / 1e6:.2f} MB; open it in chrome://tracing "
      "or ui.perfetto.dev)")

# %% [markdown]
# The per-operator table, the most expensive first (own time, without the operators each
# one calls):

# %%
sort = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
print(prof.key_averages().table(sort_by=sort, row_limit=12))

# %% [markdown]
# ## From the trace to a verdict
# The trace's events, merged where they overlap: time in device kernels and memory
# copies, host-side launch calls, operators (on a CPU these *are* the compute), the
# `data wait` annotation, and the rest of each step (Python and framework overhead).

# %%
split = profiling.trace_split(profiling.read_trace(trace))
verdict = profiling.trace_verdict(split)
profiling.split_table(split)

# %%
d = diagnose.diagnose(run)
print(d)
print()
if d.verdict == diagnose.UNRELIABLE:
    print(f"The trace says {verdict.upper()}; the mock ceilings give no verdict to compare it with "
          "(the diagnosis above says why): run longer and ask again.")
else:
    print(f"The trace says {verdict.upper()}; the mock ceilings say {d.verdict.upper()}: "
          + ("the two methods agree." if verdict == d.verdict else
             f"they disagree: the trace covers {split['steps']} steps, the ceilings whole runs "
             "(and on a busy CPU every step differs)."))

# %% [markdown]
# `gc.profile_steps(cfg, folder)` records the same window for any experiment, and
# `gpu-course profile` (the flags of `gpu-course run`) does all of this lesson in one go:
# the run, its ceilings, the input profile, the trace, the split and the verdict.
