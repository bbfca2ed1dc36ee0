"""One recorded run, every consumer: the summary line, the epoch line, the ladder table,
the text table, the report, the plots' labels, `diagnose` and the SageMaker metric line
all report the same numbers, because they all read `metrics`."""
import json
import re
import time

import pytest

from gpu_course.analyse import diagnose, metrics
from gpu_course.show import plots, report
from gpu_course_sagemaker import entry as sagemaker_entry
from gpu_course.config import Experiment
from gpu_course.measure.harness import Harness, Output


def loader(n, wait):
    for i in range(n):
        time.sleep(wait if i % 3 else 3 * wait)  # every third batch is slow: spikes
        yield i


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    cfg = Experiment(name="consistent", epochs=3, batch_size=16, warmup_steps=2,
                     monitor_interval=0.05)
    lines = []
    with Harness(cfg, output=Output(runs_dir=tmp_path_factory.mktemp("runs"), progress=False,
                                    on_epoch=lambda row: lines.append(row))) as h:
        for epoch in h.epochs():
            for _ in h.batches(loader(8, 0.004)):
                time.sleep(0.006)
                h.step(16, loss=2.0 - epoch / 10, correct=8)
            h.end_epoch(sync=lambda: time.sleep(0.003), evaluate=lambda: 0.1 * (epoch + 1))
    h.run.rows = lines
    return h.run


def test_per_step_rows_sum_to_each_epochs_time(run):
    for epoch, e in run.epochs.iterrows():
        steps = run.steps[run.steps.epoch == e.epoch]
        assert len(steps) == e.steps == 8
        total = (steps.data_wait_s + steps.compute_s).sum() + e.sync_s
        assert total == pytest.approx(e.epoch_time_s, rel=0.02, abs=0.002)
    assert run.steps.timed.sum() == 3 * 8 - 2  # the run's first two steps are warm-up


def test_every_consumer_reports_the_same_numbers(run):
    s = metrics.summary(run)
    # run.json caches exactly these
    for key in ("samples_per_sec", "data_wait_share", "epoch_time_s", "spikiness"):
        assert run.summary[key] == pytest.approx(s[key])
    # summary line
    line = run.summary["summary_line"]
    assert f"Samples/Sec: {s['samples_per_sec']:.2f}" in line
    assert f"epoch time: {s['epoch_time_s']:.2f}" in line
    # ladder table and its text form
    table = report.ladder_table([run])
    assert table.samples_per_sec[0] == s["samples_per_sec"]
    assert table.data_wait_share[0] == s["data_wait_share"]
    assert table.spikiness[0] == s["spikiness"]
    text = report.format_table(table)
    assert f"{s['samples_per_sec']:,.1f}" in text and f"{100 * s['data_wait_share']:.0f}%" in text
    # diagnose
    d = diagnose.diagnose(run, search=False)
    assert d.numbers["samples_per_sec"] == s["samples_per_sec"]
    assert d.numbers["wait_share"] == s["data_wait_share"]
    assert any(f"{s['samples_per_sec']:,.0f} samples/s" in e for e in d.evidence)
    # plots draw the same bar
    fig = plots.throughput([run])
    bar = [p for p in fig.axes[0].patches][0]
    assert bar.get_width() == pytest.approx(s["samples_per_sec"])
    # the SageMaker metric line, per epoch, and the epoch line use the same definitions
    for row in run.rows:
        n = metrics.epoch_numbers(row)
        metric = sagemaker_entry.metric_line(row, None)
        assert f"data_wait={n['data_wait_share']:.4f}" in metric
        if n["samples_per_sec"] == n["samples_per_sec"]:  # not NaN
            assert f"samples_per_sec={n['samples_per_sec']:.2f}" in metric
    # the report's Markdown table
    paths = report.write_report([run], run.path / "report")
    assert f"{s['samples_per_sec']:,.1f}" in paths["markdown"].read_text()


def test_the_record_says_what_ran(run):
    meta = json.loads((run.path / "run.json").read_text())
    assert meta["requested"] == {} and meta["downgrades"] == []
    assert set(meta["load"]) == {"start", "end"}
    assert meta["load"]["end"]["process_cpu_s"] >= meta["load"]["start"]["process_cpu_s"]
    assert re.fullmatch(r"consistent", metrics.label(run))
