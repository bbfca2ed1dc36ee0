"""Optimizer and learning-rate schedule for a PyTorch run, both named by the config (the
schedulers step once per update, MXNet's linear warm-up in front), and the two optimizers
PyTorch lacks: LARS and Signum."""
from __future__ import annotations

import torch
# torch.optim imports this with a process's first optimizer: seconds spent here, not in a
# run's setup, where a Ctrl-C could cut the import short (PyTorch half-imported: runs fail)
import torch._dynamo  # noqa: F401
from torch.optim import Optimizer, lr_scheduler as sched

from ...config import LR_FACTOR, Experiment


def make_optimizer(net: torch.nn.Module, cfg: Experiment) -> torch.optim.Optimizer:
    """cfg.optimizer over net's parameters, cfg.optimizer_params passed on."""
    make = {"sgd": torch.optim.SGD, "nag": torch.optim.SGD, "lars": LARS, "signum": Signum,
            "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}
    if cfg.optimizer not in make:
        raise ValueError(f"optimizer={cfg.optimizer!r} is not available in PyTorch; allowed: {', '.join(make)}")
    given = {"weight_decay": cfg.wd}
    if cfg.optimizer not in ("adam", "adamw"):
        given["momentum"] = cfg.momentum
    if cfg.optimizer == "nag":
        given["nesterov"] = True
    extra = {k: v for k, v in cfg.optimizer_params if k not in ("momentum", "wd")}
    try:
        return make[cfg.optimizer]([p for p in net.parameters() if p.requires_grad], cfg.scaled_lr,
                                   **given, **extra)
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
    return [lr for lr, _ in hyper_steps(cfg, steps_per_epoch)]


def hyper_steps(cfg: Experiment, steps_per_epoch: int, optimizer=None) -> list[tuple]:
    """(lr, momentum) of every update, stepped through on a twin of `optimizer` (None: SGD)."""
    twin = optimizer and type(optimizer)([torch.zeros(1, requires_grad=True)], **optimizer.defaults)
    scheduler = lr_scheduler(cfg, steps_per_epoch, twin)
    group, rows = scheduler.optimizer.param_groups[0], []
    for _ in range(cfg.epochs * steps_per_epoch):
        rows.append((group["lr"], group["momentum"]))
        scheduler.optimizer.step()  # no gradients: changes nothing, keeps PyTorch's order check
        scheduler.step()
    return rows


EPS = 1e-9   # in the trust ratio's denominator: never a division by zero


class LARS(Optimizer):
    """LARS (arXiv:1708.03888): momentum SGD with a per-layer trust ratio, biases and BatchNorm
    plain (exclude_1d); eta: the paper's 0.001 expects a ~100x larger lr than SGD's (~0.1).

        v = momentum * v + lr * eta * ||w|| / (||g|| + wd * ||w||) * (g + wd * w);  w = w - v
    """

    def __init__(self, params, lr: float, momentum: float = 0.9, weight_decay: float = 0.0,
                 eta: float = 0.001, exclude_1d: bool = True):
        check_settings(lr=lr, momentum=momentum, weight_decay=weight_decay, eta=eta)
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay,
                                      eta=eta, exclude_1d=exclude_1d))

    @torch.no_grad()
    def step(self, closure=None):
        """One update of every parameter: ~20 multi-tensor operators a group, no host read
        (lr and momentum may be device tensors, under a CUDA graph)."""
        loss = run_closure(closure)
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            plain = [p for p in params if group["exclude_1d"] and p.ndim <= 1]
            adapted = [p for p in params if not (group["exclude_1d"] and p.ndim <= 1)]
            updates = self._adapted_updates(adapted, group)
            if plain:  # lr * g: no weight decay or adaptation
                updates += list(torch._foreach_mul([p.grad for p in plain], group["lr"]))
            self._apply(adapted + plain, updates, group["momentum"])
        return loss

    def _adapted_updates(self, params: list, group: dict) -> list:
        """(g + wd * w) * lr * trust for each tensor, trust = eta ||w|| / (||g|| + wd ||w||)."""
        if not params:
            return []
        grads, wd = [p.grad for p in params], group["weight_decay"]
        n = len(params)
        norms = torch.stack(torch._foreach_norm(params + grads))  # one norm op, one stack
        w_norm, g_norm = norms[:n], norms[n:]
        trust = w_norm / torch.add(g_norm, w_norm, alpha=wd).add_(EPS)
        trust = trust.mul_(group["eta"]).mul_(group["lr"])
        # a layer with zero weights or zero gradient keeps the global rate
        scale = torch.where(torch.minimum(w_norm, g_norm) > 0, trust, group["lr"])
        updates = list(torch._foreach_add(grads, params, alpha=wd))
        # one operator; on a GPU PyTorch runs it as one small kernel per tensor (its
        # multi-tensor kernels need equal shapes), queued on the device: no host read
        torch._foreach_mul_(updates, list(scale.unbind()))
        return updates

    def _apply(self, params: list, updates: list, momentum) -> None:
        """v = momentum * v + update; w = w - v (v starts at zero: the first v is the update)."""
        if not params:
            return
        for p in params:
            if "velocity" not in self.state[p]:
                self.state[p]["velocity"] = torch.zeros_like(p)
        velocity = [self.state[p]["velocity"] for p in params]
        torch._foreach_mul_(velocity, momentum)
        torch._foreach_add_(velocity, updates)
        torch._foreach_sub_(params, velocity)


def check_settings(**values) -> None:
    """Refuse a negative setting, by name."""
    for name, value in values.items():
        if value < 0:
            raise ValueError(f"{name}={value!r} must be >= 0")


def run_closure(closure):
    """The loss of `closure` (PyTorch's optimizer contract), None without one."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


class Signum(Optimizer):
    """Signum (arXiv:1802.04434), step for step MXNet 1.9.1's; lr: the step every weight takes
    (~SGD's rate / 100); wd_lh: decoupled weight decay.

        m = momentum * m + (1 - momentum) * (g + weight_decay * w)
        w = (1 - lr * wd_lh) * w - lr * sign(m)
    """

    def __init__(self, params, lr: float = 0.01, momentum: float = 0.9,
                 weight_decay: float = 0.0, wd_lh: float = 0.0):
        check_settings(lr=lr, momentum=momentum, weight_decay=weight_decay, wd_lh=wd_lh)
        if momentum >= 1:
            raise ValueError(f"momentum={momentum!r} must be < 1")
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay,
                                      wd_lh=wd_lh))

    @torch.no_grad()
    def step(self, closure=None):
        loss = run_closure(closure)
        for group in self.param_groups:
            lr, momentum = group["lr"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if group["weight_decay"]:
                    g = g + group["weight_decay"] * p
                if momentum:
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = torch.zeros_like(p)
                    g = state["momentum_buffer"].mul_(momentum).add_(g, alpha=1 - momentum)
                if group["wd_lh"]:
                    p.mul_(1 - lr * group["wd_lh"])
                p.add_(torch.sign(g), alpha=-lr)
        return loss
