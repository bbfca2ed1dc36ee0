"""Helpers shared by the test files (a plain module: `conftest` is a name pytest reuses
in every test folder, so it cannot be imported by name)."""
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args, env=None, timeout=600):
    """Run `python -m gpu_course.cli ARGS` as a real subprocess from the repo root."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "gpu_course.cli", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, env=full_env)


def foreign_cifar(root: Path) -> Path:
    """A CIFAR-10 binary folder that gpu-course did not write (like the real one)."""
    from gpu_course.data import cifar
    target = root / cifar.FOLDER_NAME
    target.mkdir(parents=True)
    for name in cifar.ALL_FILES:
        (target / name).write_bytes(b"theirs")
    return target


def no_bigger_than(limit):
    def preexec():  # files may not grow past `limit` bytes: writes fail with EFBIG
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return preexec
