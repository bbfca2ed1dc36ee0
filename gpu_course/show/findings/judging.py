"""Judging a lesson's runs: each comparison's verdict, its outcome's paragraph, the caveats."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...analyse import alike, anatomy, diagnose, memory, metrics, noise
from ...config import worded
from ...env import cpu
from .. import report
from ..closing import Closing
from . import grouping
from .declarations import (Compare, Expect, Gain, Lesson, Metric, Outcome, Place, Sign, Where)
from .grouping import setting
from .wording import (ACCURACY, AMOUNT, ASKED, BEYOND_WAIT, BOUND, CEILING, CEILINGS, CHANCE,
                      CHANGED, FASTEST, MACHINE, MARKED, NO_FASTEST, NO_RUNS, NOT_READ, NOTICE,
                      PLACED, RANKED, REACHES, REQUIRES, ROW, SAME_JOB, STEADY_BLOCKS, UNMATCHED,
                      VERDICT, WAITED, about, cells_line, empty, limit, once, paragraph, quotes,
                      text_for)

# an amount: (its table column, its readings from a run's memory notes)
AMOUNTS = {Metric.PEAK: ("peak_mib", lambda u: u.peak),
           Metric.HELD: ("held_mib", lambda u: u.held),
           Metric.ACTIVATIONS: ("activations_mib", lambda u: u.activations()),
           Metric.ACTIVATIONS_PER_IMAGE: ("activations_per_image_mib", memory.per_image)}
DATA_BOUND = 0.5   # a baseline that waited for data more than this share of its steady time
# settings that change the input pipeline itself: its baseline's data wait is the point
INPUT = anatomy.FIXES[anatomy.Bound.DATA] | {"page_cache", "sample_order", "augment"}


def judge(lesson: Lesson, runs, table: pd.DataFrame | None = None) -> Closing:
    """`lesson`'s sentences on `runs` (repeats share a name), citing `table`: the Closing."""
    runs = list(runs or [])
    if not runs:
        say = Closing(pd.DataFrame([{"rung": "no runs"}]))
        say(text_for(lesson.empty, None, None) or NO_RUNS)
        return say
    table = report.ladder_table(runs) if table is None else table
    say = Closing(table, runs, varies=tuple(sorted({v for c in lesson.compares for v in c.varies})))
    context = track, where = metrics.engine(runs[0]), grouping.where(runs)
    judged = all(n.judged or not grouping.fires(n, runs) for n in lesson.notes)
    said: set = set() if judged else {"no outcomes"}
    if any(c.accuracy or c.gains for c in lesson.compares) and len(runs) > 1 \
            and say.at_chance(runs):
        said.add("all at chance")   # said once (CHANCE), not on every pair
    best = {}
    others = _ceilings(say, lesson, runs, context) if lesson.ceilings else runs
    others = [r for r in others if not diagnose.is_mock(r)]   # a ceiling is no variant of a run
    for run in others if lesson.bounds else ():
        _bounds(say, lesson, run, context, said)
    for key, group in grouping.split(others, lesson.group_by).items():
        base = grouping.baseline(group, lesson.baseline)
        verdicts = [_compare(say, lesson, pair, context, said)
                    for pair in grouping.pairs(lesson, group, base)]
        verdicts = [v for v in verdicts if v is not None and v.kind != noise.Kind.UNLIKE]
        if verdicts:
            best[key] = (max(verdicts, key=lambda v: v.ratio), group[base][-1])
        bound = anatomy.anatomy(group[base][-1]).bound if lesson.bound else None
        text = text_for(lesson.bound.get(bound, ""), track, None)
        if text:
            say(BOUND.format(a=group[base][-1].name, bound=bound, text=text))
    if lesson.rank and judged and len(best) == 2:
        _rank(say, lesson, best, track)
    top = _fastest(say, runs) if lesson.fastest else None
    if "all at chance" in said:
        say(CHANCE)
    _columns(say, lesson, [r.name for r in runs], context, "judged" in said)
    last_row(say, lesson, runs[-1], context)
    texts = [n.text for n in lesson.notes if grouping.fires(n, runs)]
    flags = (runs[0].meta.get("hardware") or {}).get("cpu_features")
    for need in lesson.requires if flags is not None else ():
        if any(setting(r, need.setting) in need.values for r in runs):
            has = cpu.supports(need.capability, flags)
            text = text_for(need.has if has else need.lacks, *context)
            texts.append(REQUIRES.format(text=text, why=has.why))
    shared = [f"'{r.name}'" for r in runs if metrics.machine_load(r)["shared"]]
    if shared:
        texts.append(report.SHARED.format(names=", ".join(dict.fromkeys(shared))))
    for text in texts + [lesson.after]:
        paragraph(say, text, context)
    about(say, lesson.about, context)
    notices: dict = {}
    for run in runs if lesson.notices else ():
        notice = (run.meta.get("notes") or {}).get("device_notice")
        if notice and run.name not in notices.setdefault(notice, []):
            notices[notice].append(run.name)
    for notice, names in notices.items():
        say(NOTICE.format(names=", ".join(names), notice=say.quote("the records", notice)))
    if lesson.machine:
        from ..plots import hardware_caption
        say(MACHINE.format(machine=say.quote("the run records", hardware_caption(runs))))
    if where is Where.CPU:
        paragraph(say, lesson.cpu, context)
    quotes(say, lesson, lesson.quotes)
    if lesson.diagnose:   # diagnose's own reports of the baseline and the fastest, beside the sentences
        first = next((r for r in runs if not diagnose.is_mock(r) and len(r.epochs)), None)
        if first is not None:
            print(f"\n{diagnose.diagnose(first)}")
        if top is not None and top is not first and len(top.epochs):
            print(f"\n{diagnose.explain(top)}")
    return say


