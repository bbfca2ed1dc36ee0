"""Count what a piece of PyTorch code asks the device to do, operator by operator:
`count_ops(fn)` counts launching operators, views and host reads (syncs); two steps with
the same `program` can be replayed from one CUDA graph capture.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

# Operators that only make a new view or allocation, or pass a tensor through.
NO_KERNEL = {"detach", "alias", "lift_fresh", "empty", "empty_strided", "empty_like",
             "unbind", "split", "split_with_sizes", "chunk", "_unsafe_view", "view",
             "t", "expand", "permute", "unsqueeze", "squeeze", "select", "slice",
             "as_strided", "transpose", "_reshape_alias", "set_", "resize_",
             "_has_compatible_shallow_copy_type", "is_same_size", "record_stream",
             "_propagate_xla_data", "_record_function_enter_new", "_record_function_exit"}
HOST_READS = {"_local_scalar_dense", "is_nonzero", "equal"}  # the host waits for the device


@dataclass
class OpCounts:
    launching: int = 0     # operators that run a kernel (on a GPU: >= 1 launch each)
    views: int = 0         # views and allocations: no kernel
    syncs: int = 0         # host reads of device values
    by_name: collections.Counter = field(default_factory=collections.Counter)
    program: list = field(default_factory=list)
    devices: set = field(default_factory=set)  # devices of every tensor an operator saw
    host_tensors: list = field(default_factory=list)  # device ops given a CPU tensor


class _Counter(TorchDispatchMode):
    def __init__(self, counts: OpCounts, keep_program: bool):
        super().__init__()
        self.counts, self.keep_program = counts, keep_program

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        c = self.counts
        if name in HOST_READS:
            c.syncs += 1
        if name in NO_KERNEL or func.is_view:
            c.views += 1
        else:
            c.launching += 1
            c.by_name[name] += 1
        leaves, _ = tree_flatten((args, kwargs))
        tensors = [t for t in leaves if isinstance(t, torch.Tensor)]
        kinds = {t.device.type for t in tensors}
        c.devices.update(kinds)
        if "cpu" in kinds and len(kinds) > 1:  # a host value read at launch: a graph bakes it
            c.host_tensors.append(name)
        if self.keep_program:
            c.program.append((str(func), tuple(_signature(x) for x in leaves)))
        return func(*args, **kwargs)


def _signature(x):
    if isinstance(x, torch.Tensor):
        return ("tensor", tuple(x.shape), str(x.dtype), tuple(x.stride()), x.device.type)
    if isinstance(x, (bool, int, float, complex, str, type(None), torch.dtype, torch.device,
                      torch.layout, torch.memory_format)):
        return repr(x)  # a value the operator is given: the same in every replay?
    return type(x).__name__  # a handle (e.g. a profiler record): its identity is no value


def count_ops(fn, *args, keep_program: bool = False, **kwargs) -> OpCounts:
    """Run fn(*args, **kwargs) once and count the operators it dispatched."""
    counts = OpCounts()
    with _Counter(counts, keep_program):
        fn(*args, **kwargs)
    return counts
