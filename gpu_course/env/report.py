"""Know your environment: the framework's build, the CPU, the GPU, shared memory, disk, as
`report("gluon")` (`gpu-course env --json`) and `format_report` (`gpu-course env`). The framework
runs in child processes (`<track>.envinfo`): oneDNN and OpenMP threads are fixed at start-up.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..engines import check_engine, installed_engines
from ..measure import nvml
from ..measure.records import machine_load
from ..measure.timing import Workload
from ..scale.localhosts import child_env
from .cores import loader_workers, thread_counts  # noqa: F401  (thread_counts: the lessons')
from .text import format_report  # noqa: F401  (what `gpu-course env` prints)

HOOKS = {"gluon": "gpu_course.tracks.gluon.envinfo", "pytorch": "gpu_course.tracks.torch.envinfo"}
MiB = 2**20
# (variable, which OpenMP runtimes read it, what it does)
OPENMP_VARIABLES = (
    ("OMP_NUM_THREADS", "all", "threads per parallel region (default: one per usable core)"),
    ("KMP_BLOCKTIME", "libiomp5, libomp", "ms a thread spins after a region before sleeping"),
    ("KMP_AFFINITY", "libiomp5, libomp", "bind threads to cores (granularity=fine,compact,1,0)"),
    ("OMP_WAIT_POLICY", "all", "GNU's KMP_BLOCKTIME: active (spin) or passive (sleep)"),
    ("GOMP_SPINCOUNT", "libgomp", "how long libgomp spins before sleeping"),
    ("OMP_PROC_BIND", "all", "GNU's KMP_AFFINITY: close/spread/true binds threads"),
    ("OMP_PLACES", "all", "where bound threads go (cores, threads, sockets)"),
    ("GOMP_CPU_AFFINITY", "libgomp", "libgomp's explicit core list for its threads"),
)
CIFAR_BATCH_BYTES = 64 * 3 * 32 * 32 * 4   # one float32 batch of 64 images, as collated


# -- the framework, in child processes --------------------------------------------------
def hook(engine: str, *args: str, env: dict | None = None, cpus=None, timeout: float = 300) -> dict:
    """The JSON that ``python -m gpu_course.<track>.envinfo ARGS`` prints, pinned to `cpus`."""
    check_engine(engine)
    done = subprocess.run([sys.executable, "-m", HOOKS[engine], *args], env=child_env(**(env or {})),
                          capture_output=True, text=True, timeout=timeout,
                          preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)  # all threads
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"{HOOKS[engine]} {' '.join(args)} failed: {' | '.join(tail)}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench(engine: str, threads: int, onednn: bool = True, batch: int = 64, steps: int = 5, cpus=None) -> dict:
    """ResNet-20 forward passes in a fresh process with `threads` threads, oneDNN on or off."""
    before = machine_load()   # with how busy the machine was as this benchmark started
    out = _measure(engine, "bench", threads, onednn, cpus, batch=batch, steps=steps)
    return {**out, "batch": batch, "cpus": sorted(cpus) if cpus else None,
            "load_average": before["loadavg_1m"], "other_cores": other_cores(before, machine_load())}


def forward_rates(forward, batch: int, steps: int) -> dict:
    """An envinfo `bench`'s images/s: `forward()` (one batch, ended by its sync) over
    `steps` passes after an untimed one, and of each pass."""
    forward()                          # warm-up: first-call allocations and kernel choice
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        forward()
        times.append(time.perf_counter() - start)
    seconds = sum(times)
    return {"images_per_s": batch * steps / seconds, "ms_per_batch": 1000 * seconds / steps,
            "step_images_per_s": [batch / t for t in times]}


def other_cores(before: dict, after: dict) -> float | None:
    """Cores that other programs kept busy between two `records.machine_load` readings."""
    wall = after["wall"] - before["wall"]
    if before["cpu_busy_s"] is None or after["cpu_busy_s"] is None or wall <= 0:
        return None
    ours = sum(after[k] - before[k] for k in ("process_cpu_s", "children_cpu_s"))
    return max(0.0, (after["cpu_busy_s"] - before["cpu_busy_s"] - ours) / wall)


def infer(engine: str, models, workload: Workload = Workload(), onednn: bool = True,
          threads: int | None = None, cpus=None) -> list[dict]:
    """Lesson 15: `models` served on the CPU in a fresh process (`<track>.inference`)."""
    models = [models] if isinstance(models, str) else list(models)
    threads = threads or len(os.sched_getaffinity(0))
    load = os.getloadavg()[0]
    out = _measure(engine, "infer", threads, onednn, cpus, models=",".join(models),
                   batches=",".join(map(str, workload.batches)), requests=workload.requests,
                   images=workload.images, warmup=workload.warmup)
    return [{**r, "load_average": load} for r in out["records"]]


def _measure(engine: str, verb: str, threads: int, onednn: bool, cpus, **options) -> dict:
    """`hook` with threads and oneDNN set as variables too: a framework reads them at start-up."""
    args = {"threads": threads, "onednn": int(bool(onednn)), **options}
    env = {"OMP_NUM_THREADS": threads, "MXNET_MKLDNN_ENABLED": int(bool(onednn)),
           "MXNET_STORAGE_FALLBACK_LOG_VERBOSE": 0}     # else one log block per operator
    return hook(engine, verb, *(f"--{k}={v}" for k, v in args.items()), env=env, cpus=cpus)


# what each verb of a track's envinfo takes from its command line, in order
VERBS = {"build": (), "copy": (),
         "bench": ("threads", "onednn", "batch", "steps", "model"),
         "infer": ("threads", "onednn", "models", "workload")}


def hook_main(argv, prog: str, threads: int, **verbs) -> int:
    """A track's envinfo command line: its `verbs` by name, the result as one JSON line."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("what", choices=tuple(verbs))
    for name, kind, default in (
            ("threads", int, threads), ("onednn", lambda text: bool(int(text)), True), ("batch", int, 64),
            ("steps", int, 5), ("model", str, "resnet20"), ("requests", int, 200), ("images", int, 1280),
            ("warmup", int, 3), ("models", lambda text: text.split(","), ["resnet20"]),
            ("batches", lambda text: [int(b) for b in text.split(",")], [1, 128])):
        parser.add_argument(f"--{name}", type=kind, default=default)
    args = parser.parse_args(argv)
    args.workload = Workload(args.batches, args.requests, args.images, args.warmup)
    print(json.dumps(verbs[args.what](*(getattr(args, name) for name in VERBS[args.what]))))
    return 0


