"""What a run of lesson 04 asked for and what ran: the dtype, TF32, a float32 master copy."""
from __future__ import annotations

import pandas as pd

from ..show import report
from . import alike, metrics

SIXTEEN_BITS = ("float16", "bfloat16")
TF32 = "tf32.convolutions"                     # what ran: float32 convolutions in TF32
MASTER_COPY = "optimizer.multi_precision"      # what ran: float32 master weights (Gluon)


def asked(run, field: str):
    """What the run asked for: the request where it did not run as asked, else what ran."""
    change = metrics.ran_as(run).get(field)
    return change[0] if change else (run.config or {}).get(field)


def table(runs) -> pd.DataFrame:
    """A row a run: the dtype that ran and what it changed from the first float32 run."""
    runs = list(runs)
    base = next((r for r in runs if alike.value(r, "dtype") == "float32"), runs[0])
    frame = report.ladder_table(runs)
    report.put(frame, 1, "dtype", [r.config.get("dtype") for r in runs])
    frame.insert(2, "differs_from_float32", [differs(base, r) for r in runs])
    return frame


def differs(base, run) -> str:
    """What `run` changed from `base`, as their records say ("–" for nothing)."""
    changes = [f"{k} {a} → {b}" for k, (a, b) in alike.settings(base, run).items()]
    names = {TF32: "TF32 convolutions", MASTER_COPY: "master copy"}
    changes += [f"{names[k]} {_ran(base, k)} → {_ran(run, k)}" for k in names
                if _ran(run, k) is not None and _ran(run, k) != _ran(base, k)]
    return "; ".join(changes) or "–"


def _ran(run, name: str):
    value = run.meta.get("ran") or {}
    for part in name.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value
