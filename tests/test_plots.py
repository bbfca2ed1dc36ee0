"""The figures, drawn from realistic run folders: panels, lines, bars, labels and PNGs."""
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

sys.path.insert(0, str(Path(__file__).parent))  # for fake_runs, whatever pytest's import mode
import fake_runs  # noqa: E402

from gpu_course.analyse import metrics
from gpu_course.show import plots, report
from gpu_course.analyse import signals  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    load = lambda paths: {run.name: run for run in map(fake_runs.load, paths)}  # noqa: E731
    return {"gpu": load(fake_runs.gpu_ladder(root)), "cpu": load(fake_runs.cpu_ladder(root)),
            "sweep": load(fake_runs.batch_sweep(root))}


def texts(fig: Figure) -> str:
    """Every piece of text in the figure: titles, labels, annotations, legends."""
    found = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    return "\n".join(found)


def labelled(ax) -> list:
    """The lines that carry data (epoch boundaries and error marks have no label)."""
    return [line for line in ax.lines if not line.get_label().startswith("_")]


def bars(ax) -> list:
    return [p for p in ax.patches if p.__class__.__name__ == "Rectangle"]


def test_timeline_has_a_panel_set_per_gpu_and_shows_gpm(runs):
    fig = plots.utilisation_timeline(runs["gpu"]["naive"])
    assert isinstance(fig, Figure)
    util, memory, power, clock, cpu = fig.axes
    assert [line.get_label() for line in labelled(util)] == \
        ["GPU-Util", "SM active", "tensor active"]
    assert {line.get_linestyle() for line in labelled(util)[1:]} == {"--", ":"}
    assert [line.get_label() for line in labelled(memory)] == ["used", "total"]
    assert [line.get_label() for line in labelled(power)] == ["draw", "limit"]
    assert [line.get_label() for line in labelled(cpu)] == ["CPU (all cores)"]
    assert [line.get_label() for line in labelled(clock)] == \
        ["SM clock % of max", "temperature C"]
    # the shared time axis, and the epochs drawn on it
    assert all(ax.get_shared_x_axes().joined(util, ax) for ax in fig.axes)
    assert [t.get_text() for t in util.texts if t.get_text().startswith("epoch")] == \
        ["epoch 1", "epoch 2", "epoch 3"]
    util_mean = metrics.gpu_util(runs["gpu"]["naive"])
    assert f"mean GPU utilisation {util_mean:.0f}%" in fig._suptitle.get_text()
    assert "NVIDIA H100 80GB HBM3" in texts(fig)  # the hardware caption


def test_throttled_periods_are_shaded(tmp_path):
    run = fake_runs.load(fake_runs.write_run(tmp_path, "hot", busy=97, data_wait_share=0.02))
    flags = signals.throttled(run.gpu)
    assert flags.any() and not flags.all()          # the power cap while busy, not at start-up
    assert list(signals.throttled(pd.DataFrame({"clock_event_reasons": [
        "gpu_idle", "sw_power_cap", "", None, "hw_thermal|gpu_idle"]}))) == \
        [False, True, False, False, True]
    clock = plots.utilisation_timeline(run).axes[3]
    bands = [p for p in clock.patches if p.get_facecolor()[1] < 0.3]   # red ones
    spans = plots.throttled_spans(run.gpu)
    assert 0 < len(spans) < flags.sum() and all(a < b for a, b in spans)
    assert len(bands) == len(spans) and "throttled" in [h.get_label() for h in
                                                         clock.get_legend_handles_labels()[0]]