def cpu_measurements(engine: str, batch: int = 64, steps: int = 5) -> dict:
    """oneDNN on against off, a thread sweep, and all threads pinned to one core."""
    usable = sorted(os.sched_getaffinity(0))
    n = len(usable)
    on = bench(engine, n, True, batch, steps)
    off = bench(engine, n, False, batch, steps)
    sweep = {t: (on if t == n else bench(engine, t, True, batch, steps))["images_per_s"]
             for t in thread_counts(n)}
    return {"engine": engine, "batch": batch, "threads": n, "build": on["build"],
            "openmp_runtimes": on["build"].get("openmp_runtimes"),
            "onednn_on": on["images_per_s"], "onednn_off": off["images_per_s"],
            "onednn_speedup": on["images_per_s"] / off["images_per_s"], "thread_sweep": sweep,
            "pinned_one_core": bench(engine, n, True, batch, steps, cpus={usable[0]})["images_per_s"]
            if n > 1 else None}


# -- the CPU side, read ------------------------------------------------------------------
def cpu_facts() -> dict:
    """Cores, the CPU model and the instruction sets the lessons depend on."""
    import psutil
    from ..measure.records import _cpu_model
    from . import cpu
    return {"model": _cpu_model(), "logical": os.cpu_count(),
            "features": cpu.describe(cpu.features()),
            "capabilities": [("yes: " if s else "no: ") + s.capability.value + ": " + s.why
                             for s in map(cpu.supports, cpu.Capability)],
            "load_average": os.getloadavg()[0],   # other work that shares these cores
            "physical": psutil.cpu_count(logical=False),
            "usable": len(os.sched_getaffinity(0)),
            "usable_ids": sorted(os.sched_getaffinity(0))}


