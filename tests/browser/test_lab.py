"""The course in a real browser: JupyterLab of this track's environment in a
headless Chromium; Run All in smoke mode, save, reopen, and the first cell on a kernel
without gpu_course.

Runs only when GPU_COURSE_BROWSER is set (the Makefile sets it): `first` for lesson 01 of
the track (and, on the Gluon track, the SageMaker notebook) from `make test`, whose notebook
phases leave those to this test, `all` for every lesson from `make test-lab`. The notebooks run on copies in .lab-test/ (ignored by
git) inside the checkout, so the checkout stays clean and the first cell finds the repo.
"""
import json
import os
import shutil
import time

import pytest

from fresh_kernel import make_fresh_python, track_of_this_environment
from support import REPO

WHICH = os.environ.get("GPU_COURSE_BROWSER", "")
pytestmark = pytest.mark.skipif(WHICH not in ("first", "all"),
                                reason="browser test: make test-browser / make test-lab")
TRACK = track_of_this_environment()
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
FRESH_KERNEL = "gpu-course-fresh"
NOT_YET = ", not yet: "   # how a check that did not pass reads (conftest.py, the notebooks' test)


def lessons() -> list[str]:
    found = sorted((REPO / "notebooks" / TRACK).glob("[0-9]*.ipynb"))
    names = [f"{TRACK}/{p.name}" for p in (found if WHICH == "all" else found[:1])]
    return names + (["run_on_sagemaker.ipynb"] if TRACK == "gluon" else [])


@pytest.fixture(scope="module")
def workspace():
    root = REPO / ".lab-test" / TRACK
    shutil.rmtree(root, ignore_errors=True)
    (root / TRACK).mkdir(parents=True)
    shutil.copy(REPO / "notebooks" / "course_setup.py", root)
    for name in lessons():
        shutil.copy(REPO / "notebooks" / name, root / name)
    yield root


