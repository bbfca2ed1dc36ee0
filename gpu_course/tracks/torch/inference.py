"""Lesson 15's measurement, PyTorch side: latency one request at a time, throughput in
large batches back to back (`analyse.inference.record`s)."""
from __future__ import annotations

import timeit

import numpy as np
import torch

from ...analyse import inference
from ...measure.timing import Workload
from .models import get_model


def inference_net(model: str, device="cpu") -> torch.nn.Module:
    """Network `model` with lesson 15's seeded weights, in eval mode, on `device`."""
    torch.manual_seed(inference.SEED)
    return get_model(model).eval().to(device)


def time_inference(predict, model: str, variant, device, workload: Workload = Workload(),
                   dtype=torch.float32) -> list[dict]:
    """One record per batch size of `workload` of `predict` (any function of a batch)."""
    device = torch.device(device)
    served = inference.Served(model, variant, str(device), str(dtype).removeprefix("torch."))
    batches = workload.batches
    probe = inference.probe_images(max(batches))
    records = []
    with torch.inference_mode():
        for batch in batches:
            x = torch.from_numpy(probe[:batch]).to(device, dtype)
            alone = batch == 1
            for _ in range(workload.warmup):
                predict(x)                 # compiles, records a CUDA graph, fills caches
            if device.type == "cuda":
                torch.cuda.synchronize(device)   # warm-up done before the first event
            n = workload.requests if alone else inference.passes_for(batch, workload.images)
            seconds = (one_at_a_time if alone else back_to_back)(predict, x, n)
            outputs = _numpy(predict(x)) if batch == max(batches) else None
            records.append(inference.record(
                served, batch,
                inference.Timing.ALONE if alone or device.type != "cuda" else inference.Timing.QUEUED,
                seconds, outputs, threads=torch.get_num_threads()))
    return records


def one_at_a_time(predict, x: torch.Tensor, n: int) -> list[float]:
    """Seconds of each of n passes, each served alone and ended by a sync."""
    return [back_to_back(predict, x, 1)[0] for _ in range(n)]


def back_to_back(predict, x: torch.Tensor, n: int) -> list[float]:
    """Seconds of each of n passes queued back to back, one sync after the last."""
    if x.device.type != "cuda":   # on the CPU a pass has finished when it returns
        return timeit.repeat(lambda: predict(x), repeat=n, number=1)
    events = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    events[0].record()
    for event in events[1:]:
        predict(x)
        event.record()                     # queued on the stream like a kernel: no wait
    events[-1].synchronize()               # the one sync, after the last pass
    return [a.elapsed_time(b) / 1000 for a, b in zip(events, events[1:])]


def _numpy(out) -> np.ndarray:
    if isinstance(out, torch.Tensor):
        return out.detach().float().cpu().numpy()
    return np.asarray(out, dtype=np.float32)   # ONNX Runtime returns numpy arrays
