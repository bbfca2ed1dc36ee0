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

# %%
import mxnet as mx
from mxnet import gluon
from gpu_course.env import report as env
from gpu_course import gluon as gc

# %% tags=["parameters"]
SIZES = gc.sizes("11")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("11", disk_mb=1024)

# %% [markdown]
# ## The build
# MXNet reports what it was compiled with (✔ on, ✖ off): the talk's list is CUDA, CUDNN,
# NCCL, MKLDNN (oneDNN), TENSORRT, and here PROFILER matters too (lesson 12). A pip CPU
# wheel has MKLDNN and OPENMP, and no CUDA.

# %%
mx.runtime.Features()

# %% [markdown]
# ## oneDNN on against off
# The same ResNet-20 forward pass, hybridized, once with oneDNN's convolutions and once
# with MXNet's own, on all usable cores. MXNet reads `MXNET_MKLDNN_ENABLED` and
# `OMP_NUM_THREADS` only when it starts, so each setting runs in a fresh process
# (`python -m gpu_course.tracks.gluon.envinfo bench`, with that environment).

# %%
cpu = env.cpu_facts()                      # cores (logical, physical, usable), the CPU model
on = env.bench("gluon", cpu["usable"], onednn=True, **SIZES.bench)
off = env.bench("gluon", cpu["usable"], onednn=False, **SIZES.bench)   # <- MXNET_MKLDNN_ENABLED=0
gc.show([on, off], lesson="11", chart=False)
gc.conclude("11", [on, off], cpu=cpu)

# %% [markdown]
# ## Threads and pinning
# OpenMP starts one thread per usable core unless `OMP_NUM_THREADS` says otherwise
# (MXNet's operators use the OpenMP pool; `MXNET_CPU_WORKER_NTHREADS` sets how many
# operators run side by side). Each count gets its own process. Then the same threads
# are **pinned** to a single core with `os.sched_setaffinity` (what `taskset`, `numactl`
# and MPI's `--bind-to` do): pinning keeps a process's threads on the cores it was given.
# That pays when several training processes share a machine and costs when it leaves a
# process fewer cores than threads; which wins here is measured.

# %%
sweep = [on if n == cpu["usable"] else env.bench("gluon", n, **SIZES.bench)   # <- OMP_NUM_THREADS=n
         for n in env.thread_counts(cpu["usable"])]
pinned = env.bench("gluon", cpu["usable"], cpus={cpu["usable_ids"][0]}, **SIZES.bench)   # <- one core
gc.show([*sweep, pinned], lesson="11", chart=False)
gc.conclude("11", [*sweep, pinned], cpu=cpu)

# %% [markdown]
# ## OpenMP variables and which runtime reads them
# The course day's settings (`KMP_BLOCKTIME=0`, `KMP_AFFINITY=granularity=fine,compact,1,0`)
# belong to Intel's OpenMP runtime (libiomp5; LLVM's libomp reads them too). GNU's
# libgomp ignores every `KMP_` variable: its equivalents are `OMP_WAIT_POLICY` or
# `GOMP_SPINCOUNT` (how long a thread spins) and `OMP_PROC_BIND` with `OMP_PLACES`
# (binding). Which runtime did MXNet load into this process?

# %%
runtimes = env.openmp_runtimes() if mx.runtime.Features().is_enabled("OPENMP") else []
settings = env.openmp_settings(runtimes)      # each variable: its value, and who reads it
gc.show(settings, lesson="11", chart=False)
gc.conclude("11", settings, runtimes=runtimes)

# %% [markdown]
# ## Loader workers per process
# The checklist's rule: loader workers = usable cores / processes, one training process
# per GPU (`gc.workers()`, the talk's `cpu_count() - 3`, is the single-GPU rule of lesson
# 2). A short run with that many workers, and what every core did meanwhile (the total in
# black, one grey line per core):

# %%
processes = max(1, mx.context.num_gpus())                  # one training process per GPU
cfg = gc.Experiment(name=f"{cpu['usable'] // processes} workers", **SIZES)
train_set, _ = gc.load_datasets(cfg)
train_iter = gluon.data.DataLoader(train_set, batch_size=cfg.batch_size, shuffle=True,
                                   last_batch="discard",
                                   num_workers=cpu["usable"] // processes)   # <- usable cores / processes
run = gc.train(cfg, train_iter=train_iter, verbose=False, progress=False)   # the record reads the loader
gc.plots.cpu_timeline(run)

# %%
gc.conclude("11", [run], cpu=cpu)

# %% [markdown]
# ## The GPU side
# Clocks against their maxima and the reasons they are held down (power cap, thermal
# slowdown), temperature, the power limit, and the PCIe link the batches cross, as NVML
# reads them (`nvidia-smi -q`). MXNet's pinned memory (`mx.cpu_pinned()`, used by its
# DataLoader with `pin_memory=True`) is measured against pageable memory in the PyTorch
# track, whose copies can be timed from each.

# %%
gpu = env.gpu_facts()
gc.show([gpu], lesson="11", chart=False)
gc.conclude("11", [gpu])

# %% [markdown]
# ## Shared memory: `/dev/shm`
# Gluon's loader workers put each collated batch in shared memory (an NDArray in
# `/dev/shm`), where the training process picks it up. In a Docker container that is 64 MB
# unless it was started with `--shm-size` or `--ipc=host`; once full, a worker dies with
# "Bus error" or "No space left on device".

# %%
shm = env.shm_facts()
gc.show([shm], lesson="11", chart=False)
gc.conclude("11", [shm], workers=run.config["num_workers"])   # as the run recorded them

# %% [markdown]
# ## The disk, and the lecture's bandwidth table
# A fresh file is written, dropped from the page cache and read back sequentially (1 MiB
# blocks) and at random (32 KiB, a JPEG's size), as in lesson 9; beside it the lecture's
# links and this machine's GPU links.

# %%
disk = env.disk_facts(size_mb=SIZES.disk_mb)
gc.show([disk, gpu], lesson="11", chart=False)
gc.conclude("11", [disk, gpu])

# %% [markdown]
# `gpu-course env` prints all of the above in one go in a terminal (`--json` for a
# machine-readable copy, `--no-measure` to read without measuring).

# %% [markdown]
# ## Exercise 11.1: a thread count of your own
# Predict, then measure. The forward pass above, benchmarked with a thread per usable core
# and then with a count you set at the line marked `# >>>`: fewer (1), or more than the
# cores (a container that shows the host's 64 cores gets that many from OpenMP unless
# `OMP_NUM_THREADS` says otherwise: try `4 * cpu["usable"]`). **Before you run**, write
# down its images/s against the usable cores' count: `"faster"`, `"slower"` or `"same"`.
#
# The check reads the two benchmarks: the thread count changed and nothing else, at least
# five timed passes a side, and a prediction their spread does not contradict. Other
# programs busy while a benchmark ran leave the prediction untested, and the check says
# so. `gc.solution("11.1")` shows one answer, once you have tried.

# %% tags=["exercise"]
cpu = env.cpu_facts()
threads = None               # >>> a thread count other than cpu["usable"]: 1, or 4 * cpu["usable"]
prediction = None            # >>> before you run: its images/s "faster", "slower" or "same"
tried = [env.bench("gluon", n, **SIZES.bench)                    # <- OMP_NUM_THREADS=n, a fresh process
         for n in (cpu["usable"], threads) if threads]           # (nothing until you choose)

# %% tags=["check"]
gc.check("11.1", tried, prediction)
