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

# %%
# Makes gpu_course importable in this kernel; a fresh kernel gets its track installed.
import importlib.util, pathlib, subprocess, sys  # later cells use these too
here = pathlib.Path.cwd()
sys.path.insert(0, str(next(p for p in (here, *here.parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %% tags=["parameters"]
import os
SMOKE = os.environ.get("GPU_COURSE_SMOKE") == "1"   # CI sets it: tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
DATASET = "synthetic"                 # "cifar10" where the real data set is in data/
TRAIN_SIZE = 1024 if SMOKE else 50_000
TEST_SIZE = 256 if SMOKE else 10_000
EPOCHS = 1 if SMOKE else 3
WORKERS = max(2, os.cpu_count() - 3)

# %%
import mxnet as mx
from gpu_course import gluon as gc

on_gpu = gc.gpu_count() > 0
cfg = gc.Experiment(name="float16", dataset=DATASET, train_size=TRAIN_SIZE, test_size=TEST_SIZE,
                    epochs=EPOCHS, batch_size=64, num_workers=WORKERS, graph="static",
                    warmup_steps=3 if SMOKE else 10, monitor_interval=0.2 if SMOKE else 0.5)

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
# ## Training in float16
# The lesson's change in plain MXNet: cast the network, and ask the optimizer for float32
# master weights (`gc.train` builds `gluon.Trainer(..., optimizer_params={...,
# "multi_precision": True})` for a float16 network; the data is cast to float16 on the device).
#
# MXNet has no float16 convolution on the CPU. We check that on this machine with a single
# forward pass rather than take it on trust:

# %%
probe = gc.get_model("resnet20")
probe.initialize(ctx=mx.cpu())
probe.cast("float16")
try:
    probe(mx.nd.zeros((1, 3, 32, 32), dtype="float16")).wait_to_read()
    fp16_on_cpu = "works"
except mx.base.MXNetError as err:
    fp16_on_cpu = str(err).strip().splitlines()[-1]
print("float16 forward pass on the CPU:", fp16_on_cpu)
if not on_gpu:
    print("No GPU here, so gc.train casts the float16 network back and trains it in float32 "
          "(the run records what really ran): the code path runs, the speed-up cannot show.")

# %%
float32 = gc.get_model("resnet20")
float32.hybridize(static_alloc=True, static_shape=True)
run32 = gc.train(cfg.replace(name="float32 (hybridized)"), net=float32, verbose=False)

half = gc.get_model("resnet20")
half.hybridize(static_alloc=True, static_shape=True)
half.cast("float16")                    # <- the lesson: weights and activations in 16 bits
run16 = gc.train(cfg, net=half)         # a float16 network gets multi_precision=True

runs = [run32, run16]
if on_gpu:  # the same float16 network without the float32 master weights
    bare = gc.get_model("resnet20")
    bare.hybridize(static_alloc=True, static_shape=True)
    bare.cast("float16")
    runs.append(gc.train(cfg.replace(name="float16 without multi_precision",
                                     optimizer_params=(("multi_precision", False),)),
                         net=bare, verbose=False))
gc.tables.show(gc.report.ladder_table(runs))

# %%
gc.plots.curves(runs)

# %%
table = gc.report.ladder_table(runs)
ran = run16.config["dtype"]
print(f"float32: {table.samples_per_sec[0]:,.0f} samples/s, val acc {table.val_acc[0]:.1%}; "
      f"'float16' rung (ran in {ran}): {table.samples_per_sec[1]:,.0f} samples/s "
      f"(×{table.speedup[1]:.2f}), val acc {table.val_acc[1]:.1%}.")
if on_gpu:
    print(f"Without multi_precision: val acc {table.val_acc[2]:.1%}, "
          f"{(table.val_acc[1] - table.val_acc[2]) * 100:+.1f} points for the master copy.")
else:
    print("On the CPU both runs are float32, so any difference in speed or accuracy is noise; "
          "run this notebook on a GPU to see the talk's effect.")
