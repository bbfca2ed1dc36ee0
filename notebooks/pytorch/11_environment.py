# %% [markdown]
# # 11. The environment: what you run on, measured
#
# **What this lesson measures.** Before the ladder, the talk checks *which build* of the
# framework runs (CUDA, cuDNN, MKL-DNN, TensorRT), and the optimisation checklist tunes
# what surrounds it: GPU clocks, OpenMP threads, process binding, loader workers per
# GPU, storage. Here each of those is read or measured on this machine: the build
# flags, oneDNN (formerly MKL-DNN) on against off, a thread sweep, pinning, the
# OpenMP variables and which runtime reads them, the GPU's clocks, limits and PCIe link,
# pageable against pinned copies, `/dev/shm` and the disk. `gpu-course env` prints the
# same report in a terminal.
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
import torch
from gpu_course.env import report as env
from gpu_course import torch as gc

# %% tags=["parameters"]
SIZES = gc.sizes("11")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("11", disk_mb=1024)

# %% [markdown]
# ## The build
# PyTorch reports what it was compiled with: the CUDA runtime and cuDNN where it has them,
# oneDNN (still named MKL-DNN there), MKL and OpenMP, and the CPU instructions it uses.
# TF32 (Ampere and newer GPUs) trades float32's 23-bit mantissa for 10 bits in matrix
# products: faster, and on by default for cuDNN's convolutions only.

# %%
print(torch.__config__.show().split("  - Build settings")[0])   # (the compiler flags left out)
print(f"TF32: convolutions {torch.backends.cudnn.allow_tf32}, matmuls {torch.backends.cuda.matmul.allow_tf32}")

# %% [markdown]
# ## oneDNN on against off
# The same ResNet-20 forward pass, once with oneDNN's kernels and once without
# (`torch.backends.mkldnn.flags(enabled=False)`), on all usable cores. Each setting runs in
# a fresh process (`python -m gpu_course.tracks.torch.envinfo bench`), as the thread counts below
# must: OpenMP sizes its pool when it starts.

# %%
cpu = env.cpu_facts()                      # the CPU model; logical, physical and usable cores
onednn = [env.bench("pytorch", cpu["usable"], onednn=flag, **SIZES.bench)   # <- mkldnn.flags(enabled=flag)
          for flag in (True, False)]
gc.show(onednn, lesson="11", chart=False)
gc.conclude("11", onednn, cpu=cpu)

# %% [markdown]
# ## Threads and pinning
# `torch.set_num_threads(n)` sets the intra-op pool (OpenMP's, one thread per usable core
# by default) and `torch.set_num_interop_threads(n)` the pool that runs independent
# operators side by side. This kernel's own: 

# %%
print(torch.__config__.parallel_info())

# %% [markdown]
# Each thread count gets its own process. Then the same threads are **pinned** to a single
# core with `os.sched_setaffinity` (what `taskset`, `numactl` and MPI's `--bind-to` do):
# that pays when several training processes share a machine and costs when it leaves a
# process fewer cores than threads; which wins here is measured.

# %%
pinned = env.bench("pytorch", cpu["usable"], cpus=set(cpu["usable_ids"][:1]), **SIZES.bench)   # <- one core
sweep = [env.bench("pytorch", n, **SIZES.bench) if n < cpu["usable"] else onednn[0]  # <- set_num_threads(n)
         for n in env.thread_counts(cpu["usable"])]
gc.show([*sweep, pinned], lesson="11", chart=False)
gc.conclude("11", [*sweep, pinned], cpu=cpu)

# %% [markdown]
# ## OpenMP variables and which runtime reads them
# The course day's settings (`KMP_BLOCKTIME=0`, `KMP_AFFINITY=granularity=fine,compact,1,0`)
# belong to Intel's OpenMP runtime (libiomp5; LLVM's libomp reads them too). GNU's
# libgomp ignores every `KMP_` variable: its equivalents are `OMP_WAIT_POLICY` or
# `GOMP_SPINCOUNT` (how long a thread spins) and `OMP_PROC_BIND` with `OMP_PLACES`
# (binding). Which runtime did PyTorch load into this process?

