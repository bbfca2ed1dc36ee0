# %% [markdown]
# # 7. More GPUs: data parallelism and its scaling efficiency
#
# **What this lesson measures.** The same job on 1, 2, 4, ... GPUs with PyTorch's
# `DistributedDataParallel` (DDP): `torchrun` starts one process per GPU, each process
# trains a copy of the network on its own shard of every epoch, and during `backward()`
# the gradients are averaged across processes (NCCL between GPUs, gloo between CPU
# processes), so every copy takes the same step. The batch size per GPU stays fixed, so k
# GPUs process k times the images per step. Scaling efficiency = samples/s on k GPUs ÷
# (k × samples/s on one). This is PyTorch's counterpart of Gluon's `split_and_load` + kvstore.
#
# **The talk's numbers** (Apache MXNet on V100s in 2019), 1 GPU → 4 GPUs at each rung of the
# ladder: naive 306 → 392 samples/s, 29 workers 663 → 950, hybridized 941 → 1,266, float16
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
BATCH_SIZE = 32 if SMOKE else 1024    # per GPU (per process)
CPU_TRAIN_SIZE = 1024                 # images per epoch when the processes run on the CPU
WORKERS = max(2, os.cpu_count() - 3)  # per process

# %%
import json
import tempfile
import pandas as pd
import gpu_course
from gpu_course import records
from gpu_course import torch as gc

talk = pd.DataFrame({"rung": ["naive", "29 workers", "hybridize", "float16", "batch 640"],
                     "1 GPU": [306, 663, 941, 3100, 17000], "4 GPUs": [392, 950, 1266, 7400, 50000]})
talk["efficiency"] = (talk["4 GPUs"] / (4 * talk["1 GPU"])).map("{:.0%}".format)
talk

# %% [markdown]
# ## How many processes
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
cfg = gc.Experiment(name="num-gpus", engine="pytorch", dataset=DATASET, train_size=TRAIN_SIZE,
                    test_size=TEST_SIZE, epochs=EPOCHS, batch_size=BATCH_SIZE, num_workers=WORKERS,
                    pin_memory=on_gpu, persistent_workers=True,
                    graph="hybrid" if on_gpu else "eager", dtype="bfloat16" if on_gpu else "float32",
                    channels_last=on_gpu, optimizer="lars", optimizer_params=(("eta", 0.1),), lr_base_batch=128,
                    warmup_epochs=min(1.0, EPOCHS / 2), warmup_steps=2 if SMOKE else 10,
                    monitor_interval=0.2 if SMOKE else 0.5)

# %% [markdown]
# ## What each process runs
# The DDP part of the training loop (`gpu_course/torch/ddp.py` and `train.py`) is four
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
# the processes with `torchrun` itself, as you would from a shell, and reads the record back:

# %%
runs_dir = records.default_runs_dir()

def torchrun(cfg, processes):
    """Train `cfg` in `processes` DDP processes started by torchrun; returns rank 0's run record."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(   # the processes import this gpu_course
        filter(None, [str(pathlib.Path(gpu_course.__file__).parents[1]), os.environ.get("PYTHONPATH")])))
    if not on_gpu:  # CPU processes share the cores (torchrun would give each one thread)
        env.setdefault("OMP_NUM_THREADS", str(max(1, os.cpu_count() // processes)))
    with tempfile.TemporaryDirectory() as tmp:
        config, result = pathlib.Path(tmp, "config.json"), pathlib.Path(tmp, "run_path")
        config.write_text(cfg.to_json())
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   f"--nproc_per_node={processes}", "-m", "gpu_course.torch.ddp",
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
    runs.append(torchrun(cfg.replace(name=name, num_gpus=k), k))
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
print(f"{int(last.processes)} process(es): {last.samples_per_sec:,.0f} samples/s, ×{last.speedup:.2f} one process, "
      f"scaling efficiency {last.efficiency:.0%} (the talk's best: {talk_best:.0%} at batch 640 on 4 V100s).")
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
