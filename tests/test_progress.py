"""A closed progress bar leaves no widget in the notebook's outputs: a saved
notebook reopened without its kernel would show "Error displaying widget" for each."""
import json
import os

import pytest

from support import REPO

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipywidgets")

WIDGET = "application/vnd.jupyter.widget-view+json"


def run_cells(*sources, tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    # the kernel imports this checkout's gpu_course
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb


def test_closed_bars_leave_no_widget_view(tmp_path, monkeypatch):
    nb = run_cells(
        "from gpu_course.measure.progress import bar\n"
        "b = bar(5, desc='done', unit='step')\n"
        "for _ in range(5): b.update(1)\n"
        "b.close()",
        "b = bar(5, desc='stopped early')\nb.update(2)\nb.close()\nprint('after')",
        "from gpu_course.data.folder import parallel_map\n"
        "print(sum(parallel_map(abs, list(range(-20, 0)), workers=1, desc='map')))",
        tmp_path=tmp_path, monkeypatch=monkeypatch)
    text = json.dumps(nb)
    assert WIDGET not in text, [c.outputs for c in nb.cells]
    assert "after" in text and "210" in text
    errors = [o for c in nb.cells for o in c.outputs if o.output_type == "error"]
    assert not errors


def test_an_open_bar_is_a_widget_in_a_notebook(tmp_path, monkeypatch):
    """The control: in a notebook the bar is the ipywidgets one while it runs."""
    nb = run_cells("from gpu_course.measure.progress import bar\nb = bar(5, desc='open')\nb.update(1)",
                   tmp_path=tmp_path, monkeypatch=monkeypatch)
    assert WIDGET in json.dumps(nb)


def test_outside_a_notebook_it_is_the_terminal_bar(capsys):
    from gpu_course.measure.progress import bar
    b = bar(3, desc="terminal")
    b.update(3)
    b.close()
    assert type(b).__module__.startswith("tqdm")
