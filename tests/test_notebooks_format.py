"""Every notebook is reviewable and portable: paired with its .py source, outputs
stripped, no machine-specific kernel, a tagged parameters cell with the smoke switch."""
import json

import pytest

from support import REPO

jupytext = pytest.importorskip("jupytext")
NOTEBOOKS = sorted((REPO / "notebooks").rglob("*.ipynb"))
NOTEBOOKS = [p for p in NOTEBOOKS if ".ipynb_checkpoints" not in p.parts]


def test_there_are_notebooks_for_both_tracks():
    names = {p.relative_to(REPO / "notebooks").as_posix() for p in NOTEBOOKS}
    for track in ("gluon", "pytorch"):
        assert sum(n.startswith(f"{track}/0") for n in names) >= 8, names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_notebook_is_clean_and_paired(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [], "outputs must be stripped before commit"
            assert cell.get("execution_count") is None
    kernel = nb["metadata"].get("kernelspec", {})
    assert kernel.get("name") == "python3", f"kernel {kernel.get('name')!r} is machine-specific"
    text = json.dumps(nb)
    assert "/home/" not in text and "/Users/" not in text and "conda_" not in text
    tagged = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1 and "GPU_COURSE_SMOKE" in "".join(tagged[0]["source"])

    source = path.with_suffix(".py")
    assert source.exists(), f"{path.name} has no paired .py source"
    paired = jupytext.read(source)
    ours = jupytext.read(path)
    assert [c.source.strip() for c in paired.cells] == [c.source.strip() for c in ours.cells], \
        f"{path.name} and {source.name} differ: run `make notebooks`"
