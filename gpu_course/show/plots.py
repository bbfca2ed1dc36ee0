"""Figures of what the GPU did while a run trained and of how rungs compare: each a Figure
(a PNG given `save=path`), built without pyplot so nothing leaks between calls."""
from __future__ import annotations

import copy
import io
import math
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import transforms
from matplotlib.figure import Figure

from ..analyse import metrics, noise
from ..analyse.signals import throttled
from ..measure.records import write_atomic
from ..page import Page
from . import tables

PAGE = Page.of(__name__)   # the fixed titles and labels: text/plots.md
SAY = {name: PAGE.text(name) for name in (
    "time_axis", "no_gpu_samples", "mean_gpu_util", "no_steps", "compute", "step_axis",
    "steady_steps", "throughput", "speedup_axis", "no_speedup_axis", "ladder", "accuracy",
    "set_up", "validation", "sm_clock")}

DPI = 120
MAX_GPU_PANEL_SETS = 4    # with more GPUs, one shared panel set with a line per GPU
FAILED = metrics.FAILED
TIME_AXIS = SAY["time_axis"]
DASHED = {"ls": "--", "lw": 0.8}   # a limit beside its reading


def utilisation_timeline(run, save=None) -> Figure:
    """Per GPU: utilisation, memory, power, clock and temperature over time; CPU below."""
    gpu = run.gpu
    ids = sorted(int(g) for g in pd.to_numeric(gpu["gpu"], errors="coerce").dropna().unique()) \
        if len(gpu) else []
    sets = [[g] for g in ids] if len(ids) <= MAX_GPU_PANEL_SETS else [ids]
    heights = [1.5, 1.0, 1.0, 1.0] * len(sets) + [1.0]
    fig = _figure(10, max(3.5, 0.35 + 1.25 * sum(heights)))
    axes = list(np.atleast_1d(fig.subplots(len(heights), 1, sharex=True,
                                           gridspec_kw={"height_ratios": heights})))
    for k, group in enumerate(sets):
        panels = util_ax, mem_ax, power_ax, clock_ax = axes[4 * k:4 * k + 4]
        many = len(group) > 1
        for g in group:
            rows = gpu[pd.to_numeric(gpu["gpu"], errors="coerce") == g].sort_values("t")
            _gpu_lines(panels, rows, g, f"C{g % 10}" if many else "C0", many)
            if not many:
                _shade_throttled(panels, rows)
        if many:  # one GPM line per GPU would bury the lesson: draw their mean
            _gpm_lines(util_ax, gpu.groupby("t", as_index=False).mean(numeric_only=True),
                       "k", " (mean)")
        name = f"GPU {group[0]}" if len(group) == 1 else f"GPUs {group[0]}-{group[-1]}"
        for ax, label, top in ((util_ax, f"{name}\nutil %", 105), (mem_ax, "memory\nGiB", None),
                               (power_ax, "power\nW", None), (clock_ax, "clock %\n/ temp C", 105)):
            ax.set(ylabel=label, ylim=(0, top))
    _cpu_total(axes[-1], run.host)
    _mark_epochs(axes, run)  # before the legends: it names the time outside training
    for ax in axes[:-1]:
        _legend(ax)
    axes[-1].set_xlabel(TIME_AXIS)
    util = metrics.gpu_util(run)
    detail = SAY["no_gpu_samples"] if not ids else "no utilisation" if math.isnan(util) \
        else SAY["mean_gpu_util"].format(util=util)
    fig.suptitle(f"{run.name}: {detail}{_status_suffix(run)}")
    return _save(fig, save, [run])


def cpu_timeline(run, save=None) -> Figure:
    """Total CPU % with one thin line per core, and RAM used, epochs shaded."""
    fig = _figure(10, 5)
    cpu_ax, ram_ax = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    host = run.host
    t = _column(host, "t")
    cores = _per_core(host)
    for i in range(cores.shape[1]):
        cpu_ax.plot(*_gapped(t, cores[:, i]), lw=0.6, alpha=0.35, color="grey",
                    label="one core" if i == 0 else None)
    _cpu_total(cpu_ax, host)
    ram_ax.plot(*_gapped(t, _column(host, "ram_used_mib") / 1024), color="C2", label="used")
    ram_ax.plot(*_gapped(t, _column(host, "ram_total_mib") / 1024), color="C2", ls="--",
                lw=1, label="total")
    ram_ax.set(ylabel="RAM GiB", xlabel=TIME_AXIS, ylim=(0, None))
    _legend(ram_ax)   # _cpu_total gave cpu_ax its legend
    _mark_epochs([cpu_ax, ram_ax], run)
    mean = np.nanmean(_column(host, "cpu_percent")) if len(host) else math.nan
    cores_text = f", {cores.shape[1]} cores" if cores.shape[1] else ""
    said = "no CPU samples" if math.isnan(mean) else f"mean CPU {mean:.0f}%{cores_text}"
    fig.suptitle(f"{run.name}: {said}")
    return _save(fig, save, [run])


