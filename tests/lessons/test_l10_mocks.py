"""Lesson 10's conclusions on fake runs: the ceilings read as ceilings (no speed-up, no
"slow-down"), following the diagnosis, and whether it helped, GPU branches included."""
import math
import re

import pytest

from gpu_course.analyse import diagnose
from gpu_course.config import Experiment
from gpu_course.lessons import l10_mocks, sizes

JOB = {"dataset": "folder", "num_workers": 1, "data_format": "loose", "augment": "heavy",
       "model": "tiny", "batch_size": 64, "train_size": 6_400}
NAME = "heavy augmentation, tiny net"


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
    assert table["next_rung"].iloc[2] == "hybridize/compile"
    gpu = l10_mocks.table(job_and_ceilings(make_run, 3000, 3100, 9000, engine="pytorch", gpus=1))
    assert "gpu_util" in gpu.columns and not math.isnan(gpu["gpu_util"].iloc[0])


def test_an_input_ceiling_below_the_compute_ceiling_breaks_the_rule_and_is_no_slow_down(make_run):
    say = l10_mocks.conclude(job_and_ceilings(make_run, 300, 310, 1200))
    assert re.search(r"the input ceiling is ×0\.2\d the compute ceiling, below it beyond both "
                     r"ranges: the lecture's rule \(the I/O rate must exceed the training rate\) "
                     r"is broken", say.text)
    assert "slow-down" not in say.text and "speed-up" not in say.text
    assert re.search(rf"'{NAME}' reaches 9\d% of its input ceiling and 2\d% of its compute "
                     r"ceiling\.", say.text)
    assert say.check() == []


def test_an_input_ceiling_above_the_compute_ceiling_meets_the_rule(make_run):
    say = l10_mocks.conclude(job_and_ceilings(make_run, 380, 1500, 400, wait=0.02))
    assert "above it beyond both ranges: the lecture's rule (the I/O rate must exceed the " \
           "training rate) is met." in say.text
    assert say.check() == []


def test_ceilings_within_noise_of_each_other_neither_meet_nor_break_the_rule(make_run):
    say = l10_mocks.conclude(job_and_ceilings(make_run, 380, 400, 401))
    assert "within both ranges of it: the lecture's rule (the I/O rate must exceed the " \
           "training rate) is neither met nor broken beyond noise." in say.text
    assert say.check() == []


def test_a_job_faster_than_its_ceiling_says_one_of_them_is_mismeasured(make_run):
    say = l10_mocks.conclude(job_and_ceilings(make_run, 600, 400, 2000))
    assert "above its input ceiling, which it cannot beat, so one of the two is mismeasured" \
        in say.text
    assert say.check() == []


def test_a_run_without_ceilings_gets_no_ceiling_sentence(make_run):
    run = make_run("alone", rate=500, config=JOB)
    assert l10_mocks.conclude([run]).text == ""


def advice(verdict, rung="", **numbers):
    return diagnose.Diagnosis(NAME, verdict, next_rung=rung,
                              numbers={"cpu_count": 16, "cpu_percent": 50.0, **numbers})


@pytest.mark.parametrize("rate, words", [
    (1500, "The advice ('pre-processing') helped, beyond the runs' noise."),
    (150, "The advice ('pre-processing') made it slower here, beyond the runs' noise"),
    (302, "Whether the advice ('pre-processing') helped is not shown: the difference is within "
          "the runs' noise")])
def test_whether_the_advice_helped_is_judged_against_noise(make_run, rate, words):
    runs = job_and_ceilings(make_run, 300, 310, 1200)
    after = make_run("after the advice: pre-processing", rate=rate, data_wait_share=0.3,
                     config={**JOB, "data_format": "preresized"})
    say = l10_mocks.conclude([*runs, after], advice=advice("input-bound", "pre-processing"))
    assert f"'after the advice: pre-processing' against '{NAME}' (data_format loose → " \
           "preresized)" in say.text
    assert words in say.text
    assert "mismeasured" not in say.text and "the input ceiling is" not in say.text
    assert say.check() == []


