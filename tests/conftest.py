"""Shared test settings: every test records runs into its own temporary folder, data
sets go to one temporary folder per session (never the checkout's data/), and the
folders torchrun leaves in /tmp are removed at the end."""
import glob
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


@pytest.fixture(scope="session", autouse=True)
def _data_and_tmp_cleanup(tmp_path_factory):
    """GPU_COURSE_DATA in a session folder (notebook kernels inherit it too), and the
    /tmp/torchelastic_* folders that DDP tests leave behind removed afterwards."""
    pattern = os.path.join(tempfile.gettempdir(), "torchelastic_*")
    before = set(glob.glob(pattern))
    old = os.environ.get("GPU_COURSE_DATA")
    if not old:
        os.environ["GPU_COURSE_DATA"] = str(tmp_path_factory.mktemp("course-data"))
    yield
    if not old:
        os.environ.pop("GPU_COURSE_DATA", None)
    for folder in set(glob.glob(pattern)) - before:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def _runs_in_tmp(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    monkeypatch.setenv("GPU_COURSE_RUNS", str(runs))
    return runs


@pytest.fixture
def runs_dir(_runs_in_tmp):
    return _runs_in_tmp
