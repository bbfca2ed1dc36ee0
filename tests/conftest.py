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
