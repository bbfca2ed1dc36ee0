"""One engine for every lesson's closing sentences.

A lesson declares, as data, what it compares and what each outcome means (`Lesson`,
`Compare`, `Quote`, `Note`); `judge` reads the runs' records, judges each comparison and
words it through the few fixed templates below. Numbers reach a sentence only through
those templates, from the table's cells, noise verdicts and declared quotes, so every
number printed is cited by construction (`closing.Closing` checks it once more).

What the engine does for every lesson, the same way:
- groups the runs: repeats share a name; `group_by` keeps, say, each network's runs apart,
  each group judged against its own baseline;
- tells asked from ran (`metrics.ran_as`): a setting that did not run as asked is said,
  and a variant that then ran as its baseline did is two identical jobs, never the change;
- refuses a verdict across runs that differ in more than the comparison names (the
  machine's load among them: `noise.compare`), and on too few steady steps;
- maps the verdict to an `Outcome` against what the lesson expects where the runs ran
  (a GPU or a CPU) and says that outcome's paragraph once;
- adds the generic caveats once: a baseline that waited for its data, accuracy at
  chance, no GPU; and the talk's figures beside the runs, naming their source.
- judges samples/s by default, or an amount (`Metric`: bytes of memory, where more is
  neither better nor worse) on each run's own readings.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Mapping

import pandas as pd

from ..analyse import alike, anatomy, memory, metrics, noise
from . import report
from .closing import Closing


class Where(StrEnum):
    """Where the runs trained: what a lesson expects differs between the two."""

    GPU = "gpu"
    CPU = "cpu"


class Expect(StrEnum):
    """What a lesson expects of a variant's samples/s against its baseline's."""

    FASTER = "faster"
    SLOWER = "slower"
    SAME = "the same"       # nothing to show here (a GPU's effect, on a CPU)
    LESS = "less"           # an amount (`Metric`) that the variant should need less of
    MORE = "more"


class Metric(StrEnum):
    """What a comparison judges: samples/s (higher is better), or an amount of memory a
    run's record notes (`analyse.memory`), judged on its measured steps."""

    SAMPLES_PER_S = "samples/s"
    PEAK = "peak memory"
    HELD = "memory held between steps"
    ACTIVATIONS = "activations at the peak"
    ACTIVATIONS_PER_IMAGE = "activations per image"


class Sign(StrEnum):
    """Whether a table cell is above zero: `Lesson.by_sign` picks a paragraph by it."""

    POSITIVE = "above zero"
    OTHER = "zero or below"
    EMPTY = "empty"         # not measured, or nothing to compare


class Outcome(StrEnum):
    """What a comparison found, against what the lesson expects."""

    EXPECTED = "expected"          # an effect the way the lesson expects, or none where it expects none
    NONE = "none"                  # no difference beyond noise, where one was expected
    OPPOSITE = "opposite"          # an effect against the expectation
    CANNOT_JUDGE = "cannot judge"  # too few steady steps, runs unlike, or not measured


# a paragraph: one text, or one a track ("gluon", "pytorch") and `Where` (the most specific wins)
Text = str | Mapping


@dataclass(frozen=True)
class Compare:
    """One comparison a lesson makes: a variant that changes `varies` (settings' names)
    against the baseline, what the lesson expects of its samples/s on a GPU and on a
    CPU, and a paragraph (no numbers in it) for each outcome. accuracy: the variant's
    validation accuracy is judged against the baseline's too. metric: what is judged
    (an amount's expectations are LESS, MORE or SAME); a variant gets the first matching
    comparison of each metric."""

    varies: tuple[str, ...]
    means: Mapping[Outcome, Text]
    gpu: Expect = Expect.FASTER
    cpu: Expect = Expect.SAME
    accuracy: bool = False
    metric: Metric = Metric.SAMPLES_PER_S
    # measured rows (`judge_rows`): the variant's settings that pick this comparison, the
    # baseline's (default the lesson's), table columns said a -> b beside the verdict
    # ({column: words}), and rankings of its verdicts
    when: Mapping = field(default_factory=dict)
    against: Mapping = field(default_factory=dict)
    cells: Mapping[str, str] = field(default_factory=dict)
    ranks: tuple["Rank", ...] = ()

    def expect(self, where: Where) -> Expect:
        return self.gpu if where is Where.GPU else self.cpu


@dataclass(frozen=True)
class Quote:
    """A figure from a source (the talk), said beside the runs with its source named."""

    what: str          # e.g. "float16"
    value: float
    fmt: str = "{:,}"  # e.g. "{:,} samples/s"
    when: Mapping = field(default_factory=dict)   # judge_rows: said where a row has these settings


