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

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
FOLDER = None                         # None: the Caltech-256-shaped folder of lesson 9 (made if absent)
IMAGES = 1800 if SMOKE else 3000      # JPEGs in the generated folder
IMAGE_SIZE = 32                       # training size, pixels a side
TRAIN_SIZE = 1600 if SMOKE else 2400  # smoke: 25 steps, enough for diagnose to rule
TEST_SIZE = 40 if SMOKE else 500
EPOCHS = 1 if SMOKE else 2
CEILING_STEPS = 24 if SMOKE else 100  # steps of each ceiling run (the first few are warm-up)

# %%
import time
import mxnet as mx
from mxnet import autograd, gluon
from gpu_course.tracks import gluon as gc
from gpu_course.analyse import diagnose
from gpu_course.data import folder
from gpu_course.tracks.gluon import io_data

recommended = max(2, os.cpu_count() - 3)   # the talk: cpu_count() - 3, at least 2
root = pathlib.Path(FOLDER) if FOLDER else folder.generate_folder(
    folder.default_folder().with_name(f"caltech256-like-{IMAGES}"), per_class=IMAGES // 10)
cfg = gc.Experiment(name="heavy augmentation, tiny net", dataset="folder", data_dir=str(root),
                    image_size=IMAGE_SIZE, train_size=TRAIN_SIZE, test_size=TEST_SIZE,
                    epochs=EPOCHS, model="tiny", augment="heavy", batch_size=64, num_workers=1,
                    warmup_steps=2 if SMOKE else 5, monitor_interval=0.2 if SMOKE else 0.5)
# loose JPEGs: decode, resize, then crop, flip, colour jitter and rotation, per image
train_set, val_set = io_data.io_datasets(cfg, "loose")
val_iter = gc.make_loader(val_set, cfg, train=False)
print(f"{os.cpu_count()} CPU cores, {gc.gpu_count()} GPU(s)")

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
train_iter = gluon.data.DataLoader(train_set, batch_size=64, shuffle=True,
                                   last_batch="discard", num_workers=1)
loading, training = [], []
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
    loading.append(t2 - t1)
    training.append(t3 - t2)
del batches
print(f"waiting for data: {1000 * sum(loading[1:]) / 4:.0f} ms per step; "
      f"training: {1000 * sum(training[1:]) / 4:.0f} ms per step (first step left out)")

# %% [markdown]
# `gc.train` does exactly this on every step (the `StepTimer`), with a monitor and a run record.

# %%
run = gc.train(cfg, train_iter=train_iter, val_iter=val_iter, verbose=False)
print(run.summary["summary_line"])

# %% [markdown]
# ## The two ceilings: one flag each

# %%
input_only = gc.train(cfg.replace(name=f"{cfg.name}: mock trainer", mock="trainer", epochs=1,
                                  max_steps=CEILING_STEPS), train_iter=train_iter, val_iter=val_iter,
                      verbose=False)
compute_only = gc.train(cfg.replace(name=f"{cfg.name}: mock loader", mock="loader", epochs=1,
                                    max_steps=CEILING_STEPS), train_iter=train_iter, val_iter=val_iter,
                        verbose=False)
gc.tables.show(gc.report.ladder_table([run, input_only, compute_only]))

# %%
speed, feed, need = (gc.report.samples_per_sec(r) for r in (run, input_only, compute_only))
rule = gc.noise.compare(compute_only, input_only)   # the input alone against the model alone
print(f"The job trained at {speed:,.0f} samples/s. Alone, the input pipeline delivers "
      f"{feed:,.0f} samples/s and the model consumes {need:,.0f}: the input against the model, "
      f"{rule}. The lecture's rule (the I/O rate must exceed the training rate) is "
      + {"faster": "met.", "slower": "broken."}.get(rule.kind, "neither met nor broken beyond noise."))

# %% [markdown]
# ## The diagnosis
# `diagnose` reads the run record: data wait against compute, the two ceilings (found next
# to the run: same settings, `mock` set), GPU utilisation and CPU load. It prints the
# verdict with the numbers that show it and names the next rung. `gpu-course diagnose RUN`
# prints the same from a terminal.

# %%
d = diagnose.diagnose(run, data_format="loose")
print(d)

# %% [markdown]
# ## Follow the advice, and ask again
# The next rung is applied as the diagnosis names it: more loader workers, the images
# pre-resized or packed, or (for a compute rung, which this lesson does not cover) the
# cheaper standard augmentation. Where the diagnosis would not rule (too few steps, a run
# above its ceiling), its advice is to measure again: the same run, once more. Whether the
# change helped is judged against the runs' noise, not read off one ratio.

# %%
kind, change = "loose", {}
if d.verdict == diagnose.UNRELIABLE:
    pass   # measure again: the same configuration
elif d.next_rung == "workers" and "more workers have no cores" not in d.advice:
    change = {"num_workers": recommended}
elif d.next_rung in ("pre-processing", "packed format", "in memory"):
    kind = {"pre-processing": "preresized", "packed format": "packed", "in memory": "memory"}[d.next_rung]
else:
    change = {"augment": "standard"}
fixed_cfg = cfg.replace(name=f"after the advice: {kind} {change or ''}".strip(), **change)
fixed_set, _ = io_data.io_datasets(fixed_cfg, kind)
fixed_iter = gluon.data.DataLoader(fixed_set, batch_size=64, shuffle=True, last_batch="discard",
                                   num_workers=fixed_cfg.num_workers)   # <- the one change
fixed = gc.train(fixed_cfg, train_iter=fixed_iter, val_iter=val_iter, verbose=False)
print(diagnose.advice_outcome(d, run, fixed))   # judged against the two runs' noise
print(diagnose.explain(fixed, search=False, data_format=kind))

# %% [markdown]
# ## A compute-bound run
# The mock loader never waits for data, so it is compute-bound by construction (or
# overhead-bound, where a GPU sits idle while Python issues the work): the diagnosis says
# which, and names the compute rungs (hybridize, lower precision, larger batch, more GPUs).

# %%
print(diagnose.explain(compute_only))

# %% [markdown]
# ## Every run of this lesson, diagnosed

# %%
diagnose.table([run, input_only, compute_only], data_format="loose")
