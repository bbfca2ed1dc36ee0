"""Lesson 15's measurement, Gluon side: each pass ended by its own sync, batched or alone
(MXNet has no events to time a queued pass); the records are `analyse.inference.record`s."""
from __future__ import annotations

import os
import time

import mxnet as mx
import numpy as np

from ...analyse import inference
from ...measure.timing import Workload
from .models import get_model


def inference_net(model: str, device=None):
    """Network `model` with lesson 15's seeded weights on `device`, hybridized."""
    mx.random.seed(inference.SEED)
    net = get_model(model)
    net.initialize(mx.init.Xavier(), ctx=device or mx.cpu())
    net.hybridize(static_alloc=True, static_shape=True)
    return net


def time_inference(predict, model: str, variant, device, workload: Workload = Workload(),
                   dtype="float32") -> list[dict]:
    """One record per batch size of `workload` of `predict` (any function of a batch)."""
    device, batches = device or mx.cpu(), workload.batches
    served = inference.Served(model, variant, str(device), np.dtype(dtype).name)
    probe = inference.probe_images(max(batches))
    threads = os.environ.get("OMP_NUM_THREADS", "").strip()
    records = []
    for batch in batches:
        x = mx.nd.array(probe[:batch], ctx=device, dtype=dtype)
        for _ in range(workload.warmup):
            predict(x).wait_to_read()      # builds the graph for this shape, picks kernels
        n = workload.requests if batch == 1 else inference.passes_for(batch, workload.images)
        seconds = one_at_a_time(predict, x, n)
        outputs = predict(x).asnumpy() if batch == max(batches) else None
        records.append(inference.record(served, batch, inference.Timing.ALONE, seconds, outputs,
                                        threads=int(threads) if threads.isdigit() else None))
    return records


def one_at_a_time(predict, x: mx.nd.NDArray, n: int) -> list[float]:
    """Seconds of each of n passes, each ended by `wait_to_read`."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        predict(x).wait_to_read()          # the one sync: this request's output is ready
        times.append(time.perf_counter() - start)
    return times