def step_times(run, save=None) -> Figure:
    """Every step's data wait and host-side compute; beside it the steady steps' histogram."""
    steps = run.steps
    fig = _figure(11, 3.8)
    series, hist = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 1]})
    if not len(steps):
        series.text(0.5, 0.5, SAY["no_steps"], ha="center",
                    transform=series.transAxes)
        fig.suptitle(f"{metrics.label(run)}: steps")
        return _save(fig, save)
    x = np.arange(len(steps))
    wait_ms = _column(steps, "data_wait_s") * 1e3
    compute_ms = _column(steps, "compute_s") * 1e3
    series.fill_between(x, 0, wait_ms, step="mid", color="C3", alpha=0.7, label="data wait")
    series.fill_between(x, wait_ms, wait_ms + compute_ms, step="mid", color="C0", alpha=0.6,
                        label=SAY["compute"])
    warm = np.flatnonzero(_column(steps, "timed") == 0)
    if len(warm):
        series.axvspan(-0.5, warm.max() + 0.5, color="0.85", zorder=0, label="warm-up")
    epochs = _column(steps, "epoch")
    for i in np.flatnonzero(np.diff(epochs) != 0):
        series.axvline(i + 0.5, color="k", lw=0.6, ls=":")
    series.set(xlabel=SAY["step_axis"], ylabel="step time (ms)",
               xlim=(-0.5, len(steps) - 0.5), ylim=(0, None))
    _legend(series)
    steady = metrics.steadiness(run)
    timed = (wait_ms + compute_ms)[_column(steps, "timed") == 1]
    if len(timed):
        hist.hist(timed, bins=min(40, max(5, len(timed) // 5)), color="C0", alpha=0.75,
                  orientation="horizontal")
        for value, text in ((steady["step_p50_s"], "median"), (steady["step_p95_s"], "p95")):
            hist.axhline(value * 1e3, color="k", ls="--" if text == "p95" else "-", lw=1)
            hist.text(hist.get_xlim()[1], value * 1e3, f" {text} {value * 1e3:.1f} ms",
                      va="bottom", ha="right", fontsize=8)
        hist.set_ylim(series.get_ylim())
    hist.set(xlabel="steady steps", yticklabels=[])
    waited = "–" if math.isnan(steady["waited_share"]) else f"{steady['waited_share']:.0%}"
    said = SAY["steady_steps"].format(spikiness=steady["spikiness"], waited=waited)
    fig.suptitle(f"{metrics.label(run)}: {said if steady['steady_steps'] else 'warm-up only'}")
    return _save(fig, save, [run])


def throughput(runs, save=None) -> Figure:
    """Samples/s and epoch time per run (repeats: their median) as a bar, each epoch a dot."""
    groups = metrics.as_groups(runs)
    runs = [metrics.representative(g) for g in groups]
    table = metrics.table(groups)
    fig = _figure(10, 1.6 + 0.45 * len(runs))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, column, label in ((axes[0], "samples_per_sec", "samples/s"),
                              (axes[1], "epoch_time_s", "epoch time (s)")):
        for i, (run, value) in enumerate(zip(runs, table[column])):
            if math.isnan(value):
                ax.text(0, i, "  " + _failure(metrics.status(run)), va="center", color="grey",
                        fontsize=9)
                continue
            ax.barh(i, value, color="C0", alpha=0.75)
            if column == "samples_per_sec":
                _range_bar(ax, i, value, table.samples_per_sec_min[i],
                           table.samples_per_sec_max[i], horizontal=True)
            rows = [row for repeat in groups[i] for row in repeat.epochs.to_dict("records")]
            jitter = np.linspace(-0.15, 0.15, len(rows)) if len(rows) > 1 else [0]
            for row, dy in zip(rows, jitter):
                n = metrics.epoch_numbers(row)
                warmup = math.isnan(n["samples_per_sec"])   # no steady rate: its whole-time one
                v = n["samples_per_sec_all"] if column == "samples_per_sec" and warmup else n[column]
                ax.plot(v, i + dy, "o", ms=4, color="k", mfc="none" if warmup else "k")
        ax.set(xlabel=label, xlim=(0, None))
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(runs)), [metrics.label(run) + _status_suffix(run)
                           + (f" ({len(g)} runs)" if len(g) > 1 else "")
                           for run, g in zip(runs, groups)])
    axes[0].set_ylim(len(runs) - 0.5, -0.5)  # first run on top, rows without bars kept
    _title(fig, SAY["throughput"].format(blocks=metrics.BLOCKS))
    return _save(fig, save, [r for g in groups for r in g])


