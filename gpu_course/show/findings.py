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
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Mapping

import pandas as pd

from ..analyse import alike, anatomy, metrics, noise
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
    validation accuracy is judged against the baseline's too."""

    varies: tuple[str, ...]
    means: Mapping[Outcome, Text]
    gpu: Expect = Expect.FASTER
    cpu: Expect = Expect.SAME
    accuracy: bool = False

    def expect(self, where: Where) -> Expect:
        return self.gpu if where is Where.GPU else self.cpu


@dataclass(frozen=True)
class Quote:
    """A figure from a source (the talk), said beside the runs with its source named."""

    what: str          # e.g. "float16"
    value: float
    fmt: str = "{:,}"  # e.g. "{:,} samples/s"


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
class Limit:
    """A bar on a column of the table: a row whose cell is beyond it (`above`, else below)
    gets `text`, in words ("scaling efficiency") and `fmt` (cell and bar alike; None: the
    cell as the table writes it, the bar as "{:g}" does), where the runs ran on `where`
    (None: anywhere): said once, for the first row beyond it (in `judge`, the first
    judged variant; `row`: that row's key only)."""

    column: str
    bar: float
    text: Text
    above: bool = False
    where: Where | None = None
    words: str = ""
    fmt: str | None = None
    row: str | None = None

    def beyond(self, value) -> bool:
        value = float(value) if isinstance(value, (int, float)) else float("nan")
        return value > self.bar if self.above else value < self.bar


@dataclass(frozen=True)
class Mark:
    """A paragraph said once when a row of a table (not runs') has `column` among `values`:
    e.g. a benchmark's row "within the spread"."""

    column: str
    values: tuple
    text: Text


@dataclass(frozen=True)
class Column:
    """A paragraph on whether the table's `column` holds values: `present` said once when
    a row has one, `missing` when none has (or the table has no such column)."""

    column: str
    present: Text = ""
    missing: Text = ""


