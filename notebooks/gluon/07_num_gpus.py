# %% [markdown]
# # 7. More GPUs, more hosts: data parallelism and what communication costs
#
# **What this lesson measures.** The same job on one device, on several devices of one
# host, and on several hosts. On one host each device gets a slice of every batch
# (`split_and_load`), computes its gradients, and the key-value store (`kvstore='device'`)
# sums them so every copy of the network takes the same step. Across hosts MXNet uses a
# parameter server (`kvstore='dist_sync'`): every host's worker pushes its gradients to the
# servers, which sum them, run the optimizer and send the new weights back. The batch per
# device stays fixed, so k devices process k times the images per step. Scaling efficiency
# = samples/s on k devices ÷ (k × samples/s on one). Then what a push and pull cost, and a
# model that turns that into "when more devices stop paying".
#
# **The talk's numbers** (V100s in 2019), 1 GPU → 4 GPUs at each rung of the ladder:
# naive 306 → 392 samples/s, 29 workers 663 → 950, hybridized 941 → 1,266, float16
# 3,100 → 7,400, batch 640 **17,000 → 50,000**. More GPUs pay only once one GPU is kept
# busy; a starved GPU stays starved when it has company. Your numbers come from your machine.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
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
CPU_TRAIN_SIZE = 512 if SMOKE else 2048  # images per epoch when the devices are CPU contexts
CPU_TEST_SIZE = 128 if SMOKE else 512
MODEL = "tiny" if SMOKE else "resnet20"  # smoke: a small net, so the processes start and finish quickly
NODES = 2                             # local "hosts" (parameter-server workers) of the multi-host job

# %%
import mxnet as mx
import pandas as pd
from mxnet import autograd, gluon
from gpu_course.scale import distributed, scaling
from gpu_course.analyse import metrics
from gpu_course.tracks import gluon as gc
from gpu_course.env.cores import loader_workers
from gpu_course.tracks.gluon import dist

talk = pd.DataFrame({"rung": ["naive", "29 workers", "hybridize", "float16", "batch 640"],
                     "1 GPU": [306, 663, 941, 3100, 17000], "4 GPUs": [392, 950, 1266, 7400, 50000]})
talk["efficiency"] = (talk["4 GPUs"] / (4 * talk["1 GPU"])).map("{:.0%}".format)
talk

# %% [markdown]
# The talk's "choose the number of GPUs wisely" slide: the same job on one GPU and on four,
# where something other than the GPU held it (nvidia-smi showed the GPUs nearly idle).

# %%
wisely = pd.DataFrame({"GPUs": [1, 4], "samples/s": [3200, 3400], "epoch (s)": [16, 15]})  # the slide
wisely["speed-up"] = wisely["samples/s"] / wisely["samples/s"].iloc[0]
wisely["efficiency"] = (wisely["speed-up"] / wisely["GPUs"]).map("{:.0%}".format)
print(f"On the slide, four GPUs ran ×{wisely['speed-up'].iloc[1]:.2f} one GPU ({wisely.efficiency.iloc[1]} "
      "scaling efficiency): three GPUs bought almost nothing, because the job was limited before the GPU. "
      "Fix the input and the step first (lessons 2-6), then add GPUs.")
wisely

# %% [markdown]
# ## 1. One host: which devices
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
cfg = gc.Experiment(name="num-gpus", model=MODEL, dataset=DATASET, train_size=TRAIN_SIZE, test_size=TEST_SIZE,
                    epochs=EPOCHS, batch_size=BATCH_SIZE, graph="static",
                    num_workers=loader_workers(1),      # one process drives every device of the host
                    dtype="float16" if gpus >= 2 else "float32", kvstore="device",
                    lr_base_batch=128, warmup_epochs=min(1.0, EPOCHS / 2), lr_scheduler="cosine",
                    warmup_steps=2 if SMOKE else 10, monitor_interval=0.2 if SMOKE else 0.5)
