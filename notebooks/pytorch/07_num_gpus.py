# %% [markdown]
# # 7. More GPUs, more hosts: data parallelism and what communication costs
#
# **What this lesson measures.** The same job on one device, on several devices of one
# host, and on several hosts, with PyTorch's `DistributedDataParallel` (DDP): `torchrun`
# starts one process per GPU, each process trains a copy of the network on its own shard of
# every epoch, and during `backward()` the gradients are averaged across processes (NCCL
# between GPUs, gloo between CPU processes), so every copy takes the same step. The batch
# per GPU stays fixed, so k GPUs process k times the images per step. Scaling efficiency =
# samples/s on k GPUs ÷ (k × samples/s on one). Then what the gradient exchange costs
# (all-reduce against message size, DDP's buckets, how much hides behind backward), and a
# model that turns those measurements into "when more GPUs stop paying".
#
# **The talk's numbers.** Apache MXNet on V100s in 2019; at each rung of the ladder, one GPU
# against four:
#
# | rung | 1 GPU | 4 GPUs | efficiency |
# | :-- | --: | --: | --: |
# | naive | 306 | 392 | 32 % |
# | 29 loader workers | 663 | 950 | 36 % |
# | hybridized | 941 | 1,266 | 34 % |
# | float16 | 3,100 | 7,400 | 60 % |
# | batch 640 | 17,000 | **50,000** | **74 %** |
#
# More GPUs pay only once one GPU is kept busy: on the slide "choose the number of GPUs
# wisely", four GPUs ran 3,400 samples/s against one GPU's 3,200 (×1.06, 27 % efficiency),
# the GPUs nearly idle in nvidia-smi. Fix the input and the step first (lessons 2-6), then
# add GPUs. Your numbers come from your machine.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler
from gpu_course_sagemaker import launch as sagemaker_launch
from gpu_course import torch as gc
from gpu_course.tracks.torch import allreduce, ddp_comm
from gpu_course.env.cores import loader_workers, usable_cores
from gpu_course.lessons import l07_devices as lesson
from gpu_course.tracks.torch import multinode

# %% tags=["parameters"]
SIZES = gc.sizes("07")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("07", epochs=5)
NODES = 2                # local "hosts" of the multi-host job

# %% [markdown]
# ## 1. One host: how many processes
# One process per GPU when there are two or more, NCCL between them. With fewer, the lesson
# still runs the multi-process code: 2 processes on the CPU over gloo, sharing this
# machine's cores (so expect no speed-up there). One GPU cannot carry two processes: NCCL
# refuses two ranks on one GPU ("Duplicate GPU detected"), so a one-GPU machine runs the
# demonstration on the CPU too, and says so (`lesson.plan`, `localhosts.backend`).

# %%
plan = lesson.plan("pytorch", gc.gpu_count(), usable_cores(), SIZES, nodes=NODES)
plan

# %% [markdown]
# ## One DDP step by hand
# What every process of a DDP job runs (`gpu_course/tracks/torch/ddp.py` and `train.py`): join the
# process group (torchrun sets RANK and WORLD_SIZE; here a group of this one process), take
# this rank's shard of the data, wrap the network, and let `backward()` average the
# gradients across the processes, bucket by bucket, while it still runs.

# %%
cfg = gc.Experiment(name="all-gpus", pin_memory=plan.on_gpu, persistent_workers=True,
                    graph="compile" if plan.on_gpu else "eager", dtype="bfloat16" if plan.on_gpu else "float32",
                    channels_last=plan.on_gpu, optimizer="lars", optimizer_params=(("eta", 0.1),),
                    lr_base_batch=128, threads=plan.threads, **plan.train_sizes)
dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)   # torchrun: "nccl" on GPUs
train_set, _ = gc.load_datasets(cfg)
sampler = DistributedSampler(train_set, num_replicas=dist.get_world_size(), rank=dist.get_rank())  # <- this rank's shard
net = gc.get_model(cfg)
model = DistributedDataParallel(net)                       # <- device_ids=[local_rank] on a GPU
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = next(iter(DataLoader(train_set, batch_size=cfg.batch_size, sampler=sampler)))
loss = nn.functional.cross_entropy(model(x), y)
loss.backward()                                            # <- the gradients' all-reduce runs in here
optimizer.step()
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: {len(sampler)} images in its shard, loss {loss.item():.3f}")
dist.destroy_process_group()

