"""The Gluon training loop: GluonCV's CIFAR-10 loop, with gpu_course's Harness doing
the timing, monitoring and record keeping around it.

Each step has exactly one point where the host waits for the devices: reading the
step's loss and number of correct predictions (a plain Gluon loop reads the loss there
too). The epoch ends with `mx.nd.waitall()`, so every epoch's time is real.
"""
from __future__ import annotations

import random
import re

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from ..config import Experiment
from ..harness import Harness
from ..records import OutOfMemory
from .data import load_datasets, make_loader
from .devices import effective_config, try_devices
from .models import dtype_of, get_model, graph_of, prepare
from .optim import make_trainer

MiB = 2**20


def train(cfg: Experiment, net=None, train_iter=None, val_iter=None, devices=None,
          runs_dir=None, progress: bool = True, verbose: bool = True, on_epoch=None):
    """Train as `cfg` says and return the run record (`records.Run`); on_epoch(row) is
    called with each recorded epoch row.

    Anything passed in (a network, loaders, devices) is used as it is, so a notebook can
    show one change in plain Gluon code; the rest is built from `cfg`. The recorded
    config says what really ran (e.g. float32 when float16 was asked for on a CPU).
    """
    if cfg.engine != "gluon":  # validated again: PyTorch-only settings are refused here
        cfg = cfg.replace(engine="gluon")
    if cfg.kvstore.startswith("dist"):  # this process is one worker of a multi-host job
        from .dist import train_worker
        return train_worker(cfg, runs_dir=runs_dir, verbose=verbose, on_epoch=on_epoch)
    notices = []
    if devices is None:
        devices, notice = try_devices(cfg.num_gpus)
        notices.append(notice)
    devices = [devices] if isinstance(devices, mx.Context) else list(devices)
    if net is None:
        net = get_model(cfg)
    else:
        cfg = _as_the_net_runs(cfg, net)
    cfg, notice = effective_config(cfg, devices)
    notices.append(notice)
    if train_iter is not None:
        cfg = _as_the_loader_runs(cfg, train_iter, len(devices))
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)  # the DataLoader's shuffle
    mx.random.seed(cfg.seed)
    if train_iter is None or val_iter is None:
        train_set, val_set = load_datasets(cfg)
        train_iter = train_iter if train_iter is not None else make_loader(train_set, cfg)
        val_iter = val_iter if val_iter is not None else make_loader(val_set, cfg, train=False)
    steps = _length(train_iter, cfg)
    prepare(net, cfg, devices)
    trainer = make_trainer(net, cfg, min(steps, cfg.max_steps or steps))
    notice = " ".join(n for n in notices if n) or None
    with Harness(cfg, engine="gluon", runs_dir=runs_dir, device_notice=notice,
                 devices=str(devices), progress=progress, verbose=verbose,
                 on_epoch=on_epoch) as h:
        try:
            _run_epochs(h, cfg, net, trainer, train_iter, val_iter, devices, steps)
        except mx.base.MXNetError as err:
            if is_out_of_memory(err):
                raise out_of_memory(err, cfg, devices) from err
            raise
    return h.run


def _run_epochs(h: Harness, cfg: Experiment, net, trainer, train_iter, val_iter, devices,
                steps: int) -> None:
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    source = OneBatch(train_iter, devices, cfg.dtype, steps) if cfg.mock == "loader" \
        else train_iter
    for _ in h.epochs():
        for data, label in h.batches(source, total=steps):
            if cfg.mock == "trainer":  # input ceiling: fetch the batch, do nothing with it
                h.step(len(label))
                continue
            if cfg.mock == "loader":  # compute ceiling: the same batch, already on device
                xs, ys = data, label
            else:
                xs, ys = split(data, label, devices, cfg.dtype)
            n = sum(y.shape[0] for y in ys)
            with autograd.record():
                outputs = [net(x) for x in xs]
                # the loss in float32 even for a float16 network (no overflow in softmax)
                losses = [loss_fn(out.astype("float32", copy=False), y)
                          for out, y in zip(outputs, ys)]
            autograd.backward(losses)
            trainer.step(n)
            loss_sum, correct = step_stats(losses, outputs, ys)  # the step's sync point
            h.step(n, loss=loss_sum / n, correct=correct)
        evaluate_now = None if cfg.mock != "none" else (lambda: evaluate(net, val_iter, devices))
        # sync point: waits for every queued operation, so the epoch's time is real
        h.end_epoch(sync=mx.nd.waitall, lr=trainer.learning_rate, evaluate=evaluate_now)


