# %% [markdown]
# # 10. Mock components and an automatic diagnosis
#
# **What this lesson measures.** Before fixing anything, find out what the GPU waits for.
# The profiling lecture's method: time each step's wait for data against its compute, then
# replace one side with a mock to measure the other alone. A **mock loader** keeps one batch
# on the device and serves it forever: the *compute ceiling*. A **mock trainer** fetches
# batches and throws them away: the *input ceiling*. In gpu_course each is one flag
# (`mock="loader"`, `mock="trainer"`) on any experiment, and `gpu_course.analyse.diagnose` turns
# the numbers into a verdict (input-bound, compute-bound or overhead-bound) and the next
# rung to try. We run a deliberately input-bound job (loose JPEGs with heavy augmentation
# for a tiny network, one worker), follow the advice, and look at a deliberately
# compute-bound one (the mock loader).
#
# **The numbers to compare with** (a V100 in 2019, "The Steady State"): 1 worker 306
# samples/s; 29 workers 663; hybridized 941; float16 on 4 GPUs 7,400. The AWS Caltech-256
# sample: 1 worker 100 images/s with the GPU peaking at 50 %, 7 workers 300 images/s at
# about 95 %. Those came from 2019 machines; your numbers come from yours.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import time
import mxnet as mx
from mxnet import autograd, gluon
from gpu_course import gluon as gc
from gpu_course.lessons import l09_input, l10_mocks as lesson

# %% tags=["parameters"]
SIZES = gc.sizes("10")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("10", epochs=3)
FOLDER = None            # None: the Caltech-256-shaped folder of lesson 9 (made if absent)

# %% [markdown]
# The job: loose JPEGs decoded, resized and augmented heavily (crop, flip, colour jitter,
# rotation) per image by one loader worker, for the tiny network.

# %%
cfg = gc.Experiment(name="heavy augmentation, tiny net", model="tiny", augment="heavy",
                    data_dir=str(l09_input.photo_folder(SIZES.images, FOLDER)), num_workers=1,
                    **SIZES)
train_set, val_set = gc.load_datasets(cfg)    # loose JPEGs: decoded and augmented per image
val_iter = gc.make_loader(val_set, cfg, train=False)

# %% [markdown]
# ## Manual instrumentation
# The lecture's loop: `t1` before asking for a batch, `t2` when it arrives, `t3` when the step
# is done. I/O should overlap with training: `t2 - t1` much smaller than `t3 - t2`. Here it
# is in plain Gluon for a few steps (the `asnumpy()` makes the step's work finish before `t3`).

# %%
devices, _ = gc.try_devices(1)
net = gc.get_model(cfg)
net.initialize(mx.init.Xavier(), ctx=devices, force_reinit=True)
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05})
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
train_iter = gluon.data.DataLoader(train_set, batch_size=cfg.batch_size, shuffle=True,
                                   last_batch="discard", num_workers=cfg.num_workers)
times = []                                # (t1, t2, t3) of each step
batches = iter(train_iter)
for _ in range(5):
    t1 = time.perf_counter()
    data, label = next(batches)
    t2 = time.perf_counter()
    data, label = data.as_in_context(devices[0]), label.as_in_context(devices[0])
    with autograd.record():
        loss = loss_fn(net(data), label)
    loss.backward()
    trainer.step(data.shape[0])
    loss.mean().asnumpy()                 # sync point: waits for the step to finish
    t3 = time.perf_counter()
    times.append((t1, t2, t3))
del batches
gc.tables.show(lesson.step_table(times))

# %% [markdown]
# `gc.train` does exactly this on every step (the `StepTimer`), with a monitor and a run
# record. Then the two ceilings, one flag each: the same job with `mock="trainer"` (input
# only) and with `mock="loader"` (model only). They bound the job; they are not rungs, so
# their table has no speed-up column.

# %%
run = gc.train(cfg, train_iter=train_iter, val_iter=val_iter, verbose=False)
input_only, compute_only = (
    gc.train(cfg.replace(name=f"{cfg.name}: mock {mock}", mock=mock, epochs=1,   # <- one flag
                         max_steps=SIZES.ceiling_steps),
             train_iter=train_iter, val_iter=val_iter, verbose=False)
    for mock in ("trainer", "loader"))
