"""`make gpu-check`'s plan, rehearsed on this CPU with smoke sizes (what CI runs), so the
command a rare GPU session depends on cannot rot: a real subprocess, real notebooks in
real kernels, the real ladder and tests, under the real budget."""
import json
import subprocess
import sys
import tarfile

import nbformat
import pytest

from tools import gpu_check, gpu_evidence


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-check")
    done = subprocess.run([sys.executable, "-m", "tools.gpu_check", "--rehearse", "--out", str(out)],
                          cwd=gpu_check.REPO, capture_output=True, text=True, timeout=900)
    return out, done


def test_the_rehearsal_runs_every_step_within_its_budget_and_packs_the_evidence(rehearsal):
    out, done = rehearsal
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # three files come back, whatever ran: a device machine returns only a few
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [gpu_check.ARCHIVE, gpu_check.SUMMARY, "summary.md"])
    summary = json.loads((out / gpu_check.SUMMARY).read_text())
    assert summary["rehearsal"] and summary["budget_s"] == gpu_check.REHEARSAL_BUDGET_S
    assert summary["wall_s"] <= summary["budget_s"] + gpu_check.STOP_GRACE_S
    assert [s["name"] for s in summary["steps"]] == list(gpu_check.STEPS)
    notebooks = summary["notebooks"]
    assert [n["name"] for n in notebooks] == [p.name for p in gpu_check.notebooks()]
    assert notebooks[0]["status"] == "ok", notebooks[0]
    assert all(n["status"] == "ok" or n["status"].startswith(("stopped", "skipped"))
               for n in notebooks), notebooks
    assert any(n["status"] != "ok" for n in notebooks)   # the budget cut the plan, and said so
    with tarfile.open(out / gpu_check.ARCHIVE) as tar:
        names = tar.getnames()
        executed = nbformat.reads(tar.extractfile(f"notebooks/{notebooks[0]['name']}").read()
                                  .decode(), as_version=4)
    assert {"summary.md", gpu_check.SUMMARY, "machine.json"} <= set(names)
    assert any(cell.get("outputs") for cell in executed.cells)   # the copy keeps what it printed
    text = (out / "summary.md").read_text()
    assert "(a CPU rehearsal)" in text and "| 01_naive.ipynb | ok |" in text
    assert "needs two or more GPUs" in text
    assert "GPU check: no GPU" in done.stdout


def test_a_rehearsal_cannot_be_committed_as_evidence(rehearsal, tmp_path):
    out, _ = rehearsal
    with pytest.raises(ValueError, match="CPU rehearsal"):
        gpu_evidence.unpack(out / gpu_check.ARCHIVE, tmp_path)


def test_bad_options_are_refused_by_name():
    for args, said in ((["--budget", "5"], "--budget=5 must be 60..3600 seconds"),
                       (["--steps", "ladder,bench"], "--steps=ladder,bench: allowed"),
                       (["--notebooks", "99"], "--notebooks 99: no such PyTorch notebook")):
        done = subprocess.run([sys.executable, "-m", "tools.gpu_check", *args], cwd=gpu_check.REPO,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and said in done.stderr, done.stderr
