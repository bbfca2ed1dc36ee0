"""Which runs are compared with which: a run's settings, its groups, baselines and pairs."""
from __future__ import annotations

from typing import Mapping

from ...analyse import alike, metrics
from .declarations import Lesson, Note, Versus, Where


def setting(run, name: str):
    """A setting of the run's config, else what ran ("network.parameters"), else its notes."""
    if name in (run.config or {}):
        return run.config[name]
    for kind in ("ran", "notes"):
        value = run.meta.get(kind) or {}
        for part in name.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is not None:
            return value
    return None


def fires(note: Note, runs) -> bool:
    read = note.setting if callable(note.setting) else lambda r: setting(r, note.setting)
    return any(read(r) in note.values for r in runs)


def where(runs) -> Where:
    return Where.GPU if any(metrics.on_gpu(r) for r in runs) else Where.CPU


def split(runs, by: str | None) -> dict:
    """The runs in groups of `by`'s value (one group without it), each {name: repeats}."""
    groups: dict = {}
    for run in runs:
        key = setting(run, by) if by else None
        groups.setdefault(key, {}).setdefault(run.name, []).append(run)
    return groups


def baseline(group: dict, settings: Mapping) -> str:
    for name, repeats in group.items():
        if all(setting(repeats[-1], k) == v for k, v in settings.items()) \
                and not any(k in metrics.ran_as(repeats[-1]) for k in settings):
            return name
    if settings:
        raise ValueError(f"no run has {dict(settings)}, as asked and as it ran; the runs: {list(group)}")
    return next(iter(group))


def differ(lesson: Lesson, a, b) -> set:
    """What runs a and b differ in (but the machine's load), what ran and what the lesson names."""
    named = {v for c in lesson.compares for v in c.varies}
    notes = a.meta.get("notes") or {}, b.meta.get("notes") or {}
    return (set(alike.differences(a, b)) - {alike.Aspect.LOAD}) \
        | {n for n in lesson.ran if setting(a, n) != setting(b, n)} \
        | {n for n in named if notes[0].get(n) != notes[1].get(n)}


def pairs(lesson: Lesson, group: dict, base: str) -> list:
    """(baseline's repeats, variant's repeats) for each comparison the lesson makes."""
    names = list(group)
    if lesson.chain:
        found = list(zip(names, names[1:]))
    else:
        variants = [n for n in names if n != base]
        if lesson.versus is Versus.BEST and variants:   # the fastest variant only
            variants = [max(variants, key=lambda n: metrics.samples_per_sec(group[n][-1]))]
        found = [(base, n) for n in variants]
    for name in lesson.pairs:
        found += [(a, b) for a in names for b in names
                  if (a, b) not in found and not setting(group[a][-1], name)
                  and setting(group[b][-1], name)
                  and not metrics.ran_as(group[a][-1]) and not metrics.ran_as(group[b][-1])
                  and differ(lesson, group[a][-1], group[b][-1]) == {name}]
    return [(group[a], group[b]) for a, b in found]
