# %% [markdown]
# # 11. The environment: what you run on, measured
#
# **What this lesson measures.** Before the ladder, the talk checks *which build* of the
# framework runs (CUDA, cuDNN, MKL-DNN, TensorRT), and the optimisation checklist tunes
# what surrounds it: GPU clocks, OpenMP threads, process binding, loader workers per
# GPU, storage. Here each of those is read or measured on this machine: the build
# flags, oneDNN (formerly MKL-DNN) on against off, a thread sweep, pinning, the
# OpenMP variables and which runtime reads them, the GPU's clocks, limits and PCIe link,
# `/dev/shm` and the disk. `gpu-course env` prints the same report in a terminal.
#
# **The numbers to compare with.** The talk's Intel table (MXNet 1.3 on a 72-vCPU
# c5.18xlarge): ResNet-50 v1 ran 7.5x faster with MKL-DNN at batch 1 and 15.9x at
# batch 128. The lecture's bandwidth table: PCIe x8 5 GB/s, NVLink 40 GB/s, SATA 6 GB/s,
# 10 Gbps Ethernet 1 GB/s; a disk about 150 MB/s, NVMe about 3,000 MB/s.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
BATCH = 32 if SMOKE else 64           # images per forward pass in the CPU benchmarks
STEPS = 3 if SMOKE else 10            # timed forward passes per setting
DISK_MB = 16 if SMOKE else 256        # size of the file read back from the disk
TRAIN_SIZE = 128 if SMOKE else 5000   # images of the short run whose CPU use is drawn

# %%
import pandas as pd
import mxnet as mx
from gpu_course.tracks import gluon as gc
from gpu_course.env import report as env, text as env_text
from gpu_course.measure import nvml

ENGINE = "gluon"
cpu = env.cpu_facts()
print(f"{cpu['model']}: {cpu['logical']} logical cores, {cpu['physical']} physical, "
      f"{cpu['usable']} usable by this process; load average {cpu['load_average']:.1f}")

# %% [markdown]
# ## The build
# The framework reports what it was compiled with. Each measurement below runs in a
# fresh child process (`python -m gpu_course.tracks.gluon.envinfo`): MXNet reads `MXNET_MKLDNN_ENABLED` and `OMP_NUM_THREADS` only when it starts, so each setting needs its own process.

# %%
build = env.hook(ENGINE, "build")
print("\n".join(env_text.build_lines(build)))

# %% [markdown]
# ## oneDNN on against off
# The same ResNet-20 forward pass, once with oneDNN's convolutions and once without
# (`MXNET_MKLDNN_ENABLED=0` in the child's environment), all usable cores.

# %%
usable = cpu["usable"]
on = env.bench(ENGINE, usable, onednn=True, batch=BATCH, steps=STEPS)
off = env.bench(ENGINE, usable, onednn=False, batch=BATCH, steps=STEPS)
passes = f"{STEPS} timed passes each"   # the spread each verdict is judged against


def verdict(a, b):
    """Benchmark b against a: its ratio, judged against the spread of their passes."""
    return gc.noise.compare_samples(a["step_images_per_s"], b["step_images_per_s"], passes,
                                    a["images_per_s"], b["images_per_s"])


print(f"oneDNN on: {on['images_per_s']:,.0f} images/s, off: {off['images_per_s']:,.0f} images/s; on "
      f"against off: {verdict(off, on)} (the talk's 72-vCPU table: x7.5 to x15.9 for ResNet-50).")

# %% [markdown]
# ## Threads and pinning
# OpenMP starts one thread per usable core unless `OMP_NUM_THREADS` says otherwise
# (MXNet's operators use the OpenMP pool; `MXNET_CPU_WORKER_NTHREADS` sets how many operators run side by side). Each count gets its own process. Then the same threads are **pinned**
# to a single core with `os.sched_setaffinity` (what `taskset`, `numactl` and MPI's
# `--bind-to` do): pinning keeps a process's threads on the cores it was given. That
# pays when several training processes share a machine (each keeps its caches and no
# one waits for a core another holds) and costs when it leaves a process fewer cores
# than threads; which wins here is measured.

# %%
sweep = {t: on if t == usable else env.bench(ENGINE, t, True, BATCH, STEPS)
         for t in env.thread_counts(usable)}
best = max(sweep, key=lambda t: sweep[t]["images_per_s"])
print("threads -> images/s: " + ", ".join(f"{t} -> {b['images_per_s']:,.0f}" for t, b in sweep.items()))
load = os.getloadavg()[0]
others = [t for t in sweep if t != best]
if others:   # the fastest count against the next fastest (or against all cores)
    other = usable if best != usable else max(others, key=lambda t: sweep[t]["images_per_s"])
    lead = verdict(sweep[other], sweep[best])
    print(f"Fastest: {best} thread(s); against {other}: {lead}" + (
        ": no thread count is clearly fastest here." if not lead.is_effect else "." if best == usable
        else f". With a load average of {load:.1f} other processes hold cores, and an OpenMP region "
        "waits for its slowest thread, so fewer threads than cores finish sooner."))
if usable > 1:
    core = sorted(os.sched_getaffinity(0))[0]
    pinned = env.bench(ENGINE, usable, True, BATCH, STEPS, cpus={core})
    squeezed = verdict(sweep[usable], pinned)
    print(f"{usable} threads pinned to core {core}: {pinned['images_per_s']:,.0f} images/s; against the "
          f"unpinned {usable} threads: {squeezed}: " + {
              "slower": "one core for two threads costs speed here.",
              "faster": "taking turns on one core beats waiting for each other on cores that other "
                        f"processes share (load average {os.getloadavg()[0]:.1f}).",
          }.get(squeezed.kind, "no difference beyond the passes' spread."))