@dataclass(frozen=True)
class Note:
    """A paragraph said once when any run's record has `setting` (its config, else what
    ran) among `values`: e.g. a tracing-only compile backend."""

    setting: str
    values: tuple
    text: Text
    judged: bool = True   # False: the runs did not run the lesson's change as meant (a
                          # tracing-only backend): their verdicts get no outcome paragraph


@dataclass(frozen=True)
class Lesson:
    """What a lesson compares, and what its outcomes mean (see the module).

    compares: the comparisons, first match wins; a variant that matches none is not judged.
    baseline: the settings that pick the baseline group (its first match), else the first.
    group_by: a setting whose values split the runs, each group with its own baseline.
    quotes/source/hardware: the talk's figures, said once beside the runs.
    bound: a paragraph for what held the baseline back (`anatomy.Bound`), said once.
    cpu: a paragraph said once when no run had a GPU. empty: said when there are no runs.
    notes: paragraphs said once when a run's record has a setting's value.
    columns: {table column: words}: one line listing that column's cell for every run.
    rank_by/rank: with two groups, the best verdict of the group with the smaller
    `rank_by` (a setting or what ran, e.g. "network.parameters") against the other's,
    and a paragraph for each `noise.Order`.
    last_row: {table column: words with {} for the cell}: one line of the last run's
    cells (a column missing from the table, or an empty cell, is left out).
    by_sign: {table column: {Sign: paragraph}}: said by the last run's cell (Sign.EMPTY
    where it is empty; nothing where the table lacks the column)."""

    compares: tuple[Compare, ...]
    baseline: Mapping = field(default_factory=dict)
    group_by: str | None = None
    quotes: tuple[Quote, ...] = ()
    source: str = "the talk"
    hardware: str = ""
    bound: Mapping = field(default_factory=dict)
    cpu: Text = ""
    empty: Text = ""
    notes: tuple[Note, ...] = ()
    columns: Mapping[str, str] = field(default_factory=dict)
    rank_by: str = ""
    rank: Mapping = field(default_factory=dict)
    last_row: Mapping[str, str] = field(default_factory=dict)
    by_sign: Mapping[str, Mapping] = field(default_factory=dict)
    # measured rows (`judge_rows`): flagged rows, paragraphs for optional packages the
    # caller could not import, the table column a verdict's ratio is, and what gives a
    # row more samples (said where too few gave no verdict)
    flags: tuple["Flag", ...] = ()
    missing: Mapping[str, Text] = field(default_factory=dict)
    column: str = "samples_per_sec"
    more: str = ""
    # judge_rows: the table column that names the rows, and paragraphs for what the caller
    # found beside the rows (`Context.facts`, keys of this mapping), said in its order
    key: str = "rung"
    facts: Mapping[str, Text] = field(default_factory=dict)


@dataclass(frozen=True)
class Rank:
    """Within one comparison, its verdicts at the two ends of setting `by` (their other
    settings alike; `where`: only rows with these settings) ranked, and a paragraph for
    each `noise.Order`. The ends: a number's smallest and largest value, else the rows
    that gained most and least; said where either end's verdict is an effect."""

    by: str
    means: Mapping = field(default_factory=dict)
    where: Mapping = field(default_factory=dict)


@dataclass(frozen=True)
class Flag:
    """A table column whose value flags a row (outputs that differ, a long tail, a busy
    machine): each flagged row's `cells` ({column: words}; an empty cell left out) said, the
    last row of a value closed by its paragraph. worst: a column; only the flagged row with its largest value
    is said."""

    column: str
    means: Mapping[str, Text]
    cells: Mapping[str, str] = field(default_factory=dict)
    worst: str = ""


@dataclass(frozen=True)
class Row:
    """A measurement that is not a training run (a served network's passes, a benchmark):
    its row's name in the table, the settings it ran with, its own repeats (`samples`, one
    value a block, more is better; fewer than `noise.BLOCKS`: too few to judge), what they
    are (`how`: "5 blocks of 8 passes") and whether it ran on a GPU."""

    name: str
    settings: Mapping
    samples: tuple = ()
    how: str = ""
    gpu: bool = False


@dataclass(frozen=True)
class Context:
    """What the caller knows beside the rows: the CPU's facts (`env.report.cpu_facts`),
    and the optional packages it could not import (keys of `Lesson.missing`)."""

    cpu: Mapping | None = None
    missing: tuple = ()
    facts: tuple = ()     # keys of `Lesson.facts`: what the caller found (a runtime loaded)


