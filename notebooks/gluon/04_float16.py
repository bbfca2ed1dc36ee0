# %% [markdown]
# # 4. float16: half the bytes, and a float32 master copy
#
# **What this lesson measures.** `net.cast('float16')` stores weights and activations in
# 16 bits: half the memory traffic, and the GPU's tensor cores can do the arithmetic.
# We compare float32 with float16 on the same hybridized network, and show what goes wrong
# without `multi_precision=True`, the optimizer option that keeps a float32 copy of every
# weight for the update.
#
# **The talk's numbers** (a V100 in 2019, 29 workers, hybridized, batch 64): float32 941
# samples/s; **float16 3,100 samples/s, 12.0 s per epoch** on one GPU; 7,400 samples/s on 4
# GPUs; with batch 640, 14,000 samples/s and 4.2 s per epoch. "Mixed precision can halve the
# training time; multi_precision helps keep the accuracy." Your numbers come from your machine.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
DATASET = "synthetic"                 # "cifar10" where the real data set is in data/
MODEL = "tiny" if SMOKE else "resnet20"   # smoke: a small CNN, so that the repeats fit CI's minute
TRAIN_SIZE = 512 if SMOKE else 50_000
TEST_SIZE = 256 if SMOKE else 10_000
EPOCHS = 1 if SMOKE else 3
REPEATS = 2                           # each precision trained this many times, interleaved (A, B, A, B)
WORKERS = 0 if SMOKE else max(2, os.cpu_count() - 3)   # smoke: CI's 2 shared cores load in-process

# %%
import mxnet as mx
from mxnet import autograd, gluon
from gpu_course.tracks import gluon as gc

on_gpu = gc.gpu_count() > 0
cfg = gc.Experiment(name="float32", dataset=DATASET, model=MODEL, train_size=TRAIN_SIZE,
                    test_size=TEST_SIZE, epochs=EPOCHS, batch_size=64, num_workers=WORKERS,
                    graph="static", warmup_steps=2 if SMOKE else 10,
                    monitor_interval=0.2 if SMOKE else 0.5)


# %% [markdown]
# ## Why the update needs float32
# float16 has 10 bits of mantissa: next to 1.0, the closest numbers are 1 ± 0.000977 (and
# 1 − 0.000488 below). An SGD step `w - lr * grad` with `lr * grad` = 1e-4, a typical size
# late in training, is *rounded away*: the weight never moves, however many steps you take.

# %%
w16 = mx.nd.array([1.0], dtype="float16")
update = mx.nd.array([1e-4], dtype="float16")        # lr * grad
print("float16: 1.0 - 1e-4 =", (w16 - update).asscalar())
w32 = mx.nd.array([1.0], dtype="float32")
print("float32: 1.0 - 1e-4 =", (w32 - update.astype("float32")).asscalar())

# %% [markdown]
# `multi_precision=True` keeps a float32 *master copy* of each float16 weight: the update is
# applied to the copy, where it is not lost, and the float16 weight is refreshed from it.
# A thousand updates of 1e-4 with the optimizer itself, both ways:

# %%
grad = mx.nd.array([1e-3], dtype="float16")
results = {}
for multi_precision in (False, True):
    sgd = mx.optimizer.SGD(learning_rate=0.1, momentum=0.0, wd=0.0, multi_precision=multi_precision)
    weight = mx.nd.array([1.0], dtype="float16")
    state = sgd.create_state_multi_precision(0, weight)
    for _ in range(1_000):
        sgd.update_multi_precision(0, weight, grad, state)
    results[multi_precision] = weight.asscalar()
    print(f"multi_precision={multi_precision!s:5}: weight after 1,000 steps = {results[multi_precision]:.4f}")
print(f"Exact answer: {1.0 - 1_000 * 0.1 * 1e-3:.4f}. Without the master copy the weight moved by "
      f"{1.0 - results[False]:.4f}; with it by {1.0 - results[True]:.4f}.")


# %% [markdown]
# ## Can this machine compute in float16?
# MXNet has no float16 convolution on the CPU. We check that here with one forward pass
# rather than take it on trust:

# %%
probe = gc.get_model(MODEL)
probe.initialize(ctx=mx.cpu())
probe.cast("float16")
try:
    probe(mx.nd.zeros((1, 3, 32, 32), dtype="float16")).wait_to_read()
    fp16_on_cpu = "works"
except mx.base.MXNetError as err:
    fp16_on_cpu = str(err).strip().splitlines()[-1]
print("float16 forward pass on the CPU:", fp16_on_cpu)
print(f"GPUs here: {gc.gpu_count()}." + ("" if on_gpu else
      " gc.build casts a float16 network back to float32 on the CPU and the record says so: the "
      "code below runs, but what it measures is float32 twice."))

