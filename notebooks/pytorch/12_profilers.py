# %% [markdown]
# # 12. Profilers: where a step's time goes
#
# **What this lesson measures.** The profiling lecture climbs from easy to hard:
# monitoring (lesson 1), manual instrumentation and mock components (lesson 10), and
# last the **profilers**. `cProfile` shows which Python functions of the input pipeline
# cost the most; `torch.profiler` records every operator (and on a GPU every kernel and
# copy) of a few steps as a Chrome trace. From that trace we split a step into device
# kernels, memory copies, host-side launch overhead and waiting for data, and set its
# verdict beside what the mock ceilings of the same run say on their own.
#
# **The numbers to compare with.** The lecture's sample profile of a DenseNet-121 forward
# pass on a CPU: `mkldnn_convolution` about 10 ms, `max_pool2d_with_indices` 29 ms,
# `batch_norm` 1.2 ms per call. Your operators and times come from your machine.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from gpu_course import torch as gc
from gpu_course.analyse import profiling
from gpu_course.lessons import l12_profilers as lesson

# %% tags=["parameters"]
SIZES = gc.sizes("12")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("12", active=10)

# %% [markdown]
# ## The run, and its two ceilings
# One loader worker, so that the input has a chance to show. Beside it, lesson 10's mock
# ceilings of the same experiment: the model alone (`mock="loader"`: one batch served
# forever) and the input alone (`mock="trainer"`: batches fetched and dropped). They bound
# the run; they are not rungs of it, so the table has no speed-up column.

# %%
cfg = gc.Experiment(name="profiled", num_workers=1, **SIZES)
runs = [gc.train(cfg, verbose=False, progress=False)]
runs += [gc.train(cfg.replace(name=f"profiled: mock {mock}", mock=mock, max_steps=SIZES.ceiling_steps),
                  verbose=False, progress=False) for mock in ("loader", "trainer")]
gc.show(runs, lesson="12", chart=False)

# %% [markdown]
# ## cProfile of the input pipeline
# A mock trainer (fetch each batch, drop it) under `cProfile`, with the loader in this
# process (`num_workers=0`): cProfile sees one process only, and with workers the
# decoding would happen in theirs. The `.prof` file in the run's folder opens in
# `snakeviz input.prof` or, as the lecture does, `pyprof2calltree -k -i input.prof`.

# %%
folder = runs[0].path / "profile"
train_set, _ = gc.load_datasets(cfg)
loader = gc.make_loader(train_set, cfg.replace(num_workers=0))          # this process only
top = profiling.profile_input(loader, SIZES.input_steps, folder / "input.prof").head(10)
display(gc.tables.show(top))
gc.conclude("12", runs, top=top)

# %% [markdown]
# ## torch.profiler around a few steps
# The schedule skips `wait` steps, records `warmup` steps and throws them away (the
# profiler's own start-up), then keeps `active` steps: a bounded window, however long the
# run. The loader's share of each step is annotated `data wait`. On a GPU the CUDA
# activity adds kernels and copies, and one sync per step keeps each step's kernels
# inside its window. (`profiling.quiet_profiler()` holds back the profiler library's own
# start/stop log lines; anything else it writes still shows.)

