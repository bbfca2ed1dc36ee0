"""The ladder as text: a table, a Markdown/HTML report and a conclusion from the measurements."""
from __future__ import annotations

import base64
import html
import json
import math
import re
import warnings
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from string import Template

import pandas as pd

from ..analyse import alike, anatomy, flops, metrics, noise
from . import tables
from ..measure.records import write_atomic
from ..page import Page

PAGE = Page.of(__name__)   # the conclusion's fixed sentences: text/report.md
SAY = {name: PAGE.text(name) for name in (
    "nothing_to_compare", "not_credited", "accuracy_unmoved", "accuracy_moved", "accuracy_caution",
    "baseline_fastest", "no_baseline", "against_baseline", "gpu_util", "each_rung", "spent",
    "accuracy_change", "also_differ", "read", "pays_back", "no_pay_back", "machines")}
WARMUP, MADE, LEAD, FAILED_AS = (PAGE.means(name, str)
                                 for name in ("warmup", "made", "lead", "failed"))
HTML = Template((Path(__file__).parent / "text" / "report.html").read_text(encoding="utf-8"))

NO_VALUE = tables.NO_VALUE
ANATOMY_HEADING, SHARED = PAGE.text("anatomy_heading"), PAGE.text("shared")

# column -> (header, how a value is written): `tables.COLUMNS`, with a terminal's fixed digits
_FIXED = {"samples_per_sec": "{:,.1f}", "samples_per_sec_all": "{:,.1f}", "epoch_time_s": "{:,.1f}",
          "gpu_util": "{:.0f}%", "sm_active": "{:.0f}%", "tensor_active": "{:.0f}%",
          "data_wait_share": "{:.0%}", "spikiness": "{:.2f}", "speedup": "×{:.2f}",
          "tflops": "{:.3g}"}
_FORMATS = {**tables.COLUMNS, **{c: (tables.COLUMNS[c][0], f.format) for c, f in _FIXED.items()},
            "ran": ("ran (where not as requested)", str), "peak_pct": (
                "% of peak", lambda v: f"{v:.0f}%" + (tables.ABOVE_PEAK if v > 100 else ""))}
_TEXT_COLUMNS = {"rung", "ran", "status", "bound", "next_rung", "compiled"}


def ladder_table(runs, baseline=0, varies=()) -> pd.DataFrame:
    """One row per run or group of repeats, a column for whatever else differs beyond
    `varies`; no speed-up across mocks, for the baseline repeated, or on too few steps."""
    table = metrics.table(runs, baseline)
    groups = metrics.as_groups(runs)
    runs = [metrics.representative(r) for r in groups]  # a group of repeats: its median run
    base_i = metrics.baseline_index(groups, baseline)
    base = runs[base_i]
    mocks = [str(r.config.get("mock") or "none") for r in runs]
    table.loc[[m != mocks[base_i] for m in mocks], "speedup"] = math.nan
    table.loc[[r is not base and not alike.settings(base, r) for r in runs], "speedup"] = math.nan
    # a ratio of a few steady steps is noise (on an H200 a quick rung's 2 steps read x0.16)
    few = [len(g) == 1 and metrics.steady_steps(r) < metrics.MIN_STEADY_STEPS
           for g, r in zip(groups, runs)]
    table.loc[[f or few[base_i] for f in few], "speedup"] = math.nan
    for at, aspect in enumerate(alike.differing(runs, varies), start=1):
        table.insert(at, aspect, [_scalar(alike.shown(r, aspect)) for r in runs])
    at = table.columns.get_loc("gpu_util") + 1
    for offset, name in enumerate(("sm_active", "tensor_active")):
        table.insert(at + offset, name, [metrics.gpm_activity(r)[name] for r in runs])
    return flops.table_columns(table, runs)


def put(table: pd.DataFrame, at: int, column: str, values) -> None:
    """Insert `column` at `at`, replacing the column of that name (a lesson's own words)."""
    if column in table.columns:
        table.drop(columns=column, inplace=True)
    table.insert(min(at, len(table.columns)), column, values)


def _scalar(value):
    """A table cell: numbers and words as they are, anything else (a list) as text."""
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


