"""Tables for reading (`gc.tables.show(table)`): units in the headers, digits that mean
something (301 samples/s, 81.2%, ×3.20, – for NaN), wide tables folded so none is cut off."""
from __future__ import annotations

import html
import math
import numbers

import pandas as pd

NO_VALUE = "–"
WIDTH = 96  # characters a notebook cell shows without scrolling (JupyterLab, default font)
STATUS_TEXT = {"oom": "out of memory"}


def _num(value: float) -> str:
    """Three significant digits, none lost before the point: 301, 30.1, 3.01, 0.0301."""
    if value == 0:
        return "0"
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 1:
        return f"{value:.{2 - int(math.log10(size))}f}"
    return f"{value:.3g}"


def _percent(value: float) -> str:  # already in percent
    return f"{value:.0f}%" if abs(value) >= 10 else f"{value:.1f}%"


_fraction = "{:.1%}".format   # 0-1 shown as percent


def _ratio(value: float) -> str:
    return f"×{value:.2f}" if value < 10 else f"×{value:.1f}"


# column -> (header, how a value is written)
COLUMNS = {
    "epoch_time_s": ("epoch (s)", _num),
    "gpu_util": ("GPU util", _percent),
    "gpu_util_mean": ("GPU util", _percent),
    "sm_active": ("SM active", _percent),
    "tensor_active": ("tensor active", _percent),
    "data_wait_share": ("data wait", _fraction),
    "data_wait": ("data wait", _fraction),        # SageMaker's metric: a share, 0-1
    "input_bound_from": ("input-bound from", _fraction),   # lesson 12: diagnose.INPUT_WAIT
    "of_compute_ceiling": ("run ÷ compute ceiling", _fraction),
    "of_input_ceiling": ("run ÷ input ceiling", _fraction),
    "% of step": ("% of step", _percent),          # lesson 12: a trace's split of a step
    "own_%": ("own_%", _percent),                  # lesson 12: cProfile's own time
    "epoch_time": ("epoch (s)", _num),            # SageMaker's metric
    "waited_share": ("steps that waited", _fraction),
    "activations_share": ("activations, of the peak", _fraction),
    "device_share": ("peak, of the device", _fraction),
    "cached_at_start": ("file cached at epoch start", _fraction),   # lesson 09: page cache
    "samples_per_sec": ("samples/s (steady)", _num),
    "samples_per_sec_range": ("min–max", str),
    "samples_per_sec_all": ("samples/s (all)", _num),
    "spikiness": ("p95/p50 step", _ratio),
    "ran": ("ran (not as requested)", str),
    "tflops": ("TFLOP/s", _num),
    "peak_pct": ("% of peak", lambda v: _percent(v) + (ABOVE_PEAK if v > 100 else "")),
    "speedup": ("speed-up", _ratio),
    "val_acc": ("val acc", _fraction),
    "train_acc": ("train acc", _fraction),
    "status": ("status", lambda v: STATUS_TEXT.get(v, str(v))),
    "repeats": ("runs", str),
    "num_workers": ("workers", str),
    "batch_size": ("batch", str),
    "gpu_util_std": ("GPU util std (pp)", _num),
    "lr": ("LR", lambda v: f"{v:.3g}"),
    # the anatomy of a step and time to target (analyse.anatomy)
    **{c: (h, "{:,.2f}".format) for c, h in (("step_ms", "step (ms)"), ("data_wait_ms", "data wait (ms)"),
                                             ("host_ms", "host (ms)"), ("gpu_busy_ms", "GPU busy (ms)"))},
    "bound": ("held by", str),
    "compiled": ("compiled into", str),
    "to_target_s": ("to target (s)", _num),
    "to_target_speedup": ("× faster to target", _ratio),
    "sync_s": ("closing sync (s)", _num),           # lesson 13: the epochs' closing sync
    "sync_share": ("closing sync", _fraction),      # ... as a share of the epochs' time
    "images_per_sec": ("images/s", _num),           # lesson 13: a timed block's images / time
    # lesson 15: a served network's passes (analyse.inference.table)
    "p50_ms": ("p50 (ms)", _num),
    "p99_ms": ("p99 (ms)", _num),
    "p50_blocks_ms": ("p50 of each block (ms)", str),
    "p99_p50": ("p99/p50", _ratio),
    "images_blocks": ("images/s of each block", str),
    "max_rel_diff": ("max |Δ| / max |y|", lambda v: f"{v:.1e}"),
    "top1_same": ("top-1 same", _fraction),
    "tolerance": ("tolerance", lambda v: f"{v:.0e}"),
    "load_average": ("load average before", _num),
}
GPM_COLUMNS = ("sm_active", "tensor_active")  # Hopper and newer: empty elsewhere, not shown
ABOVE_PEAK = " (above peak: unreliable)"  # a run cannot beat its device's peak
RANGE_COLUMNS = ("samples_per_sec_min", "samples_per_sec_max")  # shown as one "min–max" cell
_UNITS = {"s": "s", "ms": "ms", "mib": "MiB", "gib": "GiB", "mb": "MB", "gb": "GB",
          "pct": "%", "percent": "%"}
_WORDS = {"gpu": "GPU", "cpu": "CPU", "lr": "LR", "acc": "acc", "num": "", "per": "/"}


def header(column) -> str:
    """The header of a column: the course's own, else its name with the unit moved last."""
    if column in COLUMNS:
        return COLUMNS[column][0]
    if not isinstance(column, str):
        return str(column)
    words, unit = [], None
    for word in column.split("_"):
        if word.lower() in _UNITS and unit is None and words:
            unit = _UNITS[word.lower()]
        else:
            words.append(_WORDS.get(word.lower(), word))
    text = " ".join(w for w in words if w).replace(" / ", "/")
    return f"{text} ({unit})" if unit else text


