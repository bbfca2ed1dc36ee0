"""One engine for every lesson's closing sentences.

A lesson declares, as data, what it compares and what each outcome means (`Lesson`,
`Compare`, `Quote`, `Note`); `judge` reads the runs' records, judges each comparison and
words it through the few fixed templates below. Numbers reach a sentence only through
those templates, from the table's cells, noise verdicts and declared quotes, so every
number printed is cited by construction (`closing.Closing` checks it once more).

What the engine does for every lesson, the same way:
- groups the runs: repeats share a name; `group_by` keeps, say, each network's runs apart,
  each group judged against its own baseline (or, `chain`, each run against the one before;
  `pairs`, two variants that differ in one setting against each other);
- tells asked from ran (`metrics.ran_as`): a setting that did not run as asked is said,
  and a variant that then ran as its baseline did is two identical jobs, never the change;
- refuses a verdict across runs that differ in more than the comparison names (the
  machine's load among them: `noise.compare`), and on too few steady steps;
- maps the verdict to an `Outcome` against what the lesson expects where the runs ran
  (a GPU or a CPU) and says that outcome's paragraph once; the same for accuracy (`Gain`);
- adds the generic caveats once: a baseline that waited for its data (unless the change is
  to the input itself), every run's accuracy at chance, a machine another program shared,
  no GPU; and the talk's figures beside the runs, naming their source;
- reads mock runs as a run's ceilings (`Lesson.ceilings`, `Lesson.bounds`), never as variants;
- judges samples/s by default, or an amount (`Metric`: bytes of memory, where more is
  neither better nor worse) on each run's own readings; `judge_table` judges a table
  that is not one row a run (timed passes: `Samples`) the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from ..analyse import alike, anatomy, diagnose, memory, metrics, noise
from ..config import worded
from ..env import cpu
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


class Gain(StrEnum):
    """What a lesson expects of a variant's validation accuracy against its baseline's."""

    HIGHER = "higher"
    LOWER = "lower"
    SAME = "the same"


class Versus(StrEnum):
    """Which variants of a group are judged against its baseline."""

    EACH = "each"   # every variant
    BEST = "best"   # the fastest variant only (a sweep: the best count against the first)


class Place(StrEnum):
    """Where a run sits against the lower of its ceilings (`Ceilings`)."""

    AT = "at"                      # within its range, the ceilings apart: it sets the pace
    AT_BOTH = "at both"            # within its range, the ceilings within each other's noise
    BELOW = "below"                # below it beyond both ranges: neither ceiling holds the run
    ABOVE = "above"                # above it beyond both ranges: which a run cannot be
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
    gains: Gain | None = None          # the accuracy expected: its verdict is said, and ...
    gained: Mapping = field(default_factory=dict)   # ... its Outcome's paragraph (no number)
    feeds: bool = False   # the change only feeds the step (the input pipeline): a gain beyond
                          # what removing all the baseline's data wait buys is not credited
    worse: Text = ""        # said once where the variant's accuracy is lower beyond noise

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
    ran, else what its loop noted; or a function of the run, e.g. a state measured from its
    notes) among `values`: e.g. a tracing-only compile backend."""

    setting: str | Callable
    values: tuple
    text: Text
    judged: bool = True   # False: the runs did not run the lesson's change as meant (a
                          # tracing-only backend): their verdicts get no outcome paragraph


@dataclass(frozen=True)
class Requires:
    """A paragraph said once when a run's record has `setting` among `values`: whether the
    first run's CPU (its record's hardware.cpu_features, never this machine's) has
    `capability`, `has` or `lacks`, then `cpu.supports`' reason."""

    capability: cpu.Capability
    setting: str
    values: tuple
    has: Text
    lacks: Text


@dataclass(frozen=True)
class Ceilings:
    """Runs that bound the lesson's run instead of varying it, picked by `setting`'s value
    ({value: what that ceiling runs alone}, e.g. {"trainer": "the input pipeline"}); they
    change `varies` by design. The two are judged against each other, then every other run
    against the lower one, with the paragraph `means` has for its `Place`."""

    setting: str
    alone: Mapping[str, str]
    means: Mapping[Place, Text]
    varies: tuple[str, ...] = ()


