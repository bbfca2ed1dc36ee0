"""Signum (arXiv:1802.04434), step for step MXNet 1.9.1's, which PyTorch lacks:

    m = momentum * m + (1 - momentum) * (g + weight_decay * w);  w = (1 - lr * wd_lh) * w - lr * sign(m)
"""
from __future__ import annotations

import torch
from torch.optim import Optimizer

from .lars import check_settings, run_closure


class Signum(Optimizer):
    """lr: the step every weight takes (~SGD's rate / 100); wd_lh: decoupled weight decay."""

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