# %% [markdown]
# ## The scaling run
# `gc.train(cfg)` with `num_gpus=k` starts k such processes with torchrun
# (`torchrun --standalone --nproc_per_node=k -m gpu_course.tracks.torch.ddp ...`). Rank 0 alone runs
# the monitor, evaluates and writes the run record. Loader workers per process = usable
# cores ÷ processes on the host (the checklist's vCPUs ÷ GPUs): `cpu_count() - 3` in *each*
# of 8 processes would ask a 64-vCPU host for 8 × 61 workers. Every run gets the same
# compute threads a process (`plan.threads`), the one-process run included, so the runs
# compare.

# %%
runs = [gc.train(cfg.replace(name="all-gpus" if k == plan.counts[-1] else f"processes={k}",  # "all-gpus": the ladder's rung
                             num_gpus=k, num_workers=loader_workers(k)),     # <- k DDP processes under torchrun
                 devices=plan.devices(k), verbose=False)
        for k in plan.counts]

# %%
gc.show(runs, lesson="07")
gc.conclude("07", runs)   # the sentences, checked against the table: gpu_course/lessons/l07_devices.py
gc.plots.utilisation_timeline(runs[-1])

# %% [markdown]
# ## 2. Several hosts
# On real machines each host runs one `torchrun`, and they meet at a rendezvous on one of
# them (HOST0). The lines to type, for two hosts of 8 GPUs each; on SageMaker the PyTorch
# estimator's `distribution` runs that line on every instance:

# %%
print(*multinode.commands("cfg.json", "runs", nodes=NODES, procs_per_node=8), sep="\n")
job = sagemaker_launch.Job("ml.p4d.24xlarge", instance_count=NODES)   # NODES instances of 8 GPUs
print("SageMaker distribution:", sagemaker_launch.job_settings(cfg, job)["distribution"])

# %% [markdown]
# Here the hosts are emulated: `NODES` torchrun launches on this machine, each its own
# "host" on 127.0.0.1 with `--nnodes`, `--node-rank` and a c10d rendezvous, exactly the
# lines above, each host seeing only its own GPUs (none where there is not one for every
# process). One record for the job: rank 0's, with every rank's timings in it. The table
# sets it beside the one-process run and the one-host run of as many processes.

# %%
multi = multinode.launch_local(cfg.replace(name=f"hosts={NODES}", num_workers=loader_workers(NODES * plan.per_host)),
                               nodes=NODES, procs_per_node=plan.per_host, gpus=plan.job_gpus, threads=plan.threads)
hosts = [runs[0], runs[-1], multi]
gc.show(hosts, lesson="07", chart=False)
gc.conclude("07", hosts)
gc.tables.show(lesson.ranks(multi))   # each process's own timings

# %% [markdown]
# ## 3. What communication costs
# **All-reduce against message size** (`python -m gpu_course.tracks.torch.allreduce`): algorithm
# bandwidth = bytes ÷ time; bus bandwidth = algbw × 2(k-1)/k, what each link carries in a
# ring all-reduce, comparable with a link's speed. Each time is the median of five timed
# blocks, their fastest and slowest beside it (one block can catch a process descheduled).
# Small messages are latency-bound: that is why DDP (and Horovod's tensor fusion) send
# gradients in buckets, not one by one. The lecture's link bandwidths, for scale:
# 10 Gbps Ethernet 1 GB/s, SATA 6, 56 Gbps Mellanox 6.8, PCIe x8 (a GPU's) 5, an i7 5930K's
# 40 PCIe lanes 30, NVLink 40 GB/s.
#
# **DDP's buckets and the overlap.** The same DDP step on a batch already in memory, with the
# gradient all-reduce (`sync`) and without it (`no_sync`, compute alone with the same
# processes competing for the same cores), alternated; and one all-reduce as large as all
# gradients, alone. Exposed = sync − no_sync; hidden = 1 − exposed ÷ all-reduce.
# MXNet has no bucket setting: its kvstore pushes each parameter as its own key, last layers
# first, and only *splits* large arrays across servers (`MXNET_KVSTORE_BIGARRAY_BOUND`).

