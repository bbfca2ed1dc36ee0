"""Signum: momentum SGD that steps by the sign of the momentum (Bernstein, Wang,
Azizzadenesheli and Anandkumar, 2018, "signSGD: Compressed Optimisation for Non-Convex
Problems", arXiv:1802.04434). The talk lists it among MXNet's optimizers; PyTorch ships
none, so here is a short one, step for step MXNet 1.9.1's `Signum`:

    m = momentum * m + (1 - momentum) * (g + weight_decay * w)
    w = (1 - lr * wd_lh) * w - lr * sign(m)

Every weight moves by exactly `lr` per step (or 0), whatever its gradient's size: 1 bit
of information per weight, which is what made it cheap to send between machines.
momentum=0 is signSGD.
"""
from __future__ import annotations

import torch
from torch.optim import Optimizer


class Signum(Optimizer):
    """lr: the step every weight takes (use ~SGD's rate / 100: a sign is 1, a gradient is
    small); momentum: of the running average whose sign is taken; weight_decay: L2 added
    to the gradient; wd_lh: decoupled weight decay (Loshchilov and Hutter), as MXNet's."""

    def __init__(self, params, lr: float = 0.01, momentum: float = 0.9,
                 weight_decay: float = 0.0, wd_lh: float = 0.0):
        for name, value in (("lr", lr), ("momentum", momentum),
                            ("weight_decay", weight_decay), ("wd_lh", wd_lh)):
            if value < 0:
                raise ValueError(f"{name}={value!r} must be >= 0")
        if momentum >= 1:
            raise ValueError(f"momentum={momentum!r} must be < 1")
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay,
                                      wd_lh=wd_lh))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
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
                    m = state["momentum_buffer"]
                    m.mul_(momentum).add_(g, alpha=1 - momentum)
                    g = m
                if group["wd_lh"]:
                    p.mul_(1 - lr * group["wd_lh"])
                p.add_(torch.sign(g), alpha=-lr)
        return loss
