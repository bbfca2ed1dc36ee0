"""Do runs differ only in what their comparison names? Read from their records.

A comparison names what it varies (the loader's workers, the graph, the dtype...); this
module says what else differs: the network, the data, the epochs, the batch, the
threads, the dtype or graph as they *ran*, the compile backend, the machine or its load.

    differences(a, b, varies=("num_workers",))   # {} when a and b are alike in the rest
    differing(runs)                               # the aspects whose values vary over runs
    words(diff, a.name, b.name)                   # "model resnet20 against tiny; ..."

`noise.compare` refuses a verdict across a difference it was not told of (`Kind.UNLIKE`)
and `report.ladder_table` gives each differing aspect a column.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from enum import StrEnum

from ..config import RETIRED, worded
from . import metrics


class Aspect(StrEnum):
    """What runs may differ in beyond their recorded settings (those go by the setting's
    name: "model", "train_size", "dtype"...)."""

    THREADS = "threads"                  # intra-op threads as the run had them
    LOAD = "machine load"                # shared with other programs, or not
    MACHINE = "machine"                  # host name and GPUs
    COMPILE_BACKEND = "compile backend"  # torch.compile's backend, where a run compiled


# settings that never change the work measured: a comparison need not name them
# (where the data lies is not what it is: dataset, train_size and data_format say that)
# (warmup_steps: how many first steps the timing leaves out, not what a step does)
SAME_WORK = frozenset({"name", "seed", "monitor_interval", "data_dir", "warmup_steps"})
LOAD_WORDS = {True: "shared", False: "not shared"}


def shared(run) -> bool:
    """Whether other programs kept the machine busy while the run ran (its record's load)."""
    return bool(metrics.machine_load(run)["shared"])


def with_load(frame, runs):
    """`frame` (a table, one row a run) with each run's machine load in words
    (`LOAD_WORDS`) where any run's machine was shared."""
    if any(map(shared, runs)):
        frame = frame.assign(**{Aspect.LOAD.value: [LOAD_WORDS[shared(r)] for r in runs]})
    return frame


def _config_keys(run) -> set:
    return set(run.config) - SAME_WORK


def aspects(runs) -> list[str]:
    """Every aspect the runs can be compared on: their settings (less SAME_WORK), then the
    `Aspect`s."""
    keys = set().union(*(_config_keys(r) for r in runs)) if runs else set()
    extra = [a.value for a in Aspect]
    return sorted(keys - set(extra)) + extra  # "threads": as the run had them


def value(run, aspect: str):
    """The run's `aspect` as it ran: a setting from its record, with what ran where that
    differs from the request (`metrics.ran_as`); threads, machine load, machine and compile
    backend from what it recorded (None where it recorded nothing)."""
    run = metrics.representative(run)
    ran = run.meta.get("ran") or {}
    if aspect == Aspect.THREADS:
        threads = ran.get("threads")
        if isinstance(threads, dict):
            threads = threads.get("intra_op")
        return threads if threads is not None else run.config.get("threads")
    if aspect == Aspect.LOAD:
        load = run.meta.get("load")
        return LOAD_WORDS[bool(metrics.machine_load(run)["shared"])] if load else None
    if aspect == Aspect.MACHINE:
        hw = run.meta.get("hardware") or {}
        gpus = sorted({str(g.get("name")) for g in hw.get("gpus") or []})
        host = hw.get("hostname")
        return f"{host} ({', '.join(gpus)})" if host and gpus else host
    if aspect == Aspect.COMPILE_BACKEND:
        return ran.get("compile_backend")
    downgraded = metrics.ran_as(run)
    if aspect in downgraded:
        return downgraded[aspect][1]
    return run.config.get(aspect)


def shown(run, aspect: str):
    """`value` in the words of the run's track (the graph: hybridize or compile...):
    what a table cell or a sentence prints."""
    return worded(aspect, value(run, aspect), metrics.engine(metrics.representative(run)))


# aspects whose absence in one record says nothing (an older record, an eager run with no
# compile backend, a setting earlier versions had): compared only where both recorded them
_WHERE_RECORDED = {a.value for a in Aspect} | set(RETIRED)


def check_varies(varies: Iterable[str] | None) -> frozenset:
    """`varies` as a set of aspect names; a clear error for anything else."""
    if varies is None:
        return frozenset()
    if isinstance(varies, str):
        varies = (varies,)
    names = []
    for v in varies:
        if not isinstance(v, str) or not v:
            aspects = [a.value for a in Aspect]
            raise ValueError(f"varies={varies!r}: each entry must be a setting's name or one of "
                             f"{aspects}")
        names.append(str(v))
    return frozenset(names)


def differences(a, b, varies: Iterable[str] | None = ()) -> dict[str, tuple]:
    """{aspect: (a's, b's)} for everything runs a and b (each a run or a group of repeats)
    differ in apart from `varies`, the aspects the comparison names, and SAME_WORK; each
    value as its run's track says it (`shown`)."""
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
    """`differences` among the runs' recorded settings only (less `ignore`): what a
    sentence that names each changed setting ("num_workers 1 → 2") has to name."""
    keys = set(getattr(a, "config", None) or {}) | set(getattr(b, "config", None) or {})
    return {k: v for k, v in differences(a, b, ignore).items() if k in keys}


def differing(runs, varies: Iterable[str] | None = ()) -> list[str]:
    """The aspects (less `varies`) whose values are not the same for every run: the
    columns a table of these runs needs beside its numbers."""
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
    """A value in a form that compares equal however it was stored (a tuple is a list
    once written to JSON)."""
    return json.dumps(value, sort_keys=True, default=str)


def words(diff: dict, a_name: str, b_name: str) -> str:
    """`differences` in words: "model resnet20 against tiny; machine load (shared while
    'a' ran, not shared while 'b' ran)"."""
    parts = []
    for aspect, (x, y) in diff.items():
        if aspect == Aspect.LOAD:
            parts.append(f"machine load ({x} while '{a_name}' ran, {y} while '{b_name}' ran)")
        else:
            parts.append(f"{aspect} {_text(x)} against {_text(y)}")
    return "; ".join(parts)


def _text(x) -> str:
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)
