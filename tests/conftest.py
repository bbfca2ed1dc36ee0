"""Shared test settings: every test records runs into its own temporary folder."""
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


@pytest.fixture(autouse=True)
def _runs_in_tmp(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    monkeypatch.setenv("GPU_COURSE_RUNS", str(runs))
    return runs


@pytest.fixture
def runs_dir(_runs_in_tmp):
    return _runs_in_tmp

