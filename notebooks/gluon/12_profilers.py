# %% [markdown]
# # 12. Profilers: where a step's time goes
#
# **What this lesson measures.** The profiling lecture climbs from easy to hard:
# monitoring (lesson 1), manual instrumentation and mock components (lesson 10), and
# last the **profilers**. `cProfile` shows which Python functions of the input pipeline
# cost the most; the framework's profiler records every operator of a few steps as a
# Chrome trace, where the MXNet build has one (the pip wheel does not: we ask the build
# and profile the steps with `cProfile` instead). Then the course's step timers and the
# mock ceilings of the same run each say what limits it, and we see whether they agree.
#
# **The numbers to compare with.** The lecture's sample profile of a DenseNet-121 forward
# pass on a CPU: `mkldnn_convolution` about 10 ms, `max_pool2d_with_indices` 29 ms,
# `batch_norm` 1.2 ms per call. Your operators and times come from your machine.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import cProfile
import mxnet as mx
from mxnet import autograd, gluon
from gpu_course import gluon as gc
from gpu_course.analyse import profiling

# %% tags=["parameters"]
SIZES = gc.sizes("12")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("12", active=10)

# %% [markdown]
# ## The run, and its two ceilings
# One loader worker, so that the input has a chance to show, and lesson 10's two mock
# ceilings of the same experiment: `mock="loader"` (one batch served forever: the model
# alone) and `mock="trainer"` (batches fetched and dropped: the input alone). A ceiling
# bounds the run and is no rung of it: the table gives no speed-up.

# %%
cfg = gc.Experiment(name="profiled", num_workers=1, **SIZES)
run = gc.train(cfg, verbose=False, progress=False)
loader_alone, model_alone = (
    gc.train(cfg.replace(name=f"profiled: mock {mock}", mock=mock, max_steps=SIZES.ceiling_steps),
             verbose=False, progress=False) for mock in ("trainer", "loader"))
runs = [run, model_alone, loader_alone]
gc.show(runs, lesson="12", chart=False)

# %% [markdown]
# ## cProfile of the input pipeline
# The batches fetched and dropped under `cProfile`, with the loader in this process
# (`num_workers=0`): cProfile sees one process, and with workers the decoding would run in
# theirs. `snakeviz input.prof` or, as the lecture does, `pyprof2calltree -k -i input.prof`
# opens the file in the run's folder.

# %%
folder = run.path / "profile"
train_set, _ = gc.load_datasets(cfg)
top = profiling.profile_input(gc.make_loader(train_set, cfg.replace(num_workers=0)),
                              SIZES.input_steps, folder / "input.prof").head(10)
display(gc.tables.show(top))
gc.conclude("12", runs, top=top)

# %% [markdown]
# ## MXNet's profiler, where the build has it
# `mx.profiler` records every operator into a Chrome trace, but only in a build compiled
# with it. The pip wheels are not: `mx.runtime.Features()` lists `PROFILER` as off, and
# `mx.profiler.dump()` would write a file with metadata and no events. So we ask the
# build, and without the profiler put the same steps under `cProfile`, which still shows
# where the Python side of a step goes: the operator calls (MXNet queues them
# asynchronously), the loader, and the `waitall()` where the host waits for the engine.

# %%
has_profiler = mx.runtime.Features().is_enabled("PROFILER")       # the pip wheel: False
devices, _ = gc.try_devices(1)
net = gc.get_model(cfg)
net.initialize(mx.init.Xavier(), ctx=devices)
trainer = gc.make_trainer(net, cfg, SIZES.wait + SIZES.warmup + SIZES.active)
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
batches = profiling.iterate(gc.make_loader(train_set, cfg), SIZES.wait + SIZES.warmup + SIZES.active)
steps_profile = cProfile.Profile()
for step in range(SIZES.wait + SIZES.warmup + SIZES.active):
    if step == SIZES.wait + SIZES.warmup and has_profiler:                # <- the window opens
        mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename=str(folder / "trace.json"))
        mx.profiler.set_state("run")
    elif step == SIZES.wait + SIZES.warmup:
        steps_profile.enable()
    data, label = next(batches)
    with autograd.record():
        loss = loss_fn(net(data.as_in_context(devices[0])), label.as_in_context(devices[0]))
    loss.backward()
    trainer.step(data.shape[0])
    mx.nd.waitall()          # sync point: the step's queued work ends inside the window
if has_profiler:
    mx.profiler.set_state("stop")                                        # <- and closes
    print(mx.profiler.dumps(reset=True))   # MXNet's per-operator table
    mx.profiler.dump()                     # folder/trace.json: chrome://tracing, ui.perfetto.dev
else:
    steps_profile.disable()
    steps_profile.dump_stats(str(folder / "steps.prof"))
    display(gc.tables.show(profiling.top_functions(folder / "steps.prof").head(12)))

# %% [markdown]
# ## From the step timers and the ceilings to a verdict
# The course times every step of every run (lesson 10's manual instrumentation): how long
# the step waited for its batch, and the rest. That answers the question a trace would,
# over the whole run: does the loop wait for data? The ceilings answer on their own:
# which side is slower alone, and how near the run comes to it.

# %%
gc.conclude("12", runs)   # the sentences, checked: gpu_course/lessons/l12_profilers.py

# %% [markdown]
# `gc.profile_steps(cfg, folder)` records the same window for any experiment, and
# `gpu-course profile` (the flags of `gpu-course run`) does all of this lesson in one go:
# the run, its ceilings, the input profile, the profiled steps and the verdict.

# %% [markdown]
# ## A GPU trace, read by Holistic Trace Analysis
# MXNet's pip build records no trace, but a trace is a file, and reading one needs no
# framework. Meta's [Holistic Trace Analysis](https://hta.readthedocs.io) (HTA, the PyPI
# package `HolisticTraceAnalysis`) reads the Chrome traces PyTorch's profiler writes; here
# it reads the two recorded on an H200 that come with the course
# (`gpu_course/reference/pytorch-h200`: the PyTorch track's naive rung, and its tuned rung,
# one CUDA graph replay a step). The PyTorch track's lesson 12 records such a trace itself.
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
# ## Exercise 12.1: move the limit, predict the verdict
# Predict, then measure. The profiled run once more, then with one setting of your own
# changed at the line marked `# >>>`: `{"num_workers": 0}` (the loading moves into the
# training process, between its steps), a larger `batch_size`, another `model`... **Before
# you run**, write down what the step timers will say of your run: `"input-bound"` (it
# waits for data 25 % of its step or more, the rule of the verdict above) or
# `"not input-bound"`.
#
# The check wants the two runs to differ in that one setting, enough steady steps to
# judge blocks of them, and a verdict the blocks do not contradict (blocks on both sides
# of the line leave it untested). `gc.solution("12.1")` shows one answer, once you have
# tried.

# %% tags=["exercise"]
ex_cfg = gc.Experiment(name="exercise", num_workers=1, **SIZES)
change = {}                  # >>> one setting and its value, e.g. {"num_workers": 0}
verdict = None               # >>> before you run: "input-bound" or "not input-bound", by the step timers
mine = [gc.train(ex_cfg.replace(name=f"exercise: {c or 'as profiled'}", **c), verbose=False, progress=False)
        for c in ({}, change) if change]                 # (nothing until you choose)

# %% tags=["check"]
gc.check("12.1", mine, verdict)
