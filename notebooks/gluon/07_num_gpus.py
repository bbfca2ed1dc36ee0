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
# **The talk's numbers** (V100s in 2019), samples/s on 1 GPU → 4 GPUs at each rung of the
# ladder, and the scaling efficiency: naive 306 → 392 (32 %), 29 workers 663 → 950 (36 %),
# hybridized 941 → 1,266 (34 %), float16 3,100 → 7,400 (60 %), batch 640 **17,000 → 50,000
# (74 %)**. A starved GPU stays starved when it has company: the slide "choose the number of
# GPUs wisely" shows 3,200 samples/s on one GPU and 3,400 on four (×1.06, 27 %), nvidia-smi
# showing them nearly idle. Fix the input and the step first (lessons 2-6), then add GPUs.
# Your numbers come from your machine.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import mxnet as mx
from mxnet import autograd, gluon
from gpu_course.scale import distributed
from gpu_course_sagemaker import launch as sagemaker_launch
from gpu_course import gluon as gc
from gpu_course.env.cores import loader_workers, usable_cores
from gpu_course.tracks.gluon import dist
from gpu_course.lessons import l07_devices as lesson

# %% tags=["parameters"]
SIZES = gc.sizes("07")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("07", epochs=5)
NODES = 2                # local "hosts" (parameter-server workers) of the multi-host job

# %% [markdown]
# ## 1. One host: which devices
# All GPUs when there are two or more. With fewer, the lesson still runs the multi-device
# code, on two CPU contexts (`mx.cpu(0)`, `mx.cpu(1)`): same `split_and_load`, same
# kvstore, but both contexts share this machine's cores, so expect no speed-up there.

# %%
plan = lesson.plan("gluon", gc.gpu_count(), usable_cores(), SIZES, nodes=NODES)
context = mx.gpu if plan.on_gpu else mx.cpu
device_sets = {k: [context(i) for i in range(k)] for k in plan.counts}   # <- a context per device
plan

# %% [markdown]
# ## One data-parallel step by hand
# What `gc.train` does in every step, in plain Gluon: slice the batch over the devices,
# run forward and backward on each, and let the trainer's kvstore sum the gradients.

# %%
devices = device_sets[plan.counts[-1]]
cfg = gc.Experiment(name="all-gpus", graph="static-alloc", dtype="float16" if plan.on_gpu else "float32",
                    num_workers=loader_workers(1),   # one process drives every device
                    lr_base_batch=128, lr_scheduler="cosine", **plan.train_sizes)
train_set, _ = gc.load_datasets(cfg)
batch_data, batch_label = next(iter(gluon.data.DataLoader(train_set, batch_size=cfg.batch_size * len(devices))))
net = gc.get_model(cfg.model)
net.initialize(mx.init.Xavier(), ctx=devices)                     # <- one copy per device
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore="device")
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
xs = gluon.utils.split_and_load(batch_data, devices)              # <- one slice per device
ys = gluon.utils.split_and_load(batch_label, devices)
with autograd.record():
    losses = [loss_fn(net(x), y) for x, y in zip(xs, ys)]
autograd.backward(losses)
trainer.step(batch_data.shape[0])                                 # <- kvstore sums, every copy updates
for x, loss in zip(xs, losses):
    print(f"{x.context}: a slice of {x.shape[0]} images, mean loss {loss.mean().asscalar():.3f}")

# %% [markdown]
# ## The scaling run
# The same configuration on each device count; the loader serves `batch_size × devices`
# images a step.

# %%
runs = [gc.train(cfg.replace(name="all-gpus" if k == plan.counts[-1] else f"devices={k}",   # "all-gpus": the ladder's rung
                             num_gpus=k), devices=device_sets[k], verbose=False)           # <- k devices, one process
        for k in plan.counts]

# %%
gc.show(runs, lesson="07")
gc.conclude("07", runs)   # the sentences, checked against the table: gpu_course/lessons/l07_devices.py

# %% [markdown]
# ## 2. Several hosts: MXNet's parameter server
# A job has a scheduler (one), servers (here one per host) and workers (one per host, each
# driving that host's GPUs), each process told its role by `DMLC_*` variables. On real hosts
# MXNet's own launcher starts them all over ssh; on SageMaker the MXNet estimator's
# `parameter_server` option does it and runs the course's entry script as each host's worker:

# %%
print("$", dist.commands(workers=NODES, servers=NODES))
job = sagemaker_launch.Job("ml.g5.12xlarge", instance_count=NODES)   # NODES instances of 4 A10Gs
print("SageMaker distribution:", sagemaker_launch.job_settings(cfg, job)["distribution"])
print(*(f"{k}={v}" for k, v in dist.role_env("worker", 9000, workers=NODES, servers=NODES, uri="HOST0").items()))