# -- the templates: the only sentences with numbers -----------------------------------------
VERDICT = "'{b}' against '{a}': {verdict}."
ASKED = "'{b}' asked for {setting} {asked} and ran {ran}{why}."
SAME_JOB = ("'{b}' against '{a}': {verdict}; both ran as '{a}' did, two identical jobs: "
            "the ratio measures the machine, not the change.")
UNMATCHED = "'{b}' differs from '{a}' in {what}, which this lesson does not compare: no verdict."
ACCURACY = "'{b}' against '{a}' in accuracy: {change}."
WAITED = ("'{a}' waited for its data {share} of its steady time: a faster step cannot show "
          "until the input pipeline keeps up (lessons 02 and 09).")
QUOTES = "{source}, on {hardware}: {figures}."
COLUMN = "{words}: {cells}."
BOUND = "'{a}' was {bound}: {text}"
RANKED = {noise.Order.HIGHER: "{small} gained more than {large}, beyond both ranges.",
          noise.Order.LOWER: "{large} gained more than {small}, beyond both ranges.",
          noise.Order.WITHIN_NOISE: "Which of {small} and {large} gained more is within noise: "
                                    "the ranges of their best variants overlap."}
AMOUNT = "'{b}' against '{a}', {what}: {cb} against {ca} MiB, {verdict}."
NOT_READ = "'{b}' against '{a}', {what}: not measured."
ROW = "'{name}': {cells}."
# an amount: (its table column, its readings from a run's memory notes)
AMOUNTS = {Metric.PEAK: ("peak_mib", lambda u: u.peak),
           Metric.HELD: ("held_mib", lambda u: u.held),
           Metric.ACTIVATIONS: ("activations_mib", lambda u: u.activations()),
           Metric.ACTIVATIONS_PER_IMAGE: ("activations_per_image_mib", memory.per_image)}
CELLS = "'{b}' against '{a}': {cells}; {verdict}."
TOO_FEW = "{ratio}, too few measured to judge ({more})"
RANKED_ROWS = {noise.Order.HIGHER: "'{first}' gained more than '{last}', beyond both ranges.",
               noise.Order.LOWER: "'{last}' gained more than '{first}', beyond both ranges.",
               noise.Order.WITHIN_NOISE: "Which of '{first}' and '{last}' gained more is "
                                         "within noise: their ranges overlap."}
FLAGGED = "'{row}': {value} ({cells})."
CPU_FACTS = ("This CPU ({source}): {model}, {logical} logical cores ({physical} physical), "
             "{usable} usable by this process.")
DATA_BOUND = 0.5   # a baseline that waited for data more than this share of its steady time


def judge(lesson: Lesson, runs, table: pd.DataFrame | None = None) -> Closing:
    """`lesson`'s sentences on `runs` (a list; repeats share a name), citing `table` (one
    row a run, in order; default the ladder table): printed, and returned as the
    `Closing` that said them."""
    runs = list(runs or [])
    if not runs:
        say = Closing(pd.DataFrame([{"rung": "no runs"}]))
        say(_text(lesson.empty, None, None) or "No runs to conclude on.")
        return say
    table = report.ladder_table(runs) if table is None else table
    varies = tuple(sorted({v for c in lesson.compares for v in c.varies}))
    say = Closing(table, runs, varies=varies)
    track, where = metrics.engine(runs[0]), _where(runs)
    judged = all(n.judged or not _fires(n, runs) for n in lesson.notes)
    said: set = set() if judged else {"no outcomes"}
    best = {}
    for key, group in _split(runs, lesson.group_by).items():
        base = _baseline(group, lesson.baseline)
        verdicts = [_compare(say, lesson, (group[base], variant), (track, where), said)
                    for name, variant in group.items() if name != base]
        verdicts = [v for v in verdicts if v is not None and v.kind != noise.Kind.UNLIKE]
        if verdicts:
            best[key] = (max(verdicts, key=lambda v: v.ratio), group[base][-1])
        if lesson.bound:
            _bound(say, lesson, group[base][-1], track)
    if lesson.rank and judged and len(best) == 2:
        _rank(say, lesson, best, track)
    for name, column in lesson.columns.items():
        say(COLUMN.format(words=column, cells=", ".join(
            f"'{r.name}' {say.cell(i, name)}" for i, r in enumerate(runs))))
    _last_row(say, lesson, runs[-1], (track, where))
    _notes(say, lesson, runs, (track, where))
    if where is Where.CPU and lesson.cpu:
        say(_text(lesson.cpu, track, where))
    if lesson.quotes:
        figures = "; ".join(f"{q.what} {say.quote(lesson.source, q.value, q.fmt)}"
                            for q in lesson.quotes)
        say(QUOTES.format(source=lesson.source.capitalize(), hardware=lesson.hardware,
                          figures=figures))
    return say