def ladder(runs, baseline=0, save=None) -> Figure:
    """One bar per run (repeats: their median), its speed-up over `baseline`, GPU util beside."""
    groups = metrics.as_groups(runs)
    runs = [metrics.representative(g) for g in groups]
    compared = [g if len(g) > 1 else g[0] for g in groups]  # what noise.compare judges
    table = metrics.table(groups, baseline)
    base_i = metrics.baseline_index(runs, baseline)
    base = table.iloc[base_i]
    by_speedup = table["speedup"].notna().any()
    value = table["speedup"] if by_speedup else table["samples_per_sec"]
    has_util = table["gpu_util"].notna().any()
    fig = _figure(11 if has_util else 9, 1.5 + 0.5 * len(runs))
    axes = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [4, 1]}) if has_util \
        else [fig.subplots()]
    ax = axes[0]
    shown = value[~table["status"].isin(FAILED)].dropna()
    top = shown.max() if len(shown) else 1.0
    for i, row in table.iterrows():
        if row["status"] in FAILED or math.isnan(value[i]):
            ax.barh(i, top * 0.35, color="0.93", hatch="//", edgecolor="0.7", lw=0, zorder=2)
            ax.text(top * 0.02, i, _failure(row["status"]), va="center", color="0.25", fontsize=9, zorder=3,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
            continue
        color = "0.55" if row["rung"] == base["rung"] else "C0"
        ax.barh(i, value[i], color=color)
        low, high = row["samples_per_sec_min"], row["samples_per_sec_max"]
        if by_speedup:   # the spread the noise verdicts use: ratios the two runs' blocks allow
            v = noise.compare(compared[base_i], compared[i])
            low, high = (v.low, v.high) if v.kind != "not measured" else (math.nan, math.nan)
        _range_bar(ax, i, value[i], low, high, horizontal=True)
        label = (f"×{row['speedup']:.1f}   " if by_speedup else "") \
            + f"{row['samples_per_sec']:,.0f} samples/s"
        # beside the whisker, inside the axes: a wide range would squeeze the bars to nothing
        right = min(high if metrics.number(high) > value[i] else value[i], top * 1.12)
        ax.text(right + top * 0.01, i, label, va="center", fontsize=9, clip_on=True,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1, "alpha": 0.85})
    if by_speedup:
        ax.axvline(1, color="0.3", ls="--", lw=0.8, zorder=1)
        ax.set_xlabel(SAY["speedup_axis"].format(base=base["rung"]))
    else:
        ax.set_xlabel(SAY["no_speedup_axis"].format(base=base["rung"]))
    ax.set_yticks(range(len(runs)), list(table["rung"]))
    ax.set(xlim=(0, top * 1.45), ylim=(len(runs) - 0.5, -0.5))  # first run on top
    ax.grid(axis="x", alpha=0.3)
    if has_util:
        _util_column(axes[1], table)
    _title(fig, SAY["ladder"])
    return _save(fig, save, runs)


