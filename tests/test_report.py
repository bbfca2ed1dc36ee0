"""The ladder's numbers, their text table, the written report and the conclusion."""
import json
import math
import time
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # for fake_runs, whatever pytest's import mode
import fake_runs  # noqa: E402

from gpu_course.analyse import metrics  # noqa: E402
from gpu_course.show import report, tables  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    return [fake_runs.load(p) for p in fake_runs.gpu_ladder(tmp_path_factory.mktemp("gpu"))]


@pytest.fixture(scope="module")
def cpu(tmp_path_factory):
    return [fake_runs.load(p) for p in fake_runs.cpu_ladder(tmp_path_factory.mktemp("cpu"))]


def steady_rate(run):
    """samples/s as the course defines it, computed here from epochs.csv by hand."""
    e = pd.read_csv(run.path / "epochs.csv")
    timed = e.timed_s.sum()
    return e.timed_samples.sum() / timed if timed > 0 else math.nan  # none timed: died in warm-up


def test_ladder_table_speedups_come_from_the_steady_steps(gpu):
    table = report.ladder_table(gpu)
    # a column for each setting the rungs differ in, right after the rung's name
    differ = ["batch_size", "dtype", "epochs", "num_gpus", "num_workers"]
    assert list(table.columns[1:6]) == differ
    assert list(table.dtype) == ["float32", "float32", "float16", "float16", "float16"]
    table = table.drop(columns=differ)
    assert list(table.columns) == ["rung", "repeats", "ran", "samples_per_sec",
                                   "samples_per_sec_min", "samples_per_sec_max", "samples_per_sec_all",
                                   "epoch_time_s", "gpu_util", "sm_active", "tensor_active",
                                   "data_wait_share", "spikiness", "speedup", "val_acc",
                                   "tflops", "peak_pct", "status"]
    assert table.sm_active.iloc[:4].notna().all()  # the fake GPUs have GPM
    no_gpm = table.assign(sm_active=math.nan, tensor_active=math.nan)  # a CPU, a T4
    assert "SM active" in report.format_table(table)
    assert "SM active" not in report.format_table(no_gpm)
    assert "SM active" not in str(tables.show(no_gpm))
    assert list(table.rung) == ["naive", "8 workers", "float16", "2 GPUs", "batch 4096"]
    assert list(table.ran) == [""] * 5  # every fake run ran as requested
    speeds = [steady_rate(run) for run in gpu[:4]]  # '2 GPUs' died in its warm-up epoch
    assert list(table.samples_per_sec[:4]) == pytest.approx(speeds, nan_ok=True)
    assert list(table.speedup[:4]) == pytest.approx([s / speeds[0] for s in speeds],
                                                    nan_ok=True)
    e = pd.read_csv(gpu[0].path / "epochs.csv")
    assert table.data_wait_share[0] == pytest.approx(e.timed_wait_s.sum() / e.timed_s.sum())
    assert list(table.status) == ["finished"] * 3 + ["failed", "oom"]


def test_ladder_table_oom_row_has_no_numbers(gpu):
    oom = report.ladder_table(gpu).iloc[4]
    for column in ("samples_per_sec", "epoch_time_s", "speedup", "val_acc", "data_wait_share"):
        assert math.isnan(oom[column]), column


def test_ladder_table_reads_the_epochs_not_the_cached_summary(cpu):
    table = report.ladder_table(cpu)
    epochs = pd.read_csv(cpu[1].path / "epochs.csv")
    assert table.samples_per_sec[1] == pytest.approx(steady_rate(cpu[1]))
    assert table.samples_per_sec_all[1] == pytest.approx(
        epochs.samples.sum() / epochs.epoch_time_s.sum())
    assert table.epoch_time_s[1] == pytest.approx(epochs.epoch_time_s[1:].mean())
    assert table.val_acc[1] == pytest.approx(epochs.val_acc.iloc[-1])
    assert table.gpu_util.isna().all()  # no GPU on this machine
    assert table.speedup[1] == pytest.approx(table.samples_per_sec[1] / table.samples_per_sec[0])


