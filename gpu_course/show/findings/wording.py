"""The templates: the only sentences with numbers, filled from cited cells and verdicts."""
from __future__ import annotations

import pandas as pd

from ...analyse import noise
from ..closing import Closing
from .declarations import Text

VERDICT = "'{b}' against '{a}': {verdict}."
ASKED = "'{b}' asked for {setting} {asked} and ran {ran}{why}."
SAME_JOB = ("'{b}' against '{a}': {verdict}; both ran as '{a}' did, two identical jobs: "
            "the ratio measures the machine, not the change.")
CHANGED = "'{b}' against '{a}' ({changes}): {verdict}."
CEILING = "'{feed}' (the input alone) against '{compute}' (the model alone): {verdict}."
REACHES = "'{run}' reaches {feed} of its input ceiling and {compute} of its compute ceiling."
FASTEST = "Fastest: '{top}', beyond the noise of every other run (against the next, '{next}': {verdict})."
NO_FASTEST = ("No single fastest run: '{top}' has the most samples/s, but not beyond the noise "
              "of {ties} (against the next, '{next}': {verdict}).")
CHANCE = "Every run's accuracy is within noise of chance: more epochs or a larger validation set can tell."
UNMATCHED = "'{b}' differs from '{a}' in {what}, which this lesson does not compare: no verdict."
ACCURACY = "'{b}' against '{a}' in accuracy: {change}."
WAITED = "'{a}' waited for its data {share} of its steady time: feed it faster first (lessons 02 and 09)."
QUOTES = "{source}{on}: {figures}."   # on: ", on <hardware>" where the quotes name one
COLUMN = "{words}: {cells}."
MARKED = "{words}: {names}."
BEYOND_WAIT = ("That is more than removing all of '{a}''s data wait ({share} of its steady time) "
               "could buy: not credited.")
CEILINGS = "The ceilings, '{b}' ({b_alone} alone) against '{a}' ({a_alone} alone): {verdict}."
PLACED = "'{run}' reached {share} of the lower ceiling, '{ceiling}' ({alone} alone): {verdict}."
BOUND = "'{a}' was {bound}: {text}"
REQUIRES = "{text} {why}."
AMOUNT = "'{b}' against '{a}', {what}: {cb} against {ca} MiB, {verdict}."
NOT_READ = "'{b}' against '{a}', {what}: not measured."
ROW = "'{name}': {cells}."
CELLS = "'{b}' against '{a}': {cells}; {verdict}."
TOO_FEW = "{ratio}, too few measured to judge ({more})"
# ranked ends: {x} and {y} the smaller and larger setting's (or first and last row's) names
RANKED = {noise.Order.HIGHER: "{x} gained more than {y}, beyond both ranges.",
          noise.Order.LOWER: "{y} gained more than {x}, beyond both ranges.",
          noise.Order.WITHIN_NOISE: "Which of {x} and {y} gained more is within noise."}
FLAGGED = "'{row}': {value} ({cells})."
CPU_FACTS = "This CPU ({source}): {model}, {logical} logical cores ({physical} physical), {usable} usable."
LIMIT = "'{b}': {words} {cell}, {side} {bar}: {text}"
GROUPS = "{words}: {groups}."
NOTICE = "What the records say ran otherwise than asked ({names}): {notice}"
MACHINE = "Measured on {machine} (from the run records)."


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