def test_timeline_marks_a_lost_gpu_and_the_epoch_it_interrupted(runs):
    fig = plots.utilisation_timeline(runs["gpu"]["2 GPUs"])
    assert len(fig.axes) == 9  # (util, memory, power, clock) x 2 GPUs + CPU
    gpu1_util = fig.axes[4]
    lost = [t.get_text() for t in gpu1_util.texts if "lost" in t.get_text()]
    assert lost == ["GPU 1: GPU is lost at t=13 s "]
    red = [line for ax in fig.axes[4:7] for line in ax.lines if line.get_color() == "C3"]
    assert len(red) == 3 and all(line.get_xdata()[0] == 13.0 for line in red)
    assert not any("lost" in t.get_text() for t in fig.axes[0].texts)  # GPU 0 was fine
    # the samples after the loss are NaN, so the line stops there
    util_y = gpu1_util.lines[0].get_ydata()
    assert np.isnan(util_y[-1]) and not np.isnan(util_y[0])
    # epoch 2 started (markers.csv) but never ended: still drawn
    assert "epoch 2" in [t.get_text() for t in fig.axes[0].texts]
    assert "[failed]" in fig._suptitle.get_text()


def test_timeline_without_gpus_keeps_the_cpu_panel(runs):
    fig = plots.utilisation_timeline(runs["cpu"]["cpu naive"])
    assert len(fig.axes) == 1
    assert "no GPU samples (CPU-only run)" in fig._suptitle.get_text()
    assert len(labelled(fig.axes[0])[0].get_xdata()) == len(runs["cpu"]["cpu naive"].host)
    assert "CPU only: Intel(R) Xeon(R) CPU @ 2.20GHz, 2 cores" in texts(fig)


def test_timeline_breaks_lines_over_missing_samples(tmp_path):
    path = fake_runs.write_run(tmp_path, "stalled", seed=9)
    gpu = pd.read_csv(path / "gpu.csv")
    gpu[(gpu.t < 30) | (gpu.t > 40)].to_csv(path / "gpu.csv", index=False)  # 10 s missing
    util = plots.utilisation_timeline(fake_runs.load(path)).axes[0].lines[0]
    x, y = util.get_xdata(), util.get_ydata()
    gap = np.flatnonzero(np.isnan(y))
    assert len(gap) == 1 and 29 < x[gap[0]] < 41


def test_timeline_with_many_gpus_shares_one_panel_set(tmp_path):
    run = fake_runs.load(fake_runs.write_run(tmp_path, "eight", num_gpus=8, epochs=1,
                                             samples_per_sec=20000.0, busy=90))
    fig = plots.utilisation_timeline(run)
    assert len(fig.axes) == 5
    assert [line.get_label() for line in labelled(fig.axes[0])] == \
        [f"GPU {g}" for g in range(8)] + ["SM active (mean)", "tensor active (mean)"]
    assert not labelled(fig.axes[1])  # memory: the colours match the legend above


def test_cpu_timeline_draws_every_core(runs):
    run = runs["gpu"]["naive"]
    fig = plots.cpu_timeline(run)
    cpu, ram = fig.axes
    cores = [line for line in cpu.lines if line.get_color() == "grey"]
    assert len(cores) == run.meta["hardware"]["cpu_count"] == 16
    assert labelled(cpu)[-1].get_label() == "CPU (all cores)"
    assert [line.get_label() for line in labelled(ram)] == ["used", "total"]
    assert "16 cores" in fig._suptitle.get_text()


def test_throughput_bars_runs_with_numbers_and_names_the_rest(runs):
    gpu = list(runs["gpu"].values())
    fig = plots.throughput(gpu)
    speed, epoch_time = fig.axes
    table = report.ladder_table(gpu)
    assert [b.get_width() for b in bars(speed)] == pytest.approx(
        list(table["samples_per_sec"].dropna()))
    assert len(bars(epoch_time)) == 4
    assert "out of memory" in [t.get_text().strip() for t in speed.texts]
    # one dot per epoch: 3 + 3 + 3; the failed run finished only its warm-up epoch, so
    # it has no steady rate: no bar and no dots, its failure named instead
    assert len([line for line in speed.lines if line.get_marker() == "o"]) == 9
    assert [t.get_text() for t in speed.get_yticklabels()] == \
        ["naive", "8 workers", "float16", "2 GPUs [failed]", "batch 4096 [out of memory]"]