def test_gpu_util_averages_samples_inside_the_steady_training_windows(tmp_path):
    run = fake_runs.load(fake_runs.write_run(tmp_path, "raw", summary=False, busy=80,
                                             data_wait_share=0.0, seed=3))
    gpu, e = run.gpu, run.epochs.dropna(subset=["t_steady"])
    windows = list(zip(e.t_steady, e.t_end))  # after warm-up, before validation
    period = run.config["monitor_interval"]  # each reading averages the period before it
    inside = gpu[[any(a <= t - period and t <= b for a, b in windows) for t in gpu.t]]
    assert 0 < len(inside) < len(gpu[[any(a <= t <= b for a, b in windows) for t in gpu.t]])
    assert metrics.gpu_util(run) == pytest.approx(inside.util_gpu.mean())
    assert metrics.gpu_util(run) > gpu.util_gpu.mean()  # start-up and validation left out


def test_a_reading_at_a_windows_start_describes_the_time_before_it():
    """The H200's tuned rung: NVML read 0% 20 ms after the first steady step (its period
    was the CUDA-graph capture), then 100% throughout; epochs 0.28 s apart count as one
    window, so only that first reading is left out."""
    import pandas as pd

    from gpu_course.analyse import metrics

    class Run:
        config = {"monitor_interval": 0.5}
        epochs = pd.DataFrame({"t_start": [0.0, 1.75, 2.05], "t_steady": [1.48, 1.75, 2.05],
                               "t_end": [1.73, 2.03, 2.33], "timed_steps": [40, 48, 48]})
        gpu = pd.DataFrame({"t": [1.0, 1.5, 2.0], "util_gpu": [0.0, 0.0, 100.0],
                            "sm_active": [0.0, 0.0, 72.0]})
    assert metrics.gpu_util(Run()) == 100.0
    assert metrics.gpm_activity(Run())["sm_active"] == 72.0
    assert math.isnan(metrics.gpm_activity(Run())["tensor_active"])  # no GPM column


def test_a_run_shorter_than_a_monitor_period_reads_no_gpu_util():
    """The H200 check's batch 640 with 13 workers trained steadily for less than one
    0.5 s period: the one reading inside its window averaged the warm-up before it (0 %
    while the run computed 7 TFLOP/s). No reading describes such a run: none is given."""
    import pandas as pd

    from gpu_course.analyse import metrics

    class Run:
        config = {"monitor_interval": 0.5}
        epochs = pd.DataFrame({"t_start": [0.0], "t_steady": [1.30], "t_end": [1.62],
                               "timed_steps": [11]})
        gpu = pd.DataFrame({"t": [1.0, 1.5, 2.0], "util_gpu": [0.0, 0.0, 3.0],
                            "sm_active": [0.0, 0.0, 1.0]})
    assert math.isnan(metrics.gpu_util(Run()))
    assert math.isnan(metrics.gpm_activity(Run())["sm_active"])


def test_single_epoch_runs_are_all_warm_up(tmp_path):
    run = fake_runs.load(fake_runs.write_run(tmp_path, "one", epochs=1, summary=False))
    assert math.isnan(metrics.samples_per_sec(run))  # no step after the warm-up
    assert metrics.samples_per_sec_all(run) == pytest.approx(
        run.epochs.samples[0] / run.epochs.epoch_time_s[0])


def test_baseline_by_name_or_index_and_bad_baselines(gpu):
    by_name = report.ladder_table(gpu, baseline="8 workers")
    assert by_name.speedup[1] == 1.0
    by_index = report.ladder_table(gpu, baseline=1)
    assert list(by_name.speedup) == pytest.approx(list(by_index.speedup), nan_ok=True)
    with pytest.raises(ValueError, match=r"baseline='fast'.*allowed"):
        report.ladder_table(gpu, baseline="fast")
    with pytest.raises(ValueError, match=r"baseline=7 .*0\.\.4"):
        report.ladder_table(gpu, baseline=7)
    with pytest.raises(ValueError, match="empty"):
        report.ladder_table([])


