"""What DDP's gradient all-reduce costs a step, and how much hides behind backward, per
bucket size: steps alternate with and without sync (`no_sync`), medians of the slowest rank."""
from __future__ import annotations

import contextlib
import copy
import math
import statistics
import time

import torch
import torch.distributed as dist
from torch import nn

from ...config import Experiment
from ...scale.scaling import overlap_from_steps
from .allreduce import _slowest, measure as all_reduce_rows, spawn

BUCKETS_MB = (0.05, 0.25, 1.0, 25.0)  # DDP's default is 25


def measure(model: str = "resnet20", batch_size: int = 32, buckets_mb=BUCKETS_MB,
            steps: int = 10, warmup: int = 2, device=None) -> list[dict]:
    """One row per bucket size (every rank calls it; rows are the slowest rank's)."""
    from .models import get_model
    device = torch.device(device or ("cuda" if dist.get_backend() == "nccl" else "cpu"))
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    torch.manual_seed(0)
    net = get_model(Experiment(engine="pytorch", model=model)).to(device)
    grad_bytes = sum(p.numel() * p.element_size() for p in net.parameters() if p.requires_grad)
    x = torch.randn(batch_size, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (batch_size,), device=device)
    loss_fn = nn.CrossEntropyLoss()
    t_ar = all_reduce_rows((grad_bytes,), device)[0]["time_s"]   # all gradients in one
    rows = []
    for cap in buckets_mb:
        ddp = nn.parallel.DistributedDataParallel(
            copy.deepcopy(net), bucket_cap_mb=cap,
            device_ids=[device] if device.type == "cuda" else None)

        def step(with_sync: bool, ddp=ddp) -> float:  # this bucket size's model
            dist.barrier()  # start together: a late rank would count as communication
            t0 = time.perf_counter()
            with ddp.no_sync() if not with_sync else contextlib.nullcontext():
                loss_fn(ddp(x), y).backward()
            sync()  # the step's sync point: backward (and its all-reduce) has finished
            ddp.zero_grad(set_to_none=True)
            return time.perf_counter() - t0
        for _ in range(warmup):
            step(True), step(False)
        times = {True: [], False: []}
        for i in range(2 * steps):  # alternate, so drift in the machine's load hits both
            times[i % 2 == 0].append(step(i % 2 == 0))
        t_sync = _slowest(statistics.median(times[True]), device)
        t_nosync = _slowest(statistics.median(times[False]), device)
        quartiles = statistics.quantiles(times[True], n=4)
        rows.append({"bucket_cap_mb": cap, "buckets": math.ceil(grad_bytes / (cap * 2**20)),
                     "processes": dist.get_world_size(), "grad_bytes": grad_bytes,
                     "batch_size": batch_size, "t_step_sync_s": t_sync,
                     "t_step_nosync_s": t_nosync, "t_allreduce_s": t_ar,
                     "exposed_s": t_sync - t_nosync,
                     "spread_s": _slowest(quartiles[2] - quartiles[0], device),
                     "overlap": overlap_from_steps(t_sync, t_nosync, t_ar)})
        del ddp
    return rows


def run_local(procs: int = 2, **kwargs) -> list[dict]:
    """Start `procs` processes on 127.0.0.1, `measure(**kwargs)`, return rank 0's rows."""
    return spawn(measure, procs, kwargs)