def curves(runs, save=None) -> Figure:
    """Accuracy (train dashed, validation solid) and loss per epoch, one colour per run."""
    runs = list(runs)
    fig = _figure(11, 4)
    acc_ax, loss_ax = fig.subplots(1, 2)
    missing, last_epoch, classes = [], 0, set()
    for i, run in enumerate(runs):
        epochs = run.epochs
        if not len(epochs):
            missing.append(f"{run.name} ({_failure(metrics.status(run))})")
            continue
        x, color = _column(epochs, "epoch"), f"C{i % 10}"
        last_epoch = max(last_epoch, int(np.nanmax(x)))
        classes.add(((run.meta.get("ran") or {}).get("network") or {}).get("classes") or 10)
        # markers on both: a one-epoch run is a point, which a bare line would not show
        val = _column(epochs, "val_acc")
        acc_ax.plot(x, val, "o-", color=color, ms=3, label=run.name)
        n = int((run.config or {}).get("test_size") or 0)
        if n:  # +-2 binomial standard errors on n validation images: the accuracy's noise
            se = np.array([noise.accuracy_se(v, n) if v == v else np.nan for v in val])
            acc_ax.fill_between(x, val - 2 * se, val + 2 * se, color=color, alpha=0.15, lw=0)
        acc_ax.plot(x, _column(epochs, "train_acc"), "x--", color=color, ms=3, alpha=0.7)
        loss_ax.plot(x, _column(epochs, "loss"), "o-", color=color, ms=3, label=run.name)
    if len(runs) > len(missing):
        acc_ax.plot([], [], "ko-", ms=3, label="validation")
        acc_ax.plot([], [], "kx--", ms=3, alpha=0.7, label="train")
        for n in sorted(classes):  # what guessing scores: accuracy near it is no learning
            acc_ax.axhline(1 / n, color="grey", ls=":", lw=1, label=f"chance (1/{n})")
    acc_ax.set(xlabel="epoch", ylabel="accuracy", title=SAY["accuracy"])
    loss_ax.set(xlabel="epoch", ylabel="training loss", title="loss")
    for ax in (acc_ax, loss_ax):
        ax.set_xlim(-0.5, last_epoch + 0.5)  # one epoch: a point in the middle, not an edge
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
    if acc_ax.get_legend_handles_labels()[0]:
        acc_ax.legend(fontsize=8)
    if missing:
        loss_ax.text(0.98, 0.98, "no epochs: " + "; ".join(missing), transform=loss_ax.transAxes,
                     ha="right", va="top", fontsize=8, color="grey", wrap=True)
    return _save(fig, save, runs)


def lr_schedule(schedules: dict, steps=None, save=None) -> Figure:
    """Learning rate against update step for each schedule, f(step) -> lr or a list of lrs;
    steps: how many or which (default the longest list, else 1000)."""
    if not isinstance(schedules, dict) or not schedules:
        raise ValueError(f"schedules={schedules!r} must be a non-empty dict name -> schedule")
    for name, schedule in schedules.items():
        if not (callable(schedule) or hasattr(schedule, "__iter__")) or isinstance(schedule, (str, bytes)):
            raise ValueError(f"schedule {name!r} is {schedule!r}; allowed: f(step) -> lr, or a list of lrs")
    sequences = {n: np.asarray(list(s), dtype=float) for n, s in schedules.items() if not callable(s)}
    if steps is None:
        steps = max((len(s) for s in sequences.values()), default=1000)
    xs = np.arange(steps) if isinstance(steps, (int, np.integer)) else np.asarray(list(steps))
    fig = _figure(8, 4)
    ax = fig.subplots()
    for name, schedule in schedules.items():
        if callable(schedule):   # on increasing steps, leaving the caller's object untouched
            try:
                private = copy.deepcopy(schedule)
            except Exception:  # an object that cannot be copied is used as it is
                private = schedule
            ax.plot(xs, [float(private(int(step))) for step in xs], drawstyle="steps-post", label=name)
        else:  # the i-th value is the lr of update step i
            x = xs[(xs >= 0) & (xs < len(sequences[name]))].astype(int)
            ax.plot(x, sequences[name][x], drawstyle="steps-post", label=name)
    ax.set(xlabel="update step", ylabel="learning rate", title="Learning-rate schedules", ylim=(0, None))
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, save)