@dataclass(frozen=True)
class Samples:
    """Two rows of a table judged on their own measurements (timed passes, not runs): row
    `b` against row `a` (the table's row names), xs and ys their values (images/s of each
    pass), `how` what those are ("5 timed passes each"), `column` the table's column whose
    cells the ratio reads, and the comparison whose paragraphs say what it means."""

    a: str
    b: str
    xs: tuple
    ys: tuple
    how: str
    column: str
    compare: Compare


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
    # a line a row, said first: {column: words with {} for the cell} (`Lesson.last_row`'s
    # shape, for every row), each cell as `formats` writes it ({column: "{:.0%}"}), else as
    # the table does
    each: Mapping[str, str] = field(default_factory=dict)
    formats: Mapping[str, str] = field(default_factory=dict)


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
    columns: {table column: words (a Text)}: one line listing that column's cell for every
    run that has one; not said where the table lacks the column or the words are empty.
    marks: {table column: words}: after a judged comparison, one line naming the runs whose
    cell in that (true/false) column is true (a sweep's knee).
    versus: which variants of a group are judged (`Versus`). ceilings: see `Ceilings`.
    rank_by/rank: with two groups, the best verdict of the group with the smaller
    `rank_by` (a setting or what ran, e.g. "network.parameters") against the other's,
    and a paragraph for each `noise.Order`.
    last_row: {table column: words with {} for the cell}: one line of the last run's
    cells (a column missing from the table, or an empty cell, is left out).
    by_sign: {table column: {Sign: paragraph}}: said by the last run's cell (Sign.EMPTY
    where it is empty; nothing where the table lacks the column).
    chain: each variant is judged against the run listed before it (one change at a time
    down a ladder), not against one baseline.
    ran: what-ran settings (e.g. "tf32.convolutions") that tell variants apart beyond their
    configs: a comparison names them like settings.
    pairs: settings for which two variants that ran as asked and differ in that setting
    alone are compared too, the one where it is off against the one where it is on (e.g.
    "channels_last").
    requires: capability paragraphs (`Requires`), said once.
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
    columns: Mapping[str, Text] = field(default_factory=dict)
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
    chain: bool = False
    ran: tuple[str, ...] = ()
    pairs: tuple[str, ...] = ()
    requires: tuple[Requires, ...] = ()
    # judge_rows: the table column that names the rows, and paragraphs for what the caller
    # found beside the rows (`Context.facts`, keys of this mapping), said in its order
    key: str = "rung"
    facts: Mapping[str, Text] = field(default_factory=dict)

    marks: Mapping[str, Text] = field(default_factory=dict)
    versus: Versus = Versus.EACH
    ceilings: Ceilings | None = None
    changes: bool = False                 # each verdict names the settings its runs differ in
    bounds: Compare | None = None         # a run's input ceiling against its compute ceiling
    above_ceiling: Text = ""              # said once for a run above a ceiling it cannot beat
    fastest: bool = False                 # name the fastest run, only beyond every other's noise
    diagnose: bool = False                # print the baseline's diagnosis, and the fastest's
    after: Text = ""                      # said once, last: what the figures above mean

    limits: tuple[Limit, ...] = ()
    about: tuple[Column, ...] = ()
    notices: bool = False
    machine: bool = False

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
CHANGED = "'{b}' against '{a}' ({changes}): {verdict}."
CEILING = "'{feed}' (the input alone) against '{compute}' (the model alone): {verdict}."
REACHES = "'{run}' reaches {feed} of its input ceiling and {compute} of its compute ceiling."
SHARED = ("Another program shared the machine during {names} (the machine busier than the "
          "run's own use): their numbers are pessimistic and noisier, and a comparison with "
          "them says as much about the machine as about the change.")
FASTEST = ("Fastest: '{top}', beyond the noise of every other run (against the next, "
           "'{next}': {verdict}).")
NO_FASTEST = ("No single fastest run: '{top}' has the most samples/s, but not beyond the noise "
              "of {ties} (against the next, '{next}': {verdict}).")
CHANCE = ("Every run's accuracy is within noise of chance: these runs are too short to say what "
          "the change does to learning (more epochs and a larger validation set can).")
