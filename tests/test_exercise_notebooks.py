"""The exercises as shipped: every registered exercise sits in its lesson's notebook of
both tracks, as an exercise cell with the attendee's lines marked and a check cell, and
has a solution in both tracks that changes only the marked lines, and the notebooks' run
fails where a shipped check does not say "not yet" (conftest.py). (Running them solved:
tests/test_exercise_cells.py; the checks' branches: tests/lessons.)"""
import os
from pathlib import Path

import pytest

from exercise_cells import MARK, cells, exercises, solved_cells, unmarked_changes
from gpu_course.lessons import exercises as course
from support import REPO

TRACKS = ("gluon", "pytorch")


def notebook(track, lesson):
    found = sorted((REPO / "notebooks" / track).glob(f"{lesson}_*.py"))
    assert len(found) == 1, found
    return found[0]


def shipped(track, lesson):
    return exercises(cells(notebook(track, lesson).read_text()))


@pytest.mark.parametrize("track", TRACKS)
@pytest.mark.parametrize("id", sorted(course.EXERCISES))
def test_each_exercise_is_in_both_tracks_with_marks_and_a_solution_that_changes_only_them(track, id):
    lesson = course.find(id).lesson
    exercise, check = shipped(track, lesson)[id]
    assert MARK in exercise, "an exercise cell marks the attendee's lines"
    solved, solved_check = solved_cells(course.solution_text(id, track), check)
    assert solved.strip() != exercise.strip(), "the solution changes the exercise cell"
    assert unmarked_changes(exercise, solved) == []
    assert unmarked_changes(check, solved_check) == []


@pytest.mark.parametrize("track", TRACKS)
def test_every_exercise_cell_in_a_notebook_is_registered(track):
    for path in sorted((REPO / "notebooks" / track).glob("[0-9][0-9]_*.py")):
        for id in exercises(cells(path.read_text())):
            assert id in course.EXERCISES and course.find(id).lesson == path.name[:2], (path, id)


def test_a_solution_is_printed_for_the_track_asked(capsys):
    course.solution("01.1", "gluon")              # what gc.solution("01.1") does in the Gluon track
    text = capsys.readouterr().out
    assert "gluon.data.DataLoader" in text and MARK in text
    assert "DataLoader(ex_set" in course.solution_text("01.1", "pytorch")
    with pytest.raises(ValueError, match="track='mxnet' is not a track; allowed: gluon, pytorch"):
        course.solution_text("01.1", "mxnet")


def test_a_change_away_from_the_marked_lines_is_found():
    exercise = "a = 1\nb = None   # >>> yours\nc = a\n"
    assert unmarked_changes(exercise, "a = 1\nb = 2   # >>> yours\nb += 1\nc = a\n") == []
    assert unmarked_changes(exercise, "a = 2\nb = 2   # >>> yours\nc = a\n") == ["a = 1"]
    assert unmarked_changes(exercise, "a = 1\nb = 2   # >>> yours\nc = a\nd = 4\n") == \
        ["(added away from a marked line) d = 4"]


def test_the_notebook_run_fails_where_a_shipped_check_does_not_say_not_yet(tmp_path):
    """conftest.py, in one real nbval run of three notebooks whose check cells say
    "not yet" with why, "passed", and "not yet" without why."""
    import subprocess
    import sys

    import nbformat
    said = {"shipped": "Exercise 99.1, not yet: 1 run(s) so far",
            "passing": "Exercise 99.1, passed: as you predicted",
            "silent": "Exercise 99.1, not yet: "}
    for name, text in said.items():
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("x = 1"),
                    nbformat.v4.new_code_cell(f"print({text!r})", metadata={"tags": ["check"]})]
        nbformat.write(nb, tmp_path / f"{name}.ipynb")
    repo = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
                           "-p", "conftest", "--nbval-lax", "--nbval-current-env", *(f"{n}.ipynb" for n in sorted(said))],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(repo), "PYTHONDONTWRITEBYTECODE": "1"})
    out = done.stdout
    assert "PASSED shipped.ipynb::Cell 1" in out and "PASSED passing.ipynb::Cell 0" in out, out[-3000:]
    assert "FAILED passing.ipynb::Cell 1" in out and "FAILED silent.ipynb::Cell 1" in out, out[-3000:]
    assert out.count("must say 'not yet' and why") >= 2