def judge_table(lesson: Lesson, table: pd.DataFrame, context, pairs=()) -> Closing:
    """`lesson`'s sentences on a table not one row a run, each of `pairs` (`Samples`) judged."""
    track, where = context
    key = table.columns[0] if len(table.columns) else "rung"
    said: set = set()
    say = Closing(table if len(table) else pd.DataFrame([{key: "no rows"}]), key=key)
    for pair in pairs:
        verdict = say.compare_samples(pair.a, pair.b, list(pair.xs), list(pair.ys), pair.how,
                                      pair.column)
        say(VERDICT.format(a=pair.a, b=pair.b, verdict=verdict))
        _outcome(say, pair.compare, outcome(verdict, pair.compare.expect(where)), context, said)
    if len(table):
        _columns(say, lesson, [str(name) for name in table[key]])
    elif not (where is Where.CPU and lesson.cpu):   # off a GPU, cpu says why
        paragraph(say, lesson.empty, context)
    if where is Where.CPU:
        paragraph(say, lesson.cpu, context)
    quotes(say, lesson, lesson.quotes)
    paragraph(say, lesson.after, context)
    return say


class Said(list):
    """The closings a conclusion said (a `judge` or `read` each), in order."""

    @property
    def text(self) -> str:
        return "\n".join(s.text for s in self)

    def check(self) -> list[str]:
        return [problem for s in self for problem in s.check()]


def outcome(verdict: noise.Verdict, expect: Expect) -> Outcome:
    """The outcome of `verdict` where the lesson expects `expect`."""
    if verdict.kind in (noise.Kind.TOO_FEW, noise.Kind.UNLIKE, noise.Kind.NOT_MEASURED):
        return Outcome.CANNOT_JUDGE
    if verdict.kind == noise.Kind.WITHIN_NOISE:
        return Outcome.EXPECTED if expect is Expect.SAME else Outcome.NONE
    up = verdict.kind == noise.Kind.FASTER
    went = (Expect.MORE if up else Expect.LESS) if expect in (Expect.LESS, Expect.MORE) \
        else (Expect.FASTER if up else Expect.SLOWER)
    return Outcome.EXPECTED if went is expect else Outcome.OPPOSITE