# %%
device = gc.try_devices(1)[0][0]
net = gc.get_model(cfg).to(device)
optimizer = gc.make_optimizer(net, cfg)
loss_fn = nn.CrossEntropyLoss()
batches = profiling.iterate(gc.make_loader(train_set, cfg), SIZES.wait + SIZES.warmup + SIZES.active)
activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
with profiling.quiet_profiler(), profile(                                 # <- the profiler
        activities=activities, schedule=schedule(wait=SIZES.wait, warmup=SIZES.warmup, active=SIZES.active),
        on_trace_ready=lambda p: p.export_chrome_trace(str(folder / "trace.json"))) as prof:
    for _ in range(SIZES.wait + SIZES.warmup + SIZES.active):
        with record_function("data wait"):                                # <- the loader's part, named
            x, y = next(batches)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = loss_fn(net(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)   # sync point: the step's kernels end in its window
        prof.step()                                                       # <- the schedule moves on
trace = profiling.gzip_trace(folder / "trace.json")   # chrome://tracing or ui.perfetto.dev open it

# %% [markdown]
# The per-operator table, the most expensive first (own time, without the operators each
# one calls), as PyTorch writes it:

# %%
print(prof.key_averages().table(sort_by=f"self_{device.type}_time_total", row_limit=12))

# %% [markdown]
# ## From the trace to a verdict
# The trace's events, merged where they overlap: time in device kernels and memory
# copies, host-side launch calls, operators (on a CPU these *are* the compute), the
# `data wait` annotation, and the rest of each step (Python and framework overhead). The
# ceilings' verdict beside it is theirs alone: which ceiling is lower and how near the run
# comes to it.

# %%
split = profiling.trace_split(profiling.read_trace(trace))
display(gc.tables.show(profiling.split_table(split)))
gc.conclude("12", runs, split=split)   # the sentences, checked: gpu_course/lessons/l12_profilers.py

# %% [markdown]
# `gc.profile_steps(cfg, folder)` records the same window for any experiment, and
# `gpu-course profile` (the flags of `gpu-course run`) does all of this lesson in one go:
# the run, its ceilings, the input profile, the trace, the split and the verdict.

# %% [markdown]
# ## The same question, asked by Holistic Trace Analysis
# Meta's [Holistic Trace Analysis](https://hta.readthedocs.io) (HTA, the PyPI package
# `HolisticTraceAnalysis`) reads the traces `torch.profiler` writes. Here it reads the two
# traces recorded on an H200 that come with the course (`gpu_course/reference/pytorch-h200`:
# the naive rung, and the tuned rung, one CUDA graph replay a step), so a GPU trace is
# analysed whatever machine runs this; `holistic.compare({"mine": trace})` reads yours.
# HTA's **temporal breakdown** splits the GPU's time from its first kernel to its last into
# idle, compute kernels, and non-compute (copies and memsets with no kernel running: time
# the GPU moves data, reported apart from idle). Its **idle time breakdown** says why the
# GPU sat idle: *host wait* (the GPU had finished and the next launch had not yet come),
# *kernel wait* (gaps under 30 µs between kernels already queued: the cost of many small
# kernels) or *other*. Its **kernel launch statistics** tie each launch call to its kernel:
# the delay from call to kernel, and how many kernels ran shorter than the call that
# launched them. Beside each trace, the course's own `profiling.trace_split` of it; the
# sentences say where the two agree, and why they differ where they do.

# %%
from gpu_course.analyse import holistic
beside = holistic.compare(holistic.REFERENCE_TRACES)   # HTA's TraceAnalysis and trace_split, each trace
display(gc.tables.show(beside))
gc.conclude("12", hta=beside)   # the sentences, checked: gpu_course/lessons/l12_profilers.py

# %% [markdown]
# ## What the GPU's time is spent on
# The same two traces, their kernels sorted by what they compute (from the kernel names:
# cuDNN's convolutions, Inductor's fused BatchNorm/ReLU/add kernels, the optimizer's
# multi-tensor kernels, the rest), in ms a step. Where the GPU works through the step, the
# largest kind is what limits it now. On the tuned rung those are the convolutions.

# %%
traces = lesson.reference_kernel_traces()
gc.show(lesson="12", kernels=traces)        # the kernels of each trace, by kind
gc.conclude("12", kernels=traces)           # gpu_course/lessons/l12_profilers.py

# %% [markdown]
# ## Exercise 12.1: move the limit, predict the verdict
# Predict, then measure. The profiled run once more, then with one setting of your own
# changed at the line marked `# >>>`: `{"num_workers": 0}` (the loading moves into the
# training process, between its steps), a larger `batch_size`, another `model`... **Before
# you run**, write down what the step timers will say of your run: `"input-bound"` (it
# waits for data 25 % of its step or more, the rule of the verdicts above) or
# `"not input-bound"`. The runs use `torch_threads` of the sizes (one thread in CI).
#
# The check wants the two runs to differ in that one setting, enough steady steps to
# judge blocks of them, and a verdict the blocks do not contradict (blocks on both sides
# of the line leave it untested). `gc.solution("12.1")` shows one answer, once you have
# tried.

# %% tags=["exercise"]
ex_cfg = gc.Experiment(name="exercise", num_workers=1, threads=SIZES.torch_threads, **SIZES)
change = {}                  # >>> one setting and its value, e.g. {"num_workers": 0}
verdict = None               # >>> before you run: "input-bound" or "not input-bound", by the step timers
mine = [gc.train(ex_cfg.replace(name=f"exercise: {c or 'as profiled'}", **c), verbose=False, progress=False)
        for c in ({}, change) if change]                 # (nothing until you choose)

# %% tags=["check"]
gc.check("12.1", mine, verdict)