def split(data, label, devices, dtype: str = "float32"):
    """Slice a batch over the devices (a short last batch over as many as it can fill),
    the images cast to the network's dtype on the device side."""
    devices = devices[:max(1, min(len(devices), data.shape[0]))]
    xs = gluon.utils.split_and_load(data, devices, batch_axis=0, even_split=False)
    ys = gluon.utils.split_and_load(label, devices, batch_axis=0, even_split=False)
    if dtype != "float32":
        xs = [x.astype(dtype, copy=False) for x in xs]
    return xs, ys


def step_stats(losses, outputs, labels) -> tuple[float, int]:
    """Summed loss and number of correct predictions of one step.

    Sync point: each `asnumpy()` blocks until that device has finished the step
    (forward, backward and update); with several devices the first wait is the long one.
    One 2-number read per device: argmax, compare and sum run on the device.
    """
    total = np.zeros(2)
    for loss, out, y in zip(losses, outputs, labels):
        hits = (out.argmax(axis=1) == y.astype(out.dtype)).astype("float32").sum()
        total += mx.nd.concat(loss.sum(), hits, dim=0).asnumpy()
    return float(total[0]), int(round(total[1]))


def evaluate(net, val_iter, devices) -> float:
    """Top-1 accuracy of `net` on `val_iter`; one sync point, at the end."""
    dtype = dtype_of(net)
    hits = [mx.nd.zeros((1,), ctx=d) for d in devices]
    seen = 0
    for data, label in val_iter:
        xs, ys = split(data, label, devices, dtype)
        for i, (x, y) in enumerate(zip(xs, ys)):
            out = net(x)
            hits[i] += (out.argmax(axis=1) == y.astype(out.dtype)).astype("float32").sum()
        seen += data.shape[0]
    # sync point: reads the counts, after every validation batch has run
    return sum(float(h.asscalar()) for h in hits) / seen if seen else float("nan")


class OneBatch:
    """mock="loader": fetch one batch, keep it on the devices, serve it `steps` times."""

    def __init__(self, loader, devices, dtype: str, steps: int):
        self.loader, self.devices, self.dtype, self.steps = loader, devices, dtype, steps
        self.batch = None

    def __len__(self) -> int:
        return self.steps

    def __iter__(self):
        if self.batch is None:
            data, label = next(iter(self.loader))
            self.batch = split(data, label, self.devices, self.dtype)
        for _ in range(self.steps):
            yield self.batch


def _as_the_net_runs(cfg: Experiment, net) -> Experiment:
    """A network the notebook hybridized or cast itself: record what it really is."""
    graph = graph_of(net)
    if graph != "eager":
        cfg = cfg.replace(graph=graph)
    if dtype_of(net) == "float16":
        cfg = cfg.replace(dtype="float16")
    return cfg


def _as_the_loader_runs(cfg: Experiment, loader, num_devices: int) -> Experiment:
    """A DataLoader the notebook built itself: record its workers and batch size."""
    if not isinstance(loader, gluon.data.DataLoader):
        return cfg
    changes = {"num_workers": loader._num_workers}
    batch = getattr(loader._batch_sampler, "_batch_size", None)
    if isinstance(batch, int) and batch % num_devices == 0:
        changes["batch_size"] = batch // num_devices
    return cfg.replace(**changes)


def _length(train_iter, cfg: Experiment) -> int:
    try:
        return len(train_iter)
    except TypeError:  # an iterable without a length: assume full batches
        return max(1, cfg.train_size // cfg.global_batch)


# -- out of memory --------------------------------------------------------------------
def is_out_of_memory(err: BaseException) -> bool:
    """Whether an MXNetError is a failed device allocation. MXNet raises it at the next
    sync point, not where the memory was asked for."""
    text = str(err).lower()
    return ("out of memory" in text or "memory allocation failed" in text
            or ("cudamalloc" in text and "fail" in text))


def out_of_memory(err: BaseException, cfg: Experiment, devices,
                  memory_info=None) -> OutOfMemory:
    """An OutOfMemory saying what did not fit and how much memory there is.
    memory_info(device_id) -> (free_bytes, total_bytes); default mx.context.gpu_memory_info."""
    memory_info = memory_info or mx.context.gpu_memory_info
    parts = [f"batch size {cfg.batch_size} per device ({cfg.global_batch} per step) of "
             f"{cfg.model} in {cfg.dtype} does not fit"]
    asked = re.search(r"(?:size|bytes)\D{0,3}(\d{4,})", str(err), re.IGNORECASE)
    if asked:
        parts.append(f"MXNet asked for {int(asked.group(1)) / MiB:,.0f} MiB more")
    for device in devices:
        if device.device_type != "gpu":
            continue
        try:
            free, total = memory_info(device.device_id)
            parts.append(f"{device}: {free / MiB:,.0f} MiB free of {total / MiB:,.0f} MiB")
        except Exception:  # the device may be unusable after the failure
            pass
    first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return OutOfMemory("; ".join(parts) + f". Try a smaller batch_size. (MXNet: {first_line})")
