"""The PyTorch training loop, with gpu_course's Harness doing the timing, monitoring and
record keeping around it.

The host never waits for the GPU inside an epoch: each step's loss and number of correct
predictions are added to two numbers that stay on the device, and they are read once, at
the end of the epoch (that read is the epoch's sync point, so its time is real). Calling
`loss.item()` every step, as many loops do, would stall the host once per step.
Exceptions: float16's GradScaler reads one flag per step (did any gradient overflow?).
"""
from __future__ import annotations

import contextlib
import os
import warnings

import torch
import torch.distributed as dist
from torch import nn

from ..config import Experiment
from ..harness import Harness
from .data import load_datasets, make_loader
from .devices import describe, out_of_memory, synchronizer, try_devices
from .gpu_loader import gpu_loaders
from .models import get_model
from .optim import lr_scheduler, make_optimizer

COMPILE_BACKEND_ENV = "GPU_COURSE_COMPILE_BACKEND"  # "inductor" (default) or e.g. "aot_eager"
FLOAT16_ON_CPU = ("dtype='float16' on the CPU: PyTorch's CPU float16 convolutions are ~6x "
                  "slower than float32 here, so this run uses bfloat16 autocast, the CPU's "
                  "16-bit type.")
STATIC_ON_CPU = ("graph='static' means CUDA graphs (torch.compile mode='reduce-overhead'); "
                 "on the CPU it is the same as graph='hybrid'.")


def train(cfg: Experiment, net=None, train_iter=None, val_iter=None, devices=None,
          runs_dir=None, progress: bool = True, verbose: bool = True, on_epoch=None):
    """Train as `cfg` says and return the run record (`records.Run`).

    Anything passed in (a network, loaders, devices) is used as it is, so a notebook can
    show one change in plain PyTorch code; the rest is built from `cfg`. With several
    devices the run is DistributedDataParallel in one process per device (see `ddp`),
    which builds its own network and loaders. The recorded config says what really ran.
    on_epoch(row) is called with each recorded epoch row (single-process runs).
    """
    if cfg.engine != "pytorch":
        cfg = cfg.replace(engine="pytorch")
    notices = []
    if devices is None:
        devices, notice = try_devices(cfg.num_gpus)
        notices.append(notice)
    devices = [torch.device(d) for d in devices]
    if len(devices) > 1:
        if any(x is not None for x in (net, train_iter, val_iter)):
            raise ValueError(f"with {len(devices)} devices each DistributedDataParallel "
                             "process builds its own network and loaders: pass none of "
                             "net, train_iter, val_iter")
        from .ddp import launch
        return launch(cfg.replace(num_gpus=len(devices)), runs_dir=runs_dir, verbose=verbose)
    device = devices[0]
    if is_compiled(net) and cfg.graph == "eager":
        cfg = cfg.replace(graph="hybrid")  # compiled by the notebook: record it
    cfg, notice = effective_config(cfg, device)
    notices.append(notice)
    torch.manual_seed(cfg.seed)
    net = net if net is not None else get_model(cfg)
    if train_iter is None or val_iter is None:
        made_train, made_val = build_loaders(cfg, device)
        train_iter = train_iter if train_iter is not None else made_train
        val_iter = val_iter if val_iter is not None else made_val
    return fit(cfg, net, train_iter, val_iter, device, runs_dir=runs_dir,
               notice=" ".join(n for n in notices if n) or None, progress=progress,
               verbose=verbose, on_epoch=on_epoch)


def effective_config(cfg: Experiment, device: torch.device) -> tuple[Experiment, str | None]:
    """The config that really runs on `device`, and a notice when it differs from cfg."""
    notices = []
    if device.type == "cpu" and cfg.dtype == "float16":
        cfg = cfg.replace(dtype="bfloat16")
        notices.append(FLOAT16_ON_CPU)
    if device.type == "cpu" and cfg.graph == "static":
        notices.append(STATIC_ON_CPU)
    return cfg, " ".join(notices) or None


def build_loaders(cfg: Experiment, device: torch.device, rank: int = 0, world_size: int = 1):
    """(train_iter, val_iter) for this process: DataLoaders (a DistributedSampler gives
    each of `world_size` processes its shard), or GpuLoaders with cfg.data_on_gpu."""
    if cfg.data_on_gpu:
        dtype = Precision(cfg.dtype, device).input_dtype  # what autocast would cast to
        return gpu_loaders(cfg, device, rank, world_size, dtype=dtype)
    train_set, val_set = load_datasets(cfg)
    sampler = None
    if world_size > 1:
        sampler = torch.utils.data.DistributedSampler(
            train_set, world_size, rank, shuffle=True, seed=cfg.seed, drop_last=True)
    return make_loader(train_set, cfg, sampler=sampler), make_loader(val_set, cfg, train=False)