def sweep(runs, x, y="samples_per_sec", save=None) -> Figure:
    """A ladder-table column or run.summary key against a config field, e.g. "num_workers"."""
    groups = metrics.as_groups(runs)
    runs = [metrics.representative(g) for g in groups]
    missing = [run.name for run in runs if x not in (run.config or {})]
    if missing:
        fields = sorted(set().union(*[(run.config or {}).keys() for run in runs]))
        raise ValueError(f"x={x!r} is not a config field of run(s) {missing}; allowed: {fields}")
    table = metrics.table(groups)
    numbers = [c for c in table.columns if c not in ("rung", "ran", "status")]
    allowed = numbers + [k for k in metrics.summary(runs[0]) if k not in numbers]
    if y not in allowed:
        raise ValueError(f"y={y!r} is not a ladder column or summary key; allowed: {allowed}")
    ys = table[y].to_numpy(dtype=float) if y in numbers \
        else np.array([metrics.number(metrics.summary(run)[y]) for run in runs])
    xs_raw = [run.config[x] for run in runs]
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in xs_raw)
    categories = list(dict.fromkeys(map(str, xs_raw)))   # else: in order of first appearance
    xs = np.array(xs_raw if numeric else [categories.index(str(v)) for v in xs_raw], dtype=float)
    order = np.argsort(xs, kind="stable")
    failed = np.array([status in FAILED for status in table["status"]])
    fig = _figure(8, 4.5)
    ax = fig.subplots()
    ok = order[~failed[order] & ~np.isnan(ys[order])]
    ax.plot(xs[ok], ys[ok], "o-", color="C0")
    for i in ok:
        if y == "samples_per_sec":  # each point's own spread (slowest–fastest block of steps)
            _range_bar(ax, xs[i], ys[i], table.samples_per_sec_min[i],
                       table.samples_per_sec_max[i], horizontal=False)
        ax.annotate(f"{ys[i]:,.0f}" if abs(ys[i]) >= 100 else f"{ys[i]:.3g}", (xs[i], ys[i]),
                    textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
    at_bottom = transforms.blended_transform_factory(ax.transData, ax.transAxes)
    for i in np.flatnonzero(failed):
        ax.plot(xs[i], 0.06, "x", color="C3", ms=10, mew=2, transform=at_bottom)
        ax.text(xs[i], 0.12, "OOM" if table["status"][i] == "oom" else "failed",
                color="C3", ha="center", fontsize=9, transform=at_bottom)
    if numeric and (xs > 0).all() and xs.max() / xs.min() >= 8:
        ax.set_xscale("log", base=2)  # batch sizes and worker counts grow by doubling
    ticks = dict(zip(xs, xs_raw))  # one tick per distinct x
    ax.set_xticks(list(ticks), [str(v) for v in ticks.values()])
    ax.minorticks_off()
    ax.set_ylim(bottom=0, top=max(1.0, np.nanmax(ys[ok]) * 1.15) if len(ok) else 1.0)
    ax.set(xlabel=x, ylabel=tables.header(y), title=f"{tables.header(y)} against {x}")
    ax.grid(alpha=0.3)
    return _save(fig, save, runs)


class _ShownFigure(Figure):
    """A Figure that Jupyter draws when a cell returns it, without pyplot's display hook."""

    def _repr_png_(self) -> bytes:
        image = io.BytesIO()
        self.savefig(image, format="png", dpi=DPI)
        return image.getvalue()


def _title(fig: Figure, text: str) -> None:
    """A title wrapped to the figure's width: a notebook cuts a wider one at both ends."""
    fig.suptitle(textwrap.fill(text, width=max(40, int(fig.get_figwidth() * 11))))


def _figure(width, height) -> Figure:
    return _ShownFigure(figsize=(width, height), layout="constrained")


def _save(fig: Figure, save, runs=()) -> Figure:
    """Caption the figure with the runs' hardware, and write the PNG atomically."""
    _caption(fig, runs)
    if save is not None:
        image = io.BytesIO()
        fig.savefig(image, format="png", dpi=DPI)
        write_atomic(Path(save), image.getvalue())
    return fig


def hardware_caption(runs) -> str:
    """'2 × NVIDIA H100 80GB HBM3 (driver 550.54.15)' or 'CPU only: <model>, 2 cores'."""
    captions = []
    for run in runs:
        hw = run.meta.get("hardware") or {}
        gpus = Counter(g.get("name", "GPU") for g in hw.get("gpus") or [])
        if gpus:
            text = ", ".join(f"{n} × {name}" for name, n in gpus.items())
            text += f" (driver {hw['driver']})" if hw.get("driver") else ""
        else:
            text = f"CPU only: {hw.get('cpu_model') or 'unknown CPU'}"
            text += f", {hw['cpu_count']} cores" if hw.get("cpu_count") else ""
        if text not in captions:
            captions.append(text)
    return "; ".join(captions)


def _caption(fig: Figure, runs) -> None:
    text = hardware_caption(runs)
    if text:
        height = fig.get_figheight()
        fig.get_layout_engine().set(rect=(0, 0.2 / height, 1, 1 - 0.2 / height))
        fig.text(0.995, 0.005, text, ha="right", va="bottom", fontsize=7, color="0.4")


def _mark_epochs(axes, run) -> None:
    """Shade every other epoch, draw its boundaries, label it on the top panel."""
    spans = metrics.epoch_spans(run)
    t_max = np.nanmax(np.concatenate([_column(run.gpu, "t"), _column(run.host, "t"), [0.0]]))
    top = axes[0]
    label_at = transforms.blended_transform_factory(top.transData, top.transAxes)
    every = max(1, math.ceil(len(spans) / 12))  # label at most a dozen epochs
    gaps = ([(0.0, spans[0][1], SAY["set_up"])] if spans else []) + [
        (a[2], b[1], SAY["validation"]) for a, b in zip(spans, spans[1:])
        if not math.isnan(a[2])]
    said = set()
    for a, b, what in gaps:  # time outside training, named once in the top panel's legend
        if b > a:
            for ax in axes:
                ax.axvspan(a, b, color="grey", alpha=0.12, lw=0,
                           label=what if ax is top and what not in said else None)
            said.add(what)
    for k, (epoch, start, end) in enumerate(spans):
        end = t_max if math.isnan(end) else end
        for ax in axes:
            if epoch % 2:
                ax.axvspan(start, end, color="C1", alpha=0.07, lw=0)
            ax.axvline(start, color="C1", lw=0.7, alpha=0.6)
            ax.axvline(end, color="C1", lw=0.7, alpha=0.6, ls=":")
        if k % every == 0:
            top.text((start + end) / 2, 1.02, f"epoch {epoch}", transform=label_at,
                     ha="center", va="bottom", fontsize=8, color="C1")


def _gpu_lines(panels, rows, g, color, many) -> None:
    """One GPU's lines (with `many` on shared panels, only utilisation named); clock in %."""
    util_ax, mem_ax, power_ax, clock_ax = panels
    t, peak = _column(rows, "t"), _column(rows, "sm_clock_max_mhz")
    util_ax.plot(*_periods(t, _column(rows, "util_gpu")), color=color, lw=1.2,
                 drawstyle="steps-pre", label=f"GPU {g}" if many else "GPU-Util")
    if not many:
        _gpm_lines(util_ax, rows, color, "")
    with np.errstate(invalid="ignore", divide="ignore"):
        clock = 100 * _column(rows, "sm_clock_mhz") / np.where(peak > 0, peak, np.nan)
    for ax, y, label, style in (
            (mem_ax, _column(rows, "mem_used_mib") / 1024, "used", {}),
            (mem_ax, _column(rows, "mem_total_mib") / 1024, "total", DASHED),
            (power_ax, _column(rows, "power_w"), "draw", {}),
            (power_ax, _column(rows, "power_limit_w"), "limit", DASHED),
            (clock_ax, clock, SAY["sm_clock"], {"lw": 1}),
            (clock_ax, _column(rows, "temp_c"), "temperature C", {"ls": ":", "lw": 1})):
        ax.plot(*_gapped(t, y), color=color, label=None if many else label, **style)
    errors = rows["error"] if "error" in rows.columns else pd.Series(dtype=object)
    failing = errors.notna() & (errors.astype(str).str.strip() != "")
    if failing.any():
        first = rows[failing].iloc[0]
        when = float(first["t"])
        for ax in (util_ax, mem_ax, power_ax):
            ax.axvline(when, color="C3", lw=1.5)
        util_ax.text(when, 97, f"GPU {g}: {first['error']} at t={when:.0f} s ", color="C3",
                     fontsize=8, ha="right", va="top")


def throttled_spans(rows: pd.DataFrame) -> list[tuple[float, float]]:
    """(start, end) of each run of consecutive throttled samples, to the next sample."""
    t = _column(rows, "t")
    t = np.append(t, t[-1] + (t[-1] - t[-2] if len(t) > 1 else 1.0)) if len(t) else t
    edges = np.flatnonzero(np.diff(np.concatenate([[0], throttled(rows), [0]]).astype(int)))
    return [(t[a], t[b]) for a, b in zip(edges[::2], edges[1::2])]


def _shade_throttled(axes, rows) -> None:
    """Red bands where the clocks were held down."""
    for k, (start, end) in enumerate(throttled_spans(rows)):
        for ax in axes:
            ax.axvspan(start, end, color="C3", alpha=0.12, lw=0,
                       label="throttled" if k == 0 and ax is axes[-1] else None)


def _gpm_lines(ax, rows, color, suffix) -> None:
    """GPM (Hopper): how much of the chip worked, where GPU-Util says only that a kernel ran."""
    t = _column(rows, "t")
    for column, label, style in (("sm_active", "SM active", "--"),
                                 ("tensor_active", "tensor active", ":")):
        values = _column(rows, column)
        if np.isfinite(values).any():
            ax.plot(*_periods(t, values), color=color, ls=style, lw=1, drawstyle="steps-pre",
                    label=label + suffix)


def _cpu_total(ax, host) -> None:
    if not len(host):
        ax.text(0.5, 0.5, "no CPU samples", transform=ax.transAxes, ha="center", color="grey")
    ax.plot(*_gapped(_column(host, "t"), _column(host, "cpu_percent")), color="k", lw=1.2,
            label="CPU (all cores)")
    ax.set(ylim=(0, 105), ylabel="CPU %")
    _legend(ax)


def _util_column(ax, table) -> None:
    for i, util in enumerate(table["gpu_util"]):
        if math.isnan(util):
            ax.text(2, i, "–", va="center", color="grey")
            continue
        ax.barh(i, util, color="C2", alpha=0.8)
        ax.text(min(util, 100) + 2, i, f"{util:.0f}%", va="center", fontsize=9)
    ax.set(xlim=(0, 130), xticks=[0, 50, 100], xlabel="GPU util %")
    ax.tick_params(axis="y", left=False)


def _range_bar(ax, at, value, low, high, horizontal: bool) -> None:
    """A whisker from low to high through the bar or point at `at` (none when unknown)."""
    low, high = metrics.number(low), metrics.number(high)
    if math.isnan(low) or math.isnan(high):
        return
    err = [[max(value - low, 0)], [max(high - value, 0)]]
    if horizontal:
        ax.errorbar(value, at, xerr=err, fmt="none", ecolor="0.2", elinewidth=1, capsize=3,
                    zorder=3)
    else:
        ax.errorbar(at, value, yerr=err, fmt="none", ecolor="C0", elinewidth=1, capsize=3)


def _legend(ax) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)