# %% [markdown]
# Here the hosts are emulated on 127.0.0.1: the same processes and variables, each worker
# with its shard (`dataset.shard(workers, rank)`), and `trainer.step(batch × workers)` so the
# servers apply the mean gradient. `dist_device_sync` on GPUs first sums a host's GPUs on a
# GPU. Every worker gets the same share of the cores (`plan.threads`), the lone worker of
# the one-host run included, so the two runs compare.

# %%
ps_cfg = cfg.replace(num_gpus=plan.per_host if plan.on_gpu else 0, num_workers=loader_workers(NODES))
ps_runs = [dist.launch_local(ps_cfg.replace(name=f"ps workers={n}"), workers=n, servers=n,   # <- through the servers
                             threads=plan.threads) for n in (1, NODES)]
gc.show(ps_runs, lesson="07", chart=False)
gc.conclude("07", ps_runs)
gc.tables.show(lesson.ranks(ps_runs[-1]))   # each worker's own timings

# %% [markdown]
# ## 3. What a push and a pull cost
# Every `trainer.step` pushes each parameter's gradient to the servers and pulls the new
# weights. Timed alone against the array's size (a worker sends the array and receives it
# back: 2 × bytes a round); each time is the median round, the fastest and slowest beside
# it. The lecture's link bandwidths, for scale: 10 Gbps Ethernet 1 GB/s, SATA 6, 56 Gbps
# Mellanox 6.8, PCIe x8 (a GPU's) 5, an i7 5930K's 40 PCIe lanes 30, NVLink 40 GB/s.
#
# **Buckets and overlap.** PyTorch's DDP groups gradients into buckets (`bucket_cap_mb`),
# Horovod fuses them (`HOROVOD_FUSION_THRESHOLD`); **MXNet has no such setting**: the kvstore
# pushes every parameter as its own key, the last layers' first (priority −index), while the
# engine still runs backward, and only *splits* large arrays across servers
# (`MXNET_KVSTORE_BIGARRAY_BOUND`, 1e6 elements). What the exchange costs a step is read from
# the per-step timings: the step with 2 workers against the step with one, both through a server.

# %%
pp = dist.bench_local(workers=NODES, servers=1, sizes=dist.SIZES[:SIZES.bench_sizes], iters=SIZES.bench_iters)
grad_bytes = distributed.gradient_bytes(ps_cfg)   # every trainable parameter, float32

# %% [markdown]
# ## 4. When more stops paying: the model
# `gpu_course/scale/scaling.py`: t_step(k) = t_compute + (1 − overlap) × 2(k−1)/k × gradient
# bytes ÷ bandwidth; efficiency = t_compute ÷ t_step(k). The tables below: the push and
# pull, the model's terms as measured here (and in the talk), then the model's outputs for
# machines not measured here: this machine's step, a V100's (the talk's) and ResNet-50's on
# an A100 (25.6 M parameters, ≈51 MB of float16 gradients; 2,470 img/s in PyTorch AMP, 256
# images a step) over the lecture's links. ResNet-20's gradients are half a megabyte, so
# even 10 Gbps Ethernet moves them in about a millisecond.

# %%
gc.conclude("07", ps_runs, bench=pp, grad_bytes=grad_bytes)

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

# %% [markdown]
# ## Exercise 07.1: the same batch, split over more devices
# The scaling runs above fixed the batch *per device*: k devices did k times the work of
# one a step. Here the batch *a step* is fixed (`plan.exercise_sizes`: `batch_size`
# images a step, `train_size` images) and k devices share it, `batch_size ÷ k` each.
# Below, one device, then the count you set at the line marked `# >>>` (GPUs, or CPU contexts, as the plan above says).
# **Before running**, write your guess of its samples/s against one: `"faster"`,
# `"slower"` or `"same"`. The check rules on it against the runs' noise and gives the
# scaling efficiency; on a CPU it says what the devices share. After trying,
# `gc.solution("07.1")` shows one way.

# %% tags=["exercise"]
plan = lesson.plan("gluon", gc.gpu_count(), usable_cores(), SIZES)
context = mx.gpu if plan.on_gpu else mx.cpu
few = plan.exercise_sizes    # the batch a step to split, the images
ex = gc.Experiment(name="exercise", graph="static-alloc", dtype="float16" if plan.on_gpu else "float32",
                   num_workers=loader_workers(1), **few)
k = 1                        # >>> devices to split the same batch over
guess = None                 # >>> written before running: "faster", "slower" or "same" than one device
tried = [gc.train(ex.replace(name=f"exercise: {n} device(s)", num_gpus=n, batch_size=few.batch_size // n),  # <- a share each
                  devices=[context(i) for i in range(n)], verbose=False)
         for n in dict.fromkeys((1, k))]

# %% tags=["check"]
gc.check("07.1", tried, guess)
