"""Lesson 15's measurement, Gluon side: a network served one request at a time and in
large batches, each pass ended by its own sync (`wait_to_read`: MXNet's engine queues
work on a CPU too, and has no events to time a queued pass), and its outputs on the
lesson's probe images. Same names and signatures as `gpu_course.tracks.torch.inference`;
the records are `lessons.l15_inference.record`s."""
from __future__ import annotations

import os
import time

import mxnet as mx
import numpy as np

from ...analyse import inference as l15
from .models import get_model


def inference_net(model: str, device=None):
    """Network `model` with lesson 15's seeded weights on `device` (default the CPU),
    hybridized (static_alloc, static_shape: lesson 3): every measurement of a network, in
    any process, serves the same weights."""
    mx.random.seed(l15.SEED)
    net = get_model(model)
    net.initialize(mx.init.Xavier(), ctx=device or mx.cpu())
    net.hybridize(static_alloc=True, static_shape=True)
    return net


def time_inference(predict, model: str, variant, device, batches=(1, 128), requests: int = 200,
                   images: int = 1280, warmup: int = 3, dtype="float32") -> list[dict]:
    """One record a batch in `batches` of `predict` (a network or any function of an input
    batch) on `device`, its input in `dtype`: batch 1 timed for `requests` requests, a
    larger batch for `images` images (at least l15.MIN_PASSES passes), each after `warmup`
    untimed passes. The outputs on the probe images are taken at the largest batch."""
    device = device or mx.cpu()
    probe = l15.probe_images(max(batches))
    records = []
    for batch in batches:
        x = mx.nd.array(probe[:batch], ctx=device, dtype=dtype)
        for _ in range(warmup):
            predict(x).wait_to_read()      # builds the graph for this shape, picks kernels
        n = requests if batch == 1 else l15.passes_for(batch, images)
        seconds = (one_at_a_time if batch == 1 else back_to_back)(predict, x, n)
        outputs = predict(x).asnumpy() if batch == max(batches) else None
        records.append(l15.record(model, variant, str(device), batch, l15.Timing.ALONE,
                                  seconds, outputs, dtype=np.dtype(dtype).name,
                                  threads=_threads()))
    return records


def one_at_a_time(predict, x: mx.nd.NDArray, n: int) -> list[float]:
    """Seconds of each of n passes, each a request served alone: the clock, and the one
    sync that ends it (`wait_to_read` on its output)."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        predict(x).wait_to_read()          # the one sync: this request's output is ready
        times.append(time.perf_counter() - start)
    return times


def back_to_back(predict, x: mx.nd.NDArray, n: int) -> list[float]:
    """Seconds of each of n passes. MXNet has no events to time a pass left queued behind
    another, so each pass ends at its own sync, as one request alone does."""
    return one_at_a_time(predict, x, n)


def _threads() -> int | None:
    text = os.environ.get("OMP_NUM_THREADS", "")
    return int(text) if text.strip().isdigit() else None