def format_table(df: pd.DataFrame) -> str:
    """The table as fixed-width text for a terminal: 1,234.5 samples/s, ×3.2, 97%, – for NaN."""
    return _table(tables.readable(df)).text()


def _table(df: pd.DataFrame) -> tables.Table:
    cells = pd.DataFrame([[_cell(c, v) for c, v in zip(df.columns, row)]
                          for row in df.itertuples(index=False)],
                         columns=[_heading(c) for c in df.columns], dtype=object)
    return tables.Table([cells], {_heading(c) for c in df.columns if c in _TEXT_COLUMNS})


def anatomy_table(runs, baseline=0) -> tuple[pd.DataFrame, str]:
    """Where each rung's step goes and its time to the target, and the sentence saying so."""
    frame = anatomy.table(runs, baseline)
    base = frame["rung"].iloc[metrics.baseline_index(metrics.as_groups(runs), baseline)]
    return frame, anatomy.target_line(frame, base)


def anatomy_text(runs, baseline=0) -> str:
    frame, line = anatomy_table(runs, baseline)
    return format_table(frame) + "\n" + line


def conclusion(runs, baseline=0, varies=()) -> str:
    """The ladder in sentences judged against noise; no verdict across anything but `varies`."""
    groups = list(runs)
    table = ladder_table(groups, baseline, varies)   # refuses no runs
    # a group of repeats is judged by its runs' spread, a single run by its blocks'
    compared = [g if isinstance(g, (list, tuple)) and len(g) > 1 else metrics.representative(g)
                for g in groups]
    runs = [metrics.representative(g) for g in groups]
    base_i = metrics.baseline_index(runs, baseline)
    base = table.iloc[base_i]
    failed = [f"'{r.rung}' " + FAILED_AS.get(r.status, FAILED_AS["failed"])
              for r in table.itertuples() if r.status in metrics.FAILED]
    failed_text = f" {_join(failed)}." if failed else ""
    ok = [i for i, r in enumerate(table.itertuples())
          if r.samples_per_sec > 0 and r.status not in metrics.FAILED]
    if not ok:
        return SAY["nothing_to_compare"] + failed_text
    best_i = max(ok, key=lambda i: table.samples_per_sec[i])
    best = table.iloc[best_i]
    where = " on the CPU" if math.isnan(best["gpu_util"]) else ""
    speed = f"{best['samples_per_sec']:,.0f} samples/s{where}"
    if best_i == base_i:
        text = [SAY["baseline_fastest"].format(base=base["rung"], speed=speed)]
    elif not base["samples_per_sec"] > 0:   # NaN or 0: the baseline never ran steadily
        status = metrics.STATUS_TEXT.get(base['status'], base['status'])
        text = [SAY["no_baseline"].format(best=best["rung"], speed=speed, base=base["rung"],
                                          status=status)]
    else:
        verdict = noise.compare(compared[base_i], compared[best_i], varies=varies)
        lead = LEAD["effect" if verdict.is_effect else "within noise"]
        line = SAY["against_baseline"].format(lead=lead, best=best["rung"], speed=speed,
                                              base=base["rung"], verdict=noise.sentence(verdict))
        if not (math.isnan(base["gpu_util"]) or math.isnan(best["gpu_util"])):
            line += "; " + SAY["gpu_util"].format(before=base["gpu_util"], after=best["gpu_util"])
        text = [line + "."]
    steps = [f"'{table.rung[b]}' {noise.sentence(noise.compare(compared[a], compared[b], varies=varies))}"
             for a, b in zip(ok, ok[1:])]
    if steps:
        text.append(SAY["each_rung"].format(steps="; ".join(steps)))
    text += _accuracy_effects(runs, table, ok, varies)
    text += _warmup_costs(runs, table, ok)
    text += _preparation_costs(runs, table, ok)
    shared = [table.rung[i] for i, group in enumerate(metrics.as_groups(groups))
              if any(metrics.machine_load(run)["shared"] for run in group)]
    if shared:
        text.append(SHARED.format(names=_join(shared)))
    text += [sentence[0].upper() + sentence[1:] + "."
             for sentence in noise.far_apart(_flat(groups))]
    return " ".join(text) + failed_text


