"""Each exercise of this environment's track, run as the notebook ships it (setup and
parameters cells, then the exercise and check cells) in smoke mode: its check says "not
yet", with why, on the untouched cell and passes with the solution
(notebooks/solutions/<track>/)."""
import pytest

from exercise_cells import check_track
from fresh_kernel import track_of_this_environment
from gpu_course.lessons.exercises import EXERCISES


@pytest.mark.parametrize("lesson", sorted({e.lesson for e in EXERCISES.values()}))
def test_the_exercises_fail_untouched_and_pass_with_their_solutions(lesson, tmp_path):
    check_track(track_of_this_environment(), lesson, tmp_path)
