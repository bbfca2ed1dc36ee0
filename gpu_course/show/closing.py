"""A lesson's closing text, checked as it is said: every measurement a line prints (a number
with a decimal point, thousands separators, a %, a × or a unit; not a count) must be cited, as
a cell or ratio of the table, a noise verdict, a named setting or a quote naming its source:
`say = Closing(table, runs)`, then `say(f"{say.cell(0, 'samples_per_sec')} samples/s.")`."""
from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field

import pandas as pd

from ..analyse import alike, metrics, noise
from . import tables

_UNITS = ("samples/s", "images/s", "MB/s", "GB/s", "ms", "µs", "s", "points", "MiB", "GiB",
          "KB", "MB", "GB")
# a number that is not part of a name (float16, ResNet-20, sm_86); "x" may lead it (x3.7)
_NUMBER = re.compile(r"(?<![A-Za-wyz\d_.,])(?<![A-Za-z]-)(?<![A-Za-z]x)"
                     r"[-+]?\d+(?:,\d{3})*(?:\.\d+)?")
_AFTER = re.compile(r"\s?(?:%|×|x(?![A-Za-z])|(?:" + "|".join(map(re.escape, _UNITS))
                    + r")(?![A-Za-z]))")


class UncitedNumber(ValueError):
    """A closing line prints a measurement that is not its table's."""


@dataclass(frozen=True)
class Citation:
    """One number (or noise verdict) a line may print, the value behind it and its source."""

    text: str
    value: float
    source: str
    kind: str = "table"     # "table", "verdict", "setting" or "quote"


