"""The ladder as numbers: a table of rungs, its text form, a Markdown/HTML report and a
conclusion written from the measurements (never typed by hand).

Every function takes run records (`records.load_run`) and reads the same numbers:

    samples/s    run.summary["samples_per_sec"], else the mean over epochs after the first
    epoch time   likewise "epoch_time_s" (the first epoch carries start-up costs)
    GPU util     run.summary["gpu_util_mean"], else the mean GPU-Util of the samples taken
                 during epochs (NaN on the CPU)
    data wait    share of step time spent waiting for the loader, in %
    val acc      run.summary["val_acc"], else the last epoch's (a fraction, 0-1)

Matplotlib is imported only by `write_report`, so printing a table stays fast.
"""
from __future__ import annotations

import base64
import html
import math
import re
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from .records import write_atomic

LADDER_COLUMNS = ["rung", "samples_per_sec", "epoch_time_s", "gpu_util", "data_wait_share",
                  "speedup", "val_acc", "status"]
STATUS_TEXT = {"oom": "out of memory"}  # how a status reads in tables, charts and sentences
NO_VALUE = "–"

# column -> (header, how a value is written); NaN is written NO_VALUE
_FORMATS = {
    "rung": ("rung", str),
    "samples_per_sec": ("samples/s", lambda v: f"{v:,.1f}"),
    "epoch_time_s": ("epoch (s)", lambda v: f"{v:,.1f}"),
    "gpu_util": ("GPU util", lambda v: f"{v:.0f}%"),
    "data_wait_share": ("data wait", lambda v: f"{v:.0f}%"),
    "speedup": ("speed-up", lambda v: f"×{v:.1f}"),
    "val_acc": ("val acc", lambda v: f"{100 * v:.1f}%"),
    "status": ("status", lambda v: STATUS_TEXT.get(v, v)),
}
_TEXT_COLUMNS = {"rung", "status"}


# -- one number per run ------------------------------------------------------------------

def samples_per_sec(run) -> float:
    """Training throughput of the run (NaN if it finished no epoch)."""
    return _from_summary(run, "samples_per_sec",
                         lambda: _steady_mean(run.epochs, "samples_per_sec"))


def epoch_time_s(run) -> float:
    """Seconds per epoch, the warm-up epoch left out when there are several."""
    return _from_summary(run, "epoch_time_s", lambda: _steady_mean(run.epochs, "epoch_time_s"))


def gpu_util_mean(run) -> float:
    """Mean GPU-Util % while training, over all GPUs; NaN without GPU samples."""
    return _from_summary(run, "gpu_util_mean", lambda: _training_util(run))


def data_wait_share(run) -> float:
    """Percent of step time spent waiting for the input pipeline."""
    share = _number((run.summary or {}).get("data_wait_share"))
    if not math.isnan(share):
        return 100.0 * share  # the record keeps a fraction
    epochs = run.epochs
    if not len(epochs) or not {"data_wait_s", "compute_s"} <= set(epochs.columns):
        return math.nan
    wait = pd.to_numeric(epochs["data_wait_s"], errors="coerce").sum()
    busy = wait + pd.to_numeric(epochs["compute_s"], errors="coerce").sum()
    return 100.0 * wait / busy if busy > 0 else math.nan


def val_acc(run) -> float:
    """Validation accuracy at the end of the run, as a fraction."""
    def last_epoch():
        if "val_acc" not in run.epochs.columns:
            return math.nan
        values = pd.to_numeric(run.epochs["val_acc"], errors="coerce").dropna()
        return float(values.iloc[-1]) if len(values) else math.nan
    return _from_summary(run, "val_acc", last_epoch)


def status(run) -> str:
    """run.json's status: running, finished, interrupted, failed or oom."""
    return str(run.meta.get("status") or "unknown")


def epoch_spans(run) -> list[tuple[int, float, float]]:
    """(epoch, t_start, t_end) on the monitor clock, from epochs.csv or else markers.csv.
    An epoch that started but never ended (a crash) gets t_end NaN."""
    epochs = run.epochs
    if len(epochs) and {"epoch", "t_start", "t_end"} <= set(epochs.columns):
        rows = epochs[["epoch", "t_start", "t_end"]].apply(pd.to_numeric, errors="coerce")
        rows = rows.dropna(subset=["epoch", "t_start"])
        spans = [(int(e), float(a), float(b)) for e, a, b in rows.itertuples(index=False)]
    else:
        spans = []
    marked = _marker_spans(run.markers)
    known = {epoch for epoch, _, _ in spans}
    # markers also tell about the epoch a crash interrupted, which epochs.csv lacks
    return sorted(spans + [span for span in marked if span[0] not in known])