def accuracy_outcome(a, b, gains: Gain) -> Outcome:
    """The outcome of run b's validation accuracy against run a's, expecting `gains`."""
    if noise.at_chance(a) and noise.at_chance(b):
        return Outcome.CANNOT_JUDGE
    verdict = noise.accuracy_verdict(a, b)
    if not verdict.is_effect:
        return Outcome.EXPECTED if gains is Gain.SAME else Outcome.NONE
    went = Gain.HIGHER if verdict.points > 0 else Gain.LOWER
    return Outcome.EXPECTED if went is gains else Outcome.OPPOSITE


def _compare(say: Closing, lesson: Lesson, pair, context, said: set):
    """Say a variant's repeats against its baseline's; its verdict (None: nothing compared)."""
    (a, b), (track, where) = pair, context
    first, last = a[-1], b[-1]
    for name, (asked, ran, why) in metrics.ran_as(last).items():
        if ("asked", last.name, name) not in said:
            said.add(("asked", last.name, name))
            say(ASKED.format(b=last.name, setting=name, asked=worded(name, asked, track),
                             ran=worded(name, ran, track), why=f": {why.rstrip('.')}" if why else ""))
    differ = grouping.differ(lesson, first, last)
    matches = {}
    for c in lesson.compares:
        if differ and differ <= set(c.varies):
            matches.setdefault(c.metric, c)
    if not differ:
        say(SAME_JOB.format(a=first.name, b=last.name, verdict=say.compare(a, b)))
        return None
    if not matches:
        say(UNMATCHED.format(a=first.name, b=last.name, what=", ".join(sorted(differ))))
        return None
    changes = ", ".join(f"{k} {say.setting(k, worded(k, first.config.get(k), track))} → "
                        f"{say.setting(k, worded(k, last.config.get(k), track))}"
                        for k in sorted(alike.settings(first, last))) if lesson.changes else ""
    verdicts = [_judged(say, match, pair, (context, changes), said)
                for match in matches.values()]
    if any(outcome(v, Expect.SAME) is not Outcome.CANNOT_JUDGE for v in verdicts):
        for bar in lesson.limits:   # bars on the table, for a variant that was judged
            if id(bar) not in said and bar.where in (None, where) \
                    and bar.beyond(say.table[bar.column].iloc[say._row(last)]):
                said.add(id(bar))
                limit(say, bar, last, context)
    return next((v for m, v in zip(matches, verdicts) if m is Metric.SAMPLES_PER_S), None)


def _judged(say: Closing, match: Compare, pair, context, said: set) -> noise.Verdict:
    """Say one comparison's verdict, its outcome's paragraph and the caveats."""
    (a, b), (context, changes) = pair, context
    track, where = context
    first, last = a[-1], b[-1]
    verdict = _verdict(say, match, pair, changes)
    if (match.accuracy or match.gains) and "all at chance" not in said:
        points, change = say.accuracy(first, last)   # all at chance: said once (CHANCE)
        say(ACCURACY.format(a=first.name, b=last.name, change=change))
        if match.worse and points < 0 and noise.accuracy_verdict(first, last).is_effect \
                and ("worse", id(match)) not in said:
            said.add(("worse", id(match)))
            say(text_for(match.worse, track, where))
    found = outcome(verdict, match.expect(where))
    wait = metrics.data_wait_share(first)
    if match.feeds and verdict.kind == noise.Kind.FASTER and wait < 1 \
            and verdict.low > 1 / (1 - wait):
        say(BEYOND_WAIT.format(a=first.name, share=say.cell(first, "data_wait_share")))
        return verdict
    if found is not Outcome.CANNOT_JUDGE:
        said.add("judged")
    _outcome(say, match, found, context, said)
    if match.gains:
        gained = accuracy_outcome(first, last, match.gains)
        once(say, said, (id(match), "accuracy", gained),
             text_for(match.gained.get(gained, ""), track, where))
    if found is not Outcome.CANNOT_JUDGE and match.expect(where) is Expect.FASTER \
            and not match.feeds and not set(match.varies) & INPUT \
            and ("waited", first.name) not in said and wait > DATA_BOUND:
        said.add(("waited", first.name))
        say(WAITED.format(a=first.name, share=say.cell(first, "data_wait_share")))
    return verdict


