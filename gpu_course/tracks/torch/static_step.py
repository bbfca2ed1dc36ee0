"""The tuned rung's step as one CUDA graph, one replay per step: the batch is cut from the
epoch's plan at a device-side counter, lr and momentum come from a schedule table, loss
and hits are summed on the device. Without a GPU the step runs eagerly."""
from __future__ import annotations

import contextlib
import gc as python_gc
import time

import torch
from torch import nn

from ...config import Experiment, Graph
from .gpu_loader import GpuLoader
from .loop import Precision
from .optim import LARS, hyper_steps

WARMUP_STEPS = 3  # eager steps before capture: compile, cuDNN autotuning, optimizer state


def applies(cfg: Experiment, train_iter, optimizer, world_size: int = 1) -> str | None:
    """None when cfg's run can take the static step, else why not."""
    if cfg.graph != Graph.STATIC:
        return f"graph is not {Graph.STATIC.word('pytorch')!r}"
    if not isinstance(train_iter, GpuLoader):
        return "the batches do not come from a GpuLoader (data_on_gpu=True)"
    if not isinstance(optimizer, LARS):
        return "the optimizer is not the course's LARS (lr and momentum as device tensors)"
    if world_size > 1:
        return "DistributedDataParallel"
    if cfg.mock != "none" or cfg.dtype == "float16":
        return "mock runs and float16 (GradScaler reads a flag every step)"
    return None


@contextlib.contextmanager
def side_stream(side, device):
    """Warm-up work before a capture runs on a side stream (side=None: here)."""
    if side is None:
        yield
        return
    current = torch.cuda.current_stream(device)
    side.wait_stream(current)
    with torch.cuda.stream(side):
        yield
    current.wait_stream(side)