QUOTED = "{source}: {figures}."
UNMATCHED = "'{b}' differs from '{a}' in {what}, which this lesson does not compare: no verdict."
ACCURACY = "'{b}' against '{a}' in accuracy: {change}."
WAITED = ("'{a}' waited for its data {share} of its steady time: a faster step cannot show "
          "until the input pipeline keeps up (lessons 02 and 09).")
QUOTES = "{source}, on {hardware}: {figures}."
QUOTED = "{source}: {figures}."   # quotes of no hardware (a Reading's)
COLUMN = "{words}: {cells}."
MARKED = "{words}: {names}."
BEYOND_WAIT = ("That is more than removing all of '{a}''s data wait ({share} of its steady "
               "time) could buy: something besides the feeding changed, so the change is not "
               "credited with it.")
CEILINGS = "The ceilings, '{b}' ({b_alone} alone) against '{a}' ({a_alone} alone): {verdict}."
PLACED = "'{run}' reached {share} of the lower ceiling, '{ceiling}' ({alone} alone): {verdict}."
BOUND = "'{a}' was {bound}: {text}"
REQUIRES = "{text} {why}."
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
LIMIT = "'{b}': {words} {cell}, {side} {bar}: {text}"
GROUPS = "{words}: {groups}."
NOTICE = "What the records say ran otherwise than asked ({names}): {notice}"
MACHINE = "Measured on {machine} (from the run records)."
DATA_BOUND = 0.5   # a baseline that waited for data more than this share of its steady time
# settings that change the input pipeline itself: its baseline's data wait is the point
INPUT = anatomy.FIXES[anatomy.Bound.DATA] | {"page_cache", "sample_order", "augment"}


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
    if any(c.accuracy or c.gains for c in lesson.compares) and len(runs) > 1 \
            and say.at_chance(runs):
        said.add("all at chance")   # said once (CHANCE), not on every pair
    best = {}
    others = _ceilings(say, lesson, runs, (track, where)) if lesson.ceilings else runs
    if lesson.bounds:
        for run in (r for r in others if not diagnose.is_mock(r)):
            _bounds(say, lesson, run, (track, where), said)
    # a ceiling (mock) run bounds a run, it is no variant of one
    for key, group in _split([r for r in others if not diagnose.is_mock(r)],
                             lesson.group_by).items():
        base = _baseline(group, lesson.baseline)
        verdicts = [_compare(say, lesson, pair, (track, where), said)
                    for pair in _pairs(lesson, group, base)]
        verdicts = [v for v in verdicts if v is not None and v.kind != noise.Kind.UNLIKE]
        if verdicts:
            best[key] = (max(verdicts, key=lambda v: v.ratio), group[base][-1])
        if lesson.bound:
            _bound(say, lesson, group[base][-1], track)
    if lesson.rank and judged and len(best) == 2:
        _rank(say, lesson, best, track)
    top = _fastest(say, runs) if lesson.fastest else None
    if "all at chance" in said:
        say(CHANCE)
    _columns(say, lesson, [r.name for r in runs], (track, where), "judged" in said)
    _last_row(say, lesson, runs[-1], (track, where))
    _notes(say, lesson, runs, (track, where))
    _requires(say, lesson, runs, (track, where))
    shared = [f"'{r.name}'" for r in runs if metrics.machine_load(r)["shared"]]
    if shared:
        say(SHARED.format(names=", ".join(dict.fromkeys(shared))))
    if lesson.after:
        say(_text(lesson.after, track, where))
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
    if lesson.diagnose:
        _diagnoses(runs, top)
    return say


