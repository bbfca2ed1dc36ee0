"""Served networks' measurements (lesson 15's records): one network, variant and batch,
the time of every timed pass, and the outputs on the probe images. Batch 1 is timed a
request at a time (p50, p99 latency); a large batch back to back (images/s). Spreads come
from BLOCKS consecutive blocks of the passes. The tracks' adapters measure and `record`.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pandas as pd

from ..env.cores import busy
from . import noise

SEED = 0            # the weights and probe images every measurement of a network uses
IMAGE_SHAPE = (3, 32, 32)
BLOCKS = noise.BLOCKS   # consecutive blocks of passes that stand in for repeats
MIN_PASSES = BLOCKS     # passes a record needs before a verdict (one a block)
TAIL = 1.5          # p99 at least this many times p50: a tail worth naming
# outputs agree when max |difference| / max |reference output| is within this, by number format
TOLERANCE = {"float32": 1e-3, "bfloat16": 5e-2}


class Variant(StrEnum):
    """How a network is served: the CPU's settings, then the GPU's."""

    ONEDNN_OFF = "oneDNN off"
    ONEDNN_ON = "oneDNN on"
    ONNX_RUNTIME = "ONNX Runtime"
    EAGER = "eager"
    COMPILED = "compiled"
    CUDA_GRAPHS = "CUDA graphs"
    BFLOAT16 = "bfloat16"
    TENSORRT = "TensorRT"


class Timing(StrEnum):
    """How a record's passes were timed."""

    ALONE = "alone"       # each pass ended by its own sync: what one request waits
    QUEUED = "queued"     # back to back, one sync after the last: what a stream of batches runs at


REFERENCE = (Variant.ONEDNN_OFF, Variant.EAGER)   # what the table's speed-ups are against


# -- what the adapters measure with --------------------------------------------------------
def probe_images(n: int) -> np.ndarray:
    """n images (float32, NCHW, in [0, 1)), the same in every process and track."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n={n!r} images: a whole number of at least 1")
    return np.random.default_rng(SEED).random((int(n), *IMAGE_SHAPE), dtype=np.float32)


def passes_for(batch: int, images: int) -> int:
    """Timed passes of a large batch: `images` images, and at least MIN_PASSES passes."""
    return max(MIN_PASSES, int(images) // int(batch))


@dataclass(frozen=True)
class Served:
    """What is served: network `model` as `variant` on `device`, its input in `dtype`."""

    model: str
    variant: Variant
    device: str
    dtype: str = "float32"

    def __post_init__(self):
        object.__setattr__(self, "variant", choice(Variant, self.variant, "variant"))
        if self.dtype not in TOLERANCE:
            raise ValueError(f"dtype={self.dtype!r}; allowed: {', '.join(TOLERANCE)}")


def record(served: Served, batch: int, timing, seconds, outputs=None, **facts) -> dict:
    """One measurement: the seconds of each timed pass of `batch` images, with outputs and facts."""
    timing = choice(Timing, timing, "timing")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch={batch!r}: a whole number of images, at least 1")
    seconds = [float(s) for s in seconds]
    if not seconds or not all(math.isfinite(s) and s > 0 for s in seconds):
        raise ValueError(f"{served.model}, {served.variant}, batch {batch}: "
                         f"seconds={seconds[:5]!r} must be one time > 0 a timed pass, at least one")
    return {"model": str(served.model), "variant": served.variant.value,
            "device": str(served.device), "batch": int(batch), "timing": timing.value,
            "pass_s": seconds, "dtype": served.dtype,
            "outputs": None if outputs is None else np.asarray(outputs, dtype=float).tolist(),
            **facts}


def on_gpu(rec: dict) -> bool:
    return str(rec["device"]).startswith(("cuda", "gpu"))


# -- the table --------------------------------------------------------------------------------
def rung(rec: dict) -> str:
    """A row's name: 'resnet20, oneDNN on, batch 128'."""
    return f"{rec['model']}, {rec['variant']}, batch {rec['batch']}"


class Outputs(StrEnum):
    """A record's outputs on the probe images against its reference's (`table`)."""

    AGREE = "outputs agree"                                  # within the tolerance, every top-1
    TOP1_FLIPPED = "outputs agree, yet a top-1 differs"      # within it, a near tie flipped
    DIFFER = "outputs differ"                                # beyond it, the same precision
    DIFFER_PRECISION = "outputs differ, in another precision"


LONG_TAIL = "a long tail"      # a batch-1 record whose p99 is at least TAIL times its p50
BUSY = "on a busy machine"     # a load average before it of at least the usable cores