def test_a_rung_of_too_few_steady_steps_has_no_speed_up(tmp_path):
    """On an H200 the quick ladder's data-on-gpu rung timed 2 steady steps and read x0.16
    of naive: a ratio of a handful of steps is noise, so no speed-up is shown, for it or,
    when the baseline has too few, for any row."""
    from gpu_course.analyse import metrics
    many = dict(train_size=64 * 40, batch_size=64)      # 40 steady steps an epoch
    few = dict(train_size=64 * 4, batch_size=64)        # 4
    runs = [fake_runs.load(fake_runs.write_run(tmp_path / f"r{i}", name, config=cfg,
                                               samples_per_sec=rate, index=i))
            for i, (name, cfg, rate) in enumerate((("naive", many, 600.0),
                                                   ("workers", {**many, "num_workers": 8}, 900.0),
                                                   ("data-on-gpu", few, 5000.0)))]
    assert [metrics.steady_steps(r) >= metrics.MIN_STEADY_STEPS for r in runs] == [True, True, False]
    speedup = report.ladder_table(runs, varies=("train_size", "num_workers")).speedup
    assert speedup[0] == pytest.approx(1) and speedup[1] > 1 and math.isnan(speedup[2])
    assert report.ladder_table(runs[::-1], varies=("train_size", "num_workers")).speedup.isna().all()
    # the conclusion says why there is no verdict, not that the baseline has no speed
    text = report.conclusion(runs, varies=("train_size", "num_workers"))
    assert "'data-on-gpu' ×5.52, too few steps to judge (80 and 8 steady steps" in text
    assert "no throughput to compare" not in text
    # repeated, a rung is judged over its runs (noise.compare): it keeps its ratio
    grouped = report.ladder_table([runs[0], [runs[2], runs[2]]], varies=("train_size", "num_workers"))
    assert grouped.speedup[1] > 1


def test_oom_baseline_gives_no_speedups(gpu):
    table = report.ladder_table(gpu, baseline="batch 4096")
    assert table.speedup.isna().all()
    text = report.conclusion(gpu, baseline="batch 4096")
    assert "'batch 4096' has no throughput to compare (out of memory)" in text


def test_format_table_is_fixed_width_text(gpu):
    text = report.format_table(report.ladder_table(gpu))
    lines = text.splitlines()
    assert lines[0].split()[:6] == ["rung", "batch", "dtype", "epochs", "gpus", "workers"]
    text = report.format_table(report.ladder_table(gpu).drop(
        columns=["batch_size", "dtype", "epochs", "num_gpus", "num_workers"]))
    lines = text.splitlines()
    assert lines[0].split() == ["rung", "samples/s", "(steady)", "min–max", "samples/s",
                                "(all)", "epoch",
                                "(s)", "GPU", "util", "SM", "active", "tensor", "active",
                                "data", "wait", "p95/p50", "step",
                                "speed-up", "val", "acc", "TFLOP/s", "%", "of", "peak",
                                "status"]
    assert set(lines[1]) <= {"-", " "}
    naive, float16, oom = lines[2], lines[4], lines[6]
    assert naive.startswith("naive ") and "×1.00" in naive
    sps = steady_rate(gpu[2])
    assert f"{sps:,.1f}" in float16 and "," in f"{sps:,.1f}"
    assert f"{metrics.gpu_util(gpu[2]):.0f}%" in float16
    # it ran a few seconds before dying, all of it warm-up: no steady window, so the
    # utilisation is over its (unfinished) training window: none finished -> NaN
    assert oom.split()[2:] == ["–"] * 13 + ["out", "of", "memory"]
    # numbers are right-aligned: their last characters line up under the header
    column_end = lines[0].index("(steady)") + len("(steady)")
    assert all(line[column_end - 1] != " " for line in lines[2:])


def test_format_table_writes_nan_as_a_dash():
    df = pd.DataFrame({"rung": ["a"], "samples_per_sec": [float("nan")], "speedup": [3.24],
                       "gpu_util": [97.0], "val_acc": [0.9123]})
    assert report.format_table(df).splitlines()[2].split() == ["a", "–", "×3.24", "97%", "91.2%"]


def test_conclusion_names_the_fastest_rung_and_judges_it_against_noise(gpu):
    from gpu_course.analyse import noise
    from gpu_course.ladder import RUNG_SETTINGS
    table = report.ladder_table(gpu)
    text = report.conclusion(gpu, varies=RUNG_SETTINGS)
    verdict = noise.compare(gpu[0], gpu[2], varies=RUNG_SETTINGS)
    assert verdict.kind == "faster"
    # '2 GPUs' died in its warm-up epoch: no steady number, it cannot win
    assert text.startswith(f"The fastest rung, 'float16', trains at "
                           f"{table.samples_per_sec[2]:,.0f} samples/s: against the baseline "
                           f"'naive' {noise.sentence(verdict)}; GPU utilisation went from "
                           f"{table.gpu_util[0]:.0f}% to {table.gpu_util[2]:.0f}%.")
    assert ("Each rung against the one before it: '8 workers' ×" in text
            and "'float16' ×" in text)
    assert text.endswith("'2 GPUs' failed and 'batch 4096' ran out of memory.")


