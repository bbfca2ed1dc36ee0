"""Lesson 14: a training step's memory from what MXNet offers (no memory profiler): the
device's counter on a GPU, the process's resident set on a CPU; parts counted from the model."""
from __future__ import annotations

import gc as _gc

import mxnet as mx
import numpy as np

from ...analyse.memory import Counter, Part
from ...measure import process_memory
from ..common import memory_note


def nbytes(arrays) -> int:
    """Bytes of distinct NDArrays (nested in lists, tuples or dicts)."""
    found = {}

    def add(x):
        if isinstance(x, mx.nd.NDArray):
            found[id(x)] = int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize
        elif isinstance(x, (dict, list, tuple)):
            for v in (x.values() if isinstance(x, dict) else x):
                add(v)
    add(list(arrays) if not isinstance(arrays, (mx.nd.NDArray, dict)) else arrays)
    return sum(found.values())


def _allocated(param, grads: bool = False) -> list:
    """A Parameter's arrays (or gradients) on every device, where they exist yet."""
    if grads and param.grad_req == "null":
        return []
    try:
        return list(param.list_grad() if grads else param.list_data())
    except (RuntimeError, mx.MXNetError):   # not initialised yet (deferred)
        return []


def counted(net, trainer, inputs=()) -> dict:
    """Bytes counted from the model: parameters, gradients, optimizer state, inputs."""
    params = list(net.collect_params().values())
    states = [u.states for u in getattr(trainer, "_updaters", None) or []]
    return {Part.PARAMETERS: nbytes(a for p in params for a in _allocated(p)),
            Part.GRADIENTS: nbytes(g for p in params for g in _allocated(p, grads=True)),
            Part.OPTIMIZER: nbytes(states),
            Part.INPUT: nbytes(inputs)}


class MemoryMeter:
    """Made before the first step; `measure` notes the memory of more steps."""

    def __init__(self, parts):
        self.net, self.trainer, self.device = parts.net, parts.optimizer, parts.devices[0]
        self.gpu = self.device.device_type == "gpu"
        if not self.gpu:
            process_memory.steady()
        _gc.collect()   # an earlier run's network, kept alive only by a reference cycle
        mx.nd.waitall()
        self.base = self._used() - nbytes(a for p in self.net.collect_params().values()
                                          for a in _allocated(p) + _allocated(p, grads=True))

    def _used(self) -> int:
        if self.gpu:
            free, total = mx.context.gpu_memory_info(self.device.device_id)
            return int(total - free)
        return int(process_memory.resident() or 0)

    def measure(self, rec, step, inputs=(), readings: int = 3) -> dict:
        """Run `step()` `readings` times, each read alone, and note the memory in rec."""
        out = memory_note(readings, Counter.MXNET_GPU if self.gpu else Counter.PROCESS, self.device,
                          counted(self.net, self.trainer, inputs),
                          (Part.PARAMETERS, Part.GRADIENTS, Part.OPTIMIZER, Part.INPUT))
        if not self.gpu and not process_memory.available():
            raise RuntimeError("no peak-memory counter here: lesson 14's CPU counter needs Linux 4.0 or later")
        for _ in range(readings):
            mx.nd.waitall()
            out["held"].append(self._used() - self.base)
            if not self.gpu:
                process_memory.reset_peak()
            step()
            mx.nd.waitall()   # the engine allocates as it runs the queued operators
            used = self._used() if self.gpu else int(process_memory.peak() or 0)
            out["peak"].append(used - self.base)
        if self.gpu:
            out["device_total"] = int(mx.context.gpu_memory_info(self.device.device_id)[1])
        rec.note(memory=out)
        return out


def train_step(net, trainer, data, label, loss_fn=None):
    """Lesson 14's step: forward and loss under autograd, backward, update."""
    loss_fn = loss_fn or mx.gluon.loss.SoftmaxCrossEntropyLoss()
    with mx.autograd.record():
        out = net(data)
        loss = loss_fn(out, label)
    loss.backward()
    trainer.step(data.shape[0])
    return out, loss


def memory_run(cfg, readings: int = 3, verbose: bool = False):
    """Lesson 14's loop, packaged: train, then measure `readings` more steps."""
    from ...measure.records import OutOfMemory, load_run
    from .record import record
    from .train import build, is_out_of_memory, out_of_memory
    parts = build(cfg)
    (net, train_iter, _, trainer), device = parts, parts.devices[0]
    memory = MemoryMeter(parts)
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    try:
        with record(parts, progress=False, verbose=verbose) as rec:
            try:
                for _ in rec.epochs():
                    for data, label in rec.batches(train_iter):
                        data, label = data.as_in_context(device), label.as_in_context(device)
                        out, loss = train_step(net, trainer, data, label, loss_fn)
                        rec.step(data.shape[0], loss_sum=loss.sum(),
                                 correct=(out.argmax(axis=1) == label.astype(out.dtype)).sum())
                    rec.end_epoch(sync=mx.nd.waitall)
                memory.measure(rec, lambda: train_step(net, trainer, data, label, loss_fn),
                               inputs=(data, label), readings=readings)
            except mx.base.MXNetError as err:
                if is_out_of_memory(err):
                    raise out_of_memory(err, parts.cfg, parts.devices) from err
                raise
    except OutOfMemory as err:   # the record says so; the exercise's check reads it
        return load_run(err.run_path)
    return rec.run