@pytest.fixture(scope="module")
def lab(workspace):
    from lab_browser import LabServer
    kernels = workspace / "jupyter"
    python = make_fresh_python(workspace / "fresh-env")
    spec = kernels / "kernels" / FRESH_KERNEL
    spec.mkdir(parents=True)
    # -E: PYTHONPATH (set when testing a worktree) must not hand gpu_course to this kernel
    spec.joinpath("kernel.json").write_text(json.dumps({
        "argv": [str(python), "-E", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (without gpu_course)", "language": "python"}))
    env = dict(os.environ, GPU_COURSE_SMOKE="1", GPU_COURSE_RUNS=str(workspace / "runs"))
    with LabServer(workspace, env, kernels=kernels) as server:
        yield server


@pytest.fixture(scope="module")
def browser(lab):
    pytest.importorskip("selenium")
    from lab_browser import Browser
    with Browser() as b:
        yield b


def saved_problems(path) -> list[str]:
    """Errors, unexecuted code cells, widget views and an untouched exercise's check that
    does not say "not yet" and why (as the notebooks' own test asks: conftest.py), in the
    notebook file as saved."""
    problems = []
    for i, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] != "code":
            continue
        if cell.get("execution_count") is None:
            problems.append(f"cell {i} was not executed")
        said = "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                       for o in cell.get("outputs", []))
        if "check" in cell.get("metadata", {}).get("tags", []) and \
                not said.partition(NOT_YET)[2].strip():
            problems.append(f"cell {i}: an untouched exercise's check must say 'not yet' and "
                            f"why; it said: {said[-300:] or '(nothing)'}")
        for out in cell.get("outputs", []):
            text = "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
            if out["output_type"] == "error":
                problems.append(f"cell {i}: {out['ename']}: {out['evalue']}")
            elif "Traceback (most recent call last)" in text:  # e.g. rich's, which sagemaker installs
                problems.append(f"cell {i}: a traceback in the output: {text[-300:]}")
            if WIDGET_VIEW in out.get("data", {}):
                problems.append(f"cell {i}: a widget view is saved in the outputs")
    return problems


def run_save_reopen(browser, lab, name):
    page = browser.open_notebook(lab, name)
    seconds = page.run_all()
    unexecuted, text = page.unexecuted(), page.page_text()
    page.save()
    assert saved_problems(lab.root / name) == []
    assert not unexecuted, f"{name}: cells left unexecuted: {unexecuted}"
    assert "Error displaying widget" not in text, f"{name}: while running"
    lab.shutdown_kernels()           # the widget models die with the kernel, as on a reopen
    browser.driver.refresh()
    page.wait_until_ready()
    time.sleep(2)                    # outputs render once the notebook is shown
    assert "Error displaying widget" not in page.page_text(), f"{name}: after reopening"
    print(f"{name}: Run All {seconds:.0f} s in the browser")
    return page


@pytest.mark.parametrize("name", lessons())
def test_run_all_save_and_reopen(browser, lab, name):
    run_save_reopen(browser, lab, name)


@pytest.mark.skipif(TRACK == "pytorch", reason=(
    "course_setup's install path is the same for both tracks: in a kernel, here, in the Gluon "
    "environment; in the PyTorch environment by tests/test_course_setup.py"))
def test_the_first_cell_installs_into_a_kernel_without_gpu_course(browser, lab, workspace):
    """Lesson 01 up to its first use of gpu_course, on a kernel whose Python lacks it."""
    source = json.loads((REPO / "notebooks" / TRACK / "01_naive.ipynb").read_text())
    code = [i for i, c in enumerate(source["cells"]) if c["cell_type"] == "code"]
    source["cells"] = source["cells"][:code[2] + 1]   # setup, parameters, the gc import
    source["metadata"]["kernelspec"] = {"name": FRESH_KERNEL, "language": "python",
                                        "display_name": "Python 3 (without gpu_course)"}
    name = f"fresh/{TRACK}/01_naive.ipynb"
    (workspace / "fresh" / TRACK).mkdir(parents=True)
    (workspace / name).write_text(json.dumps(source))
    run_save_reopen(browser, lab, name)
    saved = json.loads((workspace / name).read_text())
    first = "".join("".join(o.get("text", "")) for o in saved["cells"][code[0]]["outputs"])
    assert "is not installed in this kernel" in first and "no restart needed" in first, first
    site = next((workspace / "fresh-env" / "lib").glob("python3*/site-packages"))
    assert {p.name.split("-")[0] for p in site.glob("*.dist-info")} == {"gpu_course"}


def test_the_check_sees_a_widget_left_in_a_saved_notebook(browser, lab, workspace):
    """The control: a bar closed the way tqdm closes it does show the error on reopening,
    so the checks above would catch it."""
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from tqdm.notebook import tqdm\nbar = tqdm(total=3, leave=False)\nbar.update(3)\nbar.close()")])
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    (workspace / "control").mkdir(exist_ok=True)
    nbformat.write(nb, workspace / "control" / "tqdm.ipynb")
    page = browser.open_notebook(lab, "control/tqdm.ipynb")
    page.run_all(timeout=120)
    page.save()
    assert any("widget view" in p for p in saved_problems(workspace / "control" / "tqdm.ipynb"))
    lab.shutdown_kernels()
    browser.driver.refresh()
    page.wait_until_ready()
    page.wait(lambda: "Error displaying widget" in page.page_text(), 30, "no widget error shown")


def test_the_check_sees_an_untouched_exercise_that_does_not_say_not_yet(tmp_path):
    """The control for the exercises: a check cell that passed, or said nothing, is caught."""
    def problems(text):
        cell = {"cell_type": "code", "execution_count": 1, "metadata": {"tags": ["check"]},
                "source": "", "outputs": [{"output_type": "stream", "name": "stdout", "text": text}]}
        (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": [cell]}))
        return saved_problems(tmp_path / "nb.ipynb")
    assert problems("Exercise 01.1, not yet: run the change too.") == []
    assert "must say 'not yet'" in problems("Exercise 01.1, passed: 2 runs")[0]
    assert problems("Exercise 01.1, not yet: ")
