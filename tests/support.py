"""Helpers shared by the test files (a plain module: `conftest` is a name pytest reuses
in every test folder, so it cannot be imported by name)."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args, env=None, timeout=600):
    """Run `python -m gpu_course.cli ARGS` as a real subprocess from the repo root."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "gpu_course.cli", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, env=full_env)
