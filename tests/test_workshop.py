"""`make workshop` (tools/workshop.py): the attendee's copies are made, brought up to date
where never edited, kept where edited, and never left cut short; errors name the path and
exit 1. Real files, and the real command in a subprocess."""
import errno
import json
import os
import subprocess
import sys

import pytest

from tools import workshop

REPO = workshop.REPO


def notebook(text: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "source": text}], "nbformat": 4})


@pytest.fixture
def course(tmp_path):
    """A notebooks/ folder of two tracks, the first cell's helper and a solution (never
    copied), and the workshop/ folder beside it."""
    src = tmp_path / "notebooks"
    for rel, text in {"gluon/01_naive.ipynb": notebook("g1"), "pytorch/01_naive.ipynb": notebook("p1"),
                      "run_on_sagemaker.ipynb": notebook("sm")}.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    (src / "course_setup.py").write_text("# setup v1\n")
    (src / "solutions" / "gluon").mkdir(parents=True)
    (src / "solutions" / "gluon" / "01_naive.ipynb").write_text(notebook("solved"))
    return src, tmp_path / "workshop"


def done(outcomes):
    return {o.path: o.done for o in outcomes}


def test_copies_once_then_leaves_current_copies_alone(course):
    src, dest = course
    first = done(workshop.sync(src, dest))
    assert set(first.values()) == {workshop.Done.COPIED} and len(first) == 4
    assert not (dest / "solutions").exists()
    assert set(done(workshop.sync(src, dest)).values()) == {workshop.Done.CURRENT}


def test_a_pull_reaches_unedited_copies_and_keeps_edited_ones(course):
    src, dest = course
    workshop.sync(src, dest)
    (dest / "pytorch" / "01_naive.ipynb").write_text(notebook("p1, my notes"))   # edited
    for rel in ("gluon/01_naive.ipynb", "pytorch/01_naive.ipynb"):
        (src / rel).write_text(notebook(rel + " v2"))                             # the pull
    (src / "course_setup.py").write_text("# setup v2\n")
    got = done(workshop.sync(src, dest))
    assert got["gluon/01_naive.ipynb"] == got["course_setup.py"] == workshop.Done.UPDATED
    assert got["pytorch/01_naive.ipynb"] == workshop.Done.KEPT
    assert (dest / "gluon" / "01_naive.ipynb").read_text() == notebook("gluon/01_naive.ipynb v2")
    assert (dest / "course_setup.py").read_text() == "# setup v2\n"
    assert (dest / "pytorch" / "01_naive.ipynb").read_text() == notebook("p1, my notes")
    assert (dest / "pytorch" / "01_naive.new.ipynb").read_text() == \
        notebook("pytorch/01_naive.ipynb v2")                                     # beside it
    text = workshop.report(workshop.sync(src, dest), dest)
    assert "pytorch/01_naive.ipynb: kept: you edited it; the course's version has changed since, " \
        "and is beside it (the course's version: pytorch/01_naive.new.ipynb)" in text
    assert "rename or delete yours" in text


def test_a_copy_cut_short_is_moved_aside_and_copied_afresh(course):
    src, dest = course
    workshop.sync(src, dest)
    cut = dest / "gluon" / "01_naive.ipynb"
    cut.write_bytes(cut.read_bytes()[:20])          # a disk that filled up mid-copy
    (dest / "run_on_sagemaker.ipynb").write_bytes(b"")
    outcomes = workshop.sync(src, dest)
    assert done(outcomes)["gluon/01_naive.ipynb"] == workshop.Done.REPLACED_UNREADABLE
    assert cut.read_text() == notebook("g1")
    aside = dest / "gluon" / "01_naive.ipynb.unreadable-1"
    assert aside.read_bytes() == notebook("g1").encode()[:20]   # nothing deleted
    assert (dest / "run_on_sagemaker.ipynb").read_text() == notebook("sm")


def test_a_full_disk_leaves_no_part_written_copy_and_says_where(course, monkeypatch):
    src, dest = course
    real = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(workshop.WorkshopError, match=r"could not copy course_setup.py to .*"
                       r"workshop/course_setup.py: No space left on device"):
        workshop.sync(src, dest)
    monkeypatch.setattr(os, "fsync", real)
    assert [p.name for p in dest.iterdir()] == []   # no copy, no temporary file
    assert set(done(workshop.sync(src, dest)).values()) == {workshop.Done.COPIED}


@pytest.mark.parametrize("blocker", ["workshop/gluon", "workshop"])
def test_a_file_where_a_folder_belongs_fails_naming_it(course, blocker, tmp_path):
    src, dest = course
    if blocker != "workshop":
        dest.mkdir()
    (tmp_path / blocker).write_text("not a folder")
    proc = subprocess.run([sys.executable, "-m", "tools.workshop", "--source", str(src),
                           "--dest", str(dest)], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 1
    assert f"{tmp_path / blocker} is a file, not a folder: move it aside" in proc.stderr
    assert (tmp_path / blocker).read_text() == "not a folder"


def test_the_command_copies_the_course_and_says_what_it_did(course):
    src, dest = course
    out = subprocess.run([sys.executable, "-m", "tools.workshop", "--source", str(src),
                          "--dest", str(dest)], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert f"workshop: 4 files in {dest}" in out.stdout and "gluon/01_naive.ipynb: copied" in out.stdout
