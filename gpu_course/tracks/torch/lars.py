"""LARS (arXiv:1708.03888), which PyTorch lacks: each layer's rate in proportion to its
weights against its gradient; biases and BatchNorm get plain momentum SGD, no weight decay.

    v = momentum * v + lr * eta * ||w|| / (||g|| + wd * ||w||) * (g + wd * w);  w = w - v
"""
from __future__ import annotations

import torch
from torch.optim import Optimizer

EPS = 1e-9   # in the trust ratio's denominator: never a division by zero


class LARS(Optimizer):
    """Momentum SGD with a per-layer trust ratio; eta: the trust coefficient (the paper's
    0.001 expects a ~100x larger lr; with SGD's lr use ~0.1)."""

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
