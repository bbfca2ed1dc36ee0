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

# %%
import warnings
import mxnet as mx
from mxnet import autograd, gluon
from gpu_course import gluon as gc

# %% tags=["parameters"]
SIZES = gc.sizes("04")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("04", repeats=3)

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
# A thousand updates of 1e-4 with the optimizer itself, both ways (MXNet warns about the
# first: "Accumulating with float16 in optimizer can lead to poor accuracy"):

# %%
warnings.filterwarnings("ignore", "Accumulating with float16")   # the warning is the point made below
grad = mx.nd.array([1e-3], dtype="float16")
for multi_precision in (False, True):
    sgd = mx.optimizer.SGD(learning_rate=0.1, momentum=0.0, wd=0.0, multi_precision=multi_precision)
    weight = mx.nd.array([1.0], dtype="float16")
    state = sgd.create_state_multi_precision(0, weight)
    for _ in range(1_000):
        sgd.update_multi_precision(0, weight, grad, state)   # <- the master copy, or not
    print(f"multi_precision={multi_precision!s:5}: weight after 1,000 steps = {weight.asscalar():.4f} "
          f"(exact: {1.0 - 1_000 * 0.1 * 1e-3:.4f})")

# %% [markdown]
# ## Can this machine compute in float16?
# MXNet has no float16 convolution on the CPU. We check that here with one forward pass
# rather than take it on trust. Where it fails, `gc.build` casts a float16 network back to
# float32 and the record says so: the code below still runs, and the conclusion compares
# what ran, not what was asked for.

# %%
probe = gc.get_model(SIZES["model"])
probe.initialize(ctx=mx.cpu())
probe.cast("float16")
try:
    probe(mx.nd.zeros((1, 3, 32, 32), dtype="float16")).wait_to_read()
    print("float16 forward pass on the CPU: works")
except mx.base.MXNetError as err:
    print("float16 forward pass on the CPU:", str(err).strip().splitlines()[-1])

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
cfg = gc.Experiment(name="float32", batch_size=64, graph="static-alloc", **SIZES)
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()


def train_in(dtype, multi_precision=True, name=None):
    """Train a fresh network in `dtype` with this notebook's loop; returns the run record."""
    net = gc.get_model(cfg.model)
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
# Each precision is trained `repeats` times, interleaved (float32, float16, float32, ...),
# so that a machine that speeds up or slows down hits both alike; the spread of the
# repeats is the noise a difference must beat. On a GPU a third precision runs: float16
# *without* the master copy (on a CPU it would be float32 a third time).

# %%
variants = {"float32": dict(dtype="float32"), "float16": dict(dtype="float16")}
if gc.gpu_count():
    variants["float16 without multi_precision"] = dict(dtype="float16", multi_precision=False)
runs = [train_in(name=name, **kwargs) for _ in range(SIZES.repeats) for name, kwargs in variants.items()]
gc.show(runs, lesson="04", chart=False)
gc.conclude("04", runs)   # the sentences, checked against the table: gpu_course/lessons/l04_precision.py

# %%
gc.plots.curves(runs[-len(variants):])

# %% [markdown]
# ## Exercise 04.1: 16 bits, on this device
# Below, float32 and one 16-bit type on `SIZES.exercise_size` images at a batch of
# `SIZES.exercise_batch`, each trained by `gc.train` (the same cast and master copy as the
# loop above). At the line marked `# >>>` choose the 16-bit type this device computes in:
# MXNet computes `"float16"` on a GPU, and `"bfloat16"` on a CPU with AVX-512 (AMP rewrites
# the graph so that oneDNN runs the convolutions in bfloat16; the weights stay float32; `gpu-course
# env` says whether this CPU has it, and where it does not the check says what it can do). **Before
# running**, write your guess of its samples/s against float32 *on this device*:
# `"faster"`, `"slower"` or `"same"`. The check rules on it against the runs' noise, names
# the device they ran on and why that decides it, and reads the accuracy against two
# standard errors. After trying, `gc.solution("04.1")` shows one way.

# %% tags=["exercise"]
ex = gc.Experiment(name="exercise", graph="static-alloc", batch_size=SIZES.exercise_batch,
                   **SIZES.replace(train_size=SIZES.exercise_size))
low = "float32"              # >>> the 16-bit type this device computes in: "float16" or "bfloat16"
guess = None                 # >>> written before running: "faster", "slower" or "same" than float32
tried = [gc.train(ex.replace(name=f"exercise: {dtype}", dtype=dtype), verbose=False)   # <- the precision
         for dtype in dict.fromkeys(("float32", low))]

# %% tags=["check"]
gc.check("04.1", tried, guess)