@dataclass
class Closing:
    """Citations from `table` (one row per run, named by `key`) and the lines said with them;
    `compare` refuses a verdict across anything but `varies`."""

    table: pd.DataFrame
    runs: list | None = None
    key: str = "rung"
    varies: tuple = ()
    lines: list[str] = field(default_factory=list)
    _citations: list = field(default_factory=list, repr=False)

    def __post_init__(self):
        if not isinstance(self.table, pd.DataFrame) or not len(self.table):
            raise ValueError(f"table={type(self.table).__name__}: need a DataFrame with at least one row")
        self.varies = tuple(sorted(alike.check_varies(self.varies)))
        if self.key in self.table.columns:
            self.table = self.table.reset_index(drop=True)
        else:  # the index names the rows (e.g. a pivot of speed-ups)
            self.table = self.table.reset_index()
            self.table = self.table.rename(columns={self.table.columns[0]: self.key})
        if self.runs is not None:
            self.runs = list(self.runs)
            if len(self.runs) != len(self.table):
                raise ValueError(f"runs has {len(self.runs)} runs for a table of {len(self.table)} rows: "
                                 "pass one run per row")
            for i, run in enumerate(self.runs):
                self._check_row(i, run)

    def cell(self, row, column: str, fmt: str | None = None) -> str:
        """The cell as the table writes it (`tables.cell`), or with `fmt` (e.g. "{:.1%}")."""
        value = self._value(row, column)
        text = fmt.format(value) if fmt else tables.cell(column, value)
        return self._cite(text, value, f"{column} of {self._name(row)!r}")

    def ratio(self, column: str, a, b, percent: bool = False) -> str:
        """Row b's `column` over row a's, written ×1.31 (or 87% with percent=True)."""
        value = self._value(b, column) / self._value(a, column)
        text = f"{value:.0%}" if percent else tables.cell("speedup", value)
        return self._cite(text, value, f"{column} of {self._name(b)!r} over {self._name(a)!r}")

    def compare(self, a, b, varies=None) -> noise.Verdict:
        """`noise.compare` of rows b against rows a (a row or a list of repeats), cited."""
        named = self.varies + tuple(alike.check_varies(varies))
        v = noise.compare(self._runs(a), self._runs(b), varies=named)
        self._cite(noise.sentence(v), v.ratio, self._of("noise.compare", a, b), "verdict")
        return v

    def compare_samples(self, a, b, xs, ys, how: str, column: str) -> noise.Verdict:
        """`noise.compare_samples` of row b against row a on their own measurements; cited."""
        return self._samples(a, b, (xs, ys, how), column, noise.sentence)

    def compare_amounts(self, a, b, xs, ys, how: str, column: str) -> noise.Verdict:
        """As `compare_samples`, for an amount (memory): cited as `noise.amount_sentence`."""
        return self._samples(a, b, (xs, ys, how), column, noise.amount_sentence)

    def _samples(self, a, b, measured, column: str, sentence) -> noise.Verdict:
        v = noise.compare_samples(*measured, self._value(a, column), self._value(b, column))
        self._cite(sentence(v), v.ratio, self._of("noise.compare_samples", a, b), "verdict")
        return v

    def accuracy(self, a, b) -> tuple[float, str]:
        """`noise.accuracy_change` of row b against row a: (points, sentence), cited."""
        for row in (a, b):
            if isinstance(row, (list, tuple)):
                raise ValueError(f"row={row!r}: one row, not a list, for an accuracy")
        points, text = noise.accuracy_change(self._runs(a), self._runs(b))
        self._cite(text, points, self._of("noise.accuracy_change", a, b), "verdict")
        return points, text

    def at_chance(self, rows) -> bool:
        """Whether every run of `rows` (a row or a list) is within noise of chance."""
        return all(noise.at_chance(run) for run in self._runs(rows if isinstance(rows, list) else [rows]))

    def setting(self, name: str, value, fmt: str = "{}") -> str:
        """A setting of the lesson or the course (a parameter, a threshold), by its name."""
        return self._cite(fmt.format(value), metrics.number(value), f"the setting {name}",
                          "setting")

    def quote(self, source: str, value, fmt: str = "{}") -> str:
        """A number from `source` (e.g. "the talk"): a line that prints it must name it."""
        if not isinstance(source, str) or not source.strip():
            raise ValueError(f"source={source!r}: name where the number comes from, e.g. 'the talk'")
        return self._cite(fmt.format(value), metrics.number(value), source, "quote")

    def __call__(self, text: str) -> None:
        """Print `text` once every measurement in it is cited, else raise UncitedNumber."""
        problems = self.read(text)[1]
        if problems:
            raise UncitedNumber(f"closing line {text!r}: " + "; ".join(problems))
        self.lines.append(text)
        print(text)

    def read(self, text: str) -> tuple[list, list]:
        """(the citations `text` uses, its uncited measurements and unnamed quotes)."""
        covered, cited, problems = [], [], []
        found = [(c, _occurrences(text, c.text)) for c in self._citations]
        # what a quote and a measurement both print (a verdict's "×0.50–×1.62" holding the
        # talk's ×0.50) is the measurement in a line that does not name the quote's source
        measured = [s for c, spans in found if c.kind != "quote" for s in spans]
        for c, spans in found:
            unnamed = c.kind == "quote" and c.source.lower() not in text.lower()
            if unnamed:
                spans = [(a, b) for a, b in spans
                         if not any(x <= a and b <= y for x, y in measured)]
            if not spans:
                continue
            cited.append(c)
            covered += spans
            if unnamed:
                problems.append(f"{c.text!r} is quoted from {c.source!r}, which the line "
                                "does not name")
        for label in self.table[self.key]:
            covered += _occurrences(text, str(label))   # a row's name is the table's
        for (start, end), (first, last) in _measured(text):
            if not any(a <= first and last <= b for a, b in covered):
                problems.append(f"{text[start:end]!r} is not a number of the table: cite it "
                                "(cell, ratio, compare, accuracy, setting, quote)")
        return cited, problems

    def check(self) -> list[str]:
        """Every problem of every line said so far, and of runs that no longer match their rows."""
        out = [f"line {n + 1}: {p}" for n, line in enumerate(self.lines)
               for p in self.read(line)[1]]
        for i, run in enumerate(self.runs or ()):
            try:
                self._check_row(i, run)
            except ValueError as err:
                out.append(str(err))
        return out

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def _cite(self, text: str, value, source: str, kind: str = "table") -> str:
        self._citations.append(Citation(text, value, source, kind))
        return text

    def _row(self, row) -> int:
        n, names = len(self.table), list(self.table[self.key])
        if isinstance(row, numbers.Integral) and not isinstance(row, bool) and -n <= row < n:
            return int(row) % n
        if isinstance(row, str) and names.count(row) == 1:
            return names.index(row)
        hits = [i for i, run in enumerate(self.runs or ()) if run is row]
        if hits:
            return hits[0]
        raise ValueError(f"row={row!r} is not a row; allowed: 0..{n - 1}, one of its runs, "
                         f"or a {self.key} in {names}")

    def _value(self, row, column: str) -> float:
        if column not in self.table.columns:
            raise ValueError(f"column={column!r} is not in the table; allowed: {list(self.table.columns)}")
        return self.table[column].iloc[self._row(row)]

    def _name(self, row) -> str:
        return str(self.table[self.key].iloc[self._row(row)])

    def _rows(self, rows) -> list[int]:
        return [self._row(r) for r in (rows if isinstance(rows, (list, tuple)) else [rows])]

    def _runs(self, rows):
        if self.runs is None:
            raise ValueError("this Closing has no runs: pass Closing(table, runs)")
        found = [self.runs[i] for i in self._rows(rows)]
        return found if isinstance(rows, (list, tuple)) else found[0]

    def _of(self, how: str, a, b) -> str:
        """Where a verdict on rows b against rows a comes from."""
        b, a = (", ".join(repr(self._name(i)) for i in self._rows(rows)) for rows in (b, a))
        return f"{how} of {b} against {a}"

    def _check_row(self, i: int, run) -> None:
        """A run must be its row: the same name, the same samples/s."""
        if self._name(i) != str(run.name):
            raise ValueError(f"runs[{i}] is {run.name!r} but row {i} is {self._name(i)!r}: "
                             "pass the runs in the table's order")
        if "samples_per_sec" in self.table.columns:
            mine, theirs = metrics.samples_per_sec(run), metrics.number(self.table["samples_per_sec"].iloc[i])
            if not (math.isnan(mine) and math.isnan(theirs) or math.isclose(mine, theirs, rel_tol=1e-9)):
                raise ValueError(f"runs[{i}] ran {mine} samples/s, row {i} says {theirs}: "
                                 "the table is not these runs'")


def measurements(text: str) -> list[tuple[int, int]]:
    """(start, end) of each measurement in `text` (see the module's docstring)."""
    return [span for span, _ in _measured(text)]


def _measured(text: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Each measurement's span with its unit, and the part a citation must cover."""
    out = []
    for m in _NUMBER.finditer(text):
        start, end, number = m.start(), m.end(), m.group()
        if start and text[start - 1] in "×x":
            start -= 1
        core_end = end + 1 if text[end:end + 1] in ("%", "×") else end
        after = _AFTER.match(text, end)
        if "." in number or "," in number or start < m.start() or after:
            out.append(((start, after.end() if after else end), (start, core_end)))
    return out


def _occurrences(text: str, part: str) -> list[tuple[int, int]]:
    """Spans of `part` in `text` that do not cut a number in two ("1" in "1,234")."""
    lead = r"(?<![\d.,])" if part[:1].isdigit() else ""
    tail = r"(?!\d|[.,]\d)" if part[-1:].isdigit() else ""
    found = re.finditer(f"(?={lead}{re.escape(part)}{tail})", text) if part else ()
    return [(m.start(), m.start() + len(part)) for m in found]