def test_ladder_speedups_util_column_and_failed_rungs(runs):
    gpu = list(runs["gpu"].values())
    fig = plots.ladder(gpu)
    main, util = fig.axes
    table = report.ladder_table(gpu)
    # the OOM rung finished no epoch: no training window to average utilisation over
    assert len(bars(main)) == 5 and len(bars(util)) == 4
    hatched = [b for b in bars(main) if b.get_hatch()]
    assert len(hatched) == 2
    labels = [t.get_text() for t in main.texts]
    for speedup, sps in table[["speedup", "samples_per_sec"]].head(3).itertuples(index=False):
        assert f"×{speedup:.1f}   {sps:,.0f} samples/s" in labels
    assert "failed" in labels and "out of memory" in labels
    assert [b.get_width() for b in bars(main)[:3]] == pytest.approx(list(table.speedup[:3]))
    assert f"{table.gpu_util[2]:.0f}%" in [t.get_text() for t in util.texts]


def test_ladder_on_cpu_has_no_util_column_and_takes_a_baseline_by_name(runs):
    cpu = list(runs["cpu"].values())
    fig = plots.ladder(cpu, baseline="cpu hybridize")
    assert len(fig.axes) == 1
    widths = [b.get_width() for b in bars(fig.axes[0])]
    table = report.ladder_table(cpu)
    assert widths == pytest.approx([table.samples_per_sec[0] / table.samples_per_sec[1], 1.0])
    assert "speed-up over 'cpu hybridize'" in fig.axes[0].get_xlabel()


def test_curves_one_colour_per_run(runs):
    gpu = list(runs["gpu"].values())
    fig = plots.curves(gpu)
    acc, loss = fig.axes
    assert [line.get_label() for line in labelled(loss)] == list(runs["gpu"])[:4]  # OOM: none
    assert len({line.get_color() for line in loss.lines}) == 4
    assert len(acc.lines) == 4 * 2 + 2 + 1  # validation + train per run, 2 keys, chance
    assert "chance (1/10)" in [line.get_label() for line in acc.lines]
    assert "no epochs: batch 4096 (out of memory)" in [t.get_text() for t in loss.texts]


class StatefulFactor:
    """Like mx.lr_scheduler.FactorScheduler: lowers base_lr in place as steps pass."""

    def __init__(self, step, factor, base_lr):
        self.step, self.factor, self.base_lr, self.count = step, factor, base_lr, 0

    def __call__(self, num_update):
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
        return self.base_lr


def test_lr_schedule_plots_callables_on_a_copy_and_sequences():
    factor = StatefulFactor(step=100, factor=0.5, base_lr=0.1)
    fig = plots.lr_schedule({"factor": factor, "list": [0.05] * 150 + [0.01] * 150}, steps=300)
    ax = fig.axes[0]
    by_name = {line.get_label(): line for line in ax.lines}
    y = by_name["factor"].get_ydata()
    assert (y[0], y[150], y[250]) == pytest.approx((0.1, 0.05, 0.025))
    assert factor.base_lr == 0.1 and factor.count == 0  # the caller's scheduler is untouched
    assert len(by_name["list"].get_ydata()) == 300
    every_tenth = plots.lr_schedule({"s": [0.1] * 50 + [0.01] * 50}, steps=range(0, 100, 10))
    assert list(every_tenth.axes[0].lines[0].get_ydata()) == [0.1] * 5 + [0.01] * 5
    # default steps: the longest sequence
    assert len(plots.lr_schedule({"f": factor, "s": [1.0] * 40}).axes[0].lines[0].get_xdata()) == 40


@pytest.mark.parametrize("bad", [{}, {"x": "0.1"}, {"x": 0.1}, [0.1, 0.2]])
def test_lr_schedule_rejects_what_is_not_a_schedule(bad):
    with pytest.raises(ValueError, match="schedule"):
        plots.lr_schedule(bad)


