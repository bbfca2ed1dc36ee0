"""Lesson 14: a training step's memory into the run's record (`analyse.memory`): the
profiler's timeline by category; on a GPU the allocator's counters and a snapshot."""
from __future__ import annotations

import gc as _gc
import json
import tempfile
import warnings
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from ...analyse.memory import Counter, Part
from ...analyse.profiling import quiet_profiler
from ..common import memory_note

TIMELINE = "memory_timeline.json"
SNAPSHOT = "memory_snapshot.pickle"
SNAPSHOT_ENTRIES = 100_000   # allocations the snapshot remembers
# the profiler's categories (torch.profiler._memory_profiler.Category), as the lesson's parts
CATEGORIES = {"PARAMETER": Part.PARAMETERS, "OPTIMIZER_STATE": Part.OPTIMIZER,
              "INPUT": Part.INPUT, "TEMPORARY": Part.ACTIVATIONS, "ACTIVATION": Part.ACTIVATIONS,
              "GRADIENT": Part.GRADIENTS, "AUTOGRAD_DETAIL": Part.ACTIVATIONS, None: Part.OTHER}


def nbytes(tensors) -> int:
    """Bytes of distinct tensors: elements times the bytes of one."""
    seen, total = set(), 0
    for t in tensors:
        if isinstance(t, torch.Tensor) and id(t) not in seen:
            seen.add(id(t))
            total += t.numel() * t.element_size()
    return total


def counted(net, optimizer, inputs=()) -> dict:
    """Bytes counted from the model: parameters, gradients, optimizer state, inputs."""
    params = list(dict.fromkeys(net.parameters()))
    return {Part.PARAMETERS: nbytes(params),
            Part.GRADIENTS: nbytes(p for p in params if p.requires_grad),
            Part.OPTIMIZER: nbytes(v for state in optimizer.state.values() for v in state.values()),
            Part.INPUT: nbytes(inputs)}


class MemoryMeter:
    """Made before the first step; `measure` notes the memory of more steps."""

    def __init__(self, parts):
        self.net, self.optimizer = parts.net, parts.optimizer
        self.device = torch.device(parts.devices[0])
        self.cuda = self.device.type == "cuda"
        if self.cuda and self.device.index is None:   # the profiler's timeline names its index
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.base = 0
        if self.cuda:   # live tensors less the network's own, already on the device
            _gc.collect()   # an earlier run's network, kept alive only by a reference cycle
            self.base = torch.cuda.memory_allocated(self.device) - nbytes(
                t for t in (*self.net.parameters(), *self.net.buffers()) if t.device == self.device)

    def measure(self, rec, step, inputs=(), readings: int = 3) -> dict:
        """Run `step()` `readings` times, each read alone, and note the memory in rec."""
        grads = (Part.GRADIENTS,) if any(p.grad is not None for p in self.net.parameters()) else ()
        out = memory_note(readings, Counter.CUDA if self.cuda else Counter.PROFILER, self.device,
                          counted(self.net, self.optimizer, inputs),
                          (Part.PARAMETERS, Part.OPTIMIZER, Part.INPUT, *grads))
        folder = rec.record.path if getattr(rec, "record", None) is not None else None
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(readings):
                keep = folder is not None and i == readings - 1   # the last reading's files stay
                path = Path(folder if keep else tmp) / TIMELINE
                if self.cuda:
                    torch.cuda.reset_peak_memory_stats(self.device)
                    held = torch.cuda.memory_allocated(self.device) - self.base
                    if keep:
                        torch.cuda.memory._record_memory_history(max_entries=SNAPSHOT_ENTRIES)
                timeline = self._profiled(step, path)
                if self.cuda:
                    peak = torch.cuda.max_memory_allocated(self.device) - self.base
                    if keep:
                        torch.cuda.memory._dump_snapshot(str(Path(folder) / SNAPSHOT))
                        torch.cuda.memory._record_memory_history(enabled=None)
                        out["files"].append(SNAPSHOT)
                else:
                    held, peak = timeline["held"], timeline["peak"]
                out["held"].append(held)
                out["peak"].append(peak)
                for key in ("at_peak", "most"):
                    for part, value in timeline[key].items():
                        out[key].setdefault(part.value, []).append(value)
                if keep and path.exists():
                    out["files"].append(TIMELINE)
        if self.cuda:
            out["allocator"] = {"peak": list(out["peak"]),
                                "reserved": torch.cuda.memory_reserved(self.device),
                                "retries": int(torch.cuda.memory_stats(self.device)
                                               .get("num_alloc_retries", 0))}
            out["device_total"] = torch.cuda.get_device_properties(self.device).total_memory
        rec.note(memory=out)
        return out

    def _profiled(self, step, path: Path) -> dict:
        """One step under the profiler, its memory timeline read back from `path`; backward
        on this thread (the profiler's stack tracer fails on autograd's device thread)."""
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        grads_held = [p for p in self.net.parameters() if p.grad is not None]
        try:
            with quiet_profiler(), profile(activities=activities, profile_memory=True,
                                  record_shapes=True, with_stack=True) as prof, \
                    torch.autograd.set_multithreading_enabled(False):
                step()
        except SystemError:
            if not self.cuda:
                raise
            for p in self.net.parameters():   # the failed backward's partial gradients
                if not any(p is q for q in grads_held):
                    p.grad = None
            torch.cuda.reset_peak_memory_stats(self.device)
            step()
            return read_timeline([[], []])
        try:
            with warnings.catch_warnings():   # deprecated for CUDA's snapshot, the only CPU one
                warnings.simplefilter("ignore")
                prof.export_memory_timeline(str(path), device=str(self.device))
            return read_timeline(json.loads(path.read_text()))
        except Exception:   # noqa: BLE001 - on a GPU the allocator still counts; parts unsorted
            if not self.cuda:
                raise
            return read_timeline([[], []])