def _warmup_costs(runs, table, ok) -> list[str]:
    """A sentence per rung whose warm-up cost over 10 % of its run: when its speed repays it."""
    out = []
    for before, after in zip(ok, ok[1:]):
        steady, whole = table.samples_per_sec[after], table.samples_per_sec_all[after]
        if not whole or math.isnan(whole) or whole >= 0.9 * steady:
            continue
        warm = metrics.warmup_s(runs[after]) - metrics.warmup_s(runs[before])
        per_epoch = table.epoch_time_s[before] - table.epoch_time_s[after]
        if per_epoch <= 0:
            gain = WARMUP["never"]
        elif warm <= 0:  # no more warm-up than the rung before, and faster epochs
            gain = WARMUP["at once"]
        elif warm / per_epoch < 0.05:  # would print as "after 0.0 epochs"
            gain = WARMUP["first epoch"].format(warm=warm)
        else:
            gain = WARMUP["after"].format(epochs=warm / per_epoch)
        out.append(SAY["spent"].format(rung=table.rung[after], warm=metrics.warmup_s(runs[after]),
                                       whole=whole, steady=steady, gain=gain))
    return out


def _accuracy_effects(runs, table, ok, varies=()) -> list[str]:
    """One sentence on validation accuracy, each rung against the one before it."""
    if len(ok) < 2:
        return []
    moved, unlike = [], []
    for before, after in zip(ok, ok[1:]):
        if any(math.isnan(metrics.val_acc(runs[i])) for i in (before, after)) \
                or not noise.accuracy_verdict(runs[before], runs[after]).is_effect:
            continue
        line = SAY["accuracy_change"].format(
            rung=table.rung[after], before=table.rung[before],
            change=noise.accuracy_change(runs[before], runs[after])[1])
        differ = alike.differences(runs[before], runs[after], varies)
        if differ:
            also = alike.words(differ, table.rung[before], table.rung[after])
            unlike.append(SAY["also_differ"].format(line=line, also=also))
        else:
            moved.append(line)
    text = [SAY["not_credited"].format(rungs="; ".join(unlike))] if unlike else []
    if not moved:
        return text + [SAY["accuracy_unmoved"]]
    return text + [SAY["accuracy_moved"].format(rungs="; ".join(moved)), SAY["accuracy_caution"]]


def _preparation_costs(runs, table, ok) -> list[str]:
    """Per copy of the data made offline before a rung ran: its cost, and when it pays back."""
    out, made_here = [], set()
    for before, after in zip([None] + ok, ok):
        note = (runs[after].meta.get("notes") or {}).get("prepared") or {}
        if not note or note.get("path") in made_here:
            continue
        made_here.add(note.get("path"))
        rung = table.rung[after]
        cost = metrics.preparation_s(runs[after])
        if math.isnan(cost):
            out.append(f"'{rung}' read {note.get('what')} {MADE['untimed']}")
            continue
        made = MADE["reused" if note.get("reused") else "here"]
        text = SAY["read"].format(rung=rung, what=note.get("what"), made=made,
                                  images=note.get("images"), cost=cost)
        if before is not None:
            per_epoch, prev = table.epoch_time_s[before] - table.epoch_time_s[after], table.rung[before]
            back = (SAY["pays_back"].format(prev=prev, per_epoch=per_epoch, epochs=cost / per_epoch)
                    if per_epoch > 0 else SAY["no_pay_back"].format(prev=prev))
            text += "; " + back
        out.append(text + ".")
    return out