def table(records, usable: int | None = None) -> pd.DataFrame:
    """One row a record: p50, p99, images/s, the speed-up and outputs against the reference."""
    records = checked(records)
    usable = usable or max((r.get("threads") or 1 for r in records), default=1)
    rows = []
    for rec in records:
        # the reference: a REFERENCE variant of its network, batch and device kind, else the first
        peers = [r for r in records
                 if (r["model"], r["batch"], on_gpu(r)) == (rec["model"], rec["batch"], on_gpu(rec))]
        s, ref = rec["pass_s"], next((r for r in peers if r["variant"] in REFERENCE), peers[0])
        p50, same = statistics.median(s), _outputs_against(ref, rec)
        p99_p50 = percentile(s, 99) / p50
        tolerance = max(TOLERANCE[rec["dtype"]], TOLERANCE[ref["dtype"]])
        rows.append({"rung": rung(rec), "timed": rec["timing"], "passes": len(s),
                     "p50_ms": 1000 * p50, "p99_ms": 1000 * percentile(s, 99),
                     "p50_blocks_ms": _span([1000 * statistics.median(b) for b in _blocks(s)]),
                     "p99_p50": p99_p50,
                     "images_per_sec": rec["batch"] / p50,
                     "images_blocks": _span(block_rates(rec)),
                     "against": ref["variant"] if ref is not rec else "–",
                     "speedup": (statistics.median(ref["pass_s"]) / p50
                                 if ref is not rec else math.nan),
                     "max_rel_diff": same[0], "top1_same": same[1],
                     "tolerance": tolerance, "outputs": _outputs(same, tolerance, ref, rec),
                     "tail": LONG_TAIL if rec["batch"] == 1 and len(s) >= 2 * BLOCKS
                     and p99_p50 >= TAIL else "",
                     "load_average": rec.get("load_average", math.nan),
                     "machine": BUSY if busy(rec.get("load_average"), usable) else ""})
    return pd.DataFrame(rows)


def _outputs(same: tuple[float, float], tolerance: float, ref: dict, rec: dict) -> str:
    diff, top1 = same
    if math.isnan(diff):
        return ""
    if diff > tolerance:
        return Outputs.DIFFER if rec["dtype"] == ref["dtype"] else Outputs.DIFFER_PRECISION
    return Outputs.AGREE if top1 == 1 else Outputs.TOP1_FLIPPED


def blocks_how(rec: dict) -> str:
    """What a record's samples are: "5 passes", "5 blocks of 8 passes"."""
    n = len(rec["pass_s"]) // BLOCKS
    return f"{BLOCKS} passes" if n == 1 else f"{BLOCKS} blocks of {n} passes"


def percentile(values, q: float) -> float:
    """The q-th percentile of `values`, linear between the two nearest (numpy's default)."""
    return float(np.percentile(np.asarray(values, dtype=float), q))


def _blocks(values) -> list[list[float]]:
    """BLOCKS consecutive blocks of the passes (the last takes the rest); [] if too few."""
    n = len(values) // BLOCKS
    if n < 1:
        return []
    return [list(values[i * n:(i + 1) * n if i < BLOCKS - 1 else len(values)])
            for i in range(BLOCKS)]


def block_rates(rec: dict) -> list[float]:
    """Images/s of each block of passes (batch / the block's median pass)."""
    return [rec["batch"] / statistics.median(b) for b in _blocks(rec["pass_s"])]


def _span(values) -> str:
    return f"{_digits(min(values))}–{_digits(max(values))}" if values else "–"


def _digits(value: float) -> str:
    """Three significant digits, none lost before the point (as the tables write them)."""
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f}"
    return f"{value:.{2 - int(math.log10(size))}f}" if size >= 1 else f"{value:.3g}"


def _outputs_against(ref: dict, rec: dict) -> tuple[float, float]:
    """(max |difference| / max |reference output|, share of rows with the same top-1)."""
    if ref is rec or ref.get("outputs") is None or rec.get("outputs") is None:
        return math.nan, math.nan
    a, b = np.asarray(ref["outputs"], dtype=float), np.asarray(rec["outputs"], dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"{rung(rec)}: outputs {b.shape}, {rung(ref)}'s {a.shape}: use the same images")
    scale = float(np.abs(a).max()) or 1.0
    return float(np.abs(a - b).max()) / scale, float((a.argmax(1) == b.argmax(1)).mean())


# -- checks ----------------------------------------------------------------------------------
def choice(kind, value, name: str):
    """`value` as the enum `kind`, else an error naming `name` and what is allowed."""
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(repr(k.value) for k in kind)
        raise ValueError(f"{name}={value!r}; allowed: {allowed}") from None


def checked(records, allow_empty: bool = False, where: bool | None = None) -> list[dict]:
    """The records as a list, each a `record`, every rung once, on a GPU (where=True) or not."""
    wanted = "pass a list of lesson 15's records"
    if not isinstance(records, (list, tuple)):
        raise ValueError(f"records={records!r:.80}: {wanted}")
    records = list(records)
    if not records and not allow_empty:
        raise ValueError(f"records=[] is empty: {wanted}")
    keys = {"model", "variant", "device", "batch", "timing", "pass_s", "dtype"}
    seen = set()
    for rec in records:
        if not isinstance(rec, dict) or not keys <= set(rec):
            raise ValueError(f"{str(rec)[:80]!r} is not a record of lesson 15 (inference.record)")
        choice(Variant, rec["variant"], "variant")
        if rung(rec) in seen:
            raise ValueError(f"'{rung(rec)}' was measured twice; keep one")
        seen.add(rung(rec))
        if where is not None and on_gpu(rec) != where:
            raise ValueError(f"'{rung(rec)}' ran on {rec['device']}: pass the CPU's records "
                             "first, the GPU's as gpu=")
    return records
