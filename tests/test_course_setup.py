"""The course as attendees meet it: one first cell in every notebook that leaves
gpu_course importable in a fresh kernel, and paired .py twins whose text does not change
when JupyterLab saves a notebook from another kernel."""
import asyncio
import json
import shutil
import subprocess

import pytest

from fresh_kernel import clean_env, make_fresh_python, sees_gpu_course, track_of_this_environment
from support import REPO

NOTEBOOKS = sorted(p for p in (REPO / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def first_code_cell(path):
    cells = json.loads(path.read_text())["cells"]
    return "".join(next(c for c in cells if c["cell_type"] == "code")["source"])


def test_every_notebook_starts_with_the_same_setup_cell():
    cells = {p.relative_to(REPO).as_posix(): first_code_cell(p) for p in NOTEBOOKS}
    first = cells["notebooks/gluon/01_naive.ipynb"]
    assert "course_setup.ensure()" in first and len(first.splitlines()) <= 6
    assert {name for name, cell in cells.items() if cell != first} == set()


def test_the_twins_carry_no_machine_specific_header():
    assert "notebook_metadata_filter" in (REPO / "jupytext.toml").read_text()
    for path in NOTEBOOKS:
        text = path.with_suffix(".py").read_text()
        assert not text.startswith("# ---"), f"{path.name}: header in the .py twin"
        assert "jupytext_version" not in text and "display_name" not in text


def test_saving_from_another_kernel_keeps_the_twin(tmp_path):
    """What JupyterLab's save does (jupytext's contents manager), with a kernel whose
    display name differs: the .py twin stays byte for byte the same."""
    jupytext_cm = pytest.importorskip("jupytext.async_contentsmanager")
    from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

    shutil.copy(REPO / "jupytext.toml", tmp_path)
    for suffix in (".ipynb", ".py"):
        shutil.copy(REPO / f"notebooks/gluon/01_naive{suffix}", tmp_path)
    before = (tmp_path / "01_naive.py").read_bytes()
    manager = jupytext_cm.build_async_jupytext_contents_manager_class(AsyncLargeFileManager)(
        root_dir=str(tmp_path))

    async def save():
        nb = (await manager.get("01_naive.ipynb"))["content"]
        nb["metadata"]["kernelspec"] = {"display_name": "Python 3 (ipykernel)",
                                        "language": "python", "name": "python3"}
        nb["metadata"]["language_info"] = {"name": "python", "version": "3.11.7"}
        nb["cells"][1]["outputs"] = []
        await manager.save({"type": "notebook", "content": nb}, "01_naive.ipynb")
    asyncio.run(save())
    assert (tmp_path / "01_naive.py").read_bytes() == before


@pytest.mark.skipif(track_of_this_environment() == "gluon", reason=(
    "course_setup's install path is the same for both tracks: it runs once, in the PyTorch "
    "environment; the Gluon kernel's first cell on a Python without gpu_course runs in "
    "tests/browser (make test's browser phase)"))
def test_a_fresh_kernel_gets_its_track_and_imports_it_without_restart(tmp_path):
    track = track_of_this_environment()
    python = make_fresh_python(tmp_path / "fresh")
    lesson = REPO / "notebooks" / track
    assert not sees_gpu_course(python, lesson), "the fresh interpreter must lack gpu_course"
    module = {"gluon": "gluon", "pytorch": "torch"}[track]
    code = first_code_cell(lesson / "01_naive.ipynb") + (
        f"\nfrom gpu_course import {module} as gc\nprint('IMPORTED', gc.__file__)")
    done = subprocess.run([str(python), "-c", code], cwd=lesson, env=clean_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    extra = "torch" if track == "pytorch" else "gluon"
    assert "is not installed in this kernel" in done.stdout
    assert f"[{extra}" in done.stdout and "no restart needed" in done.stdout
    assert f"IMPORTED {REPO}/gpu_course/" in done.stdout
    # only gpu_course went into the fresh environment: the pinned packages were there
    site = next((tmp_path / "fresh" / "lib").glob("python3*/site-packages"))
    added = {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}
    assert added == {"gpu_course"}, added
    again = subprocess.run([str(python), "-c", first_code_cell(lesson / "01_naive.ipynb")],
                           cwd=lesson, env=clean_env(), capture_output=True, text=True, timeout=300)
    assert "nothing installed" in again.stdout, again.stdout + again.stderr


def test_the_track_comes_from_the_lesson_folder_else_the_kernel(tmp_path):
    import sys
    sys.path.insert(0, str(REPO / "notebooks"))
    try:
        import course_setup
    finally:
        sys.path.remove(str(REPO / "notebooks"))
    assert course_setup.pick_track(REPO / "notebooks" / "pytorch")[0] == "pytorch"
    assert course_setup.pick_track(REPO / "notebooks" / "gluon")[0] == "gluon"
    assert course_setup.pick_track(REPO / "notebooks")[0] == track_of_this_environment()
    assert course_setup.pip_extra("pytorch") == "torch"
    assert course_setup.repo_root(REPO / "notebooks" / "gluon") == REPO


def _setup_copy(folder):
    """course_setup.py copied into `folder` (outside any checkout), as an attendee might."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "notebooks" / "course_setup.py", folder / "course_setup.py")
    return folder


def _ensure(folder, track):
    """The first cell's ensure(track) in this environment's Python, run in `folder`."""
    import sys
    return subprocess.run([sys.executable, "-c", f"import course_setup; course_setup.ensure({track!r})"],
                          cwd=folder, capture_output=True, text=True, timeout=120)


def test_a_lesson_copied_out_of_the_checkout_runs_in_a_kernel_that_has_the_course(tmp_path):
    """The copy finds no checkout above it; a kernel that runs the course needs none."""
    track = track_of_this_environment()
    done = _ensure(_setup_copy(tmp_path / "elsewhere" / track), track)
    assert done.returncode == 0, done.stderr
    assert "gpu_course is ready" in done.stdout and "nothing installed" in done.stdout


def test_the_other_tracks_lesson_names_the_kernel_to_pick_and_installs_nothing(tmp_path):
    mine = track_of_this_environment()
    other = {"gluon": "pytorch", "pytorch": "gluon"}[mine]
    done = _ensure(_setup_copy(tmp_path / other), None)   # the lesson's folder names its track
    assert done.returncode != 0
    assert f"runs the {mine} track" in done.stderr and f"this lesson is the {other} track's" \
        in done.stderr
    assert f"Pick the {other} track's kernel" in done.stderr and "Nothing was installed" in done.stderr
    assert "pip install" not in done.stdout


@pytest.mark.parametrize("version", [(3, 10), (3, 12), (3, 8)])
def test_a_kernel_of_another_python_is_told_in_one_line_what_to_do(version, tmp_path):
    """A SageMaker notebook instance's conda kernels run Python 3.10: the first cell says
    which kernel to make and pick, and runs no pip (a bare interpreter: -I -S, no
    site-packages, so neither gpu_course nor a framework is there)."""
    import sys
    code = (f"import sys; sys.path.insert(0, {str(REPO / 'notebooks')!r}); import course_setup; "
            f"sys.version_info = {version + (0, 'final', 0)!r}; course_setup.ensure('pytorch')")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith(f"RuntimeError: This kernel runs Python {version[0]}.{version[1]} "
                           "and the course's pins need Python 3.11, so nothing was installed")
    assert "gpu-course-pytorch" in line and ("python3.11" in line or "python=3.11" in line)
    assert "pip install -e" not in done.stderr


def test_the_gluon_gpu_build_is_chosen_by_the_engines_table(monkeypatch):
    import sys
    sys.path.insert(0, str(REPO / "notebooks"))
    try:
        import course_setup
    finally:
        sys.path.remove(str(REPO / "notebooks"))
    from gpu_course import engines
    assert course_setup.python_mismatch("gluon", REPO, (3, 11)) is None
    monkeypatch.setattr(course_setup, "_installed", lambda dist: False)
    for cap, extra in (((8, 9), "gluon-gpu"), ((8, 6), "gluon-gpu"), ((9, 0), "gluon")):
        monkeypatch.setattr(engines, "compute_capabilities", lambda cap=cap: [cap])
        assert course_setup.pip_extra("gluon", REPO) == extra