def write_report(runs, out_dir, title="gpu-course ladder", baseline=0, varies=()) -> dict:
    """Write report.md, report.html and the figures as PNGs into `out_dir`; their paths."""
    from . import plots  # matplotlib only when a report is written

    groups = list(runs)
    table = tables.readable(ladder_table(groups, baseline, varies))   # refuses no runs
    runs = _flat(groups)  # every run gets its own timeline and step figure
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figures = {name: out / f"{name}.png" for name in ("ladder", "throughput", "curves")}
    plots.ladder(groups, baseline=baseline, save=figures["ladder"])
    plots.throughput(groups, save=figures["throughput"])
    plots.curves(runs, save=figures["curves"])
    per_run = {}
    for kind, caption, draw in (("timeline", "Utilisation", plots.utilisation_timeline),
                                ("steps", "Steps", plots.step_times)):
        per_run[kind] = [(f"{caption}: {run.name}", out / f"{kind}-{i + 1:02d}-{_slug(run.name)}.png")
                         for i, run in enumerate(runs)]
        for run, (_, path) in zip(runs, per_run[kind]):
            draw(run, save=path)
    sections = {
        "title": title, "conclusion": conclusion(groups, baseline, varies),
        "header": _header(runs), "table": table,
        "runs": _run_lines(runs), "anatomy": anatomy_table(groups, baseline),
        "figures": [("Ladder", figures["ladder"]), ("Throughput", figures["throughput"]),
                    ("Accuracy and loss", figures["curves"])] + per_run["timeline"] + per_run["steps"],
    }
    paths = {"markdown": out / "report.md", "html": out / "report.html"}
    write_atomic(paths["markdown"], _markdown(sections))  # temp file + rename
    write_atomic(paths["html"], _html(sections))
    return {**paths, **figures, "timelines": [p for _, p in per_run["timeline"]],
            "steps": [p for _, p in per_run["steps"]]}


def _header(runs) -> list[tuple[str, str]]:
    """(label, text) pairs describing the machine and software of the first run."""
    meta = runs[0].meta
    hw = meta.get("hardware") or {}
    kinds = Counter(f"{g.get('name', 'GPU')} ({(g.get('memory_total_mib') or 0) / 1024:.0f} GiB, "
                    f"sm_{str(g.get('compute_capability', '?')).replace('.', '')})"
                    for g in hw.get("gpus") or [])
    versions, git = meta.get("versions") or {}, meta.get("git") or {}
    lines = [
        ("generated", datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
        ("engine", str(meta.get("engine", "?"))),
        ("GPUs", ", ".join(f"{n} × {kind}" for kind, n in kinds.items()) or "none (CPU only)"),
        ("driver / CUDA", f"{hw.get('driver') or NO_VALUE} / {hw.get('cuda') or NO_VALUE}"),
        ("CPU", f"{hw.get('cpu_model') or '?'}, {hw.get('cpu_count') or '?'} cores"),
        ("host", f"{hw.get('hostname') or '?'} ({hw.get('platform') or '?'})"),
        ("versions", ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) or NO_VALUE),
        ("git", f"{git.get('commit') or NO_VALUE}{' (dirty)' if git.get('dirty') else ''}"),
    ]
    machines = {(hw.get("hostname"), tuple(g.get("name") for g in hw.get("gpus") or []))
                for hw in ((run.meta.get("hardware") or {}) for run in runs)}
    if len(machines) > 1:
        lines.append(("note", SAY["machines"].format(count=len(machines))))
    return lines


def _run_lines(runs) -> list[str]:
    """Per run: its id, summary, profiler traces (gpu-course profile) and error."""
    return [" — ".join(filter(None, [
        f"{run.name}: {run.meta.get('run_id', Path(str(run.path)).name)}",
        (run.summary or {}).get("summary_line"),
        *(f"trace: {trace}" for trace in sorted(Path(str(run.path)).glob("profile/*.json.gz"))),
        run.meta.get("error") and f"error: {run.meta['error']}"])) for run in runs]


def _markdown(s) -> str:
    esc = _md_escape
    frame, line = s["anatomy"]
    out = [f"# {esc(s['title'])}", "", esc(s["conclusion"]), ""]
    out += [f"- **{esc(k)}**: {esc(v)}" for k, v in s["header"]] + [""]
    out += _md_table(s["table"])
    out += ["", f"## {ANATOMY_HEADING}", ""] + _md_table(frame) + ["", esc(line)]
    out += ["", "## Runs", ""] + [f"- {esc(line)}" for line in s["runs"]] + [""]
    for caption, path in s["figures"]:
        out += [f"## {esc(caption)}", "", f"![{esc(caption)}]({path.name})", ""]
    return "\n".join(out)