def test_sweep_sorts_x_and_marks_oom(runs):
    sweep = list(runs["sweep"].values())
    fig = plots.sweep(sweep, "batch_size")
    ax = fig.axes[0]
    line = ax.lines[0]
    assert list(line.get_xdata()) == [64, 128, 256, 512]
    assert list(line.get_ydata()) == pytest.approx(
        list(report.ladder_table(sweep)["samples_per_sec"][:4]))
    oom = [l for l in ax.lines if l.get_marker() == "x"]
    assert len(oom) == 1 and oom[0].get_xdata()[0] == 2048
    assert "OOM" in [t.get_text() for t in ax.texts]
    assert ax.get_xscale() == "log"
    assert "1 × NVIDIA H100 80GB HBM3" in texts(fig)


def test_sweep_of_a_text_field_and_of_a_summary_key(runs):
    gpu = list(runs["gpu"].values())
    fig = plots.sweep(gpu, "dtype", y="gpu_util")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["float32", "float16"]
    fig = plots.sweep(gpu[:3], "num_workers", y="warmup_s")  # a run.summary key
    assert len(fig.axes[0].lines[0].get_xdata()) == 3


def test_sweep_names_what_is_allowed(runs):
    gpu = list(runs["gpu"].values())
    with pytest.raises(ValueError, match=r"x='workers'.*allowed: .*num_workers"):
        plots.sweep(gpu, "workers")
    with pytest.raises(ValueError, match=r"y='speed'.*allowed"):
        plots.sweep(gpu, "num_workers", y="speed")


def test_save_writes_png_files_into_new_folders(runs, tmp_path):
    gpu, cpu = list(runs["gpu"].values()), list(runs["cpu"].values())
    drawn = {
        "timeline": lambda p: plots.utilisation_timeline(gpu[3], save=p),
        "cpu": lambda p: plots.cpu_timeline(cpu[0], save=p),
        "throughput": lambda p: plots.throughput(gpu, save=p),
        "ladder": lambda p: plots.ladder(gpu, save=p),
        "curves": lambda p: plots.curves(cpu, save=p),
        "lr": lambda p: plots.lr_schedule({"a": [0.1, 0.01]}, save=p),
        "sweep": lambda p: plots.sweep(gpu, "num_workers", save=p),
    }
    for name, draw in drawn.items():
        path = tmp_path / "deep" / "er" / f"{name}.png"
        fig = draw(path)
        assert path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 5000, name
        assert isinstance(fig, Figure)
    assert sorted(p.name for p in (tmp_path / "deep" / "er").iterdir()) == \
        sorted(f"{name}.png" for name in drawn)  # no temporary files left behind


def test_figures_show_themselves_in_a_notebook(runs):
    fig = plots.curves(list(runs["cpu"].values()))
    assert fig._repr_png_()[:8] == PNG_MAGIC


def test_hardware_caption_lists_distinct_machines(runs):
    caption = plots.hardware_caption([runs["gpu"]["naive"], runs["gpu"]["float16"],
                                      runs["cpu"]["cpu naive"]])
    assert caption == ("2 × NVIDIA H100 80GB HBM3 (driver 550.54.15); "
                       "CPU only: Intel(R) Xeon(R) CPU @ 2.20GHz, 2 cores")
    assert not math.isnan(metrics.gpu_util(runs["gpu"]["naive"]))