class Precision:
    """Mixed precision for cfg.dtype: autocast runs matrix multiplications and convolutions
    in float16/bfloat16 (tensor cores) and keeps the rest in float32. float16 has a small
    range, so its gradients are scaled up before backward (GradScaler) and the step is
    skipped when one overflows; bfloat16 has float32's range and needs no scaler."""

    def __init__(self, dtype: str, device: torch.device):
        self.device_type = torch.device(device).type
        self.amp_dtype = {"float32": None, "float16": torch.float16,
                          "bfloat16": torch.bfloat16}[dtype]
        self.scaler = torch.amp.GradScaler(self.device_type) if dtype == "float16" else None
        self.input_dtype = self.amp_dtype or torch.float32

    def autocast(self):
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.amp_dtype)

    def backward_and_step(self, loss: torch.Tensor, optimizer) -> None:
        if self.scaler is None:
            loss.backward()
            optimizer.step()
            return
        self.scaler.scale(loss).backward()
        self.scaler.step(optimizer)  # sync point: reads whether a gradient overflowed
        self.scaler.update()


def compile_model(model: nn.Module, cfg: Experiment, device: torch.device) -> nn.Module:
    """torch.compile for graph="hybrid" (PyTorch's hybridize: trace, fuse, generate
    kernels), with CUDA graphs for "static" (mode="reduce-overhead": the whole step
    replayed by one launch). The backend comes from $GPU_COURSE_COMPILE_BACKEND
    (default "inductor"; "aot_eager" compiles in seconds instead of minutes on a CPU)."""
    if cfg.graph == "eager" or is_compiled(model):
        return model
    backend = compile_backend()
    if backend == "inductor" and cfg.graph == "static" and device.type == "cuda":
        return torch.compile(model, mode="reduce-overhead")
    return torch.compile(model, backend=backend)


def is_compiled(net) -> bool:
    return hasattr(net, "_orig_mod")  # torch.compile's wrapper keeps the module here


def compile_backend() -> str:
    return os.environ.get(COMPILE_BACKEND_ENV, "").strip() or "inductor"


def fit(cfg: Experiment, net: nn.Module, train_iter, val_iter, device: torch.device,
        runs_dir=None, notice: str | None = None, progress: bool = True, verbose: bool = True,
        rank: int = 0, world_size: int = 1, on_record=None, devices: str | None = None,
        on_epoch=None):
    """Train `net` on `device` as this process's part of the run (rank 0 of 1 unless
    under DistributedDataParallel); rank 0 keeps the record and returns it.
    on_record(path) is called once the record exists; `devices` describes them all;
    on_epoch(row) gets this rank's epoch rows (every rank: ddp gathers them)."""
    leader = rank == 0
    net = net.to(device)
    if cfg.channels_last:  # NHWC: the layout tensor-core convolutions read directly
        net = net.to(memory_format=torch.channels_last)
    steps = _length(train_iter, cfg)
    optimizer = make_optimizer(net, cfg)
    scheduler = lr_scheduler(cfg, min(steps, cfg.max_steps or steps), optimizer)
    model = net
    if world_size > 1:  # gradients averaged across processes during backward
        model = nn.parallel.DistributedDataParallel(
            net, device_ids=[device] if device.type == "cuda" else None)
    model = compile_model(model, cfg, device)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # time cuDNN's algorithms in the first steps
    precision = Precision(cfg.dtype, device)
    devices = devices or describe([device])
    with Harness(cfg, engine="pytorch", runs_dir=runs_dir, device_notice=notice,
                 devices=devices, progress=progress and leader, verbose=verbose and leader,
                 monitor=leader, record=leader, on_epoch=on_epoch) as h:
        if h.record is not None:
            h.record.note(compile_backend=compile_backend() if cfg.graph != "eager" else None,
                          world_size=world_size, torch_device=str(device))
            if on_record is not None:
                on_record(h.record.path)
        oom = None
        try:
            with warnings.catch_warnings():
                # GradScaler skips the first steps while it finds its scale; PyTorch then
                # warns that the scheduler stepped before the optimizer. Expected here.
                warnings.filterwarnings("ignore", "Detected call of `lr_scheduler.step")
                _run_epochs(h, cfg, model, net, optimizer, scheduler, precision, train_iter,
                            val_iter, device, steps, world_size)
        except torch.cuda.OutOfMemoryError as err:
            oom = out_of_memory(err, cfg.batch_size, device)
        if oom is not None:
            raise oom  # outside `except`, so the failed step's tensors can be freed
    return h.run