@dataclass(frozen=True)
class Reading:
    """What a table that is not the runs' (a benchmark's rows, a model's outputs) says,
    after it is shown: `text` (paragraphs, each said where its track and place give it
    one), a line of a column's cells (`columns`, as in a Lesson, the empty cells left
    out), a line of the rows grouped by a column's value (`groups`: {column: words}, the
    empty cells left out), a paragraph for a cell's value (`marks`), bars (`limits`),
    paragraphs on a column's having values (`about`) and quotes. key: the column that
    names its rows; empty: said when there is no table (None, or no rows)."""

    key: str
    text: tuple[Text, ...] = ()
    columns: Mapping[str, str] = field(default_factory=dict)
    marks: tuple[Mark, ...] = ()
    limits: tuple[Limit, ...] = ()
    quotes: tuple[Quote, ...] = ()
    source: str = "the talk"
    hardware: str = ""
    groups: Mapping[str, str] = field(default_factory=dict)
    about: tuple[Column, ...] = ()
    empty: Text = ""


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
    limits: bars on the table's columns (`Limit`), for a variant whose comparison was judged.
    about: paragraphs on whether the table's columns hold values (`Column`).
    notices: say what the records note ran otherwise than asked (their device_notice),
    once a notice, naming its runs. machine: say the machine the runs were measured on.
    A setting a comparison `varies` counts as a difference between two runs wherever
    their records hold it (the config, what ran, or their notes: a job's "workers")."""

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
    limits: tuple[Limit, ...] = ()
    about: tuple[Column, ...] = ()
    notices: bool = False
    machine: bool = False


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
QUOTED = "{source}: {figures}."   # quotes of no hardware (a Reading's)
COLUMN = "{words}: {cells}."
BOUND = "'{a}' was {bound}: {text}"
RANKED = {noise.Order.HIGHER: "{small} gained more than {large}, beyond both ranges.",
          noise.Order.LOWER: "{large} gained more than {small}, beyond both ranges.",
          noise.Order.WITHIN_NOISE: "Which of {small} and {large} gained more is within noise: "
                                    "the ranges of their best variants overlap."}
LIMIT = "'{b}': {words} {cell}, {side} {bar}: {text}"
GROUPS = "{words}: {groups}."
NOTICE = "What the records say ran otherwise than asked ({names}): {notice}"
MACHINE = "Measured on {machine} (from the run records)."
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
    _notes(say, lesson, runs, (track, where))
    _about(say, lesson.about, (track, where))
    notices: dict = {}
    for run in runs if lesson.notices else ():
        notice = (run.meta.get("notes") or {}).get("device_notice")
        if notice and run.name not in notices.setdefault(notice, []):
            notices[notice].append(run.name)
    for notice, names in notices.items():
        say(NOTICE.format(names=", ".join(names), notice=say.quote("the records", notice)))
    if lesson.machine:
        from .plots import hardware_caption
        say(MACHINE.format(machine=say.quote("the run records", hardware_caption(runs))))
    if where is Where.CPU and lesson.cpu:
        say(_text(lesson.cpu, track, where))
    if lesson.quotes:
        figures = "; ".join(f"{q.what} {say.quote(lesson.source, q.value, q.fmt)}"
                            for q in lesson.quotes)
        say(QUOTES.format(source=lesson.source.capitalize(), hardware=lesson.hardware,
                          figures=figures))
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
    went = Expect.FASTER if verdict.kind == noise.Kind.FASTER else Expect.SLOWER
    return Outcome.EXPECTED if went is expect else Outcome.OPPOSITE


def _compare(say: Closing, lesson: Lesson, pair, context, said: set):
    """Say the comparison of a variant's repeats against its baseline's; its verdict,
    or None where the lesson compares nothing between them."""
    (a, b), (track, where) = pair, context
    first, last = a[-1], b[-1]
    for setting, (asked, ran, why) in metrics.ran_as(last).items():
        say(ASKED.format(b=last.name, setting=setting, asked=asked, ran=ran,
                         why=f": {why.rstrip('.')}" if why else ""))
    differ = set(alike.differences(first, last)) - {alike.Aspect.LOAD}
    differ |= {v for c in lesson.compares for v in c.varies
               if _setting(first, v) != _setting(last, v)}   # recorded beyond the config
    match = next((c for c in lesson.compares if differ and differ <= set(c.varies)), None)
    if not differ:
        say(SAME_JOB.format(a=first.name, b=last.name, verdict=say.compare(a, b)))
        return None
    if match is None:
        say(UNMATCHED.format(a=first.name, b=last.name, what=", ".join(sorted(differ))))
        return None
    verdict = say.compare(a, b, varies=match.varies)
    say(VERDICT.format(a=first.name, b=last.name, verdict=verdict))
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
    if found is not Outcome.CANNOT_JUDGE:
        for limit in lesson.limits:
            if id(limit) not in said and limit.where in (None, where) \
                    and limit.beyond(say.table[limit.column].iloc[say._row(last)]):
                said.add(id(limit))
                _limit(say, limit, last, (track, where))
    return verdict


def _limit(say: Closing, limit: Limit, row, context) -> None:
    say(LIMIT.format(b=say._name(say._row(row)), words=limit.words or limit.column,
                     cell=say.cell(row, limit.column, limit.fmt),
                     side="above" if limit.above else "below",
                     bar=say.setting(f"the bar on {limit.column}", limit.bar,
                                     limit.fmt or "{:g}"),
                     text=_text(limit.text, *context)))


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
    a part of a part), else its notes (a parameter-server job's "workers")."""
    if name in (run.config or {}):
        return run.config[name]
    for kind in ("ran", "notes"):
        value = run.meta.get(kind) or {}
        for part in name.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is not None:
            return value
    return None


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


def read(reading: Reading, table: pd.DataFrame, track=None, where: Where | None = None,
         show: bool = True) -> Closing:
    """`reading`'s sentences on `table` (a benchmark's or a model's rows, not runs), for
    `track` and `where` (None: neither): the table shown first (show=False: not), then
    printed, and returned as the `Closing` that said them."""
    if table is None or not len(table):
        say = Closing(pd.DataFrame([{reading.key: "no rows"}]), key=reading.key)
        say(_text(reading.empty, track, where) or "Nothing to read.")
        return say
    if show:
        from . import tables
        _display(tables.show(table))
    say = Closing(table, key=reading.key)
    for text in reading.text:
        if _text(text, track, where):
            say(_text(text, track, where))
    for name, words in reading.columns.items():
        rows = [i for i in range(len(table)) if not pd.isna(table[name].iloc[i])]
        if rows:
            say(COLUMN.format(words=words, cells=", ".join(
                f"'{say._name(i)}' {say.cell(i, name)}" for i in rows)))
    for name, words in reading.groups.items():
        groups: dict = {}
        for i, value in enumerate(table[name]):
            if not pd.isna(value) and value != "":
                groups.setdefault(str(value), []).append(f"'{say._name(i)}'")
        if groups:
            say(GROUPS.format(words=words, groups="; ".join(
                f"{value}: {', '.join(names)}" for value, names in groups.items())))
    for mark in reading.marks:
        if any(v in mark.values for v in table[mark.column]):
            say(_text(mark.text, track, where))
    for limit in reading.limits:
        beyond = [i for i in range(len(table)) if limit.where in (None, where)
                  and limit.row in (None, say._name(i))
                  and limit.beyond(table[limit.column].iloc[i])]
        if beyond:
            _limit(say, limit, beyond[0], (track, where))
    _about(say, reading.about, (track, where))
    if reading.quotes:
        figures = "; ".join(f"{q.what} {say.quote(reading.source, q.value, q.fmt)}"
                            for q in reading.quotes)
        say((QUOTES if reading.hardware else QUOTED).format(
            source=reading.source.capitalize(), hardware=reading.hardware, figures=figures))
    return say


def _about(say: Closing, about, context) -> None:
    for column in about:
        held = column.column in say.table and say.table[column.column].notna().any()
        text = _text(column.present if held else column.missing, *context)
        if text:
            say(text)


def _display(obj) -> None:
    """A table in a notebook as HTML, elsewhere as text."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        print(obj)
    else:
        display(obj)


def paragraphs(lesson: Lesson | Reading) -> list[str]:
    """Every paragraph `lesson` (or a `Reading`) declares (each track's and place's), for
    checks: a paragraph explains an outcome and carries no number (`closing.measurements`)."""
    if isinstance(lesson, Reading):
        texts = [lesson.text, [m.text for m in lesson.marks], [x.text for x in lesson.limits],
                 [lesson.empty], [c.present for c in lesson.about],
                 [c.missing for c in lesson.about]]
        return [t for text in texts for group in text
                for t in ([group] if isinstance(group, str) else group.values()) if t]
    texts = [c.means.values() for c in lesson.compares] + [lesson.bound.values()] + \
        [[lesson.cpu, lesson.empty]] + [[n.text for n in lesson.notes]] + \
        [[x.text for x in lesson.limits]] + [[c.present for c in lesson.about]] + \
        [[c.missing for c in lesson.about]]
    out = []
    for group in texts:
        for text in group:
            out += [text] if isinstance(text, str) else list(text.values())
    return [t for t in out if t]