def judge_table(lesson: Lesson, table: pd.DataFrame, context, pairs=()) -> Closing:
    """`lesson`'s sentences on a table that is not one row a run (timed passes, lines of
    code), `context` (track, `Where`) saying where it was measured: each of `pairs`
    (`Samples`) judged on its own measurements with its outcome's paragraph, then the
    lesson's columns, its `empty` paragraph where the table has no rows, and its `cpu`
    paragraph off a GPU. Printed, and returned as the `Closing` that said them."""
    track, where = context
    key = table.columns[0] if len(table.columns) else "rung"
    said = set()
    say = Closing(table if len(table) else pd.DataFrame([{key: "no rows"}]), key=key)
    for pair in pairs:
        verdict = say.compare_samples(pair.a, pair.b, list(pair.xs), list(pair.ys), pair.how,
                                      pair.column)
        say(VERDICT.format(a=pair.a, b=pair.b, verdict=verdict))
        _outcome(say, pair.compare, outcome(verdict, pair.compare.expect(where)), context, said)
    if len(table):
        _columns(say, lesson, [str(name) for name in table[key]])
    elif lesson.empty and not (where is Where.CPU and lesson.cpu):   # off a GPU, cpu says why
        say(_text(lesson.empty, track, where))
    if where is Where.CPU and lesson.cpu:
        say(_text(lesson.cpu, track, where))
    if lesson.quotes:
        say(QUOTED.format(source=lesson.source[:1].upper() + lesson.source[1:], figures="; ".join(
            f"{q.what} {say.quote(lesson.source, q.value, q.fmt)}" for q in lesson.quotes)))
    if lesson.after:
        say(_text(lesson.after, track, where))
    return say


class Said(list):
    """The closings a conclusion said (a `judge` or `read` each), in order."""

    @property
    def text(self) -> str:
        return "\n".join(s.text for s in self)

    def check(self) -> list[str]:
        return [problem for s in self for problem in s.check()]


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
        if ("asked", last.name, setting) not in said:
            said.add(("asked", last.name, setting))
            say(ASKED.format(b=last.name, setting=setting, asked=worded(setting, asked, track),
                             ran=worded(setting, ran, track),
                             why=f": {why.rstrip('.')}" if why else ""))
    differ = _differ(lesson, first, last)
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
        for limit in lesson.limits:   # bars on the table, for a variant that was judged
            if id(limit) not in said and limit.where in (None, where) \
                    and limit.beyond(say.table[limit.column].iloc[say._row(last)]):
                said.add(id(limit))
                _limit(say, limit, last, context)
    return next((v for m, v in zip(matches, verdicts) if m is Metric.SAMPLES_PER_S), None)


def _judged(say: Closing, match: Compare, pair, context, said: set) -> noise.Verdict:
    """Say one comparison's verdict, its outcome's paragraph (once) and the caveats;
    context: ((track, where), the settings the runs differ in, in words, or "")."""
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
            say(_text(match.worse, track, where))
    found = outcome(verdict, match.expect(where))
    wait = metrics.data_wait_share(first)
    if match.feeds and verdict.kind == noise.Kind.FASTER and wait < 1 \
            and verdict.low > 1 / (1 - wait):
        say(BEYOND_WAIT.format(a=first.name, share=say.cell(first, "data_wait_share")))
        return verdict
    if found is not Outcome.CANNOT_JUDGE:
        said.add("judged")
    _say_once(say, said, (id(match), found), _text(match.means.get(found, ""), track, where))
    if match.gains:
        gained = accuracy_outcome(first, last, match.gains)
        _say_once(say, said, (id(match), "accuracy", gained),
                  _text(match.gained.get(gained, ""), track, where))
    if found is not Outcome.CANNOT_JUDGE and match.expect(where) is Expect.FASTER \
            and not match.feeds and not set(match.varies) & INPUT \
            and ("waited", first.name) not in said and wait > DATA_BOUND:
        said.add(("waited", first.name))
        say(WAITED.format(a=first.name, share=say.cell(first, "data_wait_share")))
    return verdict


def _verdict(say: Closing, match: Compare, pair, changes: str = "") -> noise.Verdict:
    """The verdict on samples/s (noise.compare of the repeats) or on an amount (the two
    runs' measured steps), said through its template (naming `changes` where given)."""
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


def accuracy_outcome(a, b, gains: Gain) -> Outcome:
    """The outcome of run b's validation accuracy against run a's where the lesson expects
    `gains`: cannot judge where both are within noise of chance."""
    if noise.at_chance(a) and noise.at_chance(b):
        return Outcome.CANNOT_JUDGE
    verdict = noise.accuracy_verdict(a, b)
    if not verdict.is_effect:
        return Outcome.EXPECTED if gains is Gain.SAME else Outcome.NONE
    went = Gain.HIGHER if verdict.points > 0 else Gain.LOWER
    return Outcome.EXPECTED if went is gains else Outcome.OPPOSITE


