"""The first cell of every notebook: make `gpu_course` importable in the running kernel.

    import importlib.util, pathlib, subprocess, sys  # the first cell, in every notebook
    here = pathlib.Path.cwd()
    sys.path.insert(0, str(next(p for p in (here, *here.parents) if (p / "course_setup.py").is_file())))
    import course_setup; course_setup.ensure()

A kernel that already imports `gpu_course` and its track's framework is left alone. A fresh
one (a SageMaker notebook instance, a new conda kernel) gets `pip install -e <repo>[track]`:
only its own track, with the pins of pyproject.toml. The repository root then goes onto
`sys.path` of the running kernel, so the import two cells later works without a restart:
an editable install made after the interpreter started is not on its path until the next
start. Standard library only: this runs before anything of the course is installed.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

# track -> (the module it imports, the pip extra of pyproject.toml)
TRACKS = {"gluon": ("mxnet", "gluon"), "pytorch": ("torch", "torch")}
# loaded before an install may replace them: a changed one needs a kernel restart
WATCHED = ("numpy", "pandas", "matplotlib", "scipy", "torch", "mxnet", "PIL", "psutil", "tqdm")


def repo_root(start: Path | None = None) -> Path:
    """The checkout this file belongs to (the folder with pyproject.toml and gpu_course/)."""
    here = (start or Path(__file__)).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file() and (folder / "gpu_course").is_dir():
            return folder
    raise FileNotFoundError(f"no gpu-course checkout (pyproject.toml and gpu_course/) above {here}")


def pick_track(cwd: Path | None = None) -> tuple[str, str]:
    """(track, why): the lesson's folder names it; else the framework this kernel has."""
    folder = (cwd or Path.cwd()).resolve().name
    if folder in TRACKS:
        return folder, f"the notebook is in {folder}/"
    for track, (module, _) in TRACKS.items():
        if importlib.util.find_spec(module) is not None:
            return track, f"this kernel has {module}"
    return "gluon", "no framework in this kernel; the Gluon track runs on a CPU"


def pip_extra(track: str, root: Path | None = None) -> str:
    """The extra to install: the MXNet GPU build where every GPU here can run it (the
    table in gpu_course/engines.py, read from the checkout before anything is installed)."""
    _, extra = TRACKS[track]
    if track != "gluon":
        return extra
    if _installed("mxnet-cu112"):
        return "gluon-gpu"
    sys.path.insert(0, str(root or repo_root()))
    try:
        from gpu_course import engines
    finally:
        del sys.path[0]
    return engines.gluon_extra(engines.compute_capabilities())


def python_mismatch(track: str, root: Path, version: tuple | None = None) -> str | None:
    """One line saying what to do when this kernel's Python is outside pyproject.toml's
    requires-python (a SageMaker notebook instance's conda kernels run Python 3.10);
    None when it fits."""
    version = tuple((version or sys.version_info)[:2])
    text = (root / "pyproject.toml").read_text()
    low, high = (tuple(map(int, re.search(rf'requires-python = ".*{op}(\d+)\.(\d+)', text).groups()))
                 for op in (">=", "<"))
    if low <= version < high:
        return None
    env = f"gpu-course-{track}"
    want = f"{low[0]}.{low[1]}"
    make = (f"conda create -y -n {env} python={want} ipykernel && conda run -n {env} python -m "
            f"ipykernel install --user --name {env}" if shutil.which("conda") else
            f"python{want} -m venv ~/{env} && ~/{env}/bin/pip install ipykernel && ~/{env}/bin/"
            f"python -m ipykernel install --user --name {env}")
    return (f"This kernel runs Python {version[0]}.{version[1]} and the course's pins need "
            f"Python {want}, so nothing was installed: in a terminal run `{make}`, then pick "
            f"the kernel '{env}' (Kernel → Change Kernel) and run this cell again.")


