"""Issue 10: MXNet fixes its operators' OpenMP threads when it is imported, so the CPU
ladder's thread rung runs in a process of its own, and every record says what ran."""
import pytest

from gpu_course import gluon as gc
from gpu_course.gluon import devices


def test_operator_threads_are_read_from_the_environment_mxnet_loaded_with(monkeypatch):
    monkeypatch.setattr(devices, "THREAD_ENV", {"OMP_NUM_THREADS": "3",
                                                "MXNET_OMP_MAX_THREADS": None})
    assert devices.operator_threads() == (3, "OMP_NUM_THREADS")
    monkeypatch.setattr(devices, "THREAD_ENV", {})
    assert devices.operator_threads()[1].startswith("MXNet's default")


def test_threads_this_process_cannot_run_are_refused_and_the_record_says_what_ran(small_cfg):
    count, _ = devices.operator_threads()
    with pytest.raises(ValueError, match=rf"threads={count + 1} in the Experiment, but MXNet's "
                                         rf"operators run {count} OpenMP thread.*start a new "
                                         rf"process with OMP_NUM_THREADS={count + 1}"):
        gc.train(small_cfg.replace(threads=count + 1), progress=False, verbose=False)
    run = gc.train(small_cfg.replace(threads=count, max_steps=2), progress=False, verbose=False)
    assert run.config["threads"] == count and run.meta["ran"]["threads"]["intra_op"] == count


def test_the_thread_rung_runs_in_a_child_process_and_records_its_threads(tmp_path, capsys):
    from gpu_course.ladder import run_in_child, rungs
    # 5 cores: 2 loader workers leave 3, where MXNet's own default would be 2
    rung = rungs("gluon", gpus=0, cpu_count=5, quick=True, train_size=128, test_size=64)[-1]
    assert rung.name == "threads" and rung.env == (("OMP_NUM_THREADS", "3"),)
    run = run_in_child(rung, tmp_path)
    assert run.status == "finished" and run.path.parent == tmp_path
    threads = run.meta["ran"]["threads"]
    assert run.config["threads"] == 3 and threads["intra_op"] == 3
    assert threads["intra_op_from"] == "OMP_NUM_THREADS" and threads["OMP_NUM_THREADS"] == "3"
    assert "in a child process: OMP_NUM_THREADS=3 gpu-course run" in capsys.readouterr().out