def test_a_ladder_of_unlike_runs_names_no_fastest_rung(gpu):
    # the rungs differ in num_workers and dtype: a conclusion not told they may gives no
    # verdict across them, and calls the top rung only the one with the most samples/s
    text = report.conclusion(gpu)
    assert text.startswith("The rung with the most samples/s, 'float16'")
    assert "no verdict: the runs also differ in dtype float32 against float16; num_workers 0 " \
           "against 8" in text
    assert "faster" not in text


def test_a_difference_inside_the_noise_is_called_so(tmp_path):
    a = fake_runs.load(fake_runs.write_run(tmp_path, "a", samples_per_sec=500.0, seed=1))
    b = fake_runs.load(fake_runs.write_run(tmp_path, "b", samples_per_sec=503.0, seed=2,
                                           index=1))
    text = report.conclusion([a, b])
    assert "within noise" in text and "faster" not in text.split("Each rung")[1]


def test_conclusion_on_the_cpu_leaves_out_utilisation(cpu):
    text = report.conclusion(cpu)
    assert "'cpu hybridize'" in text and "on the CPU" in text
    assert "utilisation" not in text
    assert report.conclusion(cpu, baseline=1).startswith(
        "The baseline 'cpu hybridize' is the fastest")


def test_conclusion_when_nothing_finished(gpu):
    assert report.conclusion(gpu[4:]).startswith("No rung finished a steady step")


def test_a_shared_machine_is_named(tmp_path):
    import json
    path = fake_runs.write_run(tmp_path, "busy", seed=4)
    meta = json.loads((path / "run.json").read_text())
    meta["load"] = {"start": {"loadavg_1m": 6.0, "process_cpu_s": 0.0, "wall": 0.0,
                              "cpu_count": 2},
                    "end": {"loadavg_1m": 7.0, "process_cpu_s": 10.0, "wall": 10.0,
                            "cpu_count": 2}}
    (path / "run.json").write_text(json.dumps(meta))
    run = fake_runs.load(path)
    from gpu_course.analyse import metrics
    assert metrics.machine_load(run)["shared"]  # 6.5 load, 1 core its own, no workers
    assert "Another program shared the machine during busy" in report.conclusion([run])


def test_idle_loader_workers_no_longer_hide_another_program(tmp_path):
    """Two loader workers counted as a core each hid a program that kept a core of 2
    busy (CI's other test phase); their CPU time, recorded, is what they used."""
    import json
    from gpu_course.analyse import metrics
    path = fake_runs.write_run(tmp_path, "two workers", seed=5)
    meta = json.loads((path / "run.json").read_text())
    meta["config"]["num_workers"] = 2
    start = {"process_cpu_s": 0.0, "wall": 0.0, "cpu_count": 2, "cpu_busy_s": 0.0}
    end = {"process_cpu_s": 8.0, "wall": 10.0, "cpu_count": 2, "cpu_busy_s": 20.0}
    meta["load"] = {"start": start, "end": end}   # an older record: a core a worker
    (path / "run.json").write_text(json.dumps(meta))
    assert not metrics.machine_load(fake_runs.load(path))["shared"]
    start.update(live_children_cpu_s=1.0, children_cpu_s=0.5)
    end.update(live_children_cpu_s=2.0, children_cpu_s=1.5)   # 0.2 cores for both workers
    (path / "run.json").write_text(json.dumps(meta))
    load = metrics.machine_load(fake_runs.load(path))
    assert load["shared"] and load["other_load"] == pytest.approx(1.0)


def test_every_process_of_a_ddp_job_is_its_own_load(tmp_path):
    """A 2-process job on 2 cores: its record is the first process's, whose core is half
    the machine's busy time; the second process is the job's own, not another program."""
    import json
    from gpu_course.analyse import metrics
    path = fake_runs.write_run(tmp_path, "2 processes", seed=6)
    meta = json.loads((path / "run.json").read_text())
    meta["config"]["num_workers"] = 0
    meta["load"] = {"start": {"process_cpu_s": 0.0, "wall": 0.0, "cpu_count": 2,
                              "cpu_busy_s": 0.0, "live_children_cpu_s": 0.0,
                              "children_cpu_s": 0.0},
                    "end": {"process_cpu_s": 9.5, "wall": 10.0, "cpu_count": 2,
                            "cpu_busy_s": 19.5, "live_children_cpu_s": 0.0,
                            "children_cpu_s": 0.0}}
    meta.setdefault("ran", {})["world_size"] = 2
    (path / "run.json").write_text(json.dumps(meta))
    assert not metrics.machine_load(fake_runs.load(path))["shared"]
    meta["ran"]["world_size"] = 1
    (path / "run.json").write_text(json.dumps(meta))
    assert metrics.machine_load(fake_runs.load(path))["shared"]