def _run_epochs(h: Harness, cfg: Experiment, model, net, optimizer, scheduler, precision,
                train_iter, val_iter, device, steps: int, world_size: int) -> None:
    loss_fn = nn.CrossEntropyLoss()
    static = cfg.graph == "static" and device.type == "cuda"
    source = OneBatch(train_iter, device, cfg.channels_last, steps) if cfg.mock == "loader" \
        else train_iter
    for epoch in h.epochs():
        _set_epoch(train_iter, epoch)
        model.train()
        totals = torch.zeros(2, dtype=torch.float64, device=device)  # loss sum, correct
        seen = 0
        for x, y in h.batches(source, total=steps):
            n = len(y)
            if cfg.mock == "trainer":  # input ceiling: fetch the batch, do nothing with it
                h.step(n * world_size)
                continue
            x, y = to_device(x, y, device, cfg.channels_last)
            if static:  # a new step: CUDA-graph outputs of the last one may be overwritten
                torch.compiler.cudagraph_mark_step_begin()
            with precision.autocast():
                out = model(x)
                loss = loss_fn(out, y)
            optimizer.zero_grad(set_to_none=True)
            precision.backward_and_step(loss, optimizer)
            scheduler.step()
            totals[0] += loss.detach() * n  # queued on the device: no wait
            totals[1] += (out.argmax(dim=1) == y).sum()
            seen += n
            h.step(n * world_size)  # every process did the same: count all the images

        def read_totals(totals=totals, seen=seen):
            if world_size > 1:  # every process's sums, added up
                dist.all_reduce(totals)
            # sync point: waits for every queued step, then copies two numbers to the host
            loss_sum, correct = totals.tolist()
            total = seen * world_size
            if total:
                h.set_epoch_stats(loss=loss_sum / total, train_acc=correct / total)

        sync = read_totals if cfg.mock != "trainer" else synchronizer(device)
        h.end_epoch(sync=sync, lr=optimizer.param_groups[0]["lr"],
                    evaluate=_validation(cfg, net, val_iter, device, world_size))


def _validation(cfg: Experiment, net, val_iter, device, world_size: int):
    """The end-of-epoch evaluation: on rank 0 only, the other processes wait for it."""
    if cfg.mock != "none":
        return None
    if world_size == 1:
        return lambda: evaluate(net, val_iter, [device], cfg.dtype, cfg.channels_last)

    def evaluate_on_rank0():
        acc = None
        if dist.get_rank() == 0:
            acc = evaluate(net, val_iter, [device], cfg.dtype, cfg.channels_last)
        dist.barrier()
        return acc
    return evaluate_on_rank0


def evaluate(net: nn.Module, val_iter, devices, dtype: str = "float32",
             channels_last: bool = False) -> float:
    """Top-1 accuracy of `net` on `val_iter`; one sync point, at the end.

    A compiled or DistributedDataParallel network is evaluated through the module it
    wraps: eagerly, so validation's other batch sizes and eval-mode BatchNorm cost no
    recompilation, and on this process alone."""
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
    net.train(was_training)
    return hits.item() / seen if seen else float("nan")  # sync point: reads the count


def to_device(x: torch.Tensor, y: torch.Tensor, device, channels_last: bool = False):
    """The batch on the device. `non_blocking` lets the copy overlap with queued work when
    the batch is in pinned memory (pin_memory=True); from pageable memory it waits."""
    x = x.to(device, non_blocking=True)
    y = y.to(device, non_blocking=True)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    return x, y


class OneBatch:
    """mock="loader": fetch one batch, keep it on the device, serve it `steps` times."""

    def __init__(self, loader, device, channels_last: bool, steps: int):
        self.loader, self.device, self.channels_last, self.steps = \
            loader, device, channels_last, steps
        self.batch = None

    def __len__(self) -> int:
        return self.steps

    def __iter__(self):
        if self.batch is None:
            x, y = next(iter(self.loader))
            self.batch = to_device(x, y, self.device, self.channels_last)
        for _ in range(self.steps):
            yield self.batch


def _set_epoch(loader, epoch: int) -> None:
    """A DistributedSampler (or a GpuLoader) draws each epoch's order from its number."""
    target = loader if hasattr(loader, "set_epoch") else getattr(loader, "sampler", None)
    if hasattr(target, "set_epoch"):
        target.set_epoch(epoch)


def _length(train_iter, cfg: Experiment) -> int:
    try:
        return len(train_iter)
    except TypeError:  # an iterable without a length: assume full batches
        return max(1, cfg.train_size // cfg.batch_size)
