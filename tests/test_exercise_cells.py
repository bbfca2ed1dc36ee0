"""Each exercise of this environment's track, run with its solution
(notebooks/solutions/<track>/) in the notebook's place (setup and parameters cells, then the
solved exercise and check cells) in smoke mode: its check passes, or only what this machine
measured refuses it (a speed, a share: a shared machine can turn those; the checks' tests on
fake runs cover each direction). As shipped, untouched, it runs in the notebook's own test,
where conftest.py asserts that its check says "not yet"."""
import pytest

from exercise_cells import check_track
from fresh_kernel import track_of_this_environment
from gpu_course.lessons.exercises import EXERCISES


@pytest.mark.parametrize("lesson", sorted({e.lesson for e in EXERCISES.values()}))
def test_the_exercises_pass_with_their_solutions(lesson, tmp_path):
    check_track(track_of_this_environment(), lesson, tmp_path)
