import json
import re
import math

import pytest

from gpu_course.measure.records import EPOCH_COLUMNS, OutOfMemory, Ran, RunRecord, load_run, load_runs, runs_table, write_atomic


def epoch_row(i):
    return {"epoch": i, "epoch_time_s": 2.0, "data_wait_s": 0.5, "compute_s": 1.5,
            "steps": 10, "samples": 640, "timed_steps": 10, "timed_samples": 640 + 100 * i,
            "timed_s": 2.0, "timed_wait_s": 0.5, "loss": 1.0 / (i + 1), "train_acc": 0.5,
            "val_acc": 0.4 + 0.1 * i, "lr": 0.1, "t_start": 0.0, "t_end": 2.0}


def step_rows(epoch, n=10):
    return [{"epoch": epoch, "step": i, "samples": 64, "data_wait_s": 0.05,
             "compute_s": 0.15, "timed": 1} for i in range(n)]


def no_temp_files(folder):
    return not [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


def test_record_round_trip(runs_dir):
    rec = RunRecord({"name": "naive", "batch_size": 64}, Ran("gluon"), runs_dir=runs_dir,
                    hardware_info={"gpus": [], "cpu_count": 2})
    rec.add_epoch(epoch_row(0), step_rows(0))
    rec.add_epoch(epoch_row(1), step_rows(1))
    rec.note(extra=501.0, not_measured=float("nan"))
    rec.finish()
    run = load_run(rec.path)
    assert run.status == "finished" and run.name == "naive"
    assert list(run.epochs.columns) == EPOCH_COLUMNS and len(run.epochs) == 2
    assert len(run.steps) == 20 and list(run.steps.epoch.unique()) == [0, 1]  # appended
    assert run.meta["notes"]["extra"] == 501.0
    assert run.meta["notes"]["not_measured"] is None  # NaN is stored as null, JSON stays valid
    # the summary caches the metrics module's numbers, computed from the rows at finish
    assert run.summary["samples_per_sec"] == pytest.approx((640 + 740) / 4.0)
    assert run.summary["data_wait_share"] == pytest.approx(0.25)
    assert run.summary["step_p50_s"] == pytest.approx(0.2)
    meta = json.loads((rec.path / "run.json").read_text())
    for key in ("config", "versions", "hardware", "git", "started_at", "ended_at"):
        assert key in meta
    assert meta["versions"]["python"]
    assert no_temp_files(runs_dir)
    assert load_run(rec.run_id, runs_dir=runs_dir).path == rec.path


def test_interrupted_run_keeps_finished_epochs(runs_dir):
    with pytest.raises(KeyboardInterrupt):
        with RunRecord({"name": "x"}, Ran("pytorch"), runs_dir=runs_dir, hardware_info={}) as rec:
            rec.add_epoch(epoch_row(0))
            raise KeyboardInterrupt
    run = load_run(rec.path)
    assert run.status == "interrupted" and len(run.epochs) == 1
    assert "1 finished epoch" in run.meta["error"]


@pytest.mark.parametrize("error, status", [(OutOfMemory("batch 4096 needs 90 GiB"), "oom"),
                                           (RuntimeError("boom"), "failed")])
def test_failures_are_recorded(runs_dir, error, status):
    with pytest.raises(type(error)):
        with RunRecord({"name": "x"}, Ran("gluon"), runs_dir=runs_dir, hardware_info={}) as rec:
            raise error
    run = load_run(rec.path)
    assert run.status == status and str(error) in run.meta["error"]
    assert run.epochs.empty and list(run.gpu.columns)[0] == "t"


def test_monitor_is_stopped_and_saved_on_exit(runs_dir):
    class Monitor:
        stopped = saved = 0

        def stop(self):
            self.stopped += 1

        def save(self, folder):
            self.saved += 1
    mon = Monitor()
    with pytest.raises(KeyboardInterrupt):
        with RunRecord({"name": "x"}, Ran("gluon"), runs_dir=runs_dir, monitor=mon, hardware_info={}):
            raise KeyboardInterrupt
    assert mon.stopped == 1 and mon.saved >= 1


def test_write_atomic_replaces_whole_file(tmp_path):
    target = tmp_path / "a" / "f.txt"
    write_atomic(target, "one")
    write_atomic(target, "two")
    assert target.read_text() == "two" and no_temp_files(tmp_path)


def test_load_runs_and_table(runs_dir):
    for name in ("naive", "workers"):
        rec = RunRecord({"name": name, "batch_size": 64}, Ran("gluon"), runs_dir=runs_dir,
                        hardware_info={"gpus": [{"name": "Tesla V100"}]})
        rec.add_epoch(epoch_row(0))
        rec.finish()
    runs = load_runs(runs_dir)
    assert [r.name for r in runs] == ["naive", "workers"]
    table = runs_table(runs)
    assert list(table["device"]) == ["Tesla V100"] * 2
    assert math.isclose(table["samples_per_sec"].iloc[0], 640 / 2.0)
    assert load_runs(runs_dir / "missing") == []
    nested = RunRecord({"name": "rung"}, Ran("gluon"), runs_dir=runs_dir / "ladder-gluon-1",
                       hardware_info={})
    nested.finish()
    assert [r.name for r in load_runs(runs_dir)][-1] == "rung"  # a ladder's subfolder too


def test_not_a_run_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a run folder"):
        load_run(tmp_path)


def test_a_leading_tilde_is_the_home_folder_wherever_a_runs_folder_enters(tmp_path, monkeypatch):
    from gpu_course.cli import build_parser
    from gpu_course.measure import records
    monkeypatch.setenv("HOME", str(tmp_path))
    assert records.runs_root("~/runs") == tmp_path / "runs"
    monkeypatch.setenv("GPU_COURSE_RUNS", "~/elsewhere")
    assert records.default_runs_dir() == records.runs_root() == tmp_path / "elsewhere"
    args = build_parser().parse_args(["monitor", "--out", "~/m.csv", "--seconds", "1"])
    assert args.out == tmp_path / "m.csv"


@pytest.mark.parametrize("text", ["[1, 2]", "null", '"a string"', "", '{"name": "x", "con'])
def test_a_damaged_run_json_is_named_and_skipped_by_load_runs(tmp_path, text):
    import warnings as _warnings
    from gpu_course.measure import records
    folder = tmp_path / "runs" / "20261126-000000-bad-0000"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(text)
    with pytest.raises(ValueError, match=rf"{folder / 'run.json'} (holds a|is not a readable)"):
        records.load_run(folder)
    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always")
        assert records.load_runs(tmp_path / "runs") == []
    assert any("skipping" in str(w.message) for w in caught)


@pytest.mark.parametrize("meta, says", [
    ({"hello": "world"}, "is not a run record of this course: it has no 'config' object (keys: hello)"),
    ({"name": "x", "config": 5}, "it has no 'config' object (its config is a int)"),
    ({"config": {}, "hardware": [1]}, "'hardware' holds a list, not an object"),
    ({"config": {}, "downgrades": {"a": 1}}, "'downgrades' holds a dict, not a list"),
])
def test_a_foreign_run_json_is_named_and_skipped_and_the_rest_still_listed(tmp_path, meta, says):
    import json
    import warnings as _warnings
    from fake_runs import write_run
    from gpu_course.measure import records
    good = write_run(tmp_path / "runs", "good")
    folder = tmp_path / "runs" / "20261126-000000-foreign-0000"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=re.escape(says)):
        records.load_run(folder)
    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always")
        runs = records.load_runs(tmp_path / "runs")
    assert [r.path for r in runs] == [good]
    assert any(str(folder / "run.json") in str(w.message) for w in caught)
    assert list(records.runs_table(runs)["name"]) == ["good"]
