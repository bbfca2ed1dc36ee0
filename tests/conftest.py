"""Shared test settings: every test records runs into its own temporary folder, data
sets go to one temporary folder per session (never the checkout's data/), and what
subprocesses leave in their temporary folder (torchrun's torchelastic_*) is removed at
the end."""
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# A shell that starts the suite in the background (`make test &`, `nohup`) ignores Ctrl-C
# in it, and Python then installs no KeyboardInterrupt handler: the tests that press
# Ctrl-C (in this process or in a subprocess, which inherits "ignored") would wait for an
# interrupt that never comes. The suite tests Ctrl-C, so it takes the handler back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# `make test` runs the framework-free tests once (marked `core`, in the PyTorch
# environment: the newer numpy and pandas), a few of them again where the older ones are
# (`compat`, in the Gluon environment), and in each environment the tests of its own track
# (`track`): tests/gluon, tests/pytorch, tests/browser and the files below (`shared`: one
# file for both tracks), whose tests train, import or launch this environment's framework,
# or skip by what it has.
TRACK = {"test_cli.py", "test_cores.py", "test_course_setup.py", "test_ctrl_c.py",
         "test_diagnose.py", "test_engines.py", "test_env.py", "test_exercise_cells.py",
         "test_exercise_notebooks.py",
         "test_folder_data.py", "test_harness_overhead.py", "test_ladder.py", "test_monitor.py",
         "test_reference.py", "test_reliability.py", "test_report.py", "test_sagemaker.py",
         "test_sagemaker_request.py"}
COMPAT = {"test_records.py", "test_tables.py", "test_noise.py", "test_plots.py",
          "test_closing.py", "test_l01_naive.py", "test_l04_precision.py"}


def pytest_collection_modifyitems(items):
    tests = Path(__file__).parent
    for item in items:
        path = Path(str(item.fspath))
        if tests not in path.parents:
            continue   # a notebook's cells (nbval) are its track's
        inner = path.relative_to(tests).parts
        if inner[0] in ("gluon", "pytorch", "browser") or path.name in TRACK:
            item.add_marker(pytest.mark.track)
            if path.name in TRACK:
                item.add_marker(pytest.mark.shared)
        else:
            item.add_marker(pytest.mark.core)
            if path.name in COMPAT:
                item.add_marker(pytest.mark.compat)


@pytest.fixture(scope="session", autouse=True)
def _data_and_tmp_cleanup(tmp_path_factory):
    """GPU_COURSE_DATA in a session folder (notebook kernels inherit it too), and TMPDIR
    of every subprocess in another one, removed afterwards: torchrun leaves
    torchelastic_* folders there (not in a /tmp that other programs share)."""
    old = {name: os.environ.get(name) for name in ("GPU_COURSE_DATA", "TMPDIR")}
    if not old["GPU_COURSE_DATA"]:
        os.environ["GPU_COURSE_DATA"] = str(tmp_path_factory.mktemp("course-data"))
    scratch = tmp_path_factory.mktemp("subprocess-tmp")
    os.environ["TMPDIR"] = str(scratch)
    yield
    for name, value in old.items():
        if value is None or (name == "GPU_COURSE_DATA" and not value):
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(autouse=True)
def _runs_in_tmp(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    monkeypatch.setenv("GPU_COURSE_RUNS", str(runs))
    return runs


@pytest.fixture
def runs_dir(_runs_in_tmp):
    return _runs_in_tmp