class StaticStep:
    """One training step, eager at first, then a CUDA graph replay on a GPU."""

    def __init__(self, model: nn.Module, optimizer: LARS, loader: GpuLoader,
                 cfg: Experiment, steps: int, use_graph: bool | None = None):
        self.model, self.optimizer, self.loader = model, optimizer, loader
        self.steps, self.batch_size = steps, loader.batch_size
        device = self.device = loader.device
        self.use_graph = device.type == "cuda" if use_graph is None else use_graph
        self.precision = Precision(cfg.dtype, device)
        self.loss_fn = nn.CrossEntropyLoss()
        # [steps, 2]: every update's (lr, momentum), read at epoch ends
        self.host_table = torch.tensor(hyper_steps(cfg, steps, optimizer), dtype=torch.float32)
        self.table = self.host_table.to(device)                  # one copy per run
        self.hyper = torch.zeros(2, device=device)  # this step's lr, momentum
        for group in optimizer.param_groups:  # the optimizer reads them at each step
            group["lr"], group["momentum"] = self.hyper[0], self.hyper[1]
        self.counters = torch.zeros(2, dtype=torch.int64, device=device)  # epoch's, run's step
        self.plan = torch.zeros(5, steps, self.batch_size, dtype=torch.int64, device=device)
        self.totals = torch.zeros(2, dtype=torch.float64, device=device)  # loss sum, correct
        self.calls = self.epoch_calls = 0  # steps run in the run, in this epoch
        self.graph = self._t0 = self._ahead = None   # _ahead: (epoch, its plan drawn early)
        self.setup_s = None  # seconds of the first steps: compilation (and capture)
        self._side = torch.cuda.Stream(device) if self.use_graph else None

    def step_fn(self) -> None:
        """The step as the graph records it (gradients must be None before it runs)."""
        step_in_epoch, step_in_run = self.counters[0:1], self.counters[1:2]
        self.hyper.copy_(self.table.index_select(0, step_in_run).view(2))
        x, y = self.loader.cut(self.plan.index_select(1, step_in_epoch).view(5, -1))
        with self.precision.autocast(cache=False):
            out = self.model(x)
            loss = self.loss_fn(out, y)
        loss.backward()
        self.optimizer.step()
        self.totals[0].add_(loss.detach(), alpha=self.batch_size)  # summed on the device
        self.totals[1].add_((out.argmax(dim=1) == y).sum())
        self.counters.add_(1)

    def plan_ahead(self, epoch: int) -> None:
        """Draw `epoch`'s random numbers now, while the GPU still runs the epoch before."""
        self._ahead = (epoch, self.loader.plan(epoch))

    def start_epoch(self, epoch: int) -> None:
        """The epoch's plan into the fixed buffer, counters and sums to zero."""
        n = self.steps * self.batch_size
        ahead = self._ahead[1] if self._ahead and self._ahead[0] == epoch else None
        self._ahead = None
        self.plan.copy_(self.loader.device_plan(epoch, ahead)[:, :n].view(5, self.steps, -1))
        self.counters[0].zero_()
        self.totals.zero_()
        self.epoch_calls = 0

    def step(self) -> None:
        """One training step: eager during warm-up, then one graph replay on a GPU."""
        self.calls += 1
        self.epoch_calls += 1
        if self.graph is not None:
            self.graph.replay()  # the whole step: one launch
            return
        if self._t0 is None:
            self._t0 = time.perf_counter()
        if self.use_graph and self.calls > WARMUP_STEPS:
            self.capture()
            self.graph.replay()
        else:
            with side_stream(self._side, self.device):
                self.optimizer.zero_grad(set_to_none=True)
                self.step_fn()
        if self.calls == WARMUP_STEPS + 1:  # compiled (and captured) by now
            if self.use_graph:
                torch.cuda.synchronize(self.device)  # once: so setup_s is real
            self.setup_s = time.perf_counter() - self._t0
            python_gc.collect()   # freeze the ~1e5 objects compilation left (a collection: ~0.8 s)
            python_gc.freeze()

    def capture(self) -> None:
        """Record step_fn as a CUDA graph (recording runs nothing; `replay()` runs it)."""
        torch.cuda.synchronize(self.device)
        self.graph = torch.cuda.CUDAGraph()
        self.optimizer.zero_grad(set_to_none=True)  # backward allocates the grads in the graph's pool
        with torch.cuda.graph(self.graph):
            self.step_fn()

    def close(self) -> None:
        if self.setup_s is not None:   # frozen after the warm-up
            python_gc.unfreeze()

    def read_totals(self) -> tuple[float, float]:
        """(loss sum, correct) of the epoch so far. Sync point: waits for the queued steps."""
        return tuple(self.totals.tolist())

    def lr_of_last_step(self) -> float:
        """The learning rate of the last step run, from the host copy of the table."""
        return float(self.host_table[max(self.calls - 1, 0), 0])


def run_epochs(h, stepper: StaticStep, evaluate=None) -> None:
    """The harness's epoch loop around `stepper` (`loop.fit` is the eager one)."""
    try:
        for epoch in h.epochs():
            stepper.start_epoch(epoch)
            for _ in h.batches(range(stepper.steps), total=stepper.steps):
                stepper.step()
                h.step(stepper.batch_size)
                if stepper.calls == WARMUP_STEPS + 1:   # setup_s was measured in this step
                    h.say(f"compilation and capture: {stepper.setup_s:.1f} s in the first "
                          f"{stepper.calls} steps (left out of samples/s)")
                    if h.record is not None:
                        h.record.note(setup_s=round(stepper.setup_s, 3),
                                      cuda_graph=stepper.graph is not None)

            stepper.plan_ahead(epoch + 1)   # the host's part, while the GPU trains
            totals = {}

            def read(stepper=stepper):
                totals["loss"], totals["correct"] = stepper.read_totals()  # the one sync
                totals["seen"] = max(stepper.epoch_calls, 1) * stepper.batch_size
            h.end_epoch(sync=read, lr=stepper.lr_of_last_step(), evaluate=evaluate,
                        loss=lambda: totals["loss"] / totals["seen"],
                        train_acc=lambda: totals["correct"] / totals["seen"])
    finally:
        stepper.close()