# %%
loaded = env.openmp_runtimes() if torch.backends.openmp.is_available() else []
gc.show(env.openmp_settings(loaded), lesson="11", chart=False)   # each variable, and who reads it
gc.conclude("11", env.openmp_settings(loaded), runtimes=loaded)

# %% [markdown]
# ## Loader workers per process
# The checklist's rule: loader workers = usable cores / processes, one training process
# per GPU (`gc.workers()`, the talk's `cpu_count() - 3`, is the single-GPU rule of lesson
# 2). A short run with that many workers, their batches pinned where a GPU takes them,
# and what every core did meanwhile (the total in black, one grey line per core):

# %%
workers = cpu["usable"] // max(1, torch.cuda.device_count())   # <- usable cores / processes
cfg = gc.Experiment(name=f"{workers} workers", **SIZES)
train_set, _ = gc.load_datasets(cfg)
train_iter = torch.utils.data.DataLoader(train_set, batch_size=cfg.batch_size, shuffle=True,
                                         drop_last=True, num_workers=workers,      # <- the rule
                                         pin_memory=torch.cuda.is_available())     # page-locked for a GPU
run = gc.train(cfg, train_iter=train_iter, verbose=False, progress=False)   # the record reads the loader
gc.plots.cpu_timeline(run)

# %%
gc.conclude("11", [run], cpu=cpu)

# %% [markdown]
# ## Shared memory: `/dev/shm`
# Loader workers hand each collated batch to the training process through shared memory.
# Docker gives a container 64 MB of it unless started with `--shm-size` or `--ipc=host`;
# when it fills, a worker dies with "Bus error" ("DataLoader worker (pid N) is killed by
# signal: Bus error") or "No space left on device".

# %%
shm = env.shm_facts()
gc.show([shm], lesson="11", chart=False)
gc.conclude("11", [shm], workers=workers)

# %% [markdown]
# ## The GPU side
# Clocks against their maxima and the reasons they are held down (power cap, thermal
# slowdown), temperature, the power limit, and the PCIe link the batches cross, as NVML
# reads them (`nvidia-smi -q`).

# %%
gpu = env.gpu_facts()
gc.show([gpu], lesson="11", chart=False)
gc.conclude("11", [gpu])

# %% [markdown]
# ## Host to device copies: pageable against pinned
# A batch in ordinary (pageable) memory is first copied by the driver into a page-locked
# buffer and then over PCIe; from pinned memory (`tensor.pin_memory()`, or `pin_memory=True`
# in the DataLoader) the GPU reads it directly, and `non_blocking=True` lets the copy
# overlap with compute. Interleaved copies of 256 MiB from each, timed between syncs.

# %%
copy = env.hook("pytorch", "copy") if torch.cuda.is_available() else {"available": False}
gc.show([copy], lesson="11", chart=False)
gc.conclude("11", [copy])

# %% [markdown]
# ## The disk, and the lecture's bandwidth table
# A fresh file is written, dropped from the page cache and read back sequentially (1 MiB
# blocks) and at random (32 KiB, a JPEG's size), as in lesson 9; beside it the lecture's
# links, this machine's GPU links and the copies above.

# %%
disk = env.disk_facts(size_mb=SIZES.disk_mb)
gc.show([disk, gpu, copy], lesson="11", chart=False)
gc.conclude("11", [disk, gpu, copy])

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
tried = [env.bench("pytorch", n, **SIZES.bench)                  # <- set_num_threads(n), a fresh process
         for n in (cpu["usable"], threads) if threads]           # (nothing until you choose)

# %% tags=["check"]
gc.check("11.1", tried, prediction)