# %% [markdown]
# ## The training step, in plain Gluon
# The whole change is two lines: `net.cast("float16")` (weights and activations in 16
# bits; BatchNorm keeps float32 statistics) and `multi_precision=True` in the Trainer's
# optimizer parameters (a float32 master copy of every weight). The images are cast to the
# network's dtype on the device, and the loss is computed in float32 so that the softmax
# cannot overflow. `gc.build` makes the loaders and initialises the network on the devices
# (as float32 where float16 cannot run); `gc.record` times the loop below, step by step,
# and writes the run record. This loop is what the table measures.

# %%
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()


def train_in(dtype, multi_precision=True, name=None):
    """Train a fresh network in `dtype` with this notebook's loop; returns the run record."""
    net = gc.get_model(MODEL)
    net.hybridize(static_alloc=True, static_shape=True)       # lesson 3
    if dtype == "float16":
        net.cast("float16")                                    # <- the lesson: 16-bit weights and activations
    parts = gc.build(cfg.replace(name=name or dtype), net=net)  # float32 again on a CPU, recorded
    net, train_iter, val_iter, _ = parts
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": cfg.lr, "momentum": cfg.momentum, "wd": cfg.wd,
                             "multi_precision": multi_precision})   # <- float32 master weights
    ran = parts.cfg.dtype                                      # what runs here
    with gc.record(parts, optimizer=trainer, verbose=False) as rec:
        for epoch in rec.epochs():
            for data, label in rec.batches(train_iter):
                xs, ys = gc.split(data, label, parts.devices, ran)   # images cast on the device
                with autograd.record():
                    outs = [net(x) for x in xs]
                    losses = [loss_fn(out.astype("float32"), y) for out, y in zip(outs, ys)]
                autograd.backward(losses)
                trainer.step(data.shape[0])
                rec.step(data.shape[0], loss_sum=[loss.sum() for loss in losses],   # no sync:
                         correct=[(out.argmax(axis=1) == y.astype(out.dtype)).sum()  # summed on
                                  for out, y in zip(outs, ys)])                       # the device
            rec.end_epoch(sync=mx.nd.waitall,                  # the epoch's one sync point
                          evaluate=lambda: gc.evaluate(net, val_iter, parts.devices))
    return rec.run


# %% [markdown]
# ## float32 against float16, repeated
# Each precision is trained `REPEATS` times, interleaved (float32, float16, float32, ...),
# so that a machine that speeds up or slows down hits both alike; the spread of the
# repeats is the noise a difference must beat. On a GPU a third precision runs: float16
# *without* the master copy.

# %%
variants = {"float32": dict(dtype="float32"), "float16": dict(dtype="float16")}
if on_gpu:  # on a CPU it would be float32 a third time
    variants["float16 without multi_precision"] = dict(dtype="float16", multi_precision=False)
runs = {name: [] for name in variants}
for _ in range(REPEATS):
    for name, kwargs in variants.items():
        runs[name].append(train_in(name=name, **kwargs))
every = [r for pair in zip(*runs.values()) for r in pair]
table = gc.report.ladder_table(every)
display(gc.tables.show(table))

# %%
gc.plots.curves([rs[-1] for rs in runs.values()])

# %% [markdown]
# ## What the runs say
# Each sentence below is computed from the runs above: the speed ratio with the range the
# repeats allow, the accuracy against its binomial noise on the validation images.

# %%
say = gc.closing.Closing(table, every)   # prints a line only when its numbers are the table's
r32, r16 = runs["float32"][-1], runs["float16"][-1]
speed = say.compare(runs["float32"], runs["float16"])
say(f"'{gc.metrics.label(r16)}' against float32: {speed}.")
ran16 = r16.config["dtype"]
if ran16 != "float16":
    say(f"Both ran {ran16} here (no float16 convolution on this CPU, and {gc.gpu_count()} GPUs): the "
        "ratio above compares two identical jobs"
        + (", so its 'effect' is not float16's: this machine's speed changed between the runs by more "
           f"than {REPEATS} repeats could bound." if speed.is_effect else ", and it is within their noise, as it should be.")
        + " The float16 speed-up and the master copy's accuracy need a GPU (tensor cores: V100 and newer).")
elif speed.kind == "slower":
    say("float16 was a slow-down here: check that the GPU has tensor cores (V100 or newer) and "
        "that the input pipeline keeps up (lessons 2 and 9).")
if gc.metrics.data_wait_share(r32) > 0.5:
    say(f"The float32 run waited for data {say.cell(r32, 'data_wait_share')} of its steady time: a faster "
        "step cannot show until the input pipeline keeps up (lessons 2 and 9).")
for rs in runs.values():
    say(say.chance(rs[-1]))
if "float16 without multi_precision" in runs:
    bare = runs["float16 without multi_precision"][-1]
    say(f"The master copy's worth: float16 with against without multi_precision: "
        f"{say.accuracy(bare, r16)[1]}.")
say(f"float16 against float32 in accuracy: {say.accuracy(r32, r16)[1]}.")
