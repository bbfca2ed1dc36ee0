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
# **The talk's numbers** (Apache MXNet on V100s in 2019), 1 GPU → 4 GPUs at each rung of the
# ladder: naive 306 → 392 samples/s, 29 workers 663 → 950, hybridized 941 → 1,266, float16
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
BATCH_SIZE = 32 if SMOKE else 1024    # per GPU (per process)
CPU_TRAIN_SIZE = 256 if SMOKE else 1024  # images per epoch when the processes run on the CPU
MODEL = "tiny" if SMOKE else "resnet20"  # smoke: a small net, so the processes start and finish quickly
NODES = 2                             # local "hosts" of the multi-host job

# %%
import json, subprocess
import tempfile
import pandas as pd
import gpu_course
from gpu_course.measure import records
from gpu_course.scale import scaling
from gpu_course.tracks import torch as gc
from gpu_course.tracks.torch import allreduce, ddp_comm
from gpu_course.env.cores import loader_workers, threads_per_process
from gpu_course.tracks.torch import multinode

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
# ## 1. One host: how many processes
# One per GPU when there are two or more. With none, the lesson still runs the
# multi-process code: 2 processes on the CPU, talking over gloo, sharing this machine's
# cores (so expect no speed-up there). With exactly one GPU there is nothing to scale: the
# notebook trains the one-process run and says so.

# %%
gpus = gc.gpu_count()
if gpus >= 2:
    counts = sorted({2 ** k for k in range(8) if 2 ** k < gpus} | {gpus})
    where = f"{gpus} GPUs: one process per GPU, NCCL"
elif gpus == 1:
    counts = [1]
    where = "1 GPU: only the one-process run (DDP needs a second GPU to scale)"
else:
    counts = [1, 2]
    TRAIN_SIZE = min(TRAIN_SIZE, CPU_TRAIN_SIZE)
    where = (f"no GPU: {counts[-1]} CPU processes over gloo sharing {os.cpu_count()} cores, "
             f"{TRAIN_SIZE} images per epoch")
print(f"This machine has {where}; process counts to try: {counts}")
on_gpu = gpus > 0
cfg = gc.Experiment(name="num-gpus", engine="pytorch", model=MODEL, dataset=DATASET, train_size=TRAIN_SIZE,
                    test_size=TEST_SIZE, epochs=EPOCHS, batch_size=BATCH_SIZE,
                    pin_memory=on_gpu, persistent_workers=True,
                    graph="hybrid" if on_gpu else "eager", dtype="bfloat16" if on_gpu else "float32",
                    channels_last=on_gpu, optimizer="lars", optimizer_params=(("eta", 0.1),), lr_base_batch=128,
                    warmup_epochs=min(1.0, EPOCHS / 2), warmup_steps=2 if SMOKE else 10,
                    monitor_interval=0.2 if SMOKE else 0.5)

# %% [markdown]
# ## What each process runs
# The DDP part of the training loop (`gpu_course/tracks/torch/ddp.py` and `train.py`) is four
# lines of plain PyTorch around the usual loop:
#
# ```python
# dist.init_process_group("nccl" if on_gpu else "gloo")       # torchrun set RANK, WORLD_SIZE
# sampler = DistributedSampler(train_set, world_size, rank)    # this process's shard
# model = DistributedDataParallel(net, device_ids=[device])    # backward() averages gradients
# ... for x, y in DataLoader(train_set, batch_size, sampler=sampler): usual step
# ```
#
# Rank 0 alone runs the monitor, evaluates and writes the run record. The notebook starts
# the processes with `torchrun` itself, as you would from a shell, and reads the record back.
# Loader workers per process = usable cores ÷ processes on the host (the checklist's
# vCPUs ÷ GPUs): `cpu_count() - 3` in *each* of 8 processes would ask a 64-vCPU host for
# 8 × 61 workers.

# %%
runs_dir = records.default_runs_dir()

