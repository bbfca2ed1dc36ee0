"""Signum: momentum SGD that steps by the sign of the momentum (arXiv:1802.04434), step
for step MXNet 1.9.1's (PyTorch ships none):

    m = momentum * m + (1 - momentum) * (g + weight_decay * w)
    w = (1 - lr * wd_lh) * w - lr * sign(m)
"""
from __future__ import annotations

import torch
from torch.optim import Optimizer


class Signum(Optimizer):
    """lr: the step every weight takes (~SGD's rate / 100); wd_lh: decoupled weight decay."""

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
