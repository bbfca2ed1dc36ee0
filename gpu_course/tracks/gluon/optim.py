"""Optimizer and learning-rate schedule for a Gluon run (MXNet's schedulers count updates)."""
from __future__ import annotations

import mxnet as mx
from mxnet import gluon

from ...config import LR_FACTOR, Experiment

# optimizers whose constructor takes a momentum. DCASGD has one too, but MXNet 1.9.1's
# DCASGD.update tests `if mom:` on an NDArray, which fails for any momentum > 0.
WITH_MOMENTUM = ("sgd", "nag", "lbsgd", "lars", "signum")


def lr_scheduler(cfg: Experiment, steps_per_epoch: int):
    """The mx.lr_scheduler for cfg (stateful: a fresh one each run); None if constant."""
    if steps_per_epoch < 1:
        raise ValueError(f"steps_per_epoch={steps_per_epoch!r} must be >= 1")
    total = cfg.epochs * steps_per_epoch
    warmup = dict(base_lr=cfg.scaled_lr, warmup_steps=int(round(cfg.warmup_epochs * steps_per_epoch)),
                  warmup_begin_lr=0.0, warmup_mode="linear")
    kind = cfg.lr_scheduler
    if kind == "none":
        return mx.lr_scheduler.FactorScheduler(step=max(total, 1), factor=1.0, **warmup) \
            if warmup["warmup_steps"] else None
    if kind == "factor":
        every = cfg.lr_steps[0] if cfg.lr_steps else 1
        return mx.lr_scheduler.FactorScheduler(
            step=max(1, int(round(every * steps_per_epoch))), factor=LR_FACTOR, **warmup)
    if kind == "multifactor":
        steps = sorted({max(1, int(round(e * steps_per_epoch))) for e in cfg.lr_steps})
        return mx.lr_scheduler.MultiFactorScheduler(step=steps, factor=LR_FACTOR, **warmup)
    max_update = max(total, warmup["warmup_steps"] + 1)
    if kind == "poly":
        return mx.lr_scheduler.PolyScheduler(max_update=max_update, pwr=2, final_lr=0.0, **warmup)
    if kind == "cosine":
        return mx.lr_scheduler.CosineScheduler(max_update=max_update, final_lr=0.0, **warmup)
    raise ValueError(f"lr_scheduler={kind!r}; allowed: none, factor, multifactor, poly, cosine")


def optimizer_params(cfg: Experiment, steps_per_epoch: int) -> dict:
    """Keyword arguments for mx.optimizer.create(cfg.optimizer, ...); cfg.optimizer_params win."""
    params = {"learning_rate": cfg.scaled_lr, "wd": cfg.wd,
              "multi_precision": cfg.dtype == "float16"}
    if (schedule := lr_scheduler(cfg, steps_per_epoch)) is not None:
        params["lr_scheduler"] = schedule
    if cfg.optimizer in WITH_MOMENTUM:
        params["momentum"] = cfg.momentum
    if cfg.optimizer == "lbsgd":
        # MXNet 1.9.1's LBSGD ramps an lr *multiplier* from 1 to batch_scale (a no-op at
        # 1); warmup_strategy="lars" would read two norms a parameter to the host each step
        params.update(warmup_strategy="linear", warmup_epochs=cfg.warmup_epochs,
                      updates_per_epoch=steps_per_epoch, num_epochs=cfg.epochs)
    params.update(dict(cfg.optimizer_params))
    if cfg.optimizer == "dcasgd" and params.get("momentum", 0):
        raise ValueError(f"optimizer='dcasgd' with momentum={params['momentum']!r}: MXNet 1.9.1 needs momentum=0")
    return params


def make_trainer(net, cfg: Experiment, steps_per_epoch: int) -> gluon.Trainer:
    """gluon.Trainer over net's parameters with cfg's optimizer (kvstore 'device')."""
    try:
        return gluon.Trainer(net.collect_params(), cfg.optimizer,
                             optimizer_params(cfg, steps_per_epoch), kvstore="device")
    except TypeError as err:  # an optimizer_params key this optimizer does not take
        raise ValueError(f"optimizer_params={cfg.optimizer_params!r} do not fit optimizer={cfg.optimizer!r}: "
                         f"{err}") from None
