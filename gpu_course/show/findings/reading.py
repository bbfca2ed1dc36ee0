"""Reading a table that is not the runs' (a benchmark's rows, a model's outputs)."""
from __future__ import annotations

import pandas as pd

from ..closing import Closing
from .declarations import Reading, Where
from .wording import GROUPS, ROW, about, cells_line, empty, limit, paragraph, quotes, text_for


def read(reading: Reading, table: pd.DataFrame, track=None, where: Where | None = None,
         show: bool = True) -> Closing:
    """`reading`'s sentences on `table` (shown first unless show=False): the Closing."""
    if table is None or not len(table):
        say = Closing(pd.DataFrame([{reading.key: "no rows"}]), key=reading.key)
        say(text_for(reading.empty, track, where) or "Nothing to read.")
        return say
    if show:
        from .. import tables
        _display(tables.show(table))
    say = Closing(table, key=reading.key)
    names = [say._name(i) for i in range(len(table))]
    for i in range(len(table)) if reading.each else ():
        cells = [words.format(say.cell(i, name, reading.formats.get(name)))
                 for name, words in reading.each.items()
                 if name in table.columns and not empty(table[name].iloc[i])]
        if cells:
            say(ROW.format(name=names[i], cells=", ".join(cells)))
    for text in reading.text:
        paragraph(say, text, (track, where))
    for name, words in reading.columns.items():
        cells_line(say, words, name, enumerate(names))
    for name, words in reading.groups.items():
        groups: dict = {}
        for i, value in enumerate(table[name]):
            if not pd.isna(value) and value != "":
                groups.setdefault(str(value), []).append(f"'{names[i]}'")
        if groups:
            say(GROUPS.format(words=words, groups="; ".join(
                f"{value}: {', '.join(members)}" for value, members in groups.items())))
    for mark in reading.marks:
        if any(v in mark.values for v in table[mark.column]):
            paragraph(say, mark.text, (track, where))
    for bar in reading.limits:
        beyond = [i for i in range(len(table)) if bar.where in (None, where)
                  and bar.row in (None, names[i]) and bar.beyond(table[bar.column].iloc[i])]
        if beyond:
            limit(say, bar, beyond[0], (track, where))
    about(say, reading.about, (track, where))
    quotes(say, reading, reading.quotes)
    return say


def _display(obj) -> None:
    """A table in a notebook as HTML, elsewhere as text."""
    try:
        from IPython import get_ipython
        from IPython.display import display
        shell = get_ipython()
    except ImportError:
        shell = None
    (print if shell is None else display)(obj)