def _md_table(table: pd.DataFrame) -> list[str]:
    rows = [[_heading(c) for c in table.columns]]
    rows += [[_cell(c, v) for c, v in zip(table.columns, row)] for row in table.itertuples(index=False)]
    rule = "|" + "|".join(":--" if c in _TEXT_COLUMNS else "--:" for c in table.columns) + "|"
    lines = ["| " + " | ".join(_md_escape(v) for v in row) + " |" for row in rows]
    return lines[:1] + [rule] + lines[1:]


def _html(s) -> str:
    esc = html.escape
    frame, line = s["anatomy"]
    return HTML.substitute(
        title=esc(s["title"]), conclusion=esc(s["conclusion"]), anatomy_heading=ANATOMY_HEADING,
        header="".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in s["header"]),
        table=_table(s["table"])._repr_html_(), anatomy=_table(frame)._repr_html_(),
        anatomy_line=esc(line), runs="".join(f"<li>{esc(line)}</li>" for line in s["runs"]),
        figures="".join(f'<h2>{esc(caption)}</h2>\n<img alt="{esc(caption)}" src="data:image/png;base64,'
                        f'{base64.b64encode(path.read_bytes()).decode("ascii")}">\n'
                        for caption, path in s["figures"]))


def _flat(groups) -> list:
    """Every run of `groups` (runs and lists of repeats), in order."""
    return [run for group in metrics.as_groups(groups) for run in group]


def _heading(column) -> str:
    return _FORMATS[column][0] if column in _FORMATS else tables.header(column)


def _cell(column, value) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return NO_VALUE
    return str(_FORMATS.get(column, (None, str))[1](value))


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(name).lower()).strip("-")[:40] or "run"


def _md_escape(text) -> str:
    """Markdown passes raw HTML through, so escape it, and pipes that would split cells."""
    return html.escape(str(text), quote=False).replace("|", "\\|")


REFERENCE_ROOT = Path(__file__).resolve().parents[1] / "reference"
GPU_CHECKS = REFERENCE_ROOT / "gpu-checks"   # tools.gpu_evidence: <track>-<gpu>/<when>/
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def gpu_checks(root: Path | None = None) -> list[dict]:
    """Each GPU check committed under `root` (GPU_CHECKS), oldest first."""
    found = []
    for path in sorted(Path(root or GPU_CHECKS).glob("*/*/gpu-check.json")):
        try:
            summary = json.loads(path.read_text())
            found.append({"folder": path.parent.parent.name, "stamp": path.parent.name,
                          "device": str(summary["device"]), "date": str(summary["at"])[:10],
                          "notebooks": [{**n, "name": str(n["name"]),
                                         "status": _ANSI.sub("", str(n["status"]))}
                                        for n in summary["notebooks"]]})
        except (OSError, ValueError, KeyError, TypeError) as err:   # one bad check hides no other
            warnings.warn(f"skipping {path}: unreadable ({type(err).__name__}: {err})", stacklevel=2)
    return found   # sorted paths: by folder, then stamp


def executed_notebooks(root: Path | None = None) -> dict[str, dict[str, dict]]:
    """{folder: {notebook: the newest check that ran it to an end, else that stopped it}}."""
    best: dict[str, dict[str, dict]] = {}
    for check in gpu_checks(root):
        for entry in (e for e in check["notebooks"] if not e["status"].startswith("skipped")):
            said, mine = entry["status"], best.setdefault(check["folder"], {})
            held = mine.get(entry["name"])
            if held is None or not said.startswith("stopped") or held["status"].startswith("stopped"):
                mine[entry["name"]] = {**entry, "stamp": check["stamp"],
                                       "device": check["device"], "date": check["date"]}
    return best


def executed_copies(track: str, number) -> list[tuple[str, Path]]:
    """(GPU, executed notebook) for each GPU whose check ran lesson `number` without error."""
    return [(entry["device"], GPU_CHECKS / folder / "notebooks" / name)
            for folder, notebooks in sorted(executed_notebooks().items())
            if folder.startswith(f"{track}-")
            for name, entry in sorted(notebooks.items())
            if name.startswith(f"{str(number).zfill(2)}_") and entry["status"] == "ok"
            and (GPU_CHECKS / folder / "notebooks" / name).is_file()]