def categories() -> list:
    """The profiler's category of each column of its timeline, in order (None: not sorted)."""
    try:
        from torch.profiler._memory_profiler import _CATEGORY_TO_INDEX
    except ImportError:   # a PyTorch that moved it: totals only
        return []
    return [c.name if c is not None else None
            for c, _ in sorted(_CATEGORY_TO_INDEX.items(), key=lambda kv: kv[1])]


def read_timeline(timeline, names=None) -> dict:
    """{"held" before the step, "peak", "at_peak" by part, "most" of each part} of a
    memory timeline ([times, sizes], a column per category after a leading 0)."""
    names = categories() if names is None else names
    _, sizes = timeline
    if not sizes:
        return {"held": 0, "peak": 0, "at_peak": {}, "most": {}}
    rows = [list(r[1:]) for r in sizes]
    totals = [sum(r) for r in rows]
    top = max(range(len(rows)), key=totals.__getitem__)
    at_peak, most = {}, {}
    parts = [CATEGORIES.get(n, Part.OTHER) for n in names] if len(names) == len(rows[0]) else []
    for part in set(parts):
        by_row = [sum(v for v, p in zip(r, parts) if p == part) for r in rows]
        at_peak[part], most[part] = by_row[top], max(by_row)
    return {"held": totals[0], "peak": totals[top], "at_peak": at_peak, "most": most}


def train_step(net, optimizer, x, y):
    """Lesson 14's step: forward, backward, update, the gradients freed after it."""
    out = net(x)
    loss = torch.nn.functional.cross_entropy(out, y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return out, loss


def memory_run(cfg, readings: int = 3, verbose: bool = False):
    """Lesson 14's loop, packaged: train, then measure `readings` more steps."""
    from ...measure.records import OutOfMemory, load_run
    from .devices import out_of_memory
    from .loop import to_device
    from .record import record
    from .train import build
    parts = build(cfg)
    net, train_iter, _, optimizer = parts
    device = parts.devices[0]
    memory = MemoryMeter(parts)
    try:
        with record(parts, progress=False, verbose=verbose) as rec:
            try:
                for _ in rec.epochs():
                    net.train()
                    for x, y in rec.batches(train_iter):
                        x, y = to_device(x, y, device)
                        out, loss = train_step(net, optimizer, x, y)
                        rec.step(len(y), loss=loss.detach(), correct=(out.argmax(1) == y).sum())
                    rec.end_epoch(sync=torch.cuda.synchronize if device.type == "cuda" else None)
                memory.measure(rec, lambda: train_step(net, optimizer, x, y), inputs=(x, y),
                               readings=readings)
            except torch.cuda.OutOfMemoryError as err:
                raise out_of_memory(err, parts.cfg.batch_size, device) from None
    except OutOfMemory as err:   # the record says so; the exercise's check reads it
        return load_run(err.run_path)
    return rec.run
