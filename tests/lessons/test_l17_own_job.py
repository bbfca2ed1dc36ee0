"""Lesson 17's closing on fake runs of an own job: workers against the job as written."""
import pytest

from gpu_course.lessons import l17_own_job
from gpu_course.lessons.l17_own_job import LESSON
from gpu_course.show.findings import Outcome

MEANS = LESSON.compares[0].means


@pytest.mark.parametrize("rates, paragraph", [((600, 1800), MEANS[Outcome.EXPECTED]),
                                              ((600, 602), MEANS[Outcome.NONE])])
def test_workers_against_the_job_as_written(make_run, capsys, rates, paragraph):
    runs = [make_run(name, rate=rate, engine="pytorch", data_wait_share=0.7 if workers == 0 else 0.1,
                     config={"model": "own", "dataset": "own", "num_workers": workers})
            for name, rate, workers in zip(("as written", "num_workers"), rates, (0, 2))]
    l17_own_job.conclude(runs)
    assert paragraph in capsys.readouterr().out


def test_no_runs_says_what_to_do(capsys):
    l17_own_job.conclude([])
    assert LESSON.empty in capsys.readouterr().out
