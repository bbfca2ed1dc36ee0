"""The validation pass as one CUDA graph: the host launches one replay per evaluation.

The tuned rung's training step is one graph replay (`static_step`), but its evaluation
ran eagerly: every batch of the validation set dispatched the network's operators from
Python (about 70 kernels a batch for ResNet-20), so between two epochs the GPU waited
for the host (about 25 ms an epoch on the H200 reference, where an epoch trains in 0.3 s:
GPU-Util stopped at 92 %). The validation set does not change between epochs, so the
whole pass can be recorded once, every batch in it, and replayed:

- the images are cut from the `GpuLoader`'s device copy by a plan made once (the
  validation set in order, unaugmented), so every batch is read from fixed addresses;
- the network runs in eval mode (BatchNorm's running statistics, read from their
  buffers at replay time: the graph sees the weights as they are then);
- the correct predictions are summed into one number on the device, read once.

The first evaluation runs eagerly on a side stream (cuDNN picks its algorithms for the
validation shapes, the last short batch included), the second captures the pass and
replays it; on a CPU every evaluation runs the same function eagerly (the code path
the tests exercise). `check_static_eval` proves on any device that two passes record
the same program with no host read inside.
"""
from __future__ import annotations

import contextlib

import torch
from torch import nn

from .gpu_loader import GpuLoader
from .static_step import side_stream


class StaticEval:
    """Top-1 accuracy of `net` on `val` (a GpuLoader with train=False) by `evaluate()`:
    eager at first, then (on a GPU) one CUDA graph replay per call."""

    def __init__(self, net: nn.Module, val: GpuLoader, amp_dtype: torch.dtype | None = None,
                 use_graph: bool | None = None):
        if val.train:
            raise ValueError("StaticEval needs the validation loader (train=False): a "
                             "training loader's batches change every epoch")
        net = getattr(net, "_orig_mod", net)   # the module torch.compile wraps
        self.net = getattr(net, "module", net)   # and DistributedDataParallel
        self.val, self.amp_dtype = val, amp_dtype
        device = self.device = val.device
        self.use_graph = device.type == "cuda" if use_graph is None else use_graph
        plan = val.device_plan(0)                       # in order, unaugmented: made once
        size = val.batch_size
        self.columns = [plan[:, start:start + size] for start in range(0, plan.shape[1], size)]
        self.seen = plan.shape[1]
        self.hits = torch.zeros((), dtype=torch.int64, device=device)
        self.calls = 0
        self.graph = None
        self._side = torch.cuda.Stream(device) if self.use_graph else None

    def pass_fn(self) -> None:
        """The whole validation pass as the graph records it: device operations only."""
        self.hits.zero_()
        autocast = contextlib.nullcontext() if self.amp_dtype is None else torch.autocast(
            self.device.type, dtype=self.amp_dtype, cache_enabled=False)
        with torch.no_grad(), autocast:
            for columns in self.columns:
                x, y = self.val.cut(columns)
                self.hits.add_((self.net(x).argmax(dim=1) == y).sum())

    def evaluate(self) -> float:
        """Accuracy on the validation set; one host read, at the end."""
        if not self.seen:
            return float("nan")
        self.calls += 1
        was_training = self.net.training
        self.net.eval()
        try:
            if self.graph is None and self.use_graph and self.calls > 1:
                self.capture()
            if self.graph is not None:
                self.graph.replay()   # every batch of the pass: one launch
            else:
                with side_stream(self._side, self.device):
                    self.pass_fn()
        finally:
            self.net.train(was_training)
        return self.hits.item() / self.seen   # sync point: reads the count

    def capture(self) -> None:
        """Record pass_fn as a CUDA graph (it runs nothing; `graph.replay()` runs it)."""
        torch.cuda.synchronize(self.device)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.pass_fn()


def check_static_eval(evaluator: StaticEval, passes: int = 2) -> dict:
    """Run `passes` validation passes eagerly, recording the operators of each, and say
    what a CUDA graph of one would get wrong (`op_count.replay_check`, as
    `static_step.check_static` does for the step)."""
    from .op_count import count_ops, replay_check
    net = evaluator.net
    was_training = net.training
    net.eval()
    try:
        programs = [count_ops(evaluator.pass_fn, keep_program=True) for _ in range(passes)]
    finally:
        net.train(was_training)
    return replay_check(programs)
