"""A run's memory as its record notes it (lesson 14): what each adapter's
`MemoryMeter.measure` writes to notes["memory"] (bytes above what was live before the
network existed; lists hold one value a measured step; the fields are `MemoryUse`'s), and
the loop's other notes (accumulate, checkpoint, loss_curve). No pandas: adapters import it.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from enum import StrEnum

MiB = 2**20


class Part(StrEnum):
    """Where memory goes."""

    PARAMETERS = "parameters"
    GRADIENTS = "gradients"
    OPTIMIZER = "optimizer state"
    INPUT = "input"
    ACTIVATIONS = "activations"    # saved for the backward pass, with temporaries
    OTHER = "other"                # what the counter could not sort


COMPUTED = (Part.PARAMETERS, Part.GRADIENTS, Part.OPTIMIZER)


class Counter(StrEnum):
    """The framework's counter a run was measured with."""

    PROFILER = "torch.profiler's memory timeline"
    CUDA = "torch.cuda.max_memory_allocated"
    PROCESS = "the process's peak resident memory"
    MXNET_GPU = "mx.context.gpu_memory_info"


@dataclass(frozen=True)
class MemoryUse:
    """A run's memory as its record notes it (bytes; lists: one value a measured step)."""

    run: str
    counter: Counter
    batch: int                 # images an update
    micro_batch: int           # images a forward pass
    computed: dict             # {part: bytes} of COMPUTED and the input, from the model
    held_parts: tuple          # the computed parts alive between two steps
    held: tuple                # live between steps
    peak: tuple                # the most live during the step
    at_peak: dict              # {part: [bytes]} at the peak where the counter sorts parts
    most: dict                 # {part: [bytes]}: each part's own most (idem)
    device_total: float | None = None
    allocator: dict | None = None   # the CUDA caching allocator's peak, reserved, retries
    files: tuple = ()          # what the meter wrote into the run's folder

    @property
    def readings(self) -> int:
        return len(self.peak)

    @property
    def sorted(self) -> bool:
        """Whether the counter sorted the memory into parts."""
        return bool(self.at_peak)

    def activations(self) -> list[float]:
        """Activations and temporaries at each step's peak."""
        if self.sorted:
            return [sum(v) for v in zip(*(self.at_peak.get(p, [0] * self.readings)
                                          for p in (Part.ACTIVATIONS, Part.OTHER)))]
        return [p - h for p, h in zip(self.peak, self.held)]

    def held_computed(self) -> float:
        return float(sum(self.computed.get(p, 0) for p in self.held_parts))

    # the medians of the measured steps, in MiB (what the lesson's table shows)
    held_mib = property(lambda self: median(self.held) / MiB)
    peak_mib = property(lambda self: median(self.peak) / MiB)
    activations_mib = property(lambda self: median(self.activations()) / MiB)
    per_image_mib = property(lambda self: self.activations_mib / self.micro_batch
                             if self.micro_batch else math.nan)


def memory_of(run) -> MemoryUse:
    """The memory a run noted (`MemoryMeter.measure`), read back; a clear error without."""
    m = (run.meta.get("notes") or {}).get("memory")
    if not isinstance(m, dict) or not m.get("peak"):
        raise ValueError(f"run {run.name!r} has no memory measurement in its record: use "
                         "gc.memory_run(cfg) or gc.MemoryMeter(parts).measure(rec, step)")
    try:
        counter = Counter(m.get("counter"))
    except ValueError:
        allowed = ", ".join(c.value for c in Counter)
        raise ValueError(f"run {run.name!r}: counter={m.get('counter')!r} is not a memory "
                         f"counter; allowed: {allowed}") from None
    micro = int(run.config.get("batch_size") or 0)

    def parts(d):
        return {Part(k): [float(x) for x in v] for k, v in (d or {}).items()}
    return MemoryUse(run.name, counter, micro * accumulate_of(run), micro,
                     {Part(k): float(v) for k, v in (m.get("computed") or {}).items()},
                     tuple(Part(p) for p in m.get("held_parts") or ()),
                     tuple(float(x) for x in m.get("held") or ()),
                     tuple(float(x) for x in m["peak"]), parts(m.get("at_peak")),
                     parts(m.get("most")), m.get("device_total"), m.get("allocator"),
                     tuple(m.get("files") or ()))


def accumulate_of(run) -> int:
    """Micro-batches a run added up into one update (its notes; 1 without)."""
    return int((run.meta.get("notes") or {}).get("accumulate") or 1)


def checkpoint_of(run) -> int:
    """Segments a run checkpointed (its notes; 0: none)."""
    return int((run.meta.get("notes") or {}).get("checkpoint") or 0)


def loss_curve(run) -> list[float]:
    """The mean loss of each of the run's updates, as it noted them."""
    return [float(v) for v in (run.meta.get("notes") or {}).get("loss_curve") or []]


def loss_gap(a, b) -> float:
    """Mean absolute difference between two runs' loss curves (NaN unless alike in length)."""
    x, y = loss_curve(a), loss_curve(b)
    if not x or len(x) != len(y):
        return math.nan
    return statistics.fmean(abs(p - q) for p, q in zip(x, y))


def median(values) -> float:
    """The median of the numbers among `values` (NaN where there are none)."""
    values = [v for v in (values or []) if v is not None and not math.isnan(v)]
    return float(statistics.median(values)) if values else math.nan


def last_loss(curve: list[float]) -> float:
    """The mean loss of a curve's last quarter of updates (at least one)."""
    return statistics.fmean(curve[-max(1, len(curve) // 4):]) if curve else math.nan


# memory readings this close are one amount: allocation granularity, a few KiB of workspace
SAME = 0.01


def per_image(u: MemoryUse) -> list[float]:
    """The activations of each measured step per image of a forward pass."""
    return [a / u.micro_batch for a in u.activations()] if u.micro_batch else []


def widened(values) -> list[float]:
    """Readings of one amount widened by ±SAME (a steady counter has no spread of its own)."""
    values = [v for v in values if not math.isnan(v)]
    return [min(values) * (1 - SAME), max(values) * (1 + SAME)] if values else []


def how(*uses: MemoryUse) -> str:
    """What a verdict on these runs' amounts rests on, in words."""
    n = min(u.readings for u in uses)
    return f"{n} measured step{'s' if n != 1 else ''} each, ±{SAME:.0%}"


def accumulation_runs(runs) -> tuple:
    """(the large batch, it again with another seed, the accumulated run) among `runs`."""
    plain = [r for r in runs if accumulate_of(r) == 1]
    added = [r for r in runs if accumulate_of(r) > 1]
    if len(plain) < 2 or not added:
        raise ValueError("accumulation= needs the large batch, it again with another seed, and "
                         f"the accumulated run; got {len(plain)} plain and {len(added)} accumulated")
    big, again, acc = plain[0], plain[1], added[0]
    if big.config.get("seed") == again.config.get("seed"):
        raise ValueError(f"'{again.name}' has the same seed as '{big.name}': run it with seed=1")
    ub, ua = memory_of(big), memory_of(acc)
    if ub.batch != ua.batch:
        raise ValueError(f"'{acc.name}' updates on {ua.batch} images and '{big.name}' on "
                         f"{ub.batch}: accumulation compares the same images an update")
    return big, again, acc


def fills_device(u: MemoryUse) -> float:
    """Images a forward pass that would fill the device's memory."""
    per_image = median(u.activations()) / u.micro_batch if u.micro_batch else math.nan
    rest = median(u.peak) - median(u.activations())
    if not (u.device_total and per_image > 0):
        return math.nan
    return math.floor((u.device_total - rest) / per_image)