def openmp_runtimes() -> list[str]:
    """OpenMP libraries loaded into this process (read after importing a framework)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    return sorted({Path(p).name for p in re.findall(r"\S*/lib(?:gomp|iomp5|omp)[^/\s]*\.so\S*", maps)})


def openmp_settings(runtimes=()) -> list[dict]:
    """Each OpenMP variable: its value here and whether the loaded runtime reads it."""
    kinds = {re.sub(r"[-.].*", "", name) for name in runtimes}   # libgomp-a34b.so -> libgomp
    return [{"variable": name, "value": os.environ.get(name), "read_by": readers,
             "honoured_here": None if not kinds else readers == "all" or any(k in readers for k in kinds),
             "what": what} for name, readers, what in OPENMP_VARIABLES]


# -- the GPU side -------------------------------------------------------------------------
def gpu_facts() -> dict:
    """{"available": bool, "reason": why not, "gpus": [gpu_info + device_state]}."""
    count = nvml.gpu_count()
    if count == 0:
        return {"available": False, "gpus": [],
                "reason": (nvml.init_error() or "NVML found no GPUs").replace(
                    "; sampling CPU only", "")}
    gpus = [{**nvml.gpu_info(i), **nvml.device_state(i)} for i in range(count)]
    return {"available": True, "reason": None, "gpus": gpus,
            "driver": nvml.driver_version(), "cuda": nvml.cuda_driver_version()}


def shm_facts(path: str = "/dev/shm", batch_bytes: int = CIFAR_BATCH_BYTES) -> dict:
    """Size of the loaders' shared memory and how many collated batches fit in it."""
    if not os.path.isdir(path):
        return {"path": path, "total_mib": None, "free_mib": None, "batches_fit": None}
    usage = shutil.disk_usage(path)
    return {"path": path, "total_mib": usage.total / MiB, "free_mib": usage.free / MiB,
            "batch_mib": batch_bytes / MiB, "batches_fit": usage.free // batch_bytes}


def disk_facts(folder=None, size_mb: int = 64) -> dict:
    """Cold sequential (1 MiB) and random (32 KiB) reads of a fresh file in `folder`."""
    from ..data import default_root
    from ..data.disk import read_bandwidth
    folder = Path(folder or default_root())
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=folder, prefix=".disk-check-", delete=True) as f:
        block = os.urandom(MiB)
        for _ in range(size_mb):
            f.write(block)
        f.flush()
        seq = read_bandwidth(f.name, "sequential")
        rnd = read_bandwidth(f.name, "random", 32 << 10)
    return {"folder": str(folder), "size_mb": size_mb, "sequential_mb_s": seq.mb_per_s,
            "random_32k_mb_s": rnd.mb_per_s, "cold": seq.evicted}


# -- the whole report ---------------------------------------------------------------------
def report(engine: str | None = None, measure: bool = True, quick: bool = False, disk_dir=None) -> dict:
    """Everything above as one dict, for `engine` (default: the first installed)."""
    engines = installed_engines()
    engine = engine or (engines[0] if engines else None)
    out = {"engine": engine, "cpu": cpu_facts(), "gpu": gpu_facts(), "shm": shm_facts(),
           "workers_per_process": loader_workers(max(1, nvml.gpu_count())),
           "build": None, "cpu_bench": None, "copy": None, "disk": None}
    if engine is not None:
        if measure:
            out["cpu_bench"] = cpu_measurements(engine, batch=32 if quick else 64, steps=3 if quick else 10)
            out["build"] = out["cpu_bench"]["build"]
        else:
            out["build"] = hook(engine, "build")
        if measure and out["gpu"]["available"] and engine == "pytorch":
            out["copy"] = hook(engine, "copy")
    runtimes = (out["build"] or {}).get("openmp_runtimes") or []
    out["openmp"] = openmp_settings(runtimes)
    if measure:
        out["disk"] = disk_facts(disk_dir, 16 if quick else 256)
    return out
