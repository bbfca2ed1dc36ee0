"""LARS: layer-wise adaptive rate scaling (You, Gitman and Ginsburg, 2017,
"Large Batch Training of Convolutional Networks", arXiv:1708.03888).

With a large batch the learning rate must grow, and at a large rate some layers' updates
outgrow their weights and training diverges. LARS gives each layer its own rate in
proportion to how large its weights are against its gradient (the "trust ratio"):

    local_lr = eta * ||w|| / (||g|| + wd * ||w||)
    v = momentum * v + lr * local_lr * (g + wd * w)
    w = w - v

PyTorch ships no LARS (MXNet's counterpart is LBSGD/LARS), so here is a small one.
Biases and BatchNorm scales/shifts (the one-dimensional parameters) are, by the usual
rule, left out of the adaptation and of weight decay: they get plain momentum SGD.
"""
from __future__ import annotations

import torch
from torch.optim import Optimizer


class LARS(Optimizer):
    """Momentum SGD with a per-layer trust ratio.

    lr: the global rate (scale it with the batch and warm it up, as the paper does);
    eta: the trust coefficient (the paper's 0.001, which expects a learning rate ~100x
    SGD's; with SGD's lr use ~0.1, as the course's ladder does); exclude_1d: treat parameters with
    at most one dimension (biases, BatchNorm) as plain SGD without weight decay.
    """

    def __init__(self, params, lr: float, momentum: float = 0.9, weight_decay: float = 0.0,
                 eta: float = 0.001, exclude_1d: bool = True, eps: float = 1e-9):
        for name, value in (("lr", lr), ("momentum", momentum),
                            ("weight_decay", weight_decay), ("eta", eta)):
            if value < 0:
                raise ValueError(f"{name}={value!r} must be >= 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay,
                                      eta=eta, exclude_1d=exclude_1d, eps=eps))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if group["exclude_1d"] and p.ndim <= 1:
                    update = g * group["lr"]
                else:
                    wd = group["weight_decay"]
                    w_norm, g_norm = torch.linalg.vector_norm(p), torch.linalg.vector_norm(g)
                    trust = group["eta"] * w_norm / (g_norm + wd * w_norm + group["eps"])
                    # a layer with zero weights or zero gradient keeps the global rate
                    trust = torch.where((w_norm > 0) & (g_norm > 0), trust, 1.0)
                    update = (g + wd * p) * (trust * group["lr"])  # stays on the device
                state = self.state[p]
                if "velocity" not in state:
                    state["velocity"] = update.clone()
                else:
                    state["velocity"].mul_(group["momentum"]).add_(update)
                p.sub_(state["velocity"])
        return loss
