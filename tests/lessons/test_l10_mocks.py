"""Lesson 10's conclusions on fake runs: the ceilings read as ceilings (no speed-up, no
"slow-down"), following the diagnosis, and whether it helped; each case the paragraph the
lesson declares for it, GPU branches included."""
import math

import pytest

from gpu_course.analyse import diagnose
from gpu_course.config import Experiment
from gpu_course.lessons import l10_mocks, sizes
from gpu_course.rungs import RungName
from gpu_course.show import closing
from declared import paragraphs
from gpu_course.show.findings import Outcome

JOB = {"dataset": "folder", "num_workers": 1, "data_format": "loose", "augment": "heavy",
       "model": "tiny", "batch_size": 64, "train_size": 6_400}
NAME = "heavy augmentation, tiny net"
RULE = l10_mocks.LESSON.bounds.means
HELPED = l10_mocks.ADVICE.compares[0].means


def job_and_ceilings(make_run, job, feed, compute, engine="gluon", gpus=0, **options):
    """The job at `job` samples/s, its mock trainer at `feed`, its mock loader at `compute`."""
    run = make_run(NAME, rate=job, engine=engine, gpus=gpus, config=JOB,
                   data_wait_share=options.pop("wait", 0.6), **options)
    ceilings = [make_run(f"{NAME}: mock {mock}", rate=rate, engine=engine, gpus=gpus,
                         data_wait_share=1.0 if mock == "trainer" else 0.0,
                         config={**JOB, "mock": mock, "max_steps": 24, "epochs": 1}, **options)
                for mock, rate in (("trainer", feed), ("loader", compute))]
    return [run, *ceilings]


def test_the_table_shows_ceilings_without_a_speed_up_and_each_runs_verdict(make_run):
    runs = job_and_ceilings(make_run, 300, 310, 1200)
    table = l10_mocks.table(runs)
    assert "speedup" not in table.columns and "gpu_util" not in table.columns   # a CPU
    assert list(table["verdict"]) == ["input-bound", "input-bound", "compute-bound"]
    assert table["next_rung"].iloc[2] == "hybridize"   # the Gluon track's graph rung
    gpu = l10_mocks.table(job_and_ceilings(make_run, 3000, 3100, 9000, engine="pytorch", gpus=1))
    assert "gpu_util" in gpu.columns and not math.isnan(gpu["gpu_util"].iloc[0])


# (job, input ceiling, compute ceiling) samples/s, GPUs -> the paragraph declared for it
CEILINGS = [((300, 310, 1200), 0, RULE[Outcome.OPPOSITE]),
            ((380, 1500, 400), 0, RULE[Outcome.EXPECTED]),
            ((380, 400, 401), 0, RULE[Outcome.NONE]),
            ((3000, 3100, 9000), 1, RULE[Outcome.OPPOSITE]),
            ((600, 400, 2000), 0, l10_mocks.LESSON.above_ceiling)]


@pytest.mark.parametrize("rates, gpus, paragraph", CEILINGS)
def test_each_pair_of_ceilings_says_the_paragraph_the_lesson_declares(make_run, rates, gpus,
                                                                      paragraph):
    runs = job_and_ceilings(make_run, *rates, engine="pytorch" if gpus else "gluon", gpus=gpus,
                            wait=0.02 if rates[1] > rates[2] else 0.6)
    say = l10_mocks.conclude(runs)
    assert f"'{NAME}: mock trainer' (the input alone) against '{NAME}: mock loader' (the model " \
        "alone): ×" in say.text
    assert f"'{NAME}' reaches " in say.text and "of its input ceiling and" in say.text
    assert paragraph in say.text and say.check() == []
    assert "slow-down" not in say.text and "speed-up" not in say.text
    assert (l10_mocks.LESSON.above_ceiling in say.text) == (rates[0] > rates[1])


def test_a_run_without_ceilings_gets_no_ceiling_sentence(make_run):
    run = make_run("alone", rate=500, config=JOB)
    assert l10_mocks.conclude([run]).text == ""


def advice(verdict, rung=None, **numbers):
    return diagnose.Diagnosis(NAME, verdict, next_rung=rung,
                              numbers={"cpu_count": 16, "cpu_percent": 50.0, **numbers})


@pytest.mark.parametrize("rate, paragraph", [(1500, HELPED[Outcome.EXPECTED]),
                                             (150, HELPED[Outcome.OPPOSITE]),
                                             (302, HELPED[Outcome.NONE])])
