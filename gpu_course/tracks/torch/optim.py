"""Optimizer and learning-rate schedule for a PyTorch run, both named by the config; the
schedulers step once per update, with MXNet's linear warm-up in front."""
from __future__ import annotations

import torch
# torch.optim imports this when a process makes its first optimizer: seconds spent here,
# with the track, not in a run's setup, where a Ctrl-C waits for them (cutting an import
# short leaves PyTorch half-imported and the next run failing)
import torch._dynamo  # noqa: F401
from torch.optim import lr_scheduler as sched

from ...config import LR_FACTOR, Experiment
from .lars import LARS
from .signum import Signum


def make_optimizer(net: torch.nn.Module, cfg: Experiment) -> torch.optim.Optimizer:
    """cfg.optimizer over net's parameters, cfg.optimizer_params passed on."""
    params = [p for p in net.parameters() if p.requires_grad]
    extra = {k: v for k, v in cfg.optimizer_params if k not in ("momentum", "wd")}
    lr, wd, momentum = cfg.scaled_lr, cfg.wd, cfg.momentum
    make = {
        "sgd": lambda: torch.optim.SGD(params, lr, momentum=momentum, weight_decay=wd, **extra),
        "nag": lambda: torch.optim.SGD(params, lr, momentum=momentum, weight_decay=wd,
                                       nesterov=True, **extra),
        "lars": lambda: LARS(params, lr, momentum=momentum, weight_decay=wd, **extra),
        "signum": lambda: Signum(params, lr, momentum=momentum, weight_decay=wd, **extra),
        "adam": lambda: torch.optim.Adam(params, lr, weight_decay=wd, **extra),
        "adamw": lambda: torch.optim.AdamW(params, lr, weight_decay=wd, **extra),
    }
    if cfg.optimizer not in make:
        raise ValueError(f"optimizer={cfg.optimizer!r} is not available in PyTorch; allowed: {', '.join(make)}")
    try:
        return make[cfg.optimizer]()
    except TypeError as err:  # an optimizer_params key this optimizer does not take
        raise ValueError(f"optimizer_params={cfg.optimizer_params!r} do not fit optimizer={cfg.optimizer!r}: "
                         f"{err}") from None


def lr_scheduler(cfg: Experiment, steps_per_epoch: int, optimizer=None):
    """The lr_scheduler for cfg; `.step()` after every optimizer step."""
    if steps_per_epoch < 1:
        raise ValueError(f"steps_per_epoch={steps_per_epoch!r} must be >= 1")
    if optimizer is None:
        optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], cfg.scaled_lr,
                                    momentum=cfg.momentum)
    total = cfg.epochs * steps_per_epoch
    warm = int(round(cfg.warmup_epochs * steps_per_epoch))
    kind = cfg.lr_scheduler
    if kind == "onecycle":
        return sched.OneCycleLR(optimizer, max_lr=cfg.scaled_lr, total_steps=total)
    if kind == "poly":  # these two start after the warm-up and end with the run
        return _after_warmup(optimizer, warm, sched.PolynomialLR(
            optimizer, total_iters=max(total - warm, 1), power=2.0))
    if kind == "cosine":
        return _after_warmup(optimizer, warm, sched.CosineAnnealingLR(
            optimizer, T_max=max(total - warm, 1)))
    if kind == "factor":
        every = cfg.lr_steps[0] if cfg.lr_steps else 1
        main = sched.StepLR(optimizer, step_size=max(1, round(every * steps_per_epoch)),
                            gamma=LR_FACTOR)
    elif kind == "multifactor":
        milestones = sorted({max(1, round(e * steps_per_epoch)) for e in cfg.lr_steps})
        main = sched.MultiStepLR(optimizer, milestones=milestones, gamma=LR_FACTOR)
    elif kind == "none":
        main = sched.ConstantLR(optimizer, factor=1.0, total_iters=0)
    else:
        raise ValueError(f"lr_scheduler={kind!r}; allowed: none, factor, multifactor, poly, cosine, onecycle")
    if warm < 2:
        return main
    # Both count updates from the start of the run, and their factors multiply.
    return sched.ChainedScheduler([_warmup(optimizer, warm), main], optimizer=optimizer)


def _warmup(optimizer, warm: int) -> sched.LinearLR:
    """lr * (k + 1) / warm at update k, reaching lr at update warm - 1."""
    return sched.LinearLR(optimizer, start_factor=1 / warm, end_factor=1.0,
                          total_iters=warm - 1)


def _after_warmup(optimizer, warm: int, main):
    if warm < 2:
        return main
    return sched.SequentialLR(optimizer, [_warmup(optimizer, warm), main], milestones=[warm])


def lr_curve(cfg: Experiment, steps_per_epoch: int) -> list[float]:
    """The learning rate of every update of the run, for `plots.lr_schedule`."""
    scheduler = lr_scheduler(cfg, steps_per_epoch)
    optimizer = scheduler.optimizer
    lrs = []
    for _ in range(cfg.epochs * steps_per_epoch):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()  # no gradients: changes nothing, but keeps PyTorch's order check
        scheduler.step()
    return lrs
