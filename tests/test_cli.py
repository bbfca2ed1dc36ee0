"""The gpu-course command line, run as a real subprocess."""
import csv

import pytest

from support import run_cli

VERBS = ["data", "monitor", "watch", "runs", "run", "ladder", "diagnose"]


@pytest.mark.parametrize("verb", [None, *VERBS])
def test_help_on_every_verb(verb):
    out = run_cli(*([verb] if verb else []), "--help")
    assert out.returncode == 0, out.stderr
    assert "usage: gpu-course" in out.stdout


def test_the_sagemaker_verb_names_the_command_it_moved_to():
    out = run_cli("sagemaker", "--dry-run", "--instance-type", "ml.g5.xlarge")
    assert out.returncode == 2 and out.stdout == ""
    assert "gpu-course-sagemaker (python -m gpu_course_sagemaker), same flags" in out.stderr
    assert "sagemaker" not in run_cli("--help").stdout


def test_data_writes_cifar_format(tmp_path):
    out = run_cli("data", "--out", tmp_path / "d", "--train", 100, "--test", 50, "--seed", 3)
    assert out.returncode == 0, out.stderr
    files = sorted(p.name for p in (tmp_path / "d").rglob("*.bin"))
    assert files == [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
    total = sum(p.stat().st_size for p in (tmp_path / "d").rglob("data_batch_*.bin"))
    assert total == 100 * 3073


def test_bad_values_exit_2_with_a_clear_line(tmp_path):
    out = run_cli("data", "--out", tmp_path, "--train", 0)
    assert out.returncode == 2 and "train" in out.stderr
    out = run_cli("run", "--batch-size", "0", "--engine", "gluon")
    assert out.returncode == 2
    assert "batch_size=0 must be an integer >= 1" in out.stderr
    out = run_cli("run", "--dtype", "float8", "--engine", "gluon")
    assert out.returncode == 2 and "float8" in out.stderr and "float16" in out.stderr
    out = run_cli("monitor", "--out", tmp_path / "m.csv", "--interval", "0")
    assert out.returncode == 2 and "interval" in out.stderr


def test_monitor_records_a_csv(tmp_path):
    target = tmp_path / "util.csv"
    out = run_cli("monitor", "--out", target, "--seconds", "0.6", "--interval", "0.1")
    assert out.returncode == 0, out.stderr
    from gpu_course.measure import nvml
    # without a GPU no GPU file is written, and the command says so
    assert target.exists() == (nvml.gpu_count() > 0)
    assert nvml.gpu_count() > 0 or "no GPU to sample" in out.stdout
    host = tmp_path / "util-host.csv"
    rows = list(csv.DictReader(host.open()))
    assert len(rows) >= 3 and float(rows[-1]["ram_total_mib"]) > 0


def test_runs_lists_records(runs_dir):
    from gpu_course.measure.records import Ran, RunRecord
    rec = RunRecord({"name": "naive", "batch_size": 64}, Ran("gluon"), runs_dir=runs_dir,
                    hardware_info={"gpus": []})
    rec.add_epoch({"epoch": 0, "epoch_time_s": 5.0, "samples": 617, "timed_samples": 617,
                   "timed_s": 5.0, "timed_wait_s": 1.0})
    rec.finish()
    out = run_cli("runs", "--runs-dir", runs_dir)
    assert out.returncode == 0 and rec.run_id in out.stdout and "123.40" in out.stdout
    out = run_cli("runs", "--runs-dir", runs_dir / "none")
    assert out.returncode == 0 and "no runs" in out.stdout and "(no such folder)" in out.stdout
    (runs_dir / "a-file").write_text("")
    out = run_cli("runs", "--runs-dir", runs_dir / "a-file")   # it said "no runs", exit 0
    assert out.returncode == 2 and f"{runs_dir / 'a-file'} is a file, not a folder of run " \
        "records" in out.stderr


@pytest.mark.parametrize("flag", ["--out", "--runs-dir"])
def test_a_ladder_whose_folder_is_a_file_is_refused_before_it_runs(tmp_path, flag):
    """It walked the whole ladder, then failed writing the report."""
    (tmp_path / "a-file").write_text("")
    out = run_cli("ladder", "--quick", "--rungs", "naive", flag, tmp_path / "a-file",
                  "--runs-dir" if flag == "--out" else "--out", tmp_path / "other", timeout=60)
    assert out.returncode == 2 and f"{flag} {tmp_path / 'a-file'} is a file" in out.stderr
    assert not (tmp_path / "other").exists()


def test_diagnose_unknown_run_is_one_clear_line(runs_dir):
    out = run_cli("diagnose", "no-such-run", "--runs-dir", runs_dir)
    assert out.returncode == 2 and "no-such-run" in out.stderr and "Traceback" not in out.stderr


def test_a_disk_error_is_blamed_on_a_variable_only_inside_its_folder(tmp_path, monkeypatch):
    import errno

    from gpu_course import cli
    runs = tmp_path / "runs"
    monkeypatch.setenv("GPU_COURSE_RUNS", str(runs))
    inside = OSError(errno.ENOSPC, "No space left on device", str(runs / "x" / "run.json"))
    beside = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "runs-other" / "y"))
    assert f"(from GPU_COURSE_RUNS={runs})" in cli._os_error(inside)
    assert "GPU_COURSE_RUNS" not in cli._os_error(beside)


def test_env_for_a_framework_this_environment_lacks_is_a_clear_error(capsys):
    from gpu_course import cli
    from gpu_course.engines import installed_engines
    missing = [e for e in ("gluon", "pytorch") if e not in installed_engines()]
    if not missing:
        pytest.skip("both frameworks are installed here")
    assert cli.main(["env", "--engine", missing[0], "--no-measure"]) == 2
    err = capsys.readouterr().err
    assert f"--engine {missing[0]} needs" in err and f"make setup-{missing[0]}" in err