def ensure(track: str | None = None, quiet: bool = False) -> None:
    """Make `gpu_course` and the track's framework importable here; say what was done.
    A kernel that already runs the course is left alone, wherever the notebook lies; a
    kernel of the other track is told which kernel to pick, and nothing is installed over
    its pins."""
    why = f"track={track} was asked for"
    if track is None:
        track, why = pick_track()
    module, _ = TRACKS[track]
    _drop_own_folder()
    if _importable("gpu_course") and _importable(module):
        if not quiet:
            print(f"gpu_course is ready ({track} track: {_version(module)}); nothing installed.")
        _warn_other_checkout(_root_or_none())
        return
    other = [t for t, (m, _) in TRACKS.items() if t != track and _importable(m)]
    if other:
        raise RuntimeError(
            f"This kernel ({sys.executable}) runs the {other[0]} track "
            f"({_version(TRACKS[other[0]][0])}), and this lesson is the {track} track's ({why}). "
            f"Pick the {track} track's kernel (Kernel → Change Kernel; `make lab ENGINE={track}` "
            f"starts JupyterLab in it), or open the {other[0]} track's copy of this lesson. "
            f"Nothing was installed: the {track} track's pins would replace this environment's "
            "numpy and pandas.")
    root = repo_root()
    mismatch = python_mismatch(track, root)
    if mismatch:
        raise RuntimeError(mismatch)
    extra = pip_extra(track, root)
    command = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
               "-e", f"{root}[{extra},trace]"]   # trace: lesson 12's Holistic Trace Analysis
    constraints = root / "constraints" / f"{track}.txt"   # what make setup resolved: no search
    if constraints.is_file():
        command += ["-c", str(constraints)]
    loaded = {name: _version(name) for name in WATCHED if name in sys.modules}
    print(f"gpu_course is not installed in this kernel ({sys.executable}). Installing the "
          f"{track} track ({why}), this takes a minute or more:\n  pip install -e "
          f"'{root}[{extra},trace]'", flush=True)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"pip install failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    importlib.invalidate_caches()
    if str(root) not in sys.path:  # the editable install's path hook loads at the next start
        sys.path.append(str(root))
    changed = [f"{name} {old} -> {_version(name)}" for name, old in loaded.items()
               if _version(name) != old]
    if changed:
        raise RuntimeError("The install replaced packages this kernel had already loaded ("
                           + ", ".join(changed) + "). Restart the kernel (Kernel → Restart "
                           "Kernel) and run the notebook again.")
    import gpu_course  # noqa: F401  (proves it, in this kernel)
    print(f"Installed: gpu_course {_dist_version('gpu-course')} from {root}, "
          f"{track} track: {_version(module)}. It imports in this kernel; no restart needed.")


# -- small helpers ------------------------------------------------------------------------

def _drop_own_folder() -> None:
    """The first cell put this file's folder on sys.path; it is no longer needed there."""
    folder = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if not p or Path(p).resolve() != Path(folder)]


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _installed(dist: str) -> bool:
    return _dist_version(dist) is not None


def _dist_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _version(module: str) -> str:
    """'mxnet 1.9.1' from the installed distribution (nothing is imported)."""
    version = _dist_version(module)  # the distribution is named like the module, mostly
    if version is None:
        dists = importlib.metadata.packages_distributions().get(module, [module])
        version = _dist_version(dists[0])
    return f"{module} {version or '(not installed)'}"


def _root_or_none() -> Path | None:
    """The checkout above this file, or None for a lesson copied out of it."""
    try:
        return repo_root()
    except FileNotFoundError:
        return None


def _warn_other_checkout(root: Path | None) -> None:
    if root is None:
        return
    spec = importlib.util.find_spec("gpu_course")
    origin = Path(spec.origin).resolve().parent.parent if spec and spec.origin else None
    if origin is not None and origin != root:
        print(f"Note: this kernel imports gpu_course from {origin}, not from this "
              f"notebook's checkout {root}.")


if __name__ == "__main__":  # python notebooks/course_setup.py [gluon|pytorch]
    ensure(sys.argv[1] if len(sys.argv) > 1 else None)