def cell(column, value) -> str:
    if value is None or (not isinstance(value, str) and _isna(value)):
        return NO_VALUE
    if column in COLUMNS:
        return COLUMNS[column][1](value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    return f"{value:,d}" if isinstance(value, numbers.Integral) else _num(float(value))


class Table:
    """HTML in a notebook, fixed-width text elsewhere: `blocks` of strings, each narrow enough."""

    def __init__(self, blocks: list[pd.DataFrame], text_columns: set):
        self.blocks, self.text_columns = blocks, text_columns

    def text(self) -> str:
        out = []
        for block in self.blocks:
            heads = list(block.columns)
            rows = block.values.tolist()
            widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(heads)]

            def line(values):
                return "  ".join(v.ljust(w) if h in self.text_columns else v.rjust(w)
                                 for h, v, w in zip(heads, values, widths)).rstrip()
            out.append("\n".join([line(heads), "  ".join("-" * w for w in widths)]
                                 + [line(r) for r in rows]))
        return "\n\n".join(out)

    def _repr_html_(self) -> str:
        parts = []
        for block in self.blocks:
            head = "".join(f'<th style="text-align:{self._align(h)}">{html.escape(h)}</th>'
                           for h in block.columns)
            body = "".join("<tr>" + "".join(
                f'<td style="text-align:{self._align(h)};font-variant-numeric:tabular-nums">'
                f"{html.escape(v)}</td>" for h, v in zip(block.columns, row)) + "</tr>"
                for row in block.values.tolist())
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        return "\n".join(parts)

    def _align(self, column: str) -> str:
        return "left" if column in self.text_columns else "right"

    __str__ = __repr__ = text


def show(df: pd.DataFrame, width: int = WIDTH) -> Table:
    """`df` for reading, in blocks that fit `width` characters (or turned on its side)."""
    df = readable(df)
    frame = _flat(df)
    keys = 1 if isinstance(df.index, pd.RangeIndex) and df.index.name is None else df.index.nlevels
    text_columns = {header(c) for c in frame.columns  # pandas 3 stores text as "str", not object
                    if c in ("rung", "status") or _is_text(frame[c])}
    cells = pd.DataFrame({header(c): [cell(c, v) for v in frame[c]] for c in frame.columns})
    if _width(cells) <= width:
        return Table([cells], text_columns)
    if len(cells) <= 3 and len(cells.columns) > 4:  # a few runs, many measures: on its side
        side = cells.set_index(cells.columns[0]).T.reset_index()
        side.columns = [""] + [str(c) for c in side.columns[1:]]
        if _width(side) <= width:
            return Table([side], {""})
    return Table(_fold(cells, width, keys), text_columns)


def readable(df: pd.DataFrame) -> pd.DataFrame:
    """A ladder table as shown: no empty columns, and each run's spread as one "min–max" column."""
    for column in ("ran", "compiled"):
        if column in df.columns and not df[column].fillna("").astype(str).str.len().any():
            df = df.drop(columns=column)
    if "repeats" in df.columns and (pd.to_numeric(df["repeats"], errors="coerce") <= 1).all():
        df = df.drop(columns="repeats")  # one run a row: its spread is its own blocks'
    df = df.drop(columns=[c for c in GPM_COLUMNS if c in df.columns and df[c].isna().all()])
    if set(RANGE_COLUMNS) <= set(df.columns):
        low, high = (pd.to_numeric(df[c], errors="coerce") for c in RANGE_COLUMNS)
        spread = [f"{_num(a)}–{_num(b)}" if not (_isna(a) or _isna(b)) else NO_VALUE
                  for a, b in zip(low, high)]
        at = df.columns.get_loc(RANGE_COLUMNS[0])
        df = df.drop(columns=list(RANGE_COLUMNS))
        if any(text != NO_VALUE for text in spread):
            df.insert(at, "samples_per_sec_range", spread)
    return df


def _flat(df: pd.DataFrame) -> pd.DataFrame:
    """The index as leading columns (unless it is a plain 0..n-1), names never empty."""
    frame = df.copy()
    if not (isinstance(df.index, pd.RangeIndex) and df.index.name is None):
        names = [n if n is not None else ("" if i else " ") for i, n in enumerate(df.index.names)]
        frame = frame.rename_axis(names).reset_index()
    if isinstance(frame.columns, pd.MultiIndex):
        frame.columns = [" ".join(str(p) for p in c if str(p)) for c in frame.columns]
    return frame


def _width(cells: pd.DataFrame) -> int:
    widths = [max([len(str(h))] + [len(v) for v in cells[h]]) for h in cells.columns]
    return sum(widths) + 2 * (len(widths) - 1)


def _fold(cells: pd.DataFrame, width: int, keys: int) -> list[pd.DataFrame]:
    """Blocks of columns that fit in `width`, each led by the `keys` first columns."""
    key, rest = list(cells.columns[:keys]), list(cells.columns[keys:])
    blocks, current = [], []
    for column in rest:
        if current and _width(cells[[*key, *current, column]]) > width:
            blocks.append(cells[[*key, *current]])
            current = []
        current.append(column)
    blocks.append(cells[[*key, *current]])
    return blocks


def _is_text(column: pd.Series) -> bool:
    """Whether a column holds text (left-aligned): strings or gaps, whatever the dtype."""
    return (column.dtype == object or pd.api.types.is_string_dtype(column.dtype)) and \
        all(isinstance(v, str) or v is None or _isna(v) for v in column)


def _isna(value) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