@pytest.mark.parametrize("rate, words", [(301, "the two runs agree within their noise."),
                                         (900, "not steady enough to rule.")])
def test_an_unreliable_diagnosis_measures_the_same_job_again(make_run, rate, words):
    before = make_run(NAME, rate=300, config=JOB)
    again = make_run("measured again", rate=rate, config=JOB)
    say = l10_mocks.conclude([before, again], advice=advice(diagnose.UNRELIABLE, "measure again"))
    assert "(the same configuration)" in say.text and words in say.text
    assert say.check() == []


def test_a_compute_rung_is_stood_in_for_and_said_so(make_run):
    before = make_run(NAME, rate=300, data_wait_share=0.02, config=JOB)
    after = make_run("after the advice: standard augmentation", rate=700, data_wait_share=0.02,
                     config={**JOB, "augment": "standard"})
    say = l10_mocks.conclude([before, after], advice=advice("compute-bound", "hybridize/compile"))
    assert "(augment heavy → standard)" in say.text
    assert "a cheaper augmentation standing in for 'hybridize/compile'" in say.text
    assert "helped, beyond the runs' noise" in say.text
    assert say.check() == []


def test_advice_for_a_run_not_given_is_refused(make_run):
    run = make_run("other", rate=300, config=JOB)
    with pytest.raises(ValueError, match="not among the runs"):
        l10_mocks.conclude([run], advice=advice("input-bound", "workers"))


CFG = Experiment(name=NAME, dataset="folder", num_workers=1, augment="heavy", model="tiny")


@pytest.mark.parametrize("d, changes", [
    (advice(diagnose.UNRELIABLE, "measure again"), {"name": "measured again"}),
    (advice("input-bound", "pre-processing"), {"data_format": "preresized"}),
    (advice("input-bound", "packed format"), {"data_format": "packed"}),
    (advice("input-bound", "workers"), {"num_workers": 13}),
    # no core free for another worker: the advice is a cheaper augmentation (or more cores)
    (advice("input-bound", "workers", cpu_percent=99.0), {"augment": "standard"}),
    (advice("overhead-bound", "hybridize/compile", cpu_count=2), {"augment": "standard"}),
])
def test_following_the_advice_changes_one_thing(d, changes):
    cfg = l10_mocks.follow(d, CFG)
    diff = {k: v for k, v in cfg.to_dict().items() if v != CFG.to_dict()[k]}
    assert {k: v for k, v in diff.items() if k != "name"} == \
        {k: v for k, v in changes.items() if k != "name"}
    assert cfg.name != CFG.name and cfg.name == changes.get("name", cfg.name)


def test_the_hand_timed_steps_are_averaged_without_the_first():
    times = [(0.0, 1.0, 1.5), (2.0, 2.01, 2.31), (3.0, 3.03, 3.33)]
    table = l10_mocks.step_table(times)
    assert list(table["step"]) == ["step 1", "step 2", "step 3", "mean of steps 2–3"]
    assert table["wait_ms"].iloc[-1] == pytest.approx(20.0)
    assert table["compute_ms"].iloc[-1] == pytest.approx(300.0)


def test_a_shared_machine_is_named(make_run):
    runs = job_and_ceilings(make_run, 300, 310, 1200)
    runs[0].meta["load"] = {"start": {"wall": 0.0, "cpu_busy_s": 0.0, "process_cpu_s": 0.0},
                            "end": {"wall": 10.0, "cpu_busy_s": 40.0, "process_cpu_s": 10.0}}
    say = l10_mocks.conclude(runs)
    assert f"Another program shared the machine during '{NAME}'" in say.text
    assert say.check() == []


def test_sizes_are_small_in_smoke_mode():
    smoke, full = sizes("10", smoke=True), sizes("10", smoke=False)
    assert smoke.ceiling_steps < full.ceiling_steps and smoke["epochs"] <= full["epochs"]
    assert smoke["dataset"] == "folder"
