"""A Python without gpu_course, for the first cell's install path.

It is a new virtual environment whose only package path is a plain line pointing at this
environment's site-packages: the track's framework, ipykernel and pip are there, as on a
SageMaker kernel, but the .pth files of that folder are not read, so gpu_course's editable
install is invisible. The first cell then really runs `pip install -e <repo>[track]`, which
finds every pinned dependency already present and adds gpu_course alone (seconds, offline
but for the build backend), and the import must work in the same interpreter afterwards.
"""
import os
import site
import subprocess
import sys
import venv
from pathlib import Path


def make_fresh_python(folder: Path) -> Path:
    """A python in `folder` that sees this environment's packages but not gpu_course."""
    venv.EnvBuilder(with_pip=False, clear=True).create(folder)
    python = folder / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    ours = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(purelib) / "track-packages.pth").write_text("\n".join(ours) + "\n")
    return python


def clean_env() -> dict:
    """This process's environment without what would make gpu_course importable."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return env


def track_of_this_environment() -> str:
    import importlib.util
    return "gluon" if importlib.util.find_spec("mxnet") else "pytorch"


def sees_gpu_course(python: Path, cwd: Path) -> bool:
    code = "import importlib.util, sys; sys.exit(importlib.util.find_spec('gpu_course') is None)"
    return subprocess.run([str(python), "-c", code], cwd=cwd, env=clean_env()).returncode == 0


if __name__ == "__main__":  # python tests/fresh_kernel.py FOLDER: prints the new python
    print(make_fresh_python(Path(sys.argv[1]).resolve()))