# %% [markdown]
# ## OpenMP variables and which runtime reads them
# The course day's settings (`KMP_BLOCKTIME=0`, `KMP_AFFINITY=granularity=fine,compact,1,0`)
# belong to Intel's OpenMP runtime (libiomp5; LLVM's libomp reads them too). GNU's
# libgomp ignores every `KMP_` variable: its equivalents are `OMP_WAIT_POLICY` or
# `GOMP_SPINCOUNT` (how long a thread spins) and `OMP_PROC_BIND` with `OMP_PLACES`
# (binding). Which runtime did this framework load?

# %%
runtimes = build["openmp_runtimes"]
print(f"OpenMP runtime(s) loaded by {build['framework']}: {', '.join(runtimes) or 'none found'}")
pd.DataFrame(env.openmp_settings(runtimes))

# %% [markdown]
# ## Loader workers per process
# The checklist's rule: loader workers = usable cores / processes (one training process
# per GPU). The talk used `cpu_count() - 3` on a single-GPU machine.

# %%
processes = max(1, nvml.gpu_count())
workers = env.workers_per_process(processes)
print(f"{usable} usable cores / {processes} process(es) = {workers} loader worker(s) per "
      f"process (the talk's rule: {max(2, os.cpu_count() - 3)}).")

# %% [markdown]
# A short run with that many workers, and what every core did meanwhile
# (`plots.cpu_timeline`: the total in black, one grey line per core):

# %%
cfg = gc.Experiment(name=f"{workers} workers", engine=ENGINE, train_size=TRAIN_SIZE,
                    test_size=64, epochs=1, batch_size=64, num_workers=workers,
                    warmup_steps=1, monitor_interval=0.1 if SMOKE else 0.5)
run = gc.train(cfg, verbose=False, progress=False)
gc.plots.cpu_timeline(run)

# %% [markdown]
# ## The GPU side
# Clocks against their maxima and the reasons they are held down (power cap, thermal
# slowdown), temperature, the power limit, and the PCIe link the batches cross.

# %%
gpu = env.gpu_facts()
print("\n".join(env_text.gpu_lines({"gpu": gpu, "copy": None})))

# %% [markdown]
# ## Host to device copies
# The lesson's pageable against pinned copy is measured in the PyTorch track (its CUDA
# copies can be timed from pinned and from pageable buffers); MXNet's pinned context
# (`mx.cpu_pinned()`) is used by its DataLoader with `pin_memory=True`.

# %%
copy = None   # measured in the PyTorch track
print("GPU present: see the PyTorch track's copy measurement" if gpu["available"] else
      "No GPU here: no host -> device copy to measure.")

# %% [markdown]
# ## Shared memory: `/dev/shm`
# Loader workers hand each collated batch to the training process through shared memory
# (PyTorch's workers and MXNet's alike). Docker gives a container 64 MB of it unless
# started with `--shm-size` or `--ipc=host`; when it fills, a worker dies with "Bus
# error" (PyTorch: "DataLoader worker (pid N) is killed by signal: Bus error") or "No
# space left on device". Each worker keeps up to `prefetch_factor` (2) batches in flight.

# %%
shm = env.shm_facts()
need_mib = workers * 2 * shm["batch_mib"] if shm["total_mib"] else None
print("\n".join(env_text.memory_lines({"shm": shm, "disk": None})))
if need_mib is not None:
    print(f"{workers} workers x 2 batches of 64 CIFAR images need {need_mib:.1f} MiB: "
          f"{'enough' if shm['free_mib'] >= need_mib else 'too small'} here; at 224x224 "
          f"ImageNet size each batch is {shm['batch_mib'] * 49:.0f} MiB.")

# %% [markdown]
# ## The disk, and the lecture's bandwidth table
# A fresh file is written, dropped from the page cache and read back sequentially (1 MiB
# blocks) and at random (32 KiB, a JPEG's size): `gpu_course.data.disk`, as in lesson 9.

# %%
disk = env.disk_facts(size_mb=DISK_MB)
print("\n".join(env_text.memory_lines({"shm": shm, "disk": disk})[1:]))
rows = [(name, gbps, None) for name, gbps in env_text.LECTURE_BANDWIDTHS]
rows.append(("this disk, sequential", None, disk["sequential_mb_s"] / 1000))
rows.append(("this disk, random 32 KiB", None, disk["random_32k_mb_s"] / 1000))
for g in gpu["gpus"]:
    if g.get("pcie_gbps"):
        rows.append((f"GPU {g['index']} PCIe gen {g['pcie_gen']} x{g['pcie_width']} (link)", None,
                     g["pcie_gbps"]))
if copy and copy.get("available"):
    rows += [("host -> GPU copy, pageable", None, copy["pageable_gb_s"]),
             ("host -> GPU copy, pinned", None, copy["pinned_gb_s"])]
pd.DataFrame(rows, columns=["link", "lecture GB/s", "measured here GB/s"])

# %% [markdown]
# `gpu-course env` prints all of the above in one go in a terminal (`--json` for a
# machine-readable copy, `--no-measure` to read without measuring).
