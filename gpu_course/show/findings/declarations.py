"""What a lesson declares, as data: its comparisons, their expected outcomes and paragraphs."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Callable, Mapping

from ...env import cpu


class Where(StrEnum):
    """Where the runs trained: what a lesson expects differs between the two."""

    GPU = "gpu"
    CPU = "cpu"


class Expect(StrEnum):
    """What a lesson expects of a variant's samples/s (or an amount) against its baseline's."""

    FASTER = "faster"
    SLOWER = "slower"
    SAME = "the same"       # nothing to show here (a GPU's effect, on a CPU)
    LESS = "less"           # an amount (`Metric`) that the variant should need less of
    MORE = "more"


class Metric(StrEnum):
    """What a comparison judges: samples/s, or an amount of memory (`analyse.memory`)."""

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

    EXPECTED = "expected"          # the effect expected, or none where none is expected
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
    """A variant that changes `varies`, what it should do on a GPU and a CPU, and a paragraph
    for each outcome; a variant gets the first match of each `metric`."""

    varies: tuple[str, ...]
    means: Mapping[Outcome, Text]
    gpu: Expect = Expect.FASTER
    cpu: Expect = Expect.SAME
    accuracy: bool = False               # judge the validation accuracy too
    metric: Metric = Metric.SAMPLES_PER_S
    # judge_rows: the variant's and the baseline's settings, columns said a -> b, rankings
    when: Mapping = field(default_factory=dict)
    against: Mapping = field(default_factory=dict)
    cells: Mapping[str, str] = field(default_factory=dict)
    ranks: tuple["Rank", ...] = ()
    gains: Gain | None = None            # the accuracy expected, and its outcomes' paragraphs
    gained: Mapping = field(default_factory=dict)
    feeds: bool = False   # only feeds the step: a gain beyond the baseline's data wait is not credited
    worse: Text = ""      # said once where the variant's accuracy is lower beyond noise

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
    """Said once when any run has `setting` (a name or a function of the run) among `values`."""

    setting: str | Callable
    values: tuple
    text: Text
    judged: bool = True   # False: the change did not run as meant: no outcome paragraphs


@dataclass(frozen=True)
class Requires:
    """Said once when a run has `setting` among `values`: whether its CPU has `capability`."""

    capability: cpu.Capability
    setting: str
    values: tuple
    has: Text
    lacks: Text


@dataclass(frozen=True)
class Ceilings:
    """Runs that bound the lesson's run, picked by `setting` ({value: what it runs alone})."""

    setting: str
    alone: Mapping[str, str]
    means: Mapping[Place, Text]
    varies: tuple[str, ...] = ()


@dataclass(frozen=True)
class Samples:
    """Row `b` against row `a` on their own measurements (xs, ys), judged as `compare`."""

    a: str
    b: str
    xs: tuple
    ys: tuple
    how: str
    column: str
    compare: Compare


@dataclass(frozen=True)
class Limit:
    """A bar on a column: the first row beyond it (`above`, else below) gets `text`."""

    column: str
    bar: float
    text: Text
    above: bool = False
    where: Where | None = None
    words: str = ""             # the column in words ("scaling efficiency")
    fmt: str | None = None      # cell and bar alike; None: as the table writes the cell
    row: str | None = None

    def beyond(self, value) -> bool:
        value = float(value) if isinstance(value, (int, float)) else float("nan")
        return value > self.bar if self.above else value < self.bar


@dataclass(frozen=True)
class Mark:
    """A paragraph said once when a row of a table has `column` among `values`."""

    column: str
    values: tuple
    text: Text


@dataclass(frozen=True)
class Column:
    """`present` said once when a row holds a value in `column`, `missing` when none does."""

    column: str
    present: Text = ""
    missing: Text = ""


@dataclass(frozen=True)
class Reading:
    """What a table that is not the runs' says after it is shown; fields as in a `Lesson`."""

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
    each: Mapping[str, str] = field(default_factory=dict)   # {column: "words {}"}: a line a row, first
    formats: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Lesson:
    """What a lesson compares, and what its outcomes mean."""

    compares: tuple[Compare, ...]        # first match wins; a variant matching none is not judged
    baseline: Mapping = field(default_factory=dict)   # settings that pick each group's baseline
    group_by: str | None = None          # a setting whose values split the runs into groups
    quotes: tuple[Quote, ...] = ()       # the talk's figures, said once beside the runs
    source: str = "the talk"
    hardware: str = ""
    bound: Mapping = field(default_factory=dict)   # {anatomy.Bound: what held the baseline back}
    cpu: Text = ""                       # said once when no run had a GPU
    empty: Text = ""                     # said when there are no runs
    notes: tuple[Note, ...] = ()
    columns: Mapping[str, Text] = field(default_factory=dict)   # {column: words}: a line of cells
    rank_by: str = ""                    # two groups' best verdicts ranked by this setting, ...
    rank: Mapping = field(default_factory=dict)   # ... and a paragraph for each `noise.Order`
    last_row: Mapping[str, str] = field(default_factory=dict)   # {column: "words {}"}: last run's
    by_sign: Mapping[str, Mapping] = field(default_factory=dict)   # {column: {Sign: paragraph}}
    # judge_rows: flagged rows, missing packages' paragraphs, the ratio's column, what gives more samples
    flags: tuple["Flag", ...] = ()
    missing: Mapping[str, Text] = field(default_factory=dict)
    column: str = "samples_per_sec"
    more: str = ""
    chain: bool = False                  # each variant against the run listed before it
    ran: tuple[str, ...] = ()            # what-ran settings that tell variants apart
    pairs: tuple[str, ...] = ()          # two variants that differ in one of these alone: compared
    requires: tuple[Requires, ...] = ()
    key: str = "rung"                    # judge_rows: the column naming the rows
    facts: Mapping[str, Text] = field(default_factory=dict)
    marks: Mapping[str, Text] = field(default_factory=dict)   # {bool column: words}: runs marked
    versus: Versus = Versus.EACH
    ceilings: Ceilings | None = None
    changes: bool = False                 # each verdict names the settings its runs differ in
    bounds: Compare | None = None         # a run's input ceiling against its compute ceiling
    above_ceiling: Text = ""              # said once for a run above a ceiling it cannot beat
    fastest: bool = False                 # name the fastest run, only beyond every other's noise
    diagnose: bool = False                # print the baseline's diagnosis, and the fastest's
    after: Text = ""                      # said once, last: what the figures above mean
    limits: tuple[Limit, ...] = ()        # for a variant whose comparison was judged
    about: tuple[Column, ...] = ()
    notices: bool = False                 # say what the records note ran otherwise than asked
    machine: bool = False                 # say the machine the runs were measured on


@dataclass(frozen=True)
class Rank:
    """A comparison's verdicts at the two ends of setting `by`, ranked (`means`: by `noise.Order`)."""

    by: str
    means: Mapping = field(default_factory=dict)
    where: Mapping = field(default_factory=dict)


@dataclass(frozen=True)
class Flag:
    """A column whose value flags a row (`worst`: only the row largest in that column)."""

    column: str
    means: Mapping[str, Text]
    cells: Mapping[str, str] = field(default_factory=dict)
    worst: str = ""


@dataclass(frozen=True)
class Row:
    """A measurement that is not a training run: `samples` one a block, more is better."""

    name: str
    settings: Mapping
    samples: tuple = ()
    how: str = ""
    gpu: bool = False


@dataclass(frozen=True)
class Context:
    """Beside the rows: the CPU's facts, packages not imported and `Lesson.facts` keys."""

    cpu: Mapping | None = None
    missing: tuple = ()
    facts: tuple = ()