def outcome(verdict: noise.Verdict, expect: Expect) -> Outcome:
    """The outcome of `verdict` where the lesson expects `expect` (for an amount, FASTER
    reads more and SLOWER less)."""
    if verdict.kind in (noise.Kind.TOO_FEW, noise.Kind.UNLIKE, noise.Kind.NOT_MEASURED):
        return Outcome.CANNOT_JUDGE
    if verdict.kind == noise.Kind.WITHIN_NOISE:
        return Outcome.EXPECTED if expect is Expect.SAME else Outcome.NONE
    up = verdict.kind == noise.Kind.FASTER
    went = (Expect.MORE if up else Expect.LESS) if expect in (Expect.LESS, Expect.MORE) \
        else (Expect.FASTER if up else Expect.SLOWER)
    return Outcome.EXPECTED if went is expect else Outcome.OPPOSITE


def _compare(say: Closing, lesson: Lesson, pair, context, said: set):
    """Say the comparison of a variant's repeats against its baseline's; its verdict,
    or None where the lesson compares nothing between them."""
    (a, b), (track, where) = pair, context
    first, last = a[-1], b[-1]
    for setting, (asked, ran, why) in metrics.ran_as(last).items():
        say(ASKED.format(b=last.name, setting=setting, asked=asked, ran=ran,
                         why=f": {why.rstrip('.')}" if why else ""))
    named = {v for c in lesson.compares for v in c.varies}
    differ = set(alike.differences(first, last)) - {alike.Aspect.LOAD} | {
        k for k in named if _note(first, k) != _note(last, k)}
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
    verdicts = [_judged(say, match, pair, context, said) for match in matches.values()]
    return next((v for m, v in zip(matches, verdicts) if m is Metric.SAMPLES_PER_S), None)


def _judged(say: Closing, match: Compare, pair, context, said: set) -> noise.Verdict:
    """Say one comparison's verdict, its outcome's paragraph (once) and the caveats."""
    (a, b), (track, where) = pair, context
    first, last = a[-1], b[-1]
    verdict = _verdict(say, match, pair)
    if match.accuracy:
        say(ACCURACY.format(a=first.name, b=last.name, change=say.accuracy(first, last)[1]))
    found = outcome(verdict, match.expect(where))
    text = _text(match.means.get(found, ""), track, where)
    if text and (id(match), found) not in said and "no outcomes" not in said:
        said.add((id(match), found))
        say(text)
    if found is not Outcome.CANNOT_JUDGE and match.expect(where) is Expect.FASTER \
            and ("waited", first.name) not in said \
            and metrics.data_wait_share(first) > DATA_BOUND:
        said.add(("waited", first.name))
        say(WAITED.format(a=first.name, share=say.cell(first, "data_wait_share")))
    return verdict


def _verdict(say: Closing, match: Compare, pair) -> noise.Verdict:
    """The verdict on samples/s (noise.compare of the repeats) or on an amount (the two
    runs' measured steps), said through its template."""
    a, b = pair
    first, last = a[-1], b[-1]
    if match.metric is Metric.SAMPLES_PER_S:
        verdict = say.compare(a, b, varies=match.varies)
        say(VERDICT.format(a=first.name, b=last.name, verdict=verdict))
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


def _last_row(say: Closing, lesson: Lesson, run, context) -> None:
    """The last run's cells in one line (`Lesson.last_row`), and its cells' paragraphs."""
    i = len(say.table) - 1
    cells = [words.format(say.cell(i, column)) for column, words in lesson.last_row.items()
             if column in say.table.columns and not _empty(say.table[column].iloc[i])]
    if cells:
        say(ROW.format(name=run.name, cells=", ".join(cells)))
    for column, means in lesson.by_sign.items():
        value = say.table[column].iloc[i] if column in say.table.columns else None
        sign = Sign.EMPTY if _empty(value) else Sign.POSITIVE if value > 0 else Sign.OTHER
        text = _text(means.get(sign, ""), *context) if column in say.table.columns else ""
        if text:
            say(text)


