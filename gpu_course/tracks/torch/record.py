"""`gc.record(...)`: the course's bookkeeping (`measure.harness`) around a plain PyTorch loop."""
from __future__ import annotations

import os
from dataclasses import replace

import torch
import torch.distributed as dist

from ...measure import provenance
from ...config import OWN, Graph
from ...measure.harness import Device, Harness, Output, Ran
from ...measure.watch_loop import experiment, watched
from ..common import read_dataset
from .devices import describe, place

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "KMP_AFFINITY", "KMP_BLOCKTIME")


def record(cfg, net=None, train_iter=None, optimizer=None, **output) -> Harness:
    """The bookkeeping for one plain PyTorch loop (rank 0 records under DDP)."""
    out = Output.of(output)
    parts = provenance.Parts.of(cfg, [torch.device("cpu")]).fill(net, train_iter, optimizer)
    cfg, net, train_iter, optimizer = parts.cfg, parts.net, parts.train_iter, parts.optimizer
    devices = [torch.device(d) for d in parts.devices]
    rank, world_size = place()
    cfg = cfg.replace(engine="pytorch") if cfg.engine != "pytorch" else cfg
    runs = torch.get_num_threads()
    if cfg.threads is not None and cfg.threads != runs:
        raise ValueError(f"threads={cfg.threads} in the Experiment, but this process runs {runs} intra-op threads: "
                         f"call torch.set_num_threads({cfg.threads}) first, or leave threads at None")
    facts = {"threads": {"intra_op": runs,
                         "inter_op": torch.get_num_interop_threads(),
                         **{k: os.environ.get(k) for k in THREAD_VARIABLES if os.environ.get(k)}},
             "cpu_count": os.cpu_count(), "world_size": world_size,
             "torch_device": str(devices[0])}
    if devices[0].type == "cuda":
        ampere = torch.cuda.get_device_capability(devices[0]) >= (8, 0)   # TF32 from Ampere on
        facts["tf32"] = {"convolutions": bool(torch.backends.cudnn.allow_tf32
                                              and cfg.dtype == "float32" and ampere),
                         "matmul_precision": torch.get_float32_matmul_precision()}
        facts["cudnn_benchmark"] = bool(torch.backends.cudnn.benchmark)
    if net is not None:
        found, facts["network"] = read_network(net)
        if cfg.graph != Graph.EAGER:  # compiled as cfg says (with or without CUDA graphs)
            found.pop("graph", None)
        cfg = provenance.reconcile(cfg, found, "the network",
                                   ("model",) if found["model"] == OWN else ())
        if getattr(net, "_orig_mod", None) is not None:
            from .train import compile_backend
            facts["compile_backend"] = compile_backend()
    if train_iter is not None:
        found, facts["train_data"] = read_loader(train_iter)
        cfg = provenance.reconcile(cfg, found, "the DataLoader",
                                   provenance.OWN_DATA_FIELDS if found.get("dataset") else ())
    if optimizer is not None:
        facts["optimizer"] = read_optimizer(optimizer)
    return Harness(cfg, Ran(engine="pytorch", devices=describe(devices),
                            device_notice=parts.notice, downgrades=tuple(parts.downgrades or ()),
                            facts=facts),
                   Device(read=lambda t: t.item(), total=total,
                          reduce=_all_reduce if world_size > 1 else None,
                          events=StepEvents() if devices[0].type == "cuda" else None),
                   replace(out, **{k: getattr(out, k) and rank == 0  # rank 0 records under DDP
                                   for k in ("progress", "verbose", "monitor", "record")}))


def watch(loader, net=None, name: str = "watch", **output):
    """`for x, y in gc.watch(train_loader):` times a plain loop's steps into one run record,
    a pass an epoch (`measure.watch_loop`); `net` adds the network's facts and its device."""
    device = next(net.parameters()).device if net is not None else torch.device("cpu")
    parts = provenance.Parts(net, loader, None, None, [device], experiment(name, "pytorch"))
    return watched(loader, lambda: record(parts, **{"progress": False, **output}),
                   torch.cuda.synchronize if device.type == "cuda" else None)


def read_network(net) -> tuple[dict, dict]:
    """(config fields, facts) of a network."""
    inner = getattr(net, "_orig_mod", net)
    inner = getattr(inner, "module", inner)  # DistributedDataParallel
    found = {"model": getattr(inner, "course_model", None) or OWN}
    if hasattr(net, "_orig_mod"):
        found["graph"] = Graph.HYBRID
    last = [m for m in inner.modules() if isinstance(m, torch.nn.Linear)]
    return found, {"class": type(inner).__name__,
                   "parameters": sum(p.numel() for p in inner.parameters()),
                   "classes": last[-1].out_features if last else None}


def read_loader(loader) -> tuple[dict, dict]:
    """(config fields, facts) of a training loader (a DataLoader or a GpuLoader)."""
    facts = {"class": type(loader).__name__}
    if isinstance(loader, torch.utils.data.DataLoader):
        dataset = loader.dataset
        found = {"batch_size": loader.batch_size, "num_workers": loader.num_workers,
                 "train_size": len(dataset), "pin_memory": bool(loader.pin_memory)}
        if loader.num_workers > 0:
            found.update(persistent_workers=bool(loader.persistent_workers),
                         prefetch_factor=loader.prefetch_factor)
        read_dataset(dataset, found, facts)
        return found, facts
    if hasattr(loader, "batch_size") and hasattr(loader, "images"):  # GpuLoader
        facts.update(images=int(loader.images.shape[0]), device=str(loader.device))
        return {"batch_size": loader.batch_size, "num_workers": 0, "data_on_gpu": True}, facts
    return {}, facts


def read_optimizer(optimizer) -> dict:
    """What an optimizer is and its first group's settings."""
    group = optimizer.param_groups[0]
    return {"optimizer": type(optimizer).__name__,
            **{k: group.get(k) for k in ("lr", "momentum", "weight_decay", "nesterov")
               if k in group}}


class StepEvents:
    """Device-side step times: a CUDA event after each step, read after the epoch's sync."""

    def start(self) -> None:
        self.events = []
        self.mark()

    def mark(self) -> None:
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        self.events.append(event)

    def times(self) -> list:
        return [a.elapsed_time(b) / 1000 for a, b in zip(self.events, self.events[1:])]  # synced


def total(parts: list) -> torch.Tensor:
    """The steps' values added in one or two operations (0-d stacked, per-image joined)."""
    if not isinstance(parts[0], torch.Tensor):  # a loop that handed in Python numbers
        return sum(parts)
    return (torch.stack(parts) if parts[0].dim() == 0 else torch.cat(parts)).sum()


def _all_reduce(tensor):
    dist.all_reduce(tensor)  # every process's sums added up
    return tensor