def baseline_index(runs, baseline) -> int:
    """`baseline` as a position in `runs`: an index, or a run's name."""
    names = [run.name for run in runs]
    if isinstance(baseline, str):
        if baseline not in names:
            raise ValueError(f"baseline={baseline!r} is not a run name; allowed: {names}")
        return names.index(baseline)
    if isinstance(baseline, bool) or not isinstance(baseline, int) \
            or not -len(runs) <= baseline < len(runs):
        raise ValueError(f"baseline={baseline!r} must be a run name or an index "
                         f"in 0..{len(runs) - 1}")
    return baseline % len(runs)


# -- tables --------------------------------------------------------------------------------

def ladder_table(runs, baseline=0) -> pd.DataFrame:
    """One row per run, in order: the ladder's numbers and the speed-up over `baseline`
    (an index or a run name; speed-up is the ratio of samples/s)."""
    runs = _as_list(runs)
    rows = [{"rung": run.name, "samples_per_sec": samples_per_sec(run),
             "epoch_time_s": epoch_time_s(run), "gpu_util": gpu_util_mean(run),
             "data_wait_share": data_wait_share(run), "val_acc": val_acc(run),
             "status": status(run)} for run in runs]
    table = pd.DataFrame(rows, columns=[c for c in LADDER_COLUMNS if c != "speedup"])
    base = table["samples_per_sec"].iloc[baseline_index(runs, baseline)]
    table.insert(5, "speedup", table["samples_per_sec"] / base if base > 0 else math.nan)
    return table


def format_table(df: pd.DataFrame) -> str:
    """The table as fixed-width text for a terminal: 1,234.5 samples/s, ×3.2, 97%, – for NaN."""
    header = [_FORMATS.get(c, (str(c),))[0] for c in df.columns]
    cells = [[_cell(c, v) for c, v in zip(df.columns, row)]
             for row in df.itertuples(index=False)]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]

    def line(values):
        return "  ".join(v.ljust(w) if c in _TEXT_COLUMNS else v.rjust(w)
                         for c, v, w in zip(df.columns, values, widths)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule] + [line(r) for r in cells])


def conclusion(runs, baseline=0) -> str:
    """One or two sentences on the ladder, computed from its numbers."""
    runs = _as_list(runs)
    table = ladder_table(runs, baseline)
    base = table.iloc[baseline_index(runs, baseline)]
    failed = [f"'{r.rung}' " + ("ran out of memory" if r.status == "oom" else "failed")
              for r in table.itertuples() if r.status in ("oom", "failed")]
    failed_text = f" {_join(failed)}." if failed else ""
    done = table[(table["samples_per_sec"] > 0) & ~table["status"].isin(["oom", "failed"])]
    if not len(done):
        return "No rung finished an epoch, so there is nothing to compare yet." + failed_text
    best = done.loc[done["samples_per_sec"].idxmax()]
    where = " on the CPU" if math.isnan(best["gpu_util"]) else ""
    speed = f"{best['samples_per_sec']:,.0f} samples/s{where}"
    if best["rung"] == base["rung"]:
        text = f"The baseline '{base['rung']}' is the fastest rung at {speed}."
    elif math.isnan(best["speedup"]):
        text = (f"The fastest rung, '{best['rung']}', trains at {speed}; the baseline "
                f"'{base['rung']}' has no throughput to compare "
                f"({STATUS_TEXT.get(base['status'], base['status'])}).")
    else:
        text = (f"The fastest rung, '{best['rung']}', trains at {speed}, "
                f"×{best['speedup']:.1f} the baseline '{base['rung']}'")
        if not (math.isnan(base["gpu_util"]) or math.isnan(best["gpu_util"])):
            text += (f"; GPU utilisation went from {base['gpu_util']:.0f}% "
                     f"to {best['gpu_util']:.0f}%")
        text += "."
    return text + failed_text


# -- the report ----------------------------------------------------------------------------