def _empty(value) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _note(run, name: str):
    """A setting a run's loop noted in its record (e.g. "checkpoint"), where it has one."""
    return (run.meta.get("notes") or {}).get(name)


def _rank(say: Closing, lesson: Lesson, best: dict, track) -> None:
    (small, (v_small, _)), (large, (v_large, _)) = sorted(
        best.items(), key=lambda kv: _number(_setting(kv[1][1], lesson.rank_by)))
    order = noise.ranked(v_small, v_large)
    say(RANKED[order].format(small=small, large=large))
    text = _text(lesson.rank.get(order, ""), track, None)
    if text:
        say(text)


def _bound(say: Closing, lesson: Lesson, run, track) -> None:
    bound = anatomy.anatomy(run).bound
    text = _text(lesson.bound.get(bound, ""), track, None)
    if text:
        say(BOUND.format(a=run.name, bound=bound, text=text))


def _notes(say: Closing, lesson: Lesson, runs, context) -> None:
    for note in lesson.notes:
        if _fires(note, runs):
            say(_text(note.text, *context))


def _fires(note: Note, runs) -> bool:
    return any(_setting(r, note.setting) in note.values for r in runs)


def _setting(run, name: str):
    """A setting of the run's config, else what its record says ran ("network.parameters":
    a part of a part)."""
    if name in (run.config or {}):
        return run.config[name]
    value = run.meta.get("ran") or {}
    for part in name.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return _note(run, name) if value is None else value


def _number(value) -> float:
    return float(value) if isinstance(value, (int, float)) else float("inf")


def _where(runs) -> Where:
    return Where.GPU if any(metrics.on_gpu(r) for r in runs) else Where.CPU


def _split(runs, by: str | None) -> dict:
    """The runs in groups of `by`'s value (one group without it), each {name: repeats}."""
    groups: dict = {}
    for run in runs:
        key = _setting(run, by) if by else None
        groups.setdefault(key, {}).setdefault(run.name, []).append(run)
    return groups


def _baseline(group: dict, settings: Mapping) -> str:
    for name, repeats in group.items():
        if all(_setting(repeats[-1], k) == v for k, v in settings.items()) \
                and not any(k in metrics.ran_as(repeats[-1]) for k in settings):
            return name
    if settings:
        raise ValueError(f"no run has {dict(settings)} (as asked, and as it ran) to judge the "
                         f"others against; the runs: {list(group)}")
    return next(iter(group))


def _text(text: Text, track, where) -> str:
    """The paragraph for this track and place: a mapping's most specific entry."""
    if isinstance(text, str):
        return text
    for key in ((track, where), track, where):
        if key in text:
            return text[key]
    return ""


def judge_rows(lesson: Lesson, rows, table: pd.DataFrame | None,
               context: Context = Context()) -> Closing:
    """`lesson`'s sentences on measured `rows` (`Row`s, one a row of `table`, in order):
    the CPU's facts and the caller's (`Context.facts`), each comparison's verdicts on the
    rows' own samples (a variant row against the row with its comparison's baseline
    settings, alike in the rest) and its ranks, the rows' cells of `Lesson.columns` (the
    empty and a column the table lacks left out), the last row's line (`Lesson.last_row`, `by_sign`; the table's last
    row is the last Row's), the flagged rows, the missing packages and the talk's figures;
    printed, and returned as the `Closing` that said them."""
    rows = list(rows or [])
    say = Closing(table if rows else pd.DataFrame([{lesson.key: "no rows"}]), key=lesson.key)
    where = Where.GPU if any(r.gpu for r in rows) else Where.CPU
    said: set = set()
    if context.cpu:
        cpu = context.cpu
        say(CPU_FACTS.format(source="/proc/cpuinfo", model=say.quote("/proc/cpuinfo",
                             cpu["model"]), logical=cpu["logical"], physical=cpu["physical"],
                             usable=cpu["usable"]))
    for fact in context.facts:
        _once(say, said, ("fact", fact), _text(lesson.facts.get(fact, ""), None, where))
    judged = []
    for group in _split_rows(rows, lesson.group_by):
        judged += [(c, b, _judge_row(say, lesson, c, (a, b), where, said))
                   for c in lesson.compares for b in group
                   for a in [_row_baseline(lesson, c, b, group)] if a is not None]
    for compare in lesson.compares:
        for rank in compare.ranks:
            _rank_rows(say, rank, [(b, v) for c, b, v in judged if c is compare and v], said)
    for column, words in lesson.columns.items():
        cells = [f"'{r.name}' {say.cell(r.name, column)}" for r in rows
                 if column in say.table.columns and not _empty(
                     say.table[column].iloc[list(say.table[say.key]).index(r.name)])]
        if cells:
            say(COLUMN.format(words=words, cells=", ".join(cells)))
    if rows:
        _last_row(say, lesson, rows[-1], (None, where))
    for flag in lesson.flags if rows else ():
        _flag(say, flag, where)
    texts = [lesson.empty] if not rows else [lesson.cpu] if where is Where.CPU else []
    texts += [lesson.missing[m] for m in context.missing if m in lesson.missing]
    for text in texts:
        if _text(text, None, where):
            say(_text(text, None, where))
    quotes = [q for q in lesson.quotes if not rows or any(_has(r, q.when) for r in rows)]
    if quotes:
        figures = "; ".join(f"{q.what} {say.quote(lesson.source, q.value, q.fmt)}"
                            for q in quotes)
        say(QUOTES.format(source=lesson.source.capitalize(), hardware=lesson.hardware,
                          figures=figures))
    return say