def test_step_times_split_each_step_and_mark_the_warm_up(tmp_path):
    run = fake_runs.load(fake_runs.write_run(tmp_path, "spiky", data_wait_share=0.4, seed=9))
    fig = plots.step_times(run, save=tmp_path / "steps.png")
    series, hist = fig.axes
    assert (tmp_path / "steps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    labels = [t.get_text() for t in series.get_legend().get_texts()]
    assert labels[:2] == ["data wait", "compute (host: dispatch + back-pressure)"]
    assert "warm-up" in labels
    steady = gpu_course_metrics().steadiness(run)
    assert f"p95/median step {steady['spikiness']:.2f}" in fig._suptitle.get_text()
    assert any(f"median {steady['step_p50_s'] * 1e3:.1f} ms" in t.get_text() for t in hist.texts)


def gpu_course_metrics():
    from gpu_course.analyse import metrics
    return metrics


def test_a_one_epoch_run_is_a_point_in_the_middle_with_the_chance_line(tmp_path):
    """One epoch drawn as a point (a bare line would show nothing), sensible
    axes, the chance line, and no legend entries for what is not drawn."""
    run = fake_runs.load(fake_runs.write_run(tmp_path, "one", epochs=1, summary=False))
    fig = plots.curves([run])
    acc = fig.axes[0]
    last = int(run.epochs["epoch"].max())
    assert acc.get_xlim() == (-0.5, last + 0.5)  # the points in the middle, not on an edge
    drawn = [line for line in acc.lines if len(line.get_xdata())]
    assert all(line.get_marker() not in (None, "None", "") for line in drawn
               if not line.get_label().startswith("chance"))
    empty = plots.curves([])
    assert empty.axes[0].get_legend() is None  # no runs: no keys for lines not drawn


def test_the_timeline_leaves_out_the_reading_before_the_monitor_started(tmp_path):
    run = fake_runs.load(fake_runs.write_run(tmp_path, "t", summary=False))
    fig = plots.utilisation_timeline(run)
    util = next(line for line in fig.axes[0].lines if line.get_label() == "GPU-Util")
    assert util.get_xdata()[0] > 0 and util.get_drawstyle() == "steps-pre"
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "validation (between epochs)" in labels


def whiskers(ax) -> list:
    """The error-bar containers drawn on an axes (one per whisker)."""
    return [c for c in ax.containers if c.__class__.__name__ == "ErrorbarContainer"]


def test_bars_points_and_curves_show_their_spread(runs):
    from gpu_course.analyse import metrics, noise
    gpu = list(runs["gpu"].values())
    table = report.ladder_table(gpu)
    speed, _ = plots.throughput(gpu).axes
    measured = table.samples_per_sec_min.notna()
    assert len(whiskers(speed)) == measured.sum() > 0
    first = whiskers(speed)[0].lines[2][0].get_segments()[0]
    assert [x for x, _ in first] == pytest.approx([table.samples_per_sec_min[0],
                                                   table.samples_per_sec_max[0]])
    main = plots.ladder(gpu).axes[0]
    verdict = noise.compare(gpu[0], gpu[1])
    second = whiskers(main)[1].lines[2][0].get_segments()[0]
    assert [x for x, _ in second] == pytest.approx([verdict.low, verdict.high])
    sweep = list(runs["sweep"].values())
    assert len(whiskers(plots.sweep(sweep, "batch_size").axes[0])) == \
        report.ladder_table(sweep).samples_per_sec_min.notna().sum()
    grouped = plots.sweep([sweep[:2], *sweep[2:]], "batch_size")  # a point run twice
    assert len(grouped.axes[0].lines[0].get_xdata()) == len(sweep) - 2  # the OOM point: an x
    acc = plots.curves(gpu).axes[0]
    assert len(acc.collections) == 4  # a ±2 standard-error band per run with epochs
    assert metrics.BLOCKS == noise.BLOCKS


def test_a_title_fits_the_figures_width(tmp_path):
    """A centred title wider than its figure is cut at both ends in a notebook: each line
    fits the figure's width, and nothing of the text is lost."""
    runs = [fake_runs.load(fake_runs.write_run(tmp_path, n, samples_per_sec=r, index=i, seed=i))
            for i, (n, r) in enumerate((("naive", 300.0), ("workers", 900.0)))]
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    fig = plots.throughput(runs)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    title = fig._suptitle
    box = title.get_window_extent(renderer=canvas.get_renderer())
    assert f"slowest–fastest of {metrics.BLOCKS} blocks" in title.get_text().replace("\n", " ")
    assert box.width <= fig.bbox.width
