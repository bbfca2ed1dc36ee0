"""The templates: the only sentences with numbers, filled from cited cells and verdicts."""
from __future__ import annotations

import pandas as pd

from ...analyse import noise
from ...page import Page
from ..closing import Closing
from .declarations import Text

PAGE = Page.of(__name__)   # the templates, by name: text/wording.md
VERDICT = PAGE.text("verdict")
ASKED = PAGE.text("asked")
SAME_JOB = PAGE.text("same_job")
CHANGED = PAGE.text("changed")
CEILING = PAGE.text("ceiling")
REACHES = PAGE.text("reaches")
FASTEST = PAGE.text("fastest")
NO_FASTEST = PAGE.text("no_fastest")
CHANCE = PAGE.text("chance")
UNMATCHED = PAGE.text("unmatched")
ACCURACY = PAGE.text("accuracy")
WAITED = PAGE.text("waited")
QUOTES = PAGE.text("quotes")
COLUMN = PAGE.text("column")
MARKED = PAGE.text("marked")
BEYOND_WAIT = PAGE.text("beyond_wait")
CEILINGS = PAGE.text("ceilings")
PLACED = PAGE.text("placed")
BOUND = PAGE.text("bound")
REQUIRES = PAGE.text("requires")
AMOUNT = PAGE.text("amount")
NOT_READ = PAGE.text("not_read")
ROW = PAGE.text("row")
CELLS = PAGE.text("cells")
TOO_FEW = PAGE.text("too_few")
RANKED = PAGE.means("ranked", noise.Order)   # by how two gains rank
FLAGGED = PAGE.text("flagged")
CPU_FACTS = PAGE.text("cpu_facts")
LIMIT = PAGE.text("limit")
GROUPS = PAGE.text("groups")
NOTICE = PAGE.text("notice")
MACHINE = PAGE.text("machine")
NO_RUNS = PAGE.text("no_runs")
STEADY_BLOCKS = PAGE.text("steady_blocks")


def text_for(text: Text, track, where) -> str:
    """The paragraph for this track and place: a mapping's most specific entry."""
    if isinstance(text, str):
        return text
    for key in ((track, where), track, where):
        if key in text:
            return text[key]
    return ""


def empty(value) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def once(say: Closing, said: set, key, text: str) -> None:
    """Say `text` unless it, or `key`, was said, or the runs get no outcome paragraphs."""
    if text and key not in said and text not in said and "no outcomes" not in said:
        said.update((key, text))
        say(text)


def quotes(say: Closing, declared, quoted) -> None:
    """The declared figures (`quoted`) in one line, naming their source (and hardware)."""
    if quoted:
        figures = "; ".join(f"{q.what} {say.quote(declared.source, q.value, q.fmt)}"
                            for q in quoted)
        source = declared.source[:1].upper() + declared.source[1:]
        on = f", on {declared.hardware}" if declared.hardware else ""
        say(QUOTES.format(source=source, on=on, figures=figures))


def cells_line(say: Closing, words: str, column: str, rows) -> None:
    """One line of `column`'s cells, for each of `rows` ((index, name)) with a value in it."""
    rows = [(i, name) for i, name in rows if column in say.table.columns
            and not pd.isna(say.table[column].iloc[i])]
    if words and rows:
        say(COLUMN.format(words=words, cells=", ".join(
            f"'{name}' {say.cell(i, column)}" for i, name in rows)))


def limit(say: Closing, bar, row, context) -> None:
    say(LIMIT.format(b=say._name(row), words=bar.words or bar.column,
                     cell=say.cell(row, bar.column, bar.fmt),
                     side="above" if bar.above else "below",
                     bar=say.setting(f"the bar on {bar.column}", bar.bar, bar.fmt or "{:g}"),
                     text=text_for(bar.text, *context)))


def paragraph(say: Closing, text: Text, context) -> None:
    """Say the paragraph for `context` (track, where), where it has one."""
    if text_for(text, *context):
        say(text_for(text, *context))


def about(say: Closing, columns, context) -> None:
    for column in columns:
        held = column.column in say.table and say.table[column.column].notna().any()
        paragraph(say, column.present if held else column.missing, context)