def write_report(runs, out_dir, title="gpu-course ladder", baseline=0) -> dict:
    """Write report.md and report.html (figures embedded) plus the figures as PNGs into
    `out_dir`. Returns {"markdown", "html", "ladder", "throughput", "curves": Path,
    "timelines": [Path, one per run]}."""
    from . import plots  # matplotlib only when a report is written

    runs = _as_list(runs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = ladder_table(runs, baseline)
    figures = {"ladder": out / "ladder.png", "throughput": out / "throughput.png",
               "curves": out / "curves.png"}
    plots.ladder(runs, baseline=baseline, save=figures["ladder"])
    plots.throughput(runs, save=figures["throughput"])
    plots.curves(runs, save=figures["curves"])
    timelines = [out / f"timeline-{i + 1:02d}-{_slug(run.name)}.png" for i, run in enumerate(runs)]
    for run, path in zip(runs, timelines):
        plots.utilisation_timeline(run, save=path)

    sections = {
        "title": title, "conclusion": conclusion(runs, baseline),
        "header": _header(runs), "table": table, "runs": _run_lines(runs),
        "figures": [("Ladder", figures["ladder"]), ("Throughput", figures["throughput"]),
                    ("Accuracy and loss", figures["curves"])]
        + [(f"Utilisation: {run.name}", path) for run, path in zip(runs, timelines)],
    }
    paths = {"markdown": out / "report.md", "html": out / "report.html"}
    write_atomic(paths["markdown"], _markdown(sections))  # temp file + rename
    write_atomic(paths["html"], _html(sections))
    return {**paths, **figures, "timelines": timelines}


def _header(runs) -> list[tuple[str, str]]:
    """(label, text) pairs describing the machine and software of the first run."""
    meta = runs[0].meta
    hw = meta.get("hardware") or {}
    gpus = hw.get("gpus") or []
    kinds = Counter(f"{g.get('name', 'GPU')} ({(g.get('memory_total_mib') or 0) / 1024:.0f} GiB, "
                    f"sm_{str(g.get('compute_capability', '?')).replace('.', '')})" for g in gpus)
    gpu_text = ", ".join(f"{n} × {kind}" for kind, n in kinds.items()) or "none (CPU only)"
    versions = meta.get("versions") or {}
    git = meta.get("git") or {}
    lines = [
        ("generated", datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
        ("engine", str(meta.get("engine", "?"))),
        ("GPUs", gpu_text),
        ("driver / CUDA", f"{hw.get('driver') or NO_VALUE} / {hw.get('cuda') or NO_VALUE}"),
        ("CPU", f"{hw.get('cpu_model') or '?'}, {hw.get('cpu_count') or '?'} cores"),
        ("host", f"{hw.get('hostname') or '?'} ({hw.get('platform') or '?'})"),
        ("versions", ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) or NO_VALUE),
        ("git", f"{git.get('commit') or NO_VALUE}{' (dirty)' if git.get('dirty') else ''}"),
    ]
    machines = {_machine_key(run) for run in runs}
    if len(machines) > 1:
        lines.append(("note", f"the runs come from {len(machines)} different machines; "
                              "the header describes the first"))
    return lines


def _run_lines(runs) -> list[str]:
    lines = []
    for run in runs:
        line = f"{run.name}: {run.meta.get('run_id', Path(str(run.path)).name)}"
        summary = (run.summary or {}).get("summary_line")
        error = run.meta.get("error")
        line += f" — {summary}" if summary else ""
        lines.append(line + (f" — error: {error}" if error else ""))
    return lines


def _markdown(s) -> str:
    esc = _md_escape
    out = [f"# {esc(s['title'])}", "", esc(s["conclusion"]), ""]
    out += [f"- **{esc(k)}**: {esc(v)}" for k, v in s["header"]] + [""]
    header = [_FORMATS.get(c, (c,))[0] for c in s["table"].columns]
    out.append("| " + " | ".join(esc(h) for h in header) + " |")
    columns = s["table"].columns
    out.append("|" + "|".join(":--" if c in _TEXT_COLUMNS else "--:" for c in columns) + "|")
    for row in s["table"].itertuples(index=False):
        out.append("| " + " | ".join(esc(_cell(c, v)) for c, v in zip(columns, row)) + " |")
    out += ["", "## Runs", ""] + [f"- {esc(line)}" for line in s["runs"]] + [""]
    for caption, path in s["figures"]:
        out += [f"## {esc(caption)}", "", f"![{esc(caption)}]({path.name})", ""]
    return "\n".join(out)


def _html(s) -> str:
    esc = html.escape
    table = s["table"]
    head = "".join(f"<th>{esc(_FORMATS.get(c, (c,))[0])}</th>" for c in table.columns)
    body = "".join(
        "<tr>" + "".join(f'<td class="{"text" if c in _TEXT_COLUMNS else "num"}">'
                         f"{esc(_cell(c, v))}</td>" for c, v in zip(table.columns, row)) + "</tr>"
        for row in table.itertuples(index=False))
    figures = "".join(
        f"<h2>{esc(caption)}</h2>\n<img alt=\"{esc(caption)}\" "
        f"src=\"data:image/png;base64,{base64.b64encode(path.read_bytes()).decode('ascii')}\">\n"
        for caption, path in s["figures"])
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(s['title'])}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }}
table {{ border-collapse: collapse; }}
th, td {{ padding: 4px 10px; border-bottom: 1px solid #ddd; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }} img {{ max-width: 100%; }}
dt {{ font-weight: bold; float: left; width: 9em; }} dd {{ margin-left: 10em; }}
</style></head><body>
<h1>{esc(s['title'])}</h1>
<p><strong>{esc(s['conclusion'])}</strong></p>
<dl>{''.join(f'<dt>{esc(k)}</dt><dd>{esc(v)}</dd>' for k, v in s['header'])}</dl>
<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
<h2>Runs</h2>
<ul>{''.join(f'<li>{esc(line)}</li>' for line in s['runs'])}</ul>
{figures}</body></html>
"""


# -- small helpers -------------------------------------------------------------------------

def _as_list(runs) -> list:
    runs = list(runs)
    if not runs:
        raise ValueError("runs is empty; pass at least one run record")
    return runs


def _number(value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number if math.isfinite(number) else math.nan


def _from_summary(run, key, fallback) -> float:
    value = _number((run.summary or {}).get(key))
    return value if not math.isnan(value) else _number(fallback())


def _steady_mean(epochs: pd.DataFrame, column: str) -> float:
    if column not in epochs.columns:
        return math.nan
    values = pd.to_numeric(epochs[column], errors="coerce").dropna()
    if len(values) > 1:
        values = values.iloc[1:]  # the first epoch pays for start-up
    return float(values.mean()) if len(values) else math.nan


def _training_util(run) -> float:
    gpu = run.gpu
    if not len(gpu) or "util_gpu" not in gpu.columns:
        return math.nan
    t = pd.to_numeric(gpu["t"], errors="coerce")
    util = pd.to_numeric(gpu["util_gpu"], errors="coerce")
    spans = [(a, b) for _, a, b in epoch_spans(run)]
    if spans:
        inside = pd.Series(False, index=gpu.index)
        for a, b in spans:
            inside |= (t >= a) & ((t <= b) if not math.isnan(b) else True)
        if (inside & util.notna()).any():
            util = util[inside]
    return float(util.mean()) if util.notna().any() else math.nan


def _marker_spans(markers: pd.DataFrame) -> list[tuple[int, float, float]]:
    starts, ends = {}, {}
    if len(markers) and {"t", "label"} <= set(markers.columns):
        for t, label in zip(markers["t"], markers["label"]):
            match = re.fullmatch(r"\s*epoch\s+(\d+)\s+(start|end)\s*", str(label), re.IGNORECASE)
            if match and not math.isnan(_number(t)):
                which = starts if match.group(2).lower() == "start" else ends
                which[int(match.group(1))] = float(t)
    return [(n, starts[n], ends.get(n, math.nan)) for n in sorted(starts)]


def _cell(column, value) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return NO_VALUE
    return str(_FORMATS.get(column, (None, str))[1](value))


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _machine_key(run) -> tuple:
    hw = run.meta.get("hardware") or {}
    return (hw.get("hostname"), tuple(g.get("name") for g in hw.get("gpus") or []))


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(name).lower()).strip("-")[:40] or "run"


def _md_escape(text) -> str:
    """Markdown passes raw HTML through, so escape it, and pipes that would split cells."""
    return html.escape(str(text), quote=False).replace("|", "\\|")


# -- reference results ----------------------------------------------------------------
REFERENCE_ROOT = Path(__file__).resolve().parent / "reference"


def reference_runs(*prefixes: str, folder: str = "pytorch-h200") -> dict:
    """The newest reference run of each name starting with one of `prefixes`
    (all names when none are given), keyed by name; {} when none are recorded."""
    from .records import load_runs
    runs = load_runs(REFERENCE_ROOT / folder)
    return {r.name: r for r in runs if not prefixes or r.name.startswith(prefixes)}


def beside_reference(mine, reference: dict, baseline=0):
    """This machine's ladder table beside the reference runs' (one frame, two blocks)."""
    return pd.concat({"this machine": ladder_table(list(mine), baseline).set_index("rung"),
                      "reference": ladder_table(list(reference.values())).set_index("rung")})


def no_reference_line(folder: str = "pytorch-h200") -> str:
    """What a notebook prints when no reference results are recorded (computed, not typed)."""
    from .records import load_runs
    path = REFERENCE_ROOT / folder
    return (f"No reference results are recorded yet ({len(load_runs(path))} runs in "
            f"gpu_course/reference/{folder}): only this machine's numbers are shown.")