# -- a prediction an attendee wrote down, judged as a lesson's expectation is -----------------
# how far apart two runs of one job made one after the other can land while other programs
# share the machine, beyond what each run's own blocks show: their load moves between the
# runs. The course's 2-core machine, other programs running, measured x0.74 to x1.36 over
# repeated pairs (exercise 03.1 with aot_eager) and x0.82 to x1.19 (Gluon's 05.1)
DRIFT = 1.5


@dataclass(frozen=True)
class Predict:
    """What an exercise's check says of a prediction written down before the run: `name`
    (the check's argument: "prediction"), `answers` ({a word the attendee may write: the
    `Expect` it makes, or the call it names}), `ask` (what to write down, with the check's
    fields), and a sentence for each `Outcome` of the measurement against it (`says`, with
    the check's fields; CANNOT_JUDGE: the runs leave the prediction untested). The check
    raises OPPOSITE's sentence as its contradiction."""

    name: str
    answers: Mapping
    ask: str
    says: Mapping[Outcome, str]

    def wrong(self, answer, **fields) -> str:
        """Why `answer` is none of the answers, asking for one; "" where it is one."""
        if isinstance(answer, str) and answer in self.answers:
            return ""
        return (f"{self.name}={answer!r}: write down, before you run, "
                f"{self.ask.format(**fields)}: one of " + ", ".join(map(repr, self.answers)) + ".")


def predicted(expect: Expect, verdict: noise.Verdict, drift: float = 1.0) -> Outcome:
    """The outcome of `verdict` against a prediction that expects `expect` (`outcome`);
    one against it by less than ×`drift` either way is CANNOT_JUDGE: where other programs
    shared the machine, their load moves two runs that far apart (`DRIFT`)."""
    found = outcome(verdict, expect)
    moved = verdict.ratio > 0 and max(verdict.ratio, 1 / verdict.ratio) < drift
    return Outcome.CANNOT_JUDGE if found is Outcome.OPPOSITE and moved else found


def called(answer, call, possible=()) -> Outcome:
    """The outcome of a call named in words (diagnose's verdict, the step timers') against
    the `answer` predicted: EXPECTED where they are one, NONE where the measurements make
    no call (None) or cannot rule the answer out (among `possible`), else OPPOSITE."""
    if answer == call:
        return Outcome.EXPECTED
    return Outcome.NONE if call is None or answer in possible else Outcome.OPPOSITE


def untested(notes, runs) -> str:
    """The first of `notes` (`Note`s: runs that cannot test what is predicted) that fires on
    any of `runs`, its text with {names}: the runs it fires on, quoted; "" where none does."""
    for note in notes:
        names = [f"'{r.name}'" for r in runs if _fires(note, [r])]
        if names:
            return _text(note.text, None, None).format(names=" and ".join(names))
    return ""


def apart(xs, ys, how: str) -> noise.Verdict:
    """B's measurements against A's (a share per block of steps, which may be zero) by the
    rule `noise.compare` applies to samples/s: FASTER (more) where every one of B's is above
    every one of A's, SLOWER (less) where every one is below, else WITHIN_NOISE; NOT_MEASURED
    where a side has none. No ratio: the shares are said as they are."""
    nan = float("nan")
    if not len(xs) or not len(ys):
        return noise.Verdict(nan, nan, nan, noise.Kind.NOT_MEASURED, how)
    kind = noise.Kind.FASTER if min(ys) > max(xs) else noise.Kind.SLOWER \
        if max(ys) < min(xs) else noise.Kind.WITHIN_NOISE
    return noise.Verdict(nan, nan, nan, kind, how)


def _say_once(say: Closing, said: set, key, text: str) -> None:
    if text and key not in said and text not in said and "no outcomes" not in said:
        said.update((key, text))
        say(text)


def _differ(lesson: Lesson, a, b) -> set:
    """What runs a and b differ in (less the machine's load), the lesson's `ran` settings
    among it."""
    differ = set(alike.differences(a, b)) - {alike.Aspect.LOAD}
    named = {v for c in lesson.compares for v in c.varies}
    return differ | {n for n in lesson.ran if _setting(a, n) != _setting(b, n)} | {
        n for n in named if _note(a, n) != _note(b, n)}


