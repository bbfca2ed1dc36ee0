"""Lesson 01's conclusions on fake runs: the run against its two ceilings, every branch,
the GPU ones included."""
import math

import pytest
from fake_runs import busy

from gpu_course.analyse import metrics
from gpu_course.lessons import l01_naive, sizes


def naive(make_run, run, feed, compute, gpus=0, engine="gluon", steps=None, config=None):
    """The naive run (rate `run`) and its input and compute ceilings; steps: train_size
    for every run (fewer steps a run)."""
    common = {"num_workers": 1, "batch_size": 64, **({"train_size": steps} if steps else {})}
    made = []
    for name, rate, mock in (("naive", run, "none"), ("naive input-only", feed, "trainer"),
                             ("naive compute-only", compute, "loader")):
        wait = {"none": 0.02, "trainer": 0.99, "loader": 0.0}[mock]
        made.append(make_run(name, rate=rate, gpus=gpus, engine=engine, data_wait_share=wait,
                             config={**common, "mock": mock, **(config or {}).get(mock, {})}))
    return made


def reached(run, ceiling) -> str:
    """The run's samples/s as a share of the ceiling's, as the sentences print it."""
    return f"{metrics.samples_per_sec(run) / metrics.samples_per_sec(ceiling):.0%}"




def test_the_computation_sets_the_pace_when_the_run_sits_in_the_compute_ceilings_range(
        make_run, capsys):
    runs = naive(make_run, 600, 5000, 610)
    say = l01_naive.conclude(runs)
    assert (f"So the computation sets the pace: this run reached {reached(runs[0], runs[2])} "
            "of that ceiling") in say.text
    assert "what the model takes, beyond both ceilings' noise" in say.text
    assert "No GPU here: the model computes on the same 16 CPU cores" in say.text
    assert "the talk's V100 waited for its one worker at 306 samples/s" in say.text
    assert say.check() == []
    assert "sets the pace" in capsys.readouterr().out


def test_the_input_pipeline_sets_the_pace_on_a_gpu(make_run):
    runs = naive(make_run, 700, 710, 9000, gpus=1, engine="pytorch")
    say = l01_naive.conclude(runs)
    assert "So the input pipeline sets the pace" in say.text
    assert "Mean GPU utilisation while training: " in say.text and "No GPU" not in say.text
    assert say.check() == []


def test_two_gpus_are_named_in_the_utilisation_sentence(make_run):
    runs = naive(make_run, 700, 710, 9000, gpus=2, engine="pytorch")
    say = l01_naive.conclude(runs)
    assert "Mean GPU utilisation while training (over its 2 GPUs): " in say.text
    assert say.check() == []


@pytest.mark.parametrize("gpus,why", [(0, "the loader's worker and the model taking turns"),
                                      (1, "the host issuing the work")])
def test_a_run_below_both_ranges_is_held_by_neither_ceiling_overhead(make_run, gpus, why):
    runs = naive(make_run, 200, 5000, 640, gpus=gpus)
    say = l01_naive.conclude(runs)
    assert (f"Neither ceiling holds it: this run reached only {reached(runs[0], runs[2])} of "
            "the lower ceiling, the computation's") in say.text
    assert "overhead" in say.text and why in say.text
    assert "sets the pace" not in say.text
    assert say.check() == []


def test_a_run_above_its_ceiling_is_not_said_to_be_held_by_it(make_run):
    runs = naive(make_run, 720, 5000, 600)   # 120 % of the compute ceiling
    say = l01_naive.conclude(runs)
    assert (f"This run reached {reached(runs[0], runs[2])} of the lower ceiling, the "
            "computation's: above it") in say.text
    assert "mismeasured" in say.text and "sets the pace" not in say.text
    assert say.check() == []


def test_ceilings_within_each_others_noise_name_no_limit(make_run):
    runs = naive(make_run, 600, 612, 605)
    say = l01_naive.conclude(runs)
    assert "within the two ceilings' noise" in say.text
    assert "neither is clearly the limit" in say.text and "sets the pace" not in say.text
    assert say.check() == []


def test_too_few_steady_steps_place_the_run_nowhere(make_run):
    runs = naive(make_run, 600, 5000, 610, steps=448)   # 7 steps an epoch, 2 steady epochs: 14 steps
    say = l01_naive.conclude(runs)
    assert "too few steady steps to tell whether that is beyond their noise" in say.text
    assert "fewer than the 20 a verdict needs: too few steps to say which ceiling" in say.text
    assert "sets the pace" not in say.text and "overhead" not in say.text
    assert say.check() == []


def test_a_ceiling_on_a_machine_shared_when_the_run_was_not_is_said_and_not_ruled_on(make_run):
    run, feed, compute = naive(make_run, 200, 5000, 640)
    busy(run, 0.0), busy(feed, 0.0), busy(compute, 3.0)
    say = l01_naive.conclude([run, feed, compute])
    assert ("machine load (not shared with other programs while 'naive' ran, shared "
            "while 'naive compute-only' ran, by the runs' records)") in say.text
    assert "Neither ceiling holds it" not in say.text and "sets the pace" not in say.text
    assert say.check() == []
    assert list(l01_naive.table([run, feed, compute])["machine load"]) == ["not shared", "not shared", "shared"]


def test_a_ceiling_with_other_settings_says_how_it_differs(make_run):
    runs = naive(make_run, 600, 5000, 610, config={"loader": {"batch_size": 128}})
    say = l01_naive.conclude(runs)
    assert "ran differently in more than the ceiling's mock: batch_size 64 against 128" in say.text
    assert "sets the pace" not in say.text
    assert say.check() == []


def test_ceilings_get_no_speed_up(make_run):
    runs = naive(make_run, 600, 5000, 610)
    table = l01_naive.table(runs)
    assert "speedup" not in table.columns   # one run: nothing to speed up against
    assert list(table["what"]) == ["the run", "input ceiling", "compute ceiling"]
    again = make_run("naive again", rate=650, config={"num_workers": 1, "batch_size": 64})
    table = l01_naive.table([*runs, again])
    assert math.isnan(table["speedup"][1]) and math.isnan(table["speedup"][2])
    assert table["speedup"][3] == pytest.approx(650 / 600, rel=0.05)


def test_ceilings_alone_are_refused(make_run):
    _, feed, compute = naive(make_run, 600, 5000, 610)
    with pytest.raises(ValueError, match="only ceilings"):
        l01_naive.conclude([feed, compute])


def test_a_compute_ceilings_idle_loader_workers_do_not_count_as_its_own_load(make_run):
    compute = busy(make_run("compute", config={"mock": "loader", "num_workers": 4}), 0.8)
    assert metrics.machine_load(compute)["shared"]   # 0.8 cores beyond its own process


def test_sizes_are_small_in_smoke_mode():
    assert sizes("01", smoke=True).train_size < sizes("01", smoke=False).train_size
    assert sizes("01", smoke=True).ceiling_steps < sizes("01", smoke=False).ceiling_steps
    assert "ceiling_steps" not in sizes("01", smoke=True)   # the lesson's own, not an Experiment's