train_set, _ = gc.load_datasets(cfg)
batch_data, batch_label = next(iter(gluon.data.DataLoader(train_set, batch_size=BATCH_SIZE * len(devices))))

net = gc.get_model(MODEL)
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
print(f"{int(last.devices)} devices against one: {gc.noise.compare(runs[0], runs[-1])}; scaling "
      f"efficiency {last.efficiency:.0%} (the talk's best: "
      f"{max(talk['4 GPUs'] / (4 * talk['1 GPU'])):.0%} at batch 640 on 4 V100s).")
flag = gc.noise.efficiency_flag(last.efficiency, int(last.devices))
if flag:
    print(flag)
if gpus < 2:
    print(f"These 'devices' were CPU contexts on the same {os.cpu_count()} cores, so {last.efficiency:.0%} "
          f"says nothing about GPUs: the run checked that the multi-device code works "
          f"(split_and_load over {int(last.devices)} contexts, kvstore='device'). Run it on a multi-GPU machine "
          "to measure scaling.")
elif last.efficiency < 0.7:
    print("Below 70%: each GPU is not kept busy. Look at the utilisation timeline of the last run; "
          "the usual causes are the input pipeline (more workers) and the Python loop (hybridize, larger batches).")

# %% [markdown]
# ## 2. Several hosts: MXNet's parameter server
# A job has a scheduler (one), servers (here one per host) and workers (one per host, each
# driving that host's GPUs), each process told its role by `DMLC_*` variables. On real hosts
# MXNet's own launcher starts them all over ssh; on SageMaker the MXNet estimator's
# `parameter_server` option does it and runs the course's entry script as each host's worker:

# %%
print("$", dist.commands(workers=NODES, servers=NODES))
from gpu_course.sagemaker import launch as sagemaker_launch
spec = sagemaker_launch.job_spec(cfg, "ml.p3.8xlarge", instance_count=NODES)
print(f"SageMaker: instance_count={spec['instance_count']}, distribution={spec['distribution']}")
print(dist.role_env("worker", 9000, workers=NODES, servers=NODES, uri="HOST0"))

# %% [markdown]
# Here the hosts are emulated on 127.0.0.1: the same processes and variables, each worker
# with its shard (`dataset.shard(workers, rank)`), and `trainer.step(batch × workers)` so the
# servers apply the mean gradient. `dist_device_sync` on GPUs first sums a host's GPUs on a
# GPU. Every process here gets the same share of the cores, the lone worker of the
# one-host run included, so the two runs compare.

