"""Where a Gluon run trains: GPU contexts, or CPU contexts when there is no GPU."""
from __future__ import annotations

import os

import mxnet as mx

from ...config import Experiment, check_gpus
from ...env import cpu
from ...env.cores import mxnet_threads, usable_cores

# read once, when libmxnet loads (above): they fix MXNet's CPU operator threads for good
THREAD_ENV = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MXNET_OMP_MAX_THREADS")}

FLOAT16_ON_CPU = "dtype='float16' needs a GPU: MXNet has no float16 convolution on the CPU; trains in float32."
BFLOAT16_ON_GPU = "dtype='bfloat16' needs a CPU in MXNet 1.9 (use float16 on a GPU); trains in float32."


def gpu_count() -> int:
    """GPUs MXNet can use (0 with a CPU-only MXNet build or no driver)."""
    try:
        return mx.context.num_gpus()
    except mx.base.MXNetError:  # a CUDA build without a usable driver
        return 0


def try_devices(num_gpus: int = 1) -> tuple[list, str | None]:
    """`[mx.gpu(0), ..]` for `num_gpus` GPUs; with no GPU as many CPU contexts, and a notice."""
    kind, count, notice = check_gpus(num_gpus, gpu_count())
    make = mx.gpu if kind == "gpu" else mx.cpu
    return [make(i) for i in range(count)], notice


def operator_threads() -> tuple[int, str]:
    """(count, where it comes from): the OpenMP threads MXNet's CPU operators use here."""
    return mxnet_threads(usable_cores(), THREAD_ENV)


def check_threads(cfg: Experiment) -> None:
    """Refuse cfg.threads when MXNet's operators run another count (fixed at import)."""
    count, source = operator_threads()
    if cfg.threads is not None and cfg.threads != count:
        raise ValueError(
            f"threads={cfg.threads} in the Experiment, but MXNet's operators run {count} OpenMP thread(s) "
            f"({source}): start a new process with OMP_NUM_THREADS={cfg.threads}, or leave threads at None")


def on_gpu(devices) -> bool:
    return all(d.device_type == "gpu" for d in devices)


def bfloat16_refused(devices) -> str | None:
    """Why MXNet cannot compute in bfloat16 on `devices`, or None where it can."""
    if on_gpu(devices):
        return BFLOAT16_ON_GPU
    support = cpu.supports(cpu.Capability.MXNET_BFLOAT16)
    return None if support else f"dtype='bfloat16' is not on this CPU: {support.why}; trains in float32."


def effective_config(cfg: Experiment, devices) -> tuple[Experiment, str | None]:
    """The config that can really run on `devices`, and a notice when it changed."""
    notices = []
    if len(devices) != max(cfg.num_gpus, 1):
        cfg = cfg.replace(num_gpus=len(devices))
    if cfg.dtype == "float16" and not on_gpu(devices):
        cfg = cfg.replace(dtype="float32")
        notices.append(FLOAT16_ON_CPU)
    if cfg.dtype == "bfloat16" and (why := bfloat16_refused(devices)):
        cfg = cfg.replace(dtype="float32")
        notices.append(why)
    return cfg, " ".join(notices) or None