def _pairs(lesson: Lesson, group: dict, base: str) -> list:
    """(baseline's repeats, variant's repeats) for each comparison the lesson makes."""
    names = list(group)
    if lesson.chain:
        pairs = list(zip(names, names[1:]))
    else:
        variants = [n for n in names if n != base]
        if lesson.versus is Versus.BEST and variants:   # the fastest variant only
            variants = [max(variants, key=lambda n: metrics.samples_per_sec(group[n][-1]))]
        pairs = [(base, n) for n in variants]
    for setting in lesson.pairs:
        pairs += [(a, b) for a in names for b in names
                  if (a, b) not in pairs and not _setting(group[a][-1], setting)
                  and _setting(group[b][-1], setting)
                  and not metrics.ran_as(group[a][-1]) and not metrics.ran_as(group[b][-1])
                  and _differ(lesson, group[a][-1], group[b][-1]) == {setting}]
    return [(group[a], group[b]) for a, b in pairs]


def _requires(say: Closing, lesson: Lesson, runs, context) -> None:
    flags = (runs[0].meta.get("hardware") or {}).get("cpu_features")
    for need in lesson.requires:
        if flags is not None and any(_setting(r, need.setting) in need.values for r in runs):
            has = cpu.supports(need.capability, flags)
            say(REQUIRES.format(text=_text(need.has if has else need.lacks, *context),
                                why=has.why))


def _ceilings(say: Closing, lesson: Lesson, runs, context) -> list:
    """Judge the ceilings against each other, then place every other run against the lower
    one; the other runs (the lesson's to compare as usual)."""
    spec, (track, where) = lesson.ceilings, context
    ceilings = {}
    for run in runs:
        if _setting(run, spec.setting) in spec.alone:
            ceilings.setdefault(_setting(run, spec.setting), run)
    others = [r for r in runs if _setting(r, spec.setting) not in spec.alone]
    if not others:
        raise ValueError(f"runs={[r.name for r in runs]} holds only ceilings ({spec.setting} "
                         f"in {list(spec.alone)}); pass the run they bound as well")
    ordered = sorted(ceilings.values(), key=metrics.samples_per_sec)
    apart = False
    if len(ordered) == 2:
        low, high = ordered
        both = say.compare(low, high, varies=spec.varies)
        apart = both.is_effect
        say(CEILINGS.format(a=low.name, b=high.name, verdict=both,
                            a_alone=spec.alone[_setting(low, spec.setting)],
                            b_alone=spec.alone[_setting(high, spec.setting)]))
    for run in others if ordered else ():
        lower = ordered[0]
        verdict = say.compare(lower, run, varies=spec.varies)
        say(PLACED.format(run=run.name, ceiling=lower.name, verdict=verdict,
                          share=say.ratio("samples_per_sec", lower, run, percent=True),
                          alone=spec.alone[_setting(lower, spec.setting)]))
        place = {noise.Kind.FASTER: Place.ABOVE, noise.Kind.SLOWER: Place.BELOW,
                 noise.Kind.WITHIN_NOISE: Place.AT if apart else Place.AT_BOTH}
        text = _text(spec.means.get(place.get(verdict.kind, Place.CANNOT_JUDGE), ""),
                     track, where)
        if text:
            say(text)
    return others


def _columns(say: Closing, lesson: Lesson, names: list, context=(None, None),
             judged: bool = False) -> None:
    """The columns' lines (each row, by name, with a cell in it; a column no row has a value
    in is not said), then the marks' (after a verdict)."""
    for name, words in lesson.columns.items():
        words = _text(words, *context)
        rows = [i for i in range(len(names)) if name in say.table.columns
                and not pd.isna(say.table[name].iloc[i])]
        if words and rows:
            say(COLUMN.format(words=words, cells=", ".join(
                f"'{names[i]}' {say.cell(i, name)}" for i in rows)))
    for name, words in lesson.marks.items():
        words = _text(words, *context)
        marked = [n for n, m in zip(names, say.table.get(name, ()))
                  if isinstance(m, (bool, np.bool_)) and m]
        if words and judged and marked:
            say(MARKED.format(words=words, names=", ".join(f"'{n}'" for n in marked)))


