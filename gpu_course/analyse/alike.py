"""Do runs differ only in what their comparison names? Read from their records: the
settings as they *ran*, the threads, the compile backend, the machine and its load.

    differences(a, b, varies=("num_workers",))   # {} when a and b are alike in the rest
    differing(runs)                               # the aspects whose values vary over runs
    words(diff, a.name, b.name)                   # "model resnet20 against tiny; ..."
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from enum import StrEnum

from ..config import RETIRED, worded
from . import metrics


class Aspect(StrEnum):
    """What runs may differ in beyond their recorded settings."""

    THREADS = "threads"                  # intra-op threads as the run had them
    LOAD = "machine load"                # shared with other programs, or not
    MACHINE = "machine"                  # host name and GPUs
    COMPILE_BACKEND = "compile backend"  # torch.compile's backend, where a run compiled


# settings that never change the work measured: a comparison need not name them
SAME_WORK = frozenset({"name", "seed", "monitor_interval", "data_dir", "warmup_steps"})
LOAD_WORDS = {True: "shared", False: "not shared"}


def shared(run) -> bool:
    """Whether other programs kept the machine busy while the run ran (its record's load)."""
    return bool(metrics.machine_load(run)["shared"])


def with_load(frame, runs):
    """`frame` (one row a run) with each run's machine load in words where any was shared."""
    if any(map(shared, runs)):
        frame = frame.assign(**{Aspect.LOAD.value: [LOAD_WORDS[shared(r)] for r in runs]})
    return frame


def aspects(runs) -> list[str]:
    """Every aspect the runs can be compared on: their settings (less SAME_WORK), then `Aspect`s."""
    keys = set().union(*(set(r.config) - SAME_WORK for r in runs))
    extra = [a.value for a in Aspect]
    return sorted(keys - set(extra)) + extra


def value(run, aspect: str):
    """The run's `aspect` as it ran (`metrics.ran_as`), or as it recorded it (None: not)."""
    run = metrics.representative(run)
    ran = run.meta.get("ran") or {}
    if aspect == Aspect.THREADS:
        threads = ran.get("threads")
        if isinstance(threads, dict):
            threads = threads.get("intra_op")
        return threads if threads is not None else run.config.get("threads")
    if aspect == Aspect.LOAD:
        return LOAD_WORDS[shared(run)] if run.meta.get("load") else None
    if aspect == Aspect.MACHINE:
        hw = run.meta.get("hardware") or {}
        gpus = sorted({str(g.get("name")) for g in hw.get("gpus") or []})
        host = hw.get("hostname")
        return f"{host} ({', '.join(gpus)})" if host and gpus else host
    if aspect == Aspect.COMPILE_BACKEND:
        return ran.get("compile_backend")
    downgraded = metrics.ran_as(run)
    return downgraded[aspect][1] if aspect in downgraded else run.config.get(aspect)


def shown(run, aspect: str):
    """`value` in the words of the run's track (the graph: hybridize or compile...)."""
    return worded(aspect, value(run, aspect), metrics.engine(metrics.representative(run)))


# aspects compared only where both records have them (older records, eager runs lack them)
_WHERE_RECORDED = {a.value for a in Aspect} | set(RETIRED)


def check_varies(varies: Iterable[str] | None) -> frozenset:
    """`varies` as a set of aspect names; a clear error for anything else."""
    varies = (varies,) if isinstance(varies, str) else tuple(varies or ())
    if not all(isinstance(v, str) and v for v in varies):
        allowed = [a.value for a in Aspect]
        raise ValueError(f"varies={varies!r}: each entry must be a setting's name or one of {allowed}")
    return frozenset(varies)


def differences(a, b, varies: Iterable[str] | None = ()) -> dict[str, tuple]:
    """{aspect: (a's, b's)} `shown` for all runs a and b differ in but `varies` and SAME_WORK."""
    named = check_varies(varies)
    members = [r for side in (a, b) for r in (side if isinstance(side, (list, tuple)) else [side])]
    if not all(hasattr(r, "config") and hasattr(r, "meta") for r in members):
        return {}  # bare measurements (a benchmark's passes): no record to compare
    # interleaved repeats (A, B, A, B) measure the machine's changes in their spread
    repeated = any(isinstance(s, (list, tuple)) and len(s) > 1 for s in (a, b))
    a, b = metrics.representative(a), metrics.representative(b)
    out = {}
    for aspect in aspects([a, b]):
        if aspect in named or (repeated and aspect == Aspect.LOAD):
            continue
        x, y = value(a, aspect), value(b, aspect)
        if aspect in _WHERE_RECORDED and (x is None or y is None):
            continue
        if _key(x) != _key(y):
            out[aspect] = (shown(a, aspect), shown(b, aspect))
    return out


def settings(a, b, ignore: Iterable[str] | None = ()) -> dict[str, tuple]:
    """`differences` among the runs' recorded settings only (less `ignore`)."""
    keys = set(getattr(a, "config", None) or {}) | set(getattr(b, "config", None) or {})
    return {k: v for k, v in differences(a, b, ignore).items() if k in keys}


def differing(runs, varies: Iterable[str] | None = ()) -> list[str]:
    """The aspects (less `varies`) whose values are not the same for every run."""
    named = check_varies(varies)
    runs = [metrics.representative(r) for r in runs]
    out = []
    for aspect in aspects(runs):
        if aspect in named:
            continue
        values = [value(r, aspect) for r in runs]
        if aspect in _WHERE_RECORDED:
            values = [v for v in values if v is not None]
        if len({_key(v) for v in values}) > 1:
            out.append(aspect)
    return out


def _key(value) -> str:
    """A value in a form that compares equal however it was stored (a tuple as a list)."""
    return json.dumps(value, sort_keys=True, default=str)


def words(diff: dict, a_name: str, b_name: str) -> str:
    """`differences` in words: "model resnet20 against tiny; machine load (...)"."""
    return "; ".join(f"machine load ({x} while '{a_name}' ran, {y} while '{b_name}' ran)"
                     if aspect == Aspect.LOAD else f"{aspect} {_text(x)} against {_text(y)}"
                     for aspect, (x, y) in diff.items())


def _text(x) -> str:
    return f"{x:,}" if isinstance(x, int) and not isinstance(x, bool) else str(x)