# %%
kv = "dist_device_sync" if gpus >= NODES else "dist_sync"
threads = max(1, os.cpu_count() // NODES)
ps_cfg = cfg.replace(kvstore=kv, num_gpus=gpus // NODES if gpus >= NODES else 0,
                     num_workers=loader_workers(NODES))   # each local "host": its worker's GPUs, its share of cores
ps_runs = [dist.launch_local(ps_cfg.replace(name="ps workers=1"), workers=1, servers=1, threads=threads),
           dist.launch_local(ps_cfg.replace(name=f"ps workers={NODES}"), workers=NODES, servers=NODES,
                             threads=threads)]
for r in ps_runs:
    n = r.meta["notes"]
    print(f"{n['workers']} worker(s), {n['servers']} server(s), kvstore={n['kvstore']}: {r.summary['summary_line']}")
per_worker = pd.DataFrame([{"worker": w["rank"], **{k: sum(e[k] for e in w["epochs"])
                                                    for k in ("steps", "data_wait_s", "compute_s")}}
                           for w in ps_runs[-1].meta["notes"]["ranks"]])
per_worker["s/step"] = (per_worker.data_wait_s + per_worker.compute_s) / per_worker.steps
per_worker

# %% [markdown]
# ## 3. What a push and a pull cost
# Every `trainer.step` pushes each parameter's gradient to the servers and pulls the new
# weights. Timed alone against the array's size, beside the lecture's bandwidth table
# (a worker sends the array and receives it back: 2 × bytes per round). Each time is the
# median round, the fastest and slowest beside it:

# %%
pp = pd.DataFrame(dist.bench_local(workers=NODES, servers=1,
                                   sizes=dist.SIZES[:5] if SMOKE else dist.SIZES, iters=3 if SMOKE else 10))
pp["size"] = pp["bytes"].map(lambda b: f"{b / 2**20:g} MiB" if b >= 2**20 else f"{b / 2**10:g} KiB")
display(pp[["size", "time_s", "time_min_s", "time_max_s", "worker_GBps"]])
lecture = pd.DataFrame([{"link": name, "GB/s": gbps} for name, gbps in
                        [("Intel i7 5930K (40 PCIe lanes)", 30.0), ("NVLink", 40.0), ("PCIe x8 (GPU)", 5.0),
                         ("SATA", 6.0), ("56 Gbps Mellanox", 6.8), ("10 Gbps Ethernet", 1.0)]])
display(lecture)
def rate(row):  # the median round's GB/s, with its slowest and fastest round's
    return (f"{row.worker_GBps:.3g} GB/s ({row.worker_GBps * row.time_s / row.time_max_s:.3g}–"
            f"{row.worker_GBps * row.time_s / row.time_min_s:.3g} over its rounds)")
best = pp.loc[pp.worker_GBps.idxmax()]
print(f"Through the server on this machine: {rate(pp.iloc[0])} at {pp['size'].iloc[0]} "
      f"(latency-bound), {rate(best)} at best, at {best['size']}.")

# %% [markdown]
# **Buckets and overlap.** PyTorch's DDP groups gradients into buckets (`bucket_cap_mb`),
# Horovod fuses them (`HOROVOD_FUSION_THRESHOLD`); **MXNet has no such setting**: the kvstore
# pushes every parameter as its own key, the last layers' first (priority −index), while the
# engine still runs backward, and only *splits* large arrays across servers
# (`MXNET_KVSTORE_BIGARRAY_BOUND`, 1e6 elements). What the exchange costs a step is read from
# the per-step timings: the step with 2 workers against the step with one, both through a server.

# %%
grad_bytes = distributed.gradient_bytes(ps_cfg)
t1, t2 = distributed.step_seconds(ps_runs[0]), distributed.step_seconds(ps_runs[1])
near = pp.iloc[(pp["bytes"] - grad_bytes).abs().argmin()]
t_pp = grad_bytes / near.worker_GBps / 1e9 * 2   # push + pull of every gradient at that rate
hidden = scaling.overlap_from_steps(t2, t1, t_pp)
# the one-worker run's own spread: its step time in each block of steady steps
block_steps = [ps_cfg.batch_size / rate for rate in metrics.steady_block_rates(ps_runs[0])]
spread = (max(block_steps) - min(block_steps)) / 2 if len(block_steps) > 1 else float("nan")
print(f"gradients {grad_bytes / 2**20:.2f} MiB; a step: {t1 * 1e3:.0f} ms with 1 worker, {t2 * 1e3:.0f} ms "
      f"with {NODES} (slowest worker); push + pull of all gradients alone ≈ {t_pp * 1e3:.1f} ms.")
if not abs(t2 - t1) > spread:   # NaN spread (too few steps) lands here too
    print(f"Extra per step with {NODES} workers: {(t2 - t1) * 1e3:+.1f} ms, within the one-worker run's own "
          f"spread (±{spread * 1e3:.1f} ms over {len(block_steps)} blocks of steps): the exchange's cost is "
          "not measurable here.")
else:
    print(f"Extra per step with {NODES} workers: {(t2 - t1) * 1e3:+.1f} ms (the one-worker run's own spread "
          f"±{spread * 1e3:.1f} ms), so {hidden:.0%} of the exchange hid behind compute"
          + (" (on one CPU the workers also take cores from each other: the extra time is not all "
             "communication)." if gpus == 0 else "."))

# %% [markdown]
# ## 4. When more stops paying: the model
# `gpu_course/scale/scaling.py`: t_step(k) = t_compute + (1 − overlap) × 2(k−1)/k × gradient
# bytes ÷ bandwidth; efficiency = t_compute ÷ t_step(k). From the measured step time and
# bandwidth, against the measured points and the talk:

# %%
rows = distributed.scaling_table(ps_runs[0], ps_runs[1], NODES, ps_cfg.batch_size, grad_bytes)
print(distributed.format_table(rows))
predicted = scaling.predict([NODES], t1, grad_bytes, near.worker_GBps * 1e9)[0]["efficiency"]
print(f"\nmodel for {NODES} workers: {predicted:.0%}; measured: {rows[1]['efficiency']:.0%}.")
timed = int(ps_runs[0].epochs.steps.sum()) - ps_cfg.warmup_steps
if timed < 20:
    print(f"Only {timed} timed steps in the one-worker run: treat these efficiencies as noise, not a result.")
talk_row = rows[2]
v100 = distributed.TALK["batch"] / distributed.TALK["samples_per_sec_1"]
print(f"The talk lost {talk_row['exposed_ms']:.1f} ms a step going to 4 V100s: as an all-reduce of ResNet-20's "
      f"float16 gradients that would be {talk_row['implied_busbw_GBps']:.2f} GB/s, " + (
          "far below PCIe x8's 5 GB/s: the loss was elsewhere (one Python thread driving four GPUs, the input "
          "pipeline)." if talk_row['implied_busbw_GBps'] < 5 else "what PCIe x8 delivers: communication can explain it."))
for link, gbps in distributed.LINKS.items():
    print(f"  {link:>18}: with a V100 step ({v100 * 1e3:.1f} ms), above 70% efficiency up to "
          f"k = {scaling.stops_paying(v100, distributed.TALK['grad_bytes'], gbps * 1e9, latency=20e-6)} devices")

# %% [markdown]
# ResNet-20's gradients are half a megabyte, so even 10 Gbps Ethernet moves them in about a
# millisecond. A ResNet-50 has 25.6 M parameters (≈51 MB of float16 gradients): the same model
# with its step time (the course's A100 anchor, 2,470 img/s in PyTorch AMP; taking 256 images
# a step, ≈104 ms) says where that one stops paying.

# %%
r50_step, r50_bytes = 256 / 2470, 25.6e6 * 2
for link, gbps in distributed.LINKS.items():
    k_max = scaling.stops_paying(r50_step, r50_bytes, gbps * 1e9, latency=20e-6)
    eff8 = scaling.predict([8], r50_step, r50_bytes, gbps * 1e9, latency=20e-6)[0]["efficiency"]
    print(f"  ResNet-50 over {link:>18}: 8 GPUs at {eff8:.0%} efficiency without overlap; "
          + (f"above 70% up to k = {k_max}" if k_max > 1 else "below 70% from the second GPU on"))

# %% [markdown]
# ## 5. Horovod: the same job, the diff
# The course day teaches Horovod. It replaces the kvstore with its own all-reduce (no servers),
# and the launcher:
#
# ```diff
# -trainer = gluon.Trainer(net.collect_params(), "sgd", opts, kvstore="dist_sync")
# +import horovod.mxnet as hvd; hvd.init(); ctx = mx.gpu(hvd.local_rank())
# +hvd.broadcast_parameters(net.collect_params(), root_rank=0)
# +trainer = hvd.DistributedTrainer(net.collect_params(), "sgd", opts)
# -python tools/launch.py -n 2 -s 2 -H hosts --launcher ssh python train.py
# +horovodrun -np 8 -H host0:4,host1:4 python train.py
# ```
#
# Its tensor fusion (`HOROVOD_FUSION_THRESHOLD`, 64 MB) is the bucket MXNet's kvstore lacks.
# It is not a dependency of this course: its last release (0.28.1, 2023) is a source package
# that must compile against the installed framework, and the course does not rely on that
# build working with the pinned MXNet 1.9.1 and PyTorch 2.13.
