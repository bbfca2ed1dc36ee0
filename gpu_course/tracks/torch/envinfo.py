"""The PyTorch side of `gpu_course.env.report`, run in a fresh process by `env.hook`:

    python -m gpu_course.tracks.torch.envinfo build|bench|copy|infer [--threads=2 ...]
"""
from __future__ import annotations

import contextlib
import statistics
import time
import warnings

import torch

from ...env.report import forward_rates, hook_main, openmp_runtimes
from ...analyse.inference import Variant
from ...measure.timing import Workload
from .inference import inference_net, time_inference
from .models import get_model


def build() -> dict:
    """Versions, what the build has (CUDA, cuDNN, oneDNN, ...) and the TF32 flags."""
    features = {
        "CUDA": torch.version.cuda is not None, "CUDNN": torch.backends.cudnn.is_available(),
        "MKLDNN (oneDNN)": torch.backends.mkldnn.is_available(),
        "MKL": torch.backends.mkl.is_available(), "OPENMP": torch.backends.openmp.is_available(),
        "NCCL": torch.distributed.is_available() and torch.distributed.is_nccl_available(),
        "GLOO": torch.distributed.is_available() and torch.distributed.is_gloo_available(),
    }
    flags = {"cudnn.allow_tf32 (convolutions)": torch.backends.cudnn.allow_tf32,
             "cuda.matmul.allow_tf32 (matmuls)": torch.backends.cuda.matmul.allow_tf32,
             "cudnn.benchmark": torch.backends.cudnn.benchmark}
    config = torch.__config__.show()
    return {"framework": "torch", "version": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if torch.cuda.is_available() else None,
            "features": features, "flags": flags,
            "intra_op_threads": torch.get_num_threads(),
            "inter_op_threads": torch.get_num_interop_threads(),
            "openmp_runtimes": openmp_runtimes(),
            "config": [line.strip(" -") for line in config.splitlines()
                       if line.strip() and "Build settings" not in line]}


def bench(threads: int, onednn: bool, batch: int, steps: int, model: str) -> dict:
    """Forward passes of `model` on the CPU: images/s, overall and of each pass."""
    torch.set_num_threads(threads)   # intra-op threads; OMP_NUM_THREADS was set before start
    net = get_model(model).eval()
    x = torch.randn(batch, 3, 32, 32)
    with torch.no_grad(), onednn_flag(onednn):   # on the CPU a call has finished when it returns
        rates = forward_rates(lambda: net(x), batch, steps)
    return {**rates, "threads": threads, "onednn": onednn, "build": build()}


def infer(threads: int, onednn: bool, models, workload: Workload) -> dict:
    """Lesson 15 on the CPU: the records of each of `models` (`inference.time_inference`)."""
    torch.set_num_threads(threads)
    variant = Variant.ONEDNN_ON if onednn else Variant.ONEDNN_OFF
    records = []
    with onednn_flag(onednn):
        for model in models:
            records += time_inference(inference_net(model), model, variant, "cpu", workload)
    return {"records": records, "build": build()}


@contextlib.contextmanager
def onednn_flag(enabled: bool):
    """oneDNN on or off; mkldnn.flags() warns that oneDNN's TF32 needs an Intel GPU: no matter."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with torch.backends.mkldnn.flags(enabled=enabled):
            yield


def copy_bandwidth(mib: int = 256, repeats: int = 5) -> dict:
    """Host-to-device GB/s from pageable and pinned memory, interleaved copies."""
    if not torch.cuda.is_available():
        return {"available": False}
    device = torch.device("cuda:0")
    target = torch.empty(mib * 2**20, dtype=torch.uint8, device=device)
    sources = {"pageable": torch.empty(mib * 2**20, dtype=torch.uint8),
               "pinned": torch.empty(mib * 2**20, dtype=torch.uint8).pin_memory()}
    for source in sources.values():
        target.copy_(source)              # warm-up
    torch.cuda.synchronize()
    rates = {kind: [] for kind in sources}
    for _ in range(repeats):
        for kind, source in sources.items():
            start = time.perf_counter()
            target.copy_(source, non_blocking=kind == "pinned")
            torch.cuda.synchronize()      # sync point: the copy has finished
            rates[kind].append(mib * 2**20 / (time.perf_counter() - start) / 1e9)
    return {"available": True, "mib": mib,
            **{f"{kind}_gb_s": statistics.median(r) for kind, r in rates.items()},
            **{f"{kind}_all": [round(x, 3) for x in r] for kind, r in rates.items()}}


def main(argv=None) -> int:
    return hook_main(argv, "python -m gpu_course.tracks.torch.envinfo", torch.get_num_threads(),
                     build=build, bench=bench, infer=infer, copy=copy_bandwidth)


if __name__ == "__main__":
    raise SystemExit(main())
