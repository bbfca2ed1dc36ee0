"""Each exercise of the gluon track, run as the notebook ships it (setup and parameters
cells, then the exercise and check cells) in smoke mode: its check says "not yet", with
why, on the untouched cell and passes with the solution (notebooks/solutions/gluon/)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from exercise_cells import check_track  # noqa: E402
from gpu_course.lessons.exercises import EXERCISES  # noqa: E402


@pytest.mark.parametrize("lesson", sorted({e.lesson for e in EXERCISES.values()}))
def test_the_exercises_fail_untouched_and_pass_with_their_solutions(lesson, tmp_path):
    check_track("gluon", lesson, tmp_path)