def _split_rows(rows, by: str | None) -> list[list]:
    groups: dict = {}
    for row in rows:
        groups.setdefault(row.settings.get(by) if by else None, []).append(row)
    return list(groups.values())


def _has(row: Row, settings: Mapping) -> bool:
    return all(row.settings.get(k) == v for k, v in settings.items())


def _row_baseline(lesson: Lesson, compare: Compare, b: Row, rows) -> Row | None:
    """The row b is judged against in `compare`: the one with the comparison's baseline
    settings, alike with b in every setting the comparison does not vary; None where b is
    not the comparison's variant or no such row was measured."""
    against = compare.against or lesson.baseline
    if not _has(b, compare.when) or _has(b, against):
        return None
    keys = (set(b.settings) | {k for r in rows for k in r.settings}) - set(compare.varies)
    return next((a for a in rows if _has(a, against)
                 and all(a.settings.get(k) == b.settings.get(k) for k in keys)), None)


def _judge_row(say: Closing, lesson: Lesson, compare: Compare, pair, where: Where, said: set):
    """Say b's verdict against a with the comparison's cells, and the paragraph of its
    outcome once; the verdict, or None with too few samples."""
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
    _once(say, said, (id(compare), found), _text(compare.means.get(found, ""), None, where))
    return verdict


def _rank_rows(say: Closing, rank: Rank, judged, said: set) -> None:
    parts: dict = {}
    for row, verdict in judged:
        if _has(row, rank.where):
            key = tuple(sorted((k, str(v)) for k, v in row.settings.items() if k != rank.by))
            parts.setdefault(key, []).append((row, verdict))
    for part in (p for p in parts.values()
                 if len(p) > 1 and any(v.is_effect for _, v in p)):   # else nothing to rank
        numeric = all(isinstance(r.settings.get(rank.by), (int, float)) for r, _ in part)
        order = (lambda p: _number(p[0].settings.get(rank.by))) if numeric else \
            (lambda p: -p[1].ratio)
        (first, v), (last, w) = min(part, key=order), max(part, key=order)
        found = noise.ranked(v, w)
        say(RANKED_ROWS[found].format(first=first.name, last=last.name))
        _once(say, said, (id(rank), found), _text(rank.means.get(found, ""), None, None))


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
                if c in frame.columns and not _empty(frame[c].iloc[i])))
            text = _text(flag.means[value], None, where) if i == same[-1] else ""
            say(line.replace(" ().", ".") + (f" {text}" if text else ""))


def _once(say: Closing, said: set, key, text: str) -> None:
    if text and key not in said:
        said.add(key)
        say(text)


def paragraphs(lesson: Lesson) -> list[str]:
    """Every paragraph `lesson` declares (each track's and place's), for checks: a
    paragraph explains an outcome and carries no number (`closing.measurements`)."""
    texts = [c.means.values() for c in lesson.compares] + [lesson.bound.values()] + \
        [[lesson.cpu, lesson.empty]] + [[n.text for n in lesson.notes]] + \
        [m.values() for m in lesson.by_sign.values()] + \
        [r.means.values() for c in lesson.compares for r in c.ranks] + \
        [f.means.values() for f in lesson.flags] + [lesson.missing.values()] + \
        [lesson.facts.values()]
    out = []
    for group in texts:
        for text in group:
            out += [text] if isinstance(text, str) else list(text.values())
    return [t for t in out if t]
