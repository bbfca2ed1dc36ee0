"""The PyTorch training loop every PyTorch run uses: plain PyTorch inside `gc.record`; the
host never waits for the GPU inside an epoch, but float16's GradScaler reads a flag a step."""
from __future__ import annotations

import contextlib

import torch
import torch.distributed as dist
from torch import nn

from ...config import Graph
from ...data.mocks import OneBatch
from ...measure.guards import check_stop
from .devices import place


AMP_DTYPES = {"float32": None, "float16": torch.float16, "bfloat16": torch.bfloat16}  # autocast's


class Precision:
    """Mixed precision for a dtype: autocast, and for float16's small range a GradScaler."""

    def __init__(self, dtype: str, device: torch.device):
        self.device_type = torch.device(device).type
        self.amp_dtype = AMP_DTYPES[dtype]
        self.scaler = torch.amp.GradScaler(self.device_type) if dtype == "float16" else None
        self.input_dtype = self.amp_dtype or torch.float32

    def autocast(self, cache: bool = True):
        """cache=False: no weight-cast cache, for a CUDA graph that must redo the casts."""
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.amp_dtype, cache_enabled=cache)

    def backward_and_step(self, loss: torch.Tensor, optimizer) -> None:
        if self.scaler is None:
            loss.backward()
            optimizer.step()
            return
        self.scaler.scale(loss).backward()
        self.scaler.step(optimizer)  # sync point: reads whether a gradient overflowed
        self.scaler.update()


def fit(rec, net: nn.Module, optimizer, scheduler, train_iter, val_iter, device) -> None:
    """Train for rec's epochs as rec.cfg says (its mock too); `scheduler` steps after every
    update; under DDP each step counts every process's images."""
    dtype, mock, channels_last = rec.cfg.dtype, rec.cfg.mock, rec.cfg.channels_last
    _, world_size = place()
    precision = Precision(dtype, device)
    loss_fn = nn.CrossEntropyLoss()
    static = rec.cfg.graph == Graph.STATIC and device.type == "cuda"
    source = train_iter
    if mock == "loader":  # compute ceiling: one batch, on the device, served every step
        source = OneBatch(train_iter, lambda batch: to_device(*batch, device, channels_last))
    for epoch in rec.epochs():
        _set_epoch(train_iter, epoch)
        net.train()
        for x, y in rec.batches(source):
            n = len(y)
            if mock == "trainer":  # input ceiling: fetch the batch, do nothing with it
                rec.step(n * world_size)
                continue
            x, y = to_device(x, y, device, channels_last)
            if static:  # a new step: CUDA-graph outputs of the last one may be overwritten
                torch.compiler.cudagraph_mark_step_begin()
            with precision.autocast():
                out = net(x)
                loss = loss_fn(out, y)
            optimizer.zero_grad(set_to_none=True)
            precision.backward_and_step(loss, optimizer)
            scheduler.step()
            # every process did the same step: count all the images. Two device operations
            # (argmax, ==); the harness adds the steps' values up after the epoch's sync
            rec.step(n * world_size, loss_sum=(loss.detach(), n), correct=out.argmax(dim=1) == y)
        sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else None
        rec.end_epoch(sync=sync, lr=optimizer.param_groups[0]["lr"],
                      evaluate=None if mock != "none" else lambda: _evaluate_on_rank0(
                          net, val_iter, device, dtype, channels_last, world_size))


def _evaluate_on_rank0(net, val_iter, device, dtype, channels_last, world_size: int):
    """The end-of-epoch evaluation: on rank 0 only, the other processes wait for it."""
    acc = evaluate(net, val_iter, [device], dtype, channels_last) if place()[0] == 0 else None
    if world_size > 1:
        dist.barrier()
    return acc


def evaluate(net: nn.Module, val_iter, devices, dtype: str = "float32",
             channels_last: bool = False) -> float:
    """Top-1 accuracy of `net` on `val_iter`, one sync at the end; a compiled or DDP
    network through the module it wraps (no recompilation)."""
    device = torch.device(devices[0] if isinstance(devices, (list, tuple)) else devices)
    net = getattr(net, "_orig_mod", net)  # torch.compile's wrapper
    net = getattr(net, "module", net)     # DistributedDataParallel's wrapper
    was_training = net.training
    net.eval()
    precision = Precision(dtype, device)
    hits = torch.zeros((), dtype=torch.int64, device=device)
    seen = 0
    with torch.no_grad(), precision.autocast():
        for x, y in val_iter:
            x, y = to_device(x, y, device, channels_last)
            hits += (net(x).argmax(dim=1) == y).sum()
            seen += len(y)
            check_stop()   # Ctrl-C or SIGTERM during a run: a validation can be long
    net.train(was_training)
    return hits.item() / seen if seen else float("nan")  # sync point: reads the count


def to_device(x: torch.Tensor, y: torch.Tensor, device, channels_last: bool = False):
    """The batch on the device (the copy overlaps queued work from pinned memory)."""
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    return (x.contiguous(memory_format=torch.channels_last) if channels_last else x), y


def _set_epoch(loader, epoch: int) -> None:
    """A DistributedSampler (or a GpuLoader) draws each epoch's order from its number."""
    target = loader if hasattr(loader, "set_epoch") else getattr(loader, "sampler", None)
    if hasattr(target, "set_epoch"):
        target.set_epoch(epoch)