# %%
ar = allreduce.run_local(procs=2, sizes=allreduce.SIZES[:SIZES.bench_sizes], min_seconds=SIZES.bench_seconds)
buckets = ddp_comm.run_local(procs=2, model=SIZES.model, batch_size=SIZES.bucket_batch,   # <- bucket_cap_mb
                             buckets_mb=SIZES.buckets_mb, steps=SIZES.bucket_steps, warmup=SIZES.bucket_warmup)

# %% [markdown]
# ## 4. When more stops paying: the model
# `gpu_course/scale/scaling.py`, from two measured numbers: the step time of one process
# (t_compute) and the bus bandwidth of the all-reduce at the gradients' size:
#
# t_step(k) = t_compute + (1 − overlap) × 2(k−1)/k × gradient bytes ÷ bus bandwidth;
# efficiency = t_compute ÷ t_step(k).
#
# The tables below: the all-reduce, the buckets, the model's terms as measured here (and
# in the talk), then the model's outputs for machines not measured here: this machine's
# step, a V100's (the talk's) and ResNet-50's on an A100 (25.6 M parameters, ≈51 MB of
# float16 gradients; 2,470 img/s in PyTorch AMP, 256 images a step) over the lecture's links.

# %%
gc.conclude("07", hosts, bench=ar, buckets=buckets)

# %% [markdown]
# ## 5. Horovod: the same job, the diff
# The course day teaches Horovod. Against DDP it changes the launcher and three lines:
#
# ```diff
# -dist.init_process_group("nccl")
# -model = DistributedDataParallel(net, device_ids=[local_rank])
# +import horovod.torch as hvd; hvd.init(); torch.cuda.set_device(hvd.local_rank())
# +optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=net.named_parameters())
# +hvd.broadcast_parameters(net.state_dict(), root_rank=0)
# -torchrun --nnodes=2 --nproc-per-node=8 ... train.py
# +horovodrun -np 16 -H host0:8,host1:8 python train.py
# ```
#
# Horovod's tensor fusion (`HOROVOD_FUSION_THRESHOLD`, 64 MB by default) is DDP's
# `bucket_cap_mb`. It is not a dependency of this course: its last release (0.28.1, 2023)
# is a source package that has to compile against the installed framework, and the course
# does not rely on that build working with the pinned PyTorch 2.13.
#
# The H200 reference (`gpu_course/reference/pytorch-h200/`) has one GPU, so it holds no
# run of this lesson: a multi-GPU run of it is yours to make.

# %% [markdown]
# ## Exercise 07.1: the same batch, split over more processes
# The scaling runs above fixed the batch *per process*: k processes did k times the work of
# one a step. Here the batch *a step* is fixed (`plan.exercise_sizes`: `batch_size`
# images a step, `train_size` images) and k processes share it, `batch_size ÷ k` each.
# Below, one process, then the count you set at the line marked `# >>>` (one a GPU, or
# CPU processes over gloo, as the plan above says). **Before running**, write your guess
# of its samples/s against one: `"faster"`, `"slower"` or `"same"`. The check rules on it against the runs' noise and gives the
# scaling efficiency; on a CPU it says what the processes share. After trying,
# `gc.solution("07.1")` shows one way.

# %% tags=["exercise"]
plan = lesson.plan("pytorch", gc.gpu_count(), usable_cores(), SIZES)
few = plan.exercise_sizes    # the batch a step to split, the images
ex_cfg = gc.Experiment(name="exercise", pin_memory=plan.on_gpu, threads=plan.threads, **few)
k = 1                        # >>> DDP processes to split the same batch over
prediction = None            # >>> before you run: "faster", "slower" or "same" than one process
mine = [gc.train(ex_cfg.replace(name=f"exercise: {n} process(es)", num_gpus=n, num_workers=loader_workers(k),
                                batch_size=few.batch_size // n),   # <- a share each
                 devices=plan.devices(n), verbose=False)
        for n in dict.fromkeys((1, k))]

# %% tags=["check"]
gc.check("07.1", mine, prediction)
