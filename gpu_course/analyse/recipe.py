"""Lesson 05's three experiments told apart by what their configs vary (`part`), and the
learning rate a run stepped with (`lr_used`)."""
from __future__ import annotations

import enum
import json
import math


class Part(enum.Enum):
    SWEEP = "the batch-size sweep"
    CHANGES = "one change at a time"
    RACE = "the optimizer race"


# the recipe a large batch changes; the batch itself is the sweep's variable
_RECIPE = ("optimizer", "lr", "momentum", "lr_base_batch", "warmup_epochs", "lr_scheduler",
           "optimizer_params")


def part(runs) -> Part:
    """The sweep (only the batch varies), the optimizer race, else the changes down the ladder."""
    runs = list(runs)

    def varies(field):
        return len({json.dumps(r.config.get(field), default=str) for r in runs}) > 1

    if not any(varies(f) for f in _RECIPE):
        return Part.SWEEP
    if varies("optimizer") and not any(varies(f) for f in ("batch_size", "lr_base_batch",
                                                            "warmup_epochs")):
        return Part.RACE
    return Part.CHANGES


def lr_used(run) -> float:
    """lr, scaled by the global batch over lr_base_batch where set (before warm-up and decay)."""
    c = run.config or {}
    base = c.get("lr_base_batch")
    lr = float(c.get("lr") or math.nan)
    return lr * int(c.get("batch_size") or 0) * max(int(c.get("num_gpus") or 1), 1) / base \
        if base else lr


def changes_text(changes: dict) -> str:
    """{setting: (before, after)} as "k a → b; ..." ("–" for none)."""
    return "; ".join(f"{k} {a} → {b}" for k, (a, b) in changes.items()) or "–"