def test_a_record_counts_its_running_children(tmp_path):
    import subprocess
    import sys
    from gpu_course.measure.records import machine_load
    before = machine_load()
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.5: pass\ntime.sleep(30)"])
    try:
        deadline = time.monotonic() + 30
        while machine_load()["live_children_cpu_s"] - before["live_children_cpu_s"] < 0.4:
            assert time.monotonic() < deadline, "the child's CPU time was never counted"
            time.sleep(0.1)
    finally:
        child.kill()
        child.wait()


def test_write_report_writes_markdown_html_and_figures(gpu, tmp_path):
    out = tmp_path / "report"
    gpu = [gpu[0], gpu[2], gpu[4]]  # naive, float16, OOM: three timelines keep it quick
    paths = report.write_report(gpu, out, title="ladder <H100>")
    assert set(paths) == {"markdown", "html", "ladder", "throughput", "curves", "timelines",
                          "steps"}
    assert len(paths["timelines"]) == len(paths["steps"]) == len(gpu)
    for png in [paths["ladder"], paths["throughput"], paths["curves"], *paths["timelines"],
                *paths["steps"]]:
        assert png.parent == out and png.read_bytes()[:8] == PNG_MAGIC
    md = paths["markdown"].read_text()
    assert md.startswith("# ladder &lt;H100&gt;")
    assert report.conclusion(gpu) in md
    assert "2 × NVIDIA H100 80GB HBM3 (80 GiB, sm_90)" in md and "torch 2.5.1" in md
    assert "![Ladder](ladder.png)" in md and "(timeline-03-batch-4096.png)" in md
    assert "| float16 |" in md
    html = paths["html"].read_text()
    assert html.count('src="data:image/png;base64,') == 3 + 2 * len(gpu)  # self-contained
    assert "<h1>ladder &lt;H100&gt;</h1>" in html
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []  # no temp files


def test_write_report_escapes_run_names(tmp_path):
    path = fake_runs.write_run(tmp_path / "runs", "<script>alert(1)</script>", seed=11)
    meta = json.loads((path / "run.json").read_text())
    meta["error"] = "a | b <b>bold</b>"
    (path / "run.json").write_text(json.dumps(meta))
    paths = report.write_report([fake_runs.load(path)], tmp_path / "out")
    html, md = paths["html"].read_text(), paths["markdown"].read_text()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>" not in html and "<script>" not in md and "a \\| b" in md
    assert paths["timelines"][0].name == "timeline-01-script-alert-1-script.png"