def torchrun(cfg, processes):
    """Train `cfg` in `processes` DDP processes started by torchrun; returns rank 0's run record."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(   # the processes import this gpu_course
        filter(None, [str(pathlib.Path(gpu_course.__file__).parents[1]), os.environ.get("PYTHONPATH")])))
    if not on_gpu:  # CPU processes share the cores: every run gets the largest run's share per process
        env["OMP_NUM_THREADS"] = str(threads_per_process(max(counts)))
    with tempfile.TemporaryDirectory() as tmp:
        config, result = pathlib.Path(tmp, "config.json"), pathlib.Path(tmp, "run_path")
        config.write_text(cfg.to_json())
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   f"--nproc_per_node={processes}", "-m", "gpu_course.tracks.torch.ddp",
                   "--config", str(config), "--runs-dir", str(runs_dir),
                   "--result-file", str(result), "--quiet"]
        print("$ torchrun", " ".join(command[3:]).replace(tmp, "$TMP"))
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"torchrun failed ({done.returncode}):\n{done.stdout[-3000:]}")
        return gc.load_run(result.read_text().strip())

runs = []
for k in counts:
    name = "num-gpus" if k == counts[-1] else f"processes={k}"      # "num-gpus" is the ladder's rung
    runs.append(torchrun(cfg.replace(name=name, num_gpus=k, num_workers=loader_workers(k)), k))
    print(runs[-1].summary["summary_line"])

# %%
gc.plots.throughput(runs)

# %%
table = gc.report.ladder_table(runs)
table.insert(1, "processes", [r.meta["ran"].get("world_size") for r in runs])
table["efficiency"] = table["speedup"] / table["processes"]
table[["processes", "rung", "samples_per_sec", "epoch_time_s", "gpu_util", "speedup", "efficiency"]]

# %%
gc.plots.utilisation_timeline(runs[-1])

# %%
last = table.iloc[-1]
talk_best = max(talk["4 GPUs"] / (4 * talk["1 GPU"]))
print(f"Started {len(runs)} torchrun job(s) with {', '.join(str(k) for k in counts)} process(es); "
      f"each wrote its record to {runs_dir} (rank 0).")
print(f"{int(last.processes)} process(es) against one: {gc.noise.compare(runs[0], runs[-1])}; scaling "
      f"efficiency {last.efficiency:.0%} (the talk's best: {talk_best:.0%} at batch 640 on 4 V100s).")
flag = gc.noise.efficiency_flag(last.efficiency, int(last.processes))
if flag:
    print(flag)
if gpus == 0:
    print(f"These processes ran on the same {os.cpu_count()} CPU cores, so {last.efficiency:.0%} says nothing about GPUs: "
          "the run checked that the DDP code works (torchrun, gloo, DistributedSampler, gradient "
          "averaging). Run it on a multi-GPU machine to measure scaling.")
elif gpus == 1:
    print("With one GPU there is nothing to scale; the one-process run is the baseline a multi-GPU "
          "machine would compare against.")
elif last.efficiency < 0.7:
    print("Below 70%: each GPU is not kept busy. Look at the utilisation timeline above; the usual "
          "causes are the input pipeline (more workers per process, data on the GPU) and small "
          "batches (the gradient exchange then costs as much as the step).")

# %% [markdown]
# ## 2. Several hosts
# On real machines each host runs one `torchrun`, and they meet at a rendezvous on one of
# them (HOST0). The lines to type, for hosts with `PER_HOST` GPUs each:

# %%
PER_HOST = max(1, gpus // NODES) if gpus >= NODES else 1   # processes per local "host" here
for line in multinode.commands("cfg.json", "runs", nodes=NODES, procs_per_node=max(gpus, 1) if gpus else 8):
    print("$", line)
from gpu_course.sagemaker import launch as sagemaker_launch
spec = sagemaker_launch.job_spec(cfg, "ml.p4d.24xlarge", instance_count=NODES)
print(f"\nSageMaker: instance_count={spec['instance_count']}, distribution={spec['distribution']} "
      "(the PyTorch estimator then runs that torchrun line on every instance)")

# %% [markdown]
# Here the hosts are emulated: `NODES` torchrun launches on this machine, each its own
# "host" on 127.0.0.1 with `--nnodes`, `--node-rank` and a c10d rendezvous, exactly the
# lines above. One record for the job: rank 0's, with every rank's timings in it.

# %%
multi = multinode.launch_local(cfg.replace(name=f"hosts={NODES}", num_workers=loader_workers(NODES * PER_HOST)),
                               nodes=NODES, procs_per_node=PER_HOST, runs_dir=runs_dir)
print(multi.summary["summary_line"], "|", multi.meta["notes"]["devices"])
per_rank = pd.DataFrame([{"rank": r["rank"], "host (node rank)": r["group_rank"],
                          **{k: sum(e[k] for e in r["epochs"]) for k in ("steps", "data_wait_s", "compute_s")}}
                         for r in multi.meta["notes"]["ranks"]])
per_rank["s/step"] = (per_rank.data_wait_s + per_rank.compute_s) / per_rank.steps
per_rank

# %% [markdown]
# ## 3. What communication costs
# **All-reduce against message size** (`python -m gpu_course.tracks.torch.allreduce`): algorithm
# bandwidth = bytes ÷ time; bus bandwidth = algbw × 2(k-1)/k, what each link carries in a
# ring all-reduce, comparable with a link's speed. Each time is the median of five timed blocks,
# their fastest and slowest beside it (one block can catch a process descheduled). Small
# messages are latency-bound: that is
# why DDP (and Horovod's tensor fusion) send gradients in buckets, not one by one.

# %%
ar = pd.DataFrame(allreduce.run_local(procs=2, sizes=allreduce.QUICK_SIZES if SMOKE else allreduce.SIZES,
                                      min_seconds=0.05 if SMOKE else 0.2))
ar["size"] = ar["bytes"].map(lambda b: f"{b / 2**20:g} MiB" if b >= 2**20 else f"{b / 2**10:g} KiB")
display(ar[["size", "time_s", "time_min_s", "time_max_s", "algbw_GBps", "busbw_GBps"]])
display(pd.DataFrame(allreduce.lecture_table()))
def busbw(row):  # the median's bus bandwidth, with its slowest and fastest block's
    return (f"{row.busbw_GBps:.3g} GB/s ({row.busbw_GBps * row.time_s / row.time_max_s:.3g}–"
            f"{row.busbw_GBps * row.time_s / row.time_min_s:.3g} over its blocks)")
best = ar.loc[ar.busbw_GBps.idxmax()]
print(f"{'NCCL' if on_gpu else 'gloo'} over 2 processes reached {busbw(best)} bus bandwidth at "
      f"{best['size']}, {busbw(ar.iloc[0])} at {ar['size'].iloc[0]}; "
      f"the lecture's 10 Gbps Ethernet is 1 GB/s, NVLink 40 GB/s.")

# %% [markdown]
# **DDP's buckets and the overlap.** The same DDP step on a batch already in memory, with the
# gradient all-reduce (`sync`) and without it (`no_sync`, compute alone with the same
# processes competing for the same cores), alternated; and one all-reduce as large as all
# gradients, alone. Exposed = sync − no_sync; overlap = 1 − exposed ÷ all-reduce.
# MXNet has no bucket setting: its kvstore pushes each parameter as its own key, last layers
# first, and only *splits* large arrays across servers (`MXNET_KVSTORE_BIGARRAY_BOUND`).

# %%
buckets = pd.DataFrame(ddp_comm.run_local(procs=2, model=MODEL, batch_size=8 if SMOKE else BATCH_SIZE,
                                          buckets_mb=(0.05, 25.0) if SMOKE else ddp_comm.BUCKETS_MB,
                                          steps=3 if SMOKE else 10, warmup=1 if SMOKE else 2))
display(buckets[["bucket_cap_mb", "buckets", "t_step_sync_s", "t_step_nosync_s", "t_allreduce_s",
                 "exposed_s", "spread_s", "overlap"]])
default = buckets.iloc[-1]  # 25 MB: DDP's default
if abs(default.exposed_s) <= default.spread_s:
    print(f"With DDP's default buckets the all-reduce cost {default.exposed_s * 1e3:+.1f} ms a step, within "
          f"the steps' spread (±{default.spread_s * 1e3:.1f} ms): not measurable here against "
          f"{default.t_step_nosync_s * 1e3:.0f} ms of compute.")
else:
    print(f"With DDP's default buckets the all-reduce showed {default.exposed_s * 1e3:.1f} ms a step "
          f"(spread {default.spread_s * 1e3:.1f} ms) of the {default.t_allreduce_s * 1e3:.1f} ms it takes alone: "
          f"{default.overlap:.0%} hidden behind backward.")

# %% [markdown]
# ## 4. When more stops paying: the model
# `gpu_course/scale/scaling.py`, from two measured numbers: the step time of one process
# (t_compute) and the bus bandwidth of the all-reduce at the gradients' size:
#
# t_step(k) = t_compute + (1 − overlap) × 2(k−1)/k × gradient bytes ÷ bus bandwidth;
# efficiency = t_compute ÷ t_step(k).

# %%
from gpu_course.scale import distributed
grad_bytes = int(buckets.grad_bytes.iloc[0])
t_compute = distributed.step_seconds(runs[0])
near = ar.iloc[(ar["bytes"] - grad_bytes).abs().argmin()]
busbw = near.busbw_GBps * 1e9
k = int(table.iloc[-1].processes)
predicted = scaling.predict([1, k], t_compute, grad_bytes, busbw, overlap=0.0)[-1]["efficiency"]
measured = {"one host": table.iloc[-1].efficiency,
            f"{NODES} hosts": scaling.measured_efficiency(gc.report.samples_per_sec(runs[0]),
                                                          gc.report.samples_per_sec(multi), NODES * PER_HOST)}
print(f"gradients {grad_bytes / 2**20:.2f} MiB, one step {t_compute * 1e3:.0f} ms, all-reduce at "
      f"{near['size']}: {near.busbw_GBps:.2f} GB/s bus bandwidth")
print(f"model for k={k}: efficiency {predicted:.0%} (no overlap); measured: "
      + ", ".join(f"{name} {eff:.0%}" for name, eff in measured.items()))
if gpus == 0:
    same = gc.noise.compare(runs[-1], multi)   # the same processes, started as one host or as several
    steps = int(multi.epochs.steps.sum()) - cfg.warmup_steps   # blocks of a few steps mean little
    print("On one CPU the 'hosts' also share the cores, so the measured points fall below the model by "
          "what the processes take from each other; the model counts communication only. Here "
          f"{NODES} hosts × {PER_HOST} process(es) against the one-host run: " + (
              f"×{same.ratio:.2f} over only {steps} timed steps, too few to call it an effect or noise."
              if steps < 20 else f"{same}" + (
              ": the same work, and the difference is this machine's run-to-run noise."
              if not same.is_effect
              else ": more than this machine's noise, so starting them as separate hosts (rendezvous, "
                   "TCP between them) cost or saved something real.")))
timed = int(runs[0].epochs.steps.sum()) - cfg.warmup_steps
if timed < 20:
    print(f"Only {timed} timed steps in the one-process run: treat these efficiencies as noise, not a result.")

# %%
rows = distributed.scaling_table(runs[0], multi, NODES * PER_HOST, BATCH_SIZE, grad_bytes)
print(distributed.format_table(rows))
talk_row = rows[2]
v100 = distributed.TALK["batch"] / distributed.TALK["samples_per_sec_1"]
print(f"\nThe talk lost {talk_row['exposed_ms']:.1f} ms a step going to 4 V100s. If that were the all-reduce of "
      f"ResNet-20's float16 gradients ({distributed.TALK['grad_bytes'] / 2**20:.2f} MiB) it would mean "
      f"{talk_row['implied_busbw_GBps']:.2f} GB/s, " + (
          "far below PCIe x8's 5 or NVLink's 40 GB/s: the loss was elsewhere (one Python thread driving four "
          "GPUs, the input pipeline), not in communication." if talk_row['implied_busbw_GBps'] < 5 else
          "what PCIe x8 (5 GB/s) delivers: communication can explain it."))
for link, gbps in distributed.LINKS.items():
    print(f"  {link:>18}: with a V100 step ({v100 * 1e3:.1f} ms) more GPUs stay above 70% efficiency up to "
          f"k = {scaling.stops_paying(v100, distributed.TALK['grad_bytes'], gbps * 1e9, latency=20e-6)}")

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
# The course day teaches Horovod. Against DDP it changes the launcher and three lines; against
# Gluon's kvstore it replaces the kvstore with its own all-reduce:
#
# ```diff
#  # PyTorch
# -dist.init_process_group("nccl")
# -model = DistributedDataParallel(net, device_ids=[local_rank])
# +import horovod.torch as hvd; hvd.init(); torch.cuda.set_device(hvd.local_rank())
# +optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=net.named_parameters())
# +hvd.broadcast_parameters(net.state_dict(), root_rank=0)
# -torchrun --nnodes=2 --nproc-per-node=8 ... train.py
# +horovodrun -np 16 -H host0:8,host1:8 python train.py
#  # Gluon
# -trainer = gluon.Trainer(params, "sgd", opts, kvstore="dist_sync")
# +import horovod.mxnet as hvd; hvd.init()
# +trainer = hvd.DistributedTrainer(params, "sgd", opts)
# +hvd.broadcast_parameters(params, root_rank=0)
# ```
#
# Horovod's tensor fusion (`HOROVOD_FUSION_THRESHOLD`, 64 MB by default) is DDP's
# `bucket_cap_mb`. It is not a dependency of this course: its last release (0.28.1, 2023)
# is a source package that has to compile against the installed framework, and the course
# does not rely on that build working with the pinned PyTorch 2.13 and MXNet 1.9.1.

# %% [markdown]
# ## Beside the reference machine
# Runs of these notebooks at full size on an NVIDIA H200, when recorded, are kept in
# `gpu_course/reference/pytorch-h200/` (a single GPU: its one-process run).

# %%
latest = gc.report.reference_runs("processes=", "num-gpus")
if latest:
    display(gc.report.beside_reference(runs, latest))
    ref = latest.get("num-gpus")
    if ref is not None:
        print(f"The H200 reference ({ref.meta['notes'].get('world_size')} process(es)) trained at "
              f"{gc.report.samples_per_sec(ref):,.0f} samples/s; this machine with {int(last.processes)}: "
              f"{last.samples_per_sec:,.0f} samples/s.")
else:
    print(gc.report.no_reference_line())
