"""Judging measured rows that are not training runs (a served network's passes, a benchmark)."""
from __future__ import annotations

from typing import Mapping

import pandas as pd

from ...analyse import noise
from ..closing import Closing
from .declarations import Compare, Context, Flag, Lesson, Outcome, Rank, Row, Where
from .judging import last_row, outcome
from .wording import (CELLS, CPU_FACTS, FLAGGED, RANKED, TOO_FEW, VERDICT, cells_line, empty,
                      once, paragraph, quotes, text_for)


def judge_rows(lesson: Lesson, rows, table: pd.DataFrame | None,
               context: Context = Context()) -> Closing:
    """`lesson`'s sentences on measured `rows` (`Row`s, one a row of `table`): the Closing."""
    rows = list(rows or [])
    say = Closing(table if rows else pd.DataFrame([{lesson.key: "no rows"}]), key=lesson.key)
    where = Where.GPU if any(r.gpu for r in rows) else Where.CPU
    said: set = set()
    if context.cpu:
        say(CPU_FACTS.format_map({**context.cpu, "source": "/proc/cpuinfo",
                                  "model": say.quote("/proc/cpuinfo", context.cpu["model"])}))
    for fact in context.facts:
        once(say, said, ("fact", fact), text_for(lesson.facts.get(fact, ""), None, where))
    judged, groups = [], {}
    for row in rows:
        groups.setdefault(row.settings.get(lesson.group_by) if lesson.group_by else None, []).append(row)
    for group in groups.values():
        judged += [(c, b, _judge_row(say, lesson, c, (a, b), where, said))
                   for c in lesson.compares for b in group
                   for a in [_baseline(lesson, c, b, group)] if a is not None]
    for compare in lesson.compares:
        for rank in compare.ranks:
            _rank(say, rank, [(b, v) for c, b, v in judged if c is compare and v], said)
    for column, words in lesson.columns.items():
        cells_line(say, words, column, [(say._row(r.name), r.name) for r in rows])
    if rows:
        last_row(say, lesson, rows[-1], (None, where))
    for flag in lesson.flags if rows else ():
        _flag(say, flag, where)
    texts = [lesson.empty] if not rows else [lesson.cpu] if where is Where.CPU else []
    texts += [lesson.missing[m] for m in context.missing if m in lesson.missing]
    for text in texts:
        paragraph(say, text, (None, where))
    quotes(say, lesson, [q for q in lesson.quotes
                         if not rows or any(_has(r, q.when) for r in rows)])
    return say


def _has(row: Row, settings: Mapping) -> bool:
    return all(row.settings.get(k) == v for k, v in settings.items())


def _baseline(lesson: Lesson, compare: Compare, b: Row, rows) -> Row | None:
    """The row with the baseline's settings, alike with b in the rest; None where there is none."""
    against = compare.against or lesson.baseline
    if not _has(b, compare.when) or _has(b, against):
        return None
    keys = (set(b.settings) | {k for r in rows for k in r.settings}) - set(compare.varies)
    return next((a for a in rows if _has(a, against)
                 and all(a.settings.get(k) == b.settings.get(k) for k in keys)), None)


def _judge_row(say: Closing, lesson: Lesson, compare: Compare, pair, where: Where, said: set):
    """Say b's verdict against a and its outcome's paragraph; the verdict (None: too few)."""
    a, b = pair
    verdict = None
    if min(len(a.samples), len(b.samples)) < noise.BLOCKS:
        words = TOO_FEW.format(ratio=say.ratio(lesson.column, a.name, b.name), more=lesson.more)
    else:
        how = f"{a.how} each" if a.how == b.how else f"{a.how} and {b.how}"
        verdict = say.compare_samples(a.name, b.name, a.samples, b.samples, how, lesson.column)
        words = str(verdict)
    cells = "; ".join(f"{w} {say.cell(a.name, c)} → {say.cell(b.name, c)}"
                      for c, w in compare.cells.items())
    say(CELLS.format(a=a.name, b=b.name, cells=cells, verdict=words) if cells else
        VERDICT.format(a=a.name, b=b.name, verdict=words))
    found = outcome(verdict, compare.expect(where)) if verdict else Outcome.CANNOT_JUDGE
    once(say, said, (id(compare), found), text_for(compare.means.get(found, ""), None, where))
    return verdict


def _rank(say: Closing, rank: Rank, judged, said: set) -> None:
    parts: dict = {}
    for row, verdict in judged:
        if _has(row, rank.where):
            key = tuple(sorted((k, str(v)) for k, v in row.settings.items() if k != rank.by))
            parts.setdefault(key, []).append((row, verdict))
    for part in (p for p in parts.values()
                 if len(p) > 1 and any(v.is_effect for _, v in p)):   # else nothing to rank
        numeric = all(isinstance(r.settings.get(rank.by), (int, float)) for r, _ in part)
        order = (lambda p: float(p[0].settings.get(rank.by))) if numeric else \
            (lambda p: -p[1].ratio)
        (first, v), (last, w) = min(part, key=order), max(part, key=order)
        found = noise.ranked(v, w)
        say(RANKED[found].format(x=f"'{first.name}'", y=f"'{last.name}'"))
        once(say, said, (id(rank), found), text_for(rank.means.get(found, ""), None, None))


def _flag(say: Closing, flag: Flag, where: Where) -> None:
    frame = say.table
    if flag.column not in frame.columns:
        return
    flagged = [i for i, v in enumerate(frame[flag.column]) if v in flag.means]
    if flag.worst and flagged:
        flagged = [max(flagged, key=lambda i: frame[flag.worst].iloc[i])]
    for value in dict.fromkeys(frame[flag.column].iloc[i] for i in flagged):
        same = [i for i in flagged if frame[flag.column].iloc[i] == value]
        for i in same:   # the value's paragraph closes its last row's line
            line = FLAGGED.format(row=frame[say.key].iloc[i], value=value, cells="; ".join(
                f"{w} {say.cell(i, c)}" for c, w in flag.cells.items()
                if c in frame.columns and not empty(frame[c].iloc[i])))
            text = text_for(flag.means[value], None, where) if i == same[-1] else ""
            say(line.replace(" ().", ".") + (f" {text}" if text else ""))