def _bounds(say: Closing, lesson: Lesson, run, context, said: set) -> None:
    """The run's two ceilings found among the runs (`diagnose.find_ceilings`): the input
    alone against the model alone (an amount against noise: a ceiling is no slow-down),
    that outcome's paragraph, and the share of each the run reached."""
    compute, feed = diagnose.find_ceilings(run, say.runs)
    if compute is None or feed is None:
        return
    verdict = say.compare_amounts(compute, feed, noise.block_rates(compute),
                                  noise.block_rates(feed), f"{noise.BLOCKS} blocks of steady "
                                  "steps", "samples_per_sec")
    say(CEILING.format(feed=feed.name, compute=compute.name,
                       verdict=noise.amount_sentence(verdict)))
    _outcome(say, lesson.bounds, outcome(verdict, lesson.bounds.expect(context[1])),
             context, said)
    say(REACHES.format(run=run.name,
                       feed=say.ratio("samples_per_sec", feed, run, percent=True),
                       compute=say.ratio("samples_per_sec", compute, run, percent=True)))
    rate = metrics.samples_per_sec(run)
    if lesson.above_ceiling and any(rate > diagnose.ABOVE_CEILING * metrics.samples_per_sec(c)
                                    for c in (compute, feed)):
        say(_text(lesson.above_ceiling, *context))


def _fastest(say: Closing, runs):
    """Say which run is fastest, only beyond the noise of every other (each against it
    across whatever settings they differ in); the run with the most samples/s, or None."""
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


def _diagnoses(runs, top) -> None:
    """Print the baseline's diagnosis (its ceilings found next to it) and the fastest
    run's: `diagnose`'s own report, beside the sentences rather than one of them."""
    first = next((r for r in runs if not diagnose.is_mock(r) and len(r.epochs)), None)
    if first is not None:
        print(f"\n{diagnose.diagnose(first)}")
    if top is not None and top is not first and len(top.epochs):
        print(f"\n{diagnose.explain(top)}")


def _outcome(say: Closing, match: Compare, found: Outcome, context, said: set) -> None:
    """Say the paragraph `match` declares for `found` where the runs ran, once."""
    text = _text(match.means.get(found, ""), *context)
    if text and (id(match), found) not in said and "no outcomes" not in said:
        said.add((id(match), found))
        say(text)


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
        if _fires(note, runs) and _text(note.text, *context):
            say(_text(note.text, *context))


def _fires(note: Note, runs) -> bool:
    read = note.setting if callable(note.setting) else lambda r: _setting(r, note.setting)
    return any(read(r) in note.values for r in runs)


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
    for i in range(len(table)) if reading.each else ():
        cells = [words.format(say.cell(i, name, reading.formats.get(name)))
                 for name, words in reading.each.items()
                 if name in table.columns and not _empty(table[name].iloc[i])]
        if cells:
            say(ROW.format(name=say._name(i), cells=", ".join(cells)))
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
    ceilings = [lesson.bounds.means.values()] if lesson.bounds else []
    texts = [c.means.values() for c in lesson.compares] + [lesson.bound.values()] + \
        [[lesson.cpu, lesson.empty, lesson.above_ceiling, lesson.after]] + \
        [[n.text for n in lesson.notes]] + [[c.worse for c in lesson.compares]] + ceilings + \
        [m.values() for m in lesson.by_sign.values()] + \
        [r.means.values() for c in lesson.compares for r in c.ranks] + \
        [f.means.values() for f in lesson.flags] + [lesson.missing.values()] + \
        [c.gained.values() for c in lesson.compares] + \
        [[r.has, r.lacks] for r in lesson.requires] + \
        [lesson.ceilings.means.values() if lesson.ceilings else []] + \
        [[x.text for x in lesson.limits]] + [[c.present for c in lesson.about]] + \
        [[c.missing for c in lesson.about]] + \
        [lesson.facts.values()]
    out = []
    for group in texts:
        for text in group:
            out += [text] if isinstance(text, str) else list(text.values())
    return [t for t in out if t]
