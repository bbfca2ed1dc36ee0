"""MXNet fixes its operators' OpenMP threads when it is imported: every record
says the count that ran, and a config asking for another count is refused."""
import pytest

from gpu_course.tracks import gluon as gc
from gpu_course.tracks.gluon import devices


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



def test_a_garbled_thread_count_is_a_clear_error_not_an_abort():
    """MXNet aborts the process (signal 6) on OMP_NUM_THREADS=abc; the course says why
    before MXNet loads, through the CLI's error line."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    env = {**os.environ, "OMP_NUM_THREADS": "abc"}
    done = subprocess.run([sys.executable, "-m", "gpu_course.cli", "run", "--engine", "gluon",
                           "--model", "tiny", "--train-size", "64", "--test-size", "32"],
                          cwd=Path(__file__).resolve().parents[2], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode not in (0, -6, 134), done.stderr
    assert "OMP_NUM_THREADS='abc' is not a number of threads" in done.stderr
    assert "Traceback" not in done.stderr


def test_thread_variables_accept_counts_and_lists():
    from gpu_course.env.cores import check_thread_variables
    check_thread_variables({"OMP_NUM_THREADS": "4,2", "MXNET_OMP_MAX_THREADS": "8"})
    check_thread_variables({"OMP_NUM_THREADS": ""})
    for bad in ("0", "-1", "two", "4,x"):
        with pytest.raises(ValueError, match="is not a number of threads"):
            check_thread_variables({"OMP_NUM_THREADS": bad})