def test_a_packed_copy_made_before_a_rung_is_costed_and_paid_back(tmp_path):
    """A format's offline pre-processing is a real cost, outside samples/s; the
    conclusion says what it took and after how many epochs the rung's faster epochs
    repay it, also when an earlier ladder made the copy and recorded its time; a copy
    whose making nobody timed is named as untimed; this ladder's own copy read again by a
    later rung is not repeated."""
    from gpu_course.measure.records import update_meta
    loose = fake_runs.write_run(tmp_path, "workers", samples_per_sec=500.0, seed=1)
    packed = fake_runs.write_run(tmp_path, "data-format", samples_per_sec=1000.0, seed=2,
                                 index=1)
    later = fake_runs.write_run(tmp_path, "data-on-gpu", samples_per_sec=1500.0, seed=3,
                                index=2)
    note = {"what": "one packed file of decoded 32 px images", "path": "/p/a.pack",
            "images": 20000, "seconds": 9.0, "reused": False}
    update_meta(packed, notes={"prepared": note})
    update_meta(later, notes={"prepared": {**note, "seconds": 0.0, "reused": True}})
    runs = [fake_runs.load(p) for p in (loose, packed, later)]
    from gpu_course.analyse import metrics
    assert metrics.preparation_s(runs[0]) == 0.0 and metrics.preparation_s(runs[1]) == 9.0
    table = report.ladder_table(runs)
    saved = table.epoch_time_s[0] - table.epoch_time_s[1]
    text = report.conclusion(runs)
    assert ("'data-format' read one packed file of decoded 32 px images, made once before "
            "it ran (offline, not in its samples/s): 20,000 images in 9.0 s; against "
            f"'workers' its epochs are {saved:.1f} s shorter, so it pays back after "
            f"{9.0 / saved:.1f} epochs.") in text
    assert "'data-on-gpu' read" not in text  # the same copy, made by this ladder
    update_meta(packed, notes={"prepared": {**note, "reused": True}})
    text = report.conclusion([fake_runs.load(p) for p in (loose, packed)])
    assert ("'data-format' read one packed file of decoded 32 px images, made by an earlier "
            "run (offline, not in its samples/s): 20,000 images in 9.0 s; against "
            f"'workers' its epochs are {saved:.1f} s shorter, so it pays back after "
            f"{9.0 / saved:.1f} epochs.") in text
    for untimed in (None, 0.0):  # 0.0: what records before the note beside the copy held
        update_meta(packed, notes={"prepared": {**note, "seconds": untimed, "reused": True}})
        again = [fake_runs.load(p) for p in (loose, packed)]
        assert math.isnan(metrics.preparation_s(again[1]))
        assert ("'data-format' read one packed file of decoded 32 px images made by an "
                "earlier run that did not record its time (its making is not timed in this "
                "ladder).") in report.conclusion(again)


def test_conclusion_says_which_rungs_moved_validation_accuracy(tmp_path):
    """A rung can leave samples/s alone and still buy accuracy (the CPU ladder's LR
    schedule): the conclusion names accuracy changes outside 2 standard errors."""
    one = fake_runs.load(fake_runs.write_run(tmp_path, "two epochs", epochs=2, seed=1))
    three = fake_runs.load(fake_runs.write_run(tmp_path, "four", epochs=4, seed=1, index=1))
    again = fake_runs.load(fake_runs.write_run(tmp_path, "again", epochs=4, seed=1, index=2))
    text = report.conclusion([one, three], varies=("epochs",))
    moved = text.split("Validation accuracy, rung against the rung before it, beyond the "
                       "test set's sampling noise: ")[1]
    first = moved.split(" against 'two epochs'")[0]
    assert first.startswith("'four' +") and "points, an effect (±" in first
    assert ("Validation accuracy: no rung's change alone moved it outside 2 standard errors "
            "of the rung before it.") in report.conclusion([three, again])
    # not told the rungs may differ in epochs: the points are named, credited to nothing
    unlike = report.conclusion([one, three])
    assert "Not credited to a rung's change, since the rungs differ in more: 'four' +" in unlike
    assert "but they also differ in epochs 2 against 4." in unlike
    assert "beyond the test set's sampling noise" not in unlike


def test_warm_up_costs_say_when_a_rung_pays_its_warm_up_back(monkeypatch):
    """A rung whose warm-up (compile) costs over 10 % of its run: the sentence says after
    how many epochs its faster epochs repay the extra warm-up ("within its first epoch",
    not "after 0.0 epochs"), "at once" with no more warm-up than the rung before, and that
    it does not pay back when its epochs are no shorter."""
    from types import SimpleNamespace
    runs = [SimpleNamespace(warm=w) for w in (0.3, 2.3, 0.32, 0.36, 0.5)]
    monkeypatch.setattr(report.metrics, "warmup_s", lambda run: run.warm)
    table = pd.DataFrame({"rung": ["a", "compile", "b", "c", "slower"],
                          "samples_per_sec": [1000.0] * 5,
                          "samples_per_sec_all": [950.0, 500.0, 800.0, 800.0, 800.0],
                          "epoch_time_s": [10.0, 8.0, 7.0, 6.0, 6.5]})
    lines = report._warmup_costs(runs, table, [0, 1, 2, 3, 4])
    assert lines[0] == ("'compile' spent 2.3 s warming up (500 samples/s over the whole run, "
                        "1,000 steady): it pays back after 1.0 epochs.")
    assert [line.split("steady): ")[1] for line in lines[1:]] == [
        "it pays back at once (no more warm-up than the rung before).",
        "it pays back within its first epoch (0.04 s more warm-up).",
        "at this size it does not pay back."]