def _periods(t, y):
    """Readings that average the period before them, drawn over it (the first: a false 0 %)."""
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    return _gapped(t[1:], y[1:]) if len(t) > 1 else (t[:0], y[:0])


def _gapped(t, y):
    """Break the line where samples are missing (a stalled monitor, a lost GPU)."""
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    if len(t) < 3:
        return t, y
    dt = np.diff(t)
    gaps = np.flatnonzero(dt > 3 * np.median(dt))
    return np.insert(t, gaps + 1, t[gaps] + dt[gaps] / 2), np.insert(y, gaps + 1, np.nan)


def _column(frame: pd.DataFrame, name: str) -> np.ndarray:
    if name not in frame.columns:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)


def _per_core(host: pd.DataFrame) -> np.ndarray:
    """cpu_per_core text "12.0;40.5;..." as an array (samples x cores)."""
    if "cpu_per_core" not in host.columns:
        return np.empty((len(host), 0))
    rows = [[] if pd.isna(text) else [metrics.number(v) for v in str(text).split(";")
                                      if v.strip()] for text in host["cpu_per_core"]]
    out = np.full((len(rows), max(map(len, rows), default=0)), np.nan)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out


def _failure(status) -> str:
    return metrics.STATUS_TEXT.get(status, status) if status in FAILED else "no epochs"


def _status_suffix(run) -> str:
    return f" [{_failure(metrics.status(run))}]" if metrics.status(run) in FAILED else ""