def _verdict(say: Closing, match: Compare, pair, changes: str = "") -> noise.Verdict:
    """The verdict on samples/s or on an amount, said through its template."""
    a, b = pair
    first, last = a[-1], b[-1]
    if match.metric is Metric.SAMPLES_PER_S:
        verdict = say.compare(a, b, varies=match.varies)
        say(CHANGED.format(a=first.name, b=last.name, changes=changes, verdict=verdict)
            if changes else VERDICT.format(a=first.name, b=last.name, verdict=verdict))
        return verdict
    column, read = AMOUNTS[match.metric]
    ua, ub = memory.memory_of(first), memory.memory_of(last)
    verdict = say.compare_amounts(first, last, memory.widened(read(ua)), memory.widened(read(ub)),
                                  memory.how(ua, ub), column)
    template = NOT_READ if verdict.kind == noise.Kind.NOT_MEASURED else AMOUNT
    say(template.format(a=first.name, b=last.name, what=match.metric.value,
                        ca=say.cell(first, column), cb=say.cell(last, column),
                        verdict=noise.amount_sentence(verdict)))
    return verdict


def last_row(say: Closing, lesson: Lesson, run, context) -> None:
    """The last run's cells in one line (`Lesson.last_row`), and its cells' paragraphs."""
    i = len(say.table) - 1
    cells = [words.format(say.cell(i, column)) for column, words in lesson.last_row.items()
             if column in say.table.columns and not empty(say.table[column].iloc[i])]
    if cells:
        say(ROW.format(name=run.name, cells=", ".join(cells)))
    for column, means in lesson.by_sign.items():
        value = say.table[column].iloc[i] if column in say.table.columns else None
        sign = Sign.EMPTY if empty(value) else Sign.POSITIVE if value > 0 else Sign.OTHER
        if column in say.table.columns:
            paragraph(say, means.get(sign, ""), context)


def _ceilings(say: Closing, lesson: Lesson, runs, context) -> list:
    """Judge the ceilings, then every other run against the lower one; the other runs."""
    spec = lesson.ceilings
    ceilings = {setting(r, spec.setting): r for r in reversed(runs)   # the first run of each
                if setting(r, spec.setting) in spec.alone}
    others = [r for r in runs if setting(r, spec.setting) not in spec.alone]
    if not others:
        raise ValueError(f"runs={[r.name for r in runs]} holds only ceilings "
                         f"({spec.setting} in {list(spec.alone)}): add the run")
    ordered = sorted(ceilings.values(), key=metrics.samples_per_sec)
    apart = False
    if len(ordered) == 2:
        low, high = ordered
        both = say.compare(low, high, varies=spec.varies)
        apart = both.is_effect
        say(CEILINGS.format(a=low.name, b=high.name, verdict=both,
                            a_alone=spec.alone[setting(low, spec.setting)],
                            b_alone=spec.alone[setting(high, spec.setting)]))
    for run in others if ordered else ():
        lower = ordered[0]
        verdict = say.compare(lower, run, varies=spec.varies)
        say(PLACED.format(run=run.name, ceiling=lower.name, verdict=verdict,
                          share=say.ratio("samples_per_sec", lower, run, percent=True),
                          alone=spec.alone[setting(lower, spec.setting)]))
        place = {noise.Kind.FASTER: Place.ABOVE, noise.Kind.SLOWER: Place.BELOW,
                 noise.Kind.WITHIN_NOISE: Place.AT if apart else Place.AT_BOTH}
        paragraph(say, spec.means.get(place.get(verdict.kind, Place.CANNOT_JUDGE), ""), context)
    return others


