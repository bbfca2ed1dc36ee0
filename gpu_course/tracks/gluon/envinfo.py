"""The Gluon side of `gpu_course.env.report`, run in a fresh process by `env.hook` (MXNet
reads MXNET_MKLDNN_ENABLED and OMP_NUM_THREADS at start): `python -m ...envinfo bench`."""
from __future__ import annotations

import os

import mxnet as mx

from ...env.report import forward_rates, hook_main, openmp_runtimes
from ...analyse.inference import Variant
from ...measure.timing import Workload
from .inference import inference_net, time_inference
from .models import get_model

# The talk's build list, then what this course uses besides.
FEATURES = ("CUDA", "CUDNN", "NCCL", "MKLDNN", "TENSORRT", "DIST_KVSTORE", "PROFILER",
            "OPENMP", "BLAS_OPEN", "BLAS_MKL", "CPU_AVX2", "F16C")


def build() -> dict:
    """Versions and the build features the talk names (CUDA, cuDNN, MKL-DNN, ...)."""
    found = mx.runtime.Features()
    return {"framework": "mxnet", "version": mx.__version__,
            "features": {name: found.is_enabled(name) for name in FEATURES if name in found},
            "flags": {"MXNET_MKLDNN_ENABLED": os.environ.get("MXNET_MKLDNN_ENABLED", "1 (default)"),
                      "MXNET_CUDNN_AUTOTUNE_DEFAULT":
                          os.environ.get("MXNET_CUDNN_AUTOTUNE_DEFAULT", "1 (default)")},
            "gpus": mx.context.num_gpus(), "openmp_runtimes": openmp_runtimes()}


def bench(threads: int, onednn: bool, batch: int, steps: int, model: str) -> dict:
    """Hybridized forward passes of `model` on the CPU: images/s, overall and of each pass."""
    _check_onednn(onednn)
    net = get_model(model)
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.random.normal(shape=(batch, 3, 32, 32))
    # sync point per pass: MXNet queues work asynchronously
    rates = forward_rates(lambda: net(x).wait_to_read(), batch, steps)
    return {**rates, "threads": threads, "onednn": onednn, "build": build()}


def infer(threads: int, onednn: bool, models, workload: Workload) -> dict:
    """Lesson 15 on the CPU: the records of each of `models` (`inference.time_inference`)."""
    _check_onednn(onednn)
    variant = Variant.ONEDNN_ON if onednn else Variant.ONEDNN_OFF
    records = []
    for model in models:
        records += time_inference(inference_net(model), model, variant, mx.cpu(), workload)
    return {"records": records, "build": build()}


def _check_onednn(onednn: bool) -> None:
    said = os.environ.get("MXNET_MKLDNN_ENABLED")
    if ((said or "1") != "0") != onednn:
        raise ValueError(f"--onednn={int(onednn)} but MXNET_MKLDNN_ENABLED={said!r}: MXNet reads it at start")


def main(argv=None) -> int:
    return hook_main(argv, "python -m gpu_course.tracks.gluon.envinfo", os.cpu_count(),
                     build=build, bench=bench, infer=infer)


if __name__ == "__main__":
    raise SystemExit(main())