gc.show([run, input_only, compute_only], lesson="10", chart=False)
gc.conclude("10", [run, input_only, compute_only])

# %% [markdown]
# ## The diagnosis
# `diagnose` reads the run record: data wait against compute, the two ceilings (found next
# to the run: same settings, `mock` set), GPU utilisation and CPU load. It prints the
# verdict with the numbers that show it and names the next rung. `gpu-course diagnose RUN`
# prints the same from a terminal.

# %%
advice = gc.diagnose.diagnose(run)
print(advice)

# %% [markdown]
# ## Follow the advice, and ask again
# The next rung is applied as the diagnosis names it: more loader workers, the images
# pre-resized or packed, or (for a compute rung, which this lesson does not cover) the
# cheaper standard augmentation. Where the diagnosis would not rule (too few steps, a run
# above its ceiling), its advice is to measure again: the same run, once more.

# %%
fixed_cfg = lesson.follow(advice, cfg)           # the job with the next rung applied
fixed_set, _ = gc.load_datasets(fixed_cfg)       # its data format
fixed_iter = gluon.data.DataLoader(fixed_set, batch_size=cfg.batch_size, shuffle=True,
                                   last_batch="discard", num_workers=fixed_cfg.num_workers)  # <- its workers
fixed = gc.train(fixed_cfg, train_iter=fixed_iter, val_iter=val_iter, verbose=False)
print(gc.diagnose.explain(fixed))

# %% [markdown]
# ## A compute-bound run
# The mock loader never waits for data, so it is compute-bound by construction (or
# overhead-bound, where a GPU sits idle while Python issues the work): the diagnosis says
# which, and names the compute rungs (hybridize, float16, large-batch, all-gpus).

# %%
print(gc.diagnose.explain(compute_only))

# %% [markdown]
# ## Every run of this lesson, diagnosed
# Whether following the advice helped is judged against the two runs' noise, not read off
# one ratio.

# %%
gc.show([run, input_only, compute_only, fixed], lesson="10", chart=False)
gc.conclude("10", [run, input_only, compute_only, fixed], advice=advice)

# %% [markdown]
# ## Exercise 10.1: make the loader the bottleneck, on purpose
# Below, a job whose input is not its limit: the photos decoded once into memory, the
# standard augmentation, one worker and the tiny network, on `SIZES.exercise_size` images.
# At the line marked `# >>>` make **one** change to it that should make the loader the
# bottleneck (any setting of the Experiment: the data format, the augmentation, the
# workers...), and **before running** write down what `diagnose` will call your job:
# `"input-bound"`, `"compute-bound"` or `"overhead-bound"`. Once you have changed it, the
# cell trains the job as it is, then yours and its two ceilings; the check runs `diagnose`
# on them and rules on your verdict, accepting one that the runs' noise cannot rule out.
# After trying, `gc.solution("10.1")` shows one way.

# %% tags=["exercise"]
job = gc.Experiment(name="exercise", model="tiny", augment="standard", data_format="memory", num_workers=1,
                    data_dir=str(l09_input.photo_folder(SIZES.images, FOLDER)),
                    **SIZES.replace(train_size=SIZES.exercise_size, batch_size=SIZES.exercise_batch))
mine = job.replace()         # >>> one change that should make the loader the bottleneck: job.replace(...=...)
verdict = None               # >>> written before running: "input-bound", "compute-bound" or "overhead-bound"
tried = []
if mine != job:                                         # the job as it is, yours, and its two ceilings
    yours = mine.replace(name="exercise, changed")
    tried += [gc.train(job, verbose=False), gc.train(yours, verbose=False)]
    for mock in ("trainer", "loader"):
        tried.append(gc.train(yours.replace(name=f"{yours.name}: mock {mock}", mock=mock),   # <- one flag
                              verbose=False))

# %% tags=["check"]
gc.check("10.1", tried, verdict)