def _columns(say: Closing, lesson: Lesson, names: list, context=(None, None),
             judged: bool = False) -> None:
    """The columns' lines (but of empty columns), then the marks' (after a verdict)."""
    for name, words in lesson.columns.items():
        cells_line(say, text_for(words, *context), name, enumerate(names))
    for name, words in lesson.marks.items():
        words = text_for(words, *context)
        marked = [n for n, m in zip(names, say.table.get(name, ()))
                  if isinstance(m, (bool, np.bool_)) and m]
        if words and judged and marked:
            say(MARKED.format(words=words, names=", ".join(f"'{n}'" for n in marked)))


def _bounds(say: Closing, lesson: Lesson, run, context, said: set) -> None:
    """The run's input ceiling against its compute ceiling, and the share of each it reached."""
    compute, feed = diagnose.find_ceilings(run, say.runs)
    if compute is None or feed is None:
        return
    verdict = say.compare_amounts(compute, feed, noise.block_rates(compute),
                                  noise.block_rates(feed),
                                  STEADY_BLOCKS.format(blocks=noise.BLOCKS), "samples_per_sec")
    say(CEILING.format(feed=feed.name, compute=compute.name,
                       verdict=noise.amount_sentence(verdict)))
    _outcome(say, lesson.bounds, outcome(verdict, lesson.bounds.expect(context[1])),
             context, said)
    say(REACHES.format(run=run.name,
                       feed=say.ratio("samples_per_sec", feed, run, percent=True),
                       compute=say.ratio("samples_per_sec", compute, run, percent=True)))
    rate = metrics.samples_per_sec(run)
    if any(rate > diagnose.ABOVE_CEILING * metrics.samples_per_sec(c) for c in (compute, feed)):
        paragraph(say, lesson.above_ceiling, context)


def _fastest(say: Closing, runs):
    """Say which run is fastest beyond the noise of every other; the one with most samples/s."""
    done = [r for r in runs if not diagnose.is_mock(r) and metrics.samples_per_sec(r) > 0
            and metrics.status(r) not in metrics.FAILED]
    if len(done) < 2:
        return done[0] if done else None
    top = max(done, key=metrics.samples_per_sec)
    others = sorted((r for r in done if r is not top), key=metrics.samples_per_sec, reverse=True)
    verdicts = [say.compare(r, top, varies=tuple(alike.settings(r, top))) for r in others]
    ties = [f"'{r.name}'" for r, v in zip(others, verdicts) if v.kind != noise.Kind.FASTER]
    say(NO_FASTEST.format(ties=", ".join(ties), top=top.name, next=others[0].name,
                          verdict=verdicts[0]) if ties else
        FASTEST.format(top=top.name, next=others[0].name, verdict=verdicts[0]))
    return top


def _outcome(say: Closing, match: Compare, found: Outcome, context, said: set) -> None:
    """Say the paragraph `match` declares for `found` where the runs ran, once."""
    once(say, said, (id(match), found), text_for(match.means.get(found, ""), *context))


def _rank(say: Closing, lesson: Lesson, best: dict, track) -> None:
    (small, (v_small, _)), (large, (v_large, _)) = sorted(
        best.items(), key=lambda kv: _number(setting(kv[1][1], lesson.rank_by)))
    order = noise.ranked(v_small, v_large)
    say(RANKED[order].format(x=small, y=large))
    paragraph(say, lesson.rank.get(order, ""), (track, None))


def _number(value) -> float:
    return float(value) if isinstance(value, (int, float)) else float("inf")
