"""The Gluon training loop every Gluon run uses: GluonCV's CIFAR loop inside `gc.record`;
no step waits for its own work, the host only for the step LAG behind."""
from __future__ import annotations

from collections import deque

import mxnet as mx
from mxnet import autograd, gluon

from ...data.mocks import OneBatch
from ...measure.guards import check_stop
from .models import dtype_of

LAG = 2  # steps the host may run ahead of the devices (CUDA's launch queue does this too)


def fit(rec, net, trainer, train_iter, val_iter, devices) -> None:
    """Train for rec's epochs as rec.cfg says (its dtype and mock)."""
    dtype, mock = rec.cfg.dtype, rec.cfg.mock
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    source = train_iter if mock != "loader" else OneBatch(   # compute ceiling: one placed batch
        train_iter, lambda batch: split(*batch, devices, dtype))
    for _ in rec.epochs():
        in_flight = deque()
        for data, label in rec.batches(source):
            if mock == "trainer":  # input ceiling: fetch the batch, do nothing with it
                rec.step(len(label))
                continue
            xs, ys = (data, label) if mock == "loader" else split(data, label, devices, dtype)
            n = sum(y.shape[0] for y in ys)
            losses, correct = forward_backward(net, loss_fn, xs, ys)
            trainer.step(n)
            rec.step(n, loss_sum=[loss.sum() for loss in losses], correct=correct)
            in_flight.append(correct[0])
            if len(in_flight) > LAG:  # back-pressure: the step LAG behind, not this one
                in_flight.popleft().wait_to_read()
        # the epoch's sync point: waits for every queued operation, so its time is real
        rec.end_epoch(sync=mx.nd.waitall, lr=trainer.learning_rate, evaluate=None if mock != "none"
                      else lambda: evaluate(net, val_iter, devices))


def forward_backward(net, loss_fn, xs, ys) -> tuple[list, list]:
    """(losses, hits) per device, backward done; loss in float32 even for float16 (no overflow)."""
    with autograd.record():
        outputs = [net(x) for x in xs]
        losses = [loss_fn(out.astype("float32", copy=False), y) for out, y in zip(outputs, ys)]
    autograd.backward(losses)
    return losses, [(out.argmax(axis=1) == y.astype(out.dtype)).sum() for out, y in zip(outputs, ys)]


def split(data, label, devices, dtype: str = "float32"):
    """Slice a batch over the devices, the images cast to `dtype` on the device side."""
    devices = devices[:max(1, min(len(devices), data.shape[0]))]
    xs = gluon.utils.split_and_load(data, devices, batch_axis=0, even_split=False)
    ys = gluon.utils.split_and_load(label, devices, batch_axis=0, even_split=False)
    if dtype == "float16":   # a bfloat16 network (AMP) casts its float32 input itself
        xs = [x.astype(dtype, copy=False) for x in xs]
    return xs, ys


def evaluate(net, val_iter, devices) -> float:
    """Top-1 accuracy of `net` on `val_iter`; one sync point, at the end."""
    dtype = dtype_of(net)
    hits, seen = [mx.nd.zeros((1,), ctx=d) for d in devices], 0
    for data, label in val_iter:
        xs, ys = split(data, label, devices, dtype)
        for i, (x, y) in enumerate(zip(xs, ys)):
            out = net(x)
            hits[i] += (out.argmax(axis=1) == y.astype(out.dtype)).astype("float32").sum()
        seen += data.shape[0]
        check_stop()   # Ctrl-C or SIGTERM during a run: a validation can be long
    # sync point: reads the counts, after every validation batch has run
    return sum(float(h.asscalar()) for h in hits) / seen if seen else float("nan")