def test_whether_the_advice_helped_says_the_paragraph_the_lesson_declares(make_run, rate,
                                                                          paragraph):
    runs = job_and_ceilings(make_run, 300, 310, 1200)
    after = make_run("after the advice: preresized", rate=rate, data_wait_share=0.3,
                     config={**JOB, "data_format": "preresized"})
    say = l10_mocks.conclude([*runs, after], advice=advice("input-bound", RungName.DATA_FORMAT))
    assert say.lines[0].startswith(f"'after the advice: preresized' against '{NAME}' "
                                        "(data_format loose → preresized): ×")
    assert paragraph in say.text
    assert "mismeasured" not in say.text and "the input alone" not in say.text
    assert say.check() == []


@pytest.mark.parametrize("rate, words", [(301, "within noise"), (900, "faster")])
def test_an_unreliable_diagnosis_measures_the_same_job_again(make_run, rate, words):
    before = make_run(NAME, rate=300, config=JOB)
    again = make_run("measured again", rate=rate, config=JOB)
    say = l10_mocks.conclude([before, again], advice=advice(diagnose.UNRELIABLE))
    assert f"'measured again' against '{NAME}': ×" in say.text and words in say.text
    assert "two identical jobs: the ratio measures the machine, not the change" in say.text
    assert say.check() == []


def test_a_compute_rung_is_stood_in_for_and_said_so(make_run):
    before = make_run(NAME, rate=300, data_wait_share=0.02, config=JOB)
    after = make_run("after the advice: standard augmentation", rate=700, data_wait_share=0.02,
                     config={**JOB, "augment": "standard"})
    say = l10_mocks.conclude([before, after], advice=advice("compute-bound", RungName.HYBRIDIZE))
    assert "(augment heavy → standard)" in say.text
    assert "The cheaper standard augmentation stands in for the rung the diagnosis named" in say.text
    assert HELPED[Outcome.EXPECTED] in say.text and say.check() == []


def test_advice_for_a_run_not_given_is_refused(make_run):
    run = make_run("other", rate=300, config=JOB)
    with pytest.raises(ValueError, match="not among the runs"):
        l10_mocks.conclude([run], advice=advice("input-bound", RungName.WORKERS))


CFG = Experiment(name=NAME, dataset="folder", num_workers=1, augment="heavy", model="tiny")


@pytest.mark.parametrize("d, changes, given", [
    (advice(diagnose.UNRELIABLE), {"name": "measured again"}, CFG),
    (advice("input-bound", RungName.DATA_FORMAT), {"data_format": "preresized"}, CFG),
    (advice("input-bound", RungName.DATA_FORMAT), {"data_format": "packed"},
     CFG.replace(data_format="preresized")),
    (advice("input-bound", RungName.WORKERS), {"num_workers": 13}, CFG),
    # no core free for another worker: the advice is a cheaper augmentation (or more cores)
    (advice("input-bound", RungName.WORKERS, cpu_percent=99.0), {"augment": "standard"}, CFG),
    (advice("overhead-bound", RungName.HYBRIDIZE, cpu_count=2), {"augment": "standard"}, CFG),
])
def test_following_the_advice_changes_one_thing(d, changes, given):
    cfg = l10_mocks.follow(d, given)
    diff = {k: v for k, v in cfg.to_dict().items() if v != given.to_dict()[k]}
    assert {k: v for k, v in diff.items() if k != "name"} == \
        {k: v for k, v in changes.items() if k != "name"}
    assert cfg.name != given.name and cfg.name == changes.get("name", cfg.name)


def test_the_hand_timed_steps_are_averaged_without_the_first():
    times = [(0.0, 1.0, 1.5), (2.0, 2.01, 2.31), (3.0, 3.03, 3.33)]
    table = l10_mocks.step_table(times)
    assert list(table["step"]) == ["step 1", "step 2", "step 3", "mean of steps 2–3"]
    assert table["wait_ms"].iloc[-1] == pytest.approx(20.0)
    assert table["compute_ms"].iloc[-1] == pytest.approx(300.0)


def test_a_shared_machine_is_named_once(make_run):
    runs = job_and_ceilings(make_run, 300, 310, 1200)
    runs[0].meta["load"] = {"start": {"wall": 0.0, "cpu_busy_s": 0.0, "process_cpu_s": 0.0},
                            "end": {"wall": 10.0, "cpu_busy_s": 40.0, "process_cpu_s": 10.0}}
    say = l10_mocks.conclude(runs)
    assert f"Another program shared the machine during '{NAME}':" in say.text
    assert say.text.count("Another program") == 1 and say.check() == []


def test_the_lessons_paragraphs_carry_no_number():
    for lesson in (l10_mocks.LESSON, l10_mocks.ADVICE):
        assert all(not closing.measurements(p) for p in paragraphs(lesson))


def test_sizes_are_small_in_smoke_mode():
    smoke, full = sizes("10", smoke=True), sizes("10", smoke=False)
    assert smoke.ceiling_steps < full.ceiling_steps and smoke["epochs"] <= full["epochs"]
    assert smoke["dataset"] == "folder"
