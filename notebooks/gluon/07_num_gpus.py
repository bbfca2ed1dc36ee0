# %% [markdown]
# # 7. More GPUs: data parallelism and its scaling efficiency
#
# **What this lesson measures.** The same job on 1, 2, 4, ... devices: each device gets a
# slice of every batch (`split_and_load`), computes its gradients, and the key-value store
# (`kvstore='device'`) sums them so every copy of the network takes the same step. The
# batch size per device stays fixed, so k devices process k times the images per step.
# Scaling efficiency = samples/s on k devices ÷ (k × samples/s on one).
#
# **The talk's numbers** (V100s in 2019), 1 GPU → 4 GPUs at each rung of the ladder:
# naive 306 → 392 samples/s, 29 workers 663 → 950, hybridized 941 → 1,266, float16
# 3,100 → 7,400, batch 640 **17,000 → 50,000**. More GPUs pay only once one GPU is kept
# busy; a starved GPU stays starved when it has company. Your numbers come from your machine.

# %%
# Makes gpu_course importable in this kernel; a fresh kernel gets its track installed.
import importlib.util, pathlib, subprocess, sys  # later cells use these too
here = pathlib.Path.cwd()
sys.path.insert(0, str(next(p for p in (here, *here.parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
DATASET = "synthetic"                 # "cifar10" where the real data set is in data/
TRAIN_SIZE = 512 if SMOKE else 50_000
TEST_SIZE = 256 if SMOKE else 10_000
EPOCHS = 1 if SMOKE else 2
BATCH_SIZE = 32 if SMOKE else 640     # per device
CPU_TRAIN_SIZE = 2048                 # images per epoch when the devices are CPU contexts
CPU_TEST_SIZE = 512
WORKERS = max(2, os.cpu_count() - 3)

# %%
import mxnet as mx
import pandas as pd
from mxnet import autograd, gluon
from gpu_course import gluon as gc

talk = pd.DataFrame({"rung": ["naive", "29 workers", "hybridize", "float16", "batch 640"],
                     "1 GPU": [306, 663, 941, 3100, 17000], "4 GPUs": [392, 950, 1266, 7400, 50000]})
talk["efficiency"] = (talk["4 GPUs"] / (4 * talk["1 GPU"])).map("{:.0%}".format)
talk

# %% [markdown]
# ## Which devices
# All GPUs when there are two or more. With fewer, the lesson still runs the multi-device
# code, on two CPU contexts (`mx.cpu(0)`, `mx.cpu(1)`): same `split_and_load`, same
# kvstore, but both contexts share this machine's cores, so expect no speed-up there.

# %%
gpus = gc.gpu_count()
if gpus >= 2:
    counts = sorted({2 ** k for k in range(8) if 2 ** k < gpus} | {gpus})
    device_sets = {k: [mx.gpu(i) for i in range(k)] for k in counts}
    where = f"{gpus} GPUs"
else:
    counts = [1, 2]
    device_sets = {k: [mx.cpu(i) for i in range(k)] for k in counts}
    TRAIN_SIZE, TEST_SIZE = min(TRAIN_SIZE, CPU_TRAIN_SIZE), min(TEST_SIZE, CPU_TEST_SIZE)
    where = (f"{gpus} GPU{'s' if gpus != 1 else ''}: fewer than two, so the multi-device code runs on "
             f"{len(device_sets[2])} CPU contexts sharing {os.cpu_count()} cores, {TRAIN_SIZE} images per epoch")
print(f"This machine has {where}; device counts to try: {counts}")

# %% [markdown]
# ## One data-parallel step by hand
# What `gc.train` does in every step, in plain Gluon: slice the batch over the devices,
# run forward and backward on each, and let the trainer's kvstore sum the gradients.

# %%
devices = device_sets[counts[-1]]
cfg = gc.Experiment(name="num-gpus", dataset=DATASET, train_size=TRAIN_SIZE, test_size=TEST_SIZE,
                    epochs=EPOCHS, batch_size=BATCH_SIZE, num_workers=WORKERS, graph="static",
                    dtype="float16" if gpus >= 2 else "float32", kvstore="device",
                    lr_base_batch=128, warmup_epochs=min(1.0, EPOCHS / 2), lr_scheduler="cosine",
                    warmup_steps=2 if SMOKE else 10, monitor_interval=0.2 if SMOKE else 0.5)
train_set, _ = gc.load_datasets(cfg)
batch_data, batch_label = next(iter(gluon.data.DataLoader(train_set, batch_size=BATCH_SIZE * len(devices))))

net = gc.get_model("resnet20")
net.initialize(mx.init.Xavier(), ctx=devices)                     # one copy per device
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore="device")
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
xs = gluon.utils.split_and_load(batch_data, devices)              # one slice per device
ys = gluon.utils.split_and_load(batch_label, devices)
with autograd.record():
    losses = [loss_fn(net(x), y) for x, y in zip(xs, ys)]
autograd.backward(losses)
trainer.step(batch_data.shape[0])                                 # kvstore sums, every copy updates
for x, loss in zip(xs, losses):
    print(f"{x.context}: slice of shape {x.shape}, mean loss {loss.mean().asscalar():.4f}")

# %% [markdown]
# ## The scaling run
# The same configuration on each device count; the loader serves `batch_size × devices`
# images per step.

# %%
runs = []
for k in counts:
    name = "num-gpus" if k == counts[-1] else f"devices={k}"      # "num-gpus" is the ladder's rung
    runs.append(gc.train(cfg.replace(name=name, num_gpus=k), devices=device_sets[k], verbose=False))
    print(runs[-1].summary["summary_line"])
gc.plots.throughput(runs)

# %%
table = gc.report.ladder_table(runs)
table.insert(1, "devices", counts)
table["efficiency"] = table["speedup"] / table["devices"]
table[["devices", "rung", "samples_per_sec", "epoch_time_s", "gpu_util", "speedup", "efficiency"]]

# %%
last = table.iloc[-1]
print(f"{int(last.devices)} devices: {last.samples_per_sec:,.0f} samples/s, ×{last.speedup:.2f} one device, "
      f"scaling efficiency {last.efficiency:.0%} (the talk's best: "
      f"{max(talk['4 GPUs'] / (4 * talk['1 GPU'])):.0%} at batch 640 on 4 V100s).")
if gpus < 2:
    print(f"These 'devices' were CPU contexts on the same {os.cpu_count()} cores, so {last.efficiency:.0%} "
          f"says nothing about GPUs: the run checked that the multi-device code works "
          f"(split_and_load over {int(last.devices)} contexts, kvstore='device'). Run it on a multi-GPU machine "
          "to measure scaling.")
elif last.efficiency < 0.7:
    print("Below 70%: each GPU is not kept busy. Look at the utilisation timeline of the last run; "
          "the usual causes are the input pipeline (more workers) and the Python loop (hybridize, larger batches).")
