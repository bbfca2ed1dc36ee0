"""Lesson 01's conclusions on fake runs: the run placed against its two ceilings, each
place with the paragraph the lesson declares for it, the GPU ones included."""
import math

import pytest
from fake_runs import busy

from gpu_course.analyse import metrics
from gpu_course.lessons import l01_naive, sizes
from gpu_course.lessons.l01_naive import LESSON
from gpu_course.show import closing
from declared import paragraphs
from gpu_course.show.findings import Place, Where


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


def paragraph(place, gpus):
    text = LESSON.ceilings.means[place]
    return text if isinstance(text, str) else text[Where.GPU if gpus else Where.CPU]


# (run, input ceiling, compute ceiling) samples/s, GPUs -> where the run sits, and the
# lower ceiling the sentence names
PLACES = [
    ((600, 5000, 610), 0, Place.AT, "'naive compute-only' (the computation alone)"),
    ((700, 710, 9000), 1, Place.AT, "'naive input-only' (the input pipeline alone)"),
    ((600, 612, 605), 0, Place.AT_BOTH, "'naive compute-only'"),
    ((200, 5000, 640), 0, Place.BELOW, "'naive compute-only'"),
    ((200, 5000, 640), 1, Place.BELOW, "'naive compute-only'"),
    ((900, 5000, 600), 0, Place.ABOVE, "'naive compute-only'"),
]


@pytest.mark.parametrize("rates, gpus, place, lower", PLACES)
def test_each_place_says_the_paragraph_the_lesson_declares(make_run, rates, gpus, place, lower):
    runs = naive(make_run, *rates, gpus=gpus, engine="pytorch" if gpus else "gluon")
    say = l01_naive.conclude(runs)
    assert f"of the lower ceiling, {lower}" in say.text
    assert paragraph(place, gpus) in say.text and say.check() == []
    others = [p for p in Place if p is not place]
    assert not any(paragraph(p, gpus) in say.text for p in others)
    assert "Share of the steady step time spent waiting for data: 'naive' 2" in say.text
    assert ("Mean GPU utilisation while training" in say.text) == bool(gpus)
    assert ("No GPU here" in say.text) == (not gpus)
    assert "The talk, on a V100: one loader worker 306 samples/s; 29 workers 663" in say.text


def test_the_ceilings_are_judged_against_each_other_first(make_run):
    runs = naive(make_run, 600, 5000, 610)
    say = l01_naive.conclude(runs)
    assert say.lines[0].startswith(
        "The ceilings, 'naive input-only' (the input pipeline alone) against 'naive "
        "compute-only' (the computation alone): ×8.2") and "faster" in say.lines[0]
    share = f"{metrics.samples_per_sec(runs[0]) / metrics.samples_per_sec(runs[2]):.0%}"
    assert f"'naive' reached {share} of the lower ceiling" in say.text


@pytest.mark.parametrize("case", ["too few steps", "shared machine", "other settings"])
def test_no_place_is_said_where_the_runs_cannot_tell(make_run, case):
    steps = 448 if case == "too few steps" else None   # 14 steady steps a run
    config = {"loader": {"batch_size": 128}} if case == "other settings" else None
    runs = naive(make_run, 600, 5000, 610, steps=steps, config=config)
    if case == "shared machine":
        busy(runs[0], 0.0), busy(runs[1], 0.0), busy(runs[2], 3.0)
    say = l01_naive.conclude(runs)
    assert paragraph(Place.CANNOT_JUDGE, 0) in say.text and say.check() == []
    assert "sets the pace" not in say.text and "overhead" not in say.text
    why = {"too few steps": "too few steps to judge",
           "shared machine": "machine load (shared while 'naive compute-only' ran, not "
                             "shared while 'naive' ran",
           "other settings": "batch_size"}[case]
    assert why in say.text


def test_the_table_marks_the_ceilings_and_a_shared_machine(make_run):
    runs = naive(make_run, 600, 5000, 610)
    table = l01_naive.table(runs)
    assert "speedup" not in table.columns   # one run: nothing to speed up against
    assert list(table["what"]) == ["the run", "input ceiling", "compute ceiling"]
    again = make_run("naive again", rate=650, config={"num_workers": 1, "batch_size": 64})
    table = l01_naive.table([*runs, again])
    assert math.isnan(table["speedup"][1]) and math.isnan(table["speedup"][2])
    assert table["speedup"][3] == pytest.approx(650 / 600, rel=0.05)
    busy(runs[0], 0.0), busy(runs[1], 0.0), busy(runs[2], 3.0)
    assert list(l01_naive.table(runs)["machine load"]) == ["not shared", "not shared", "shared"]


def test_ceilings_alone_are_refused(make_run):
    _, feed, compute = naive(make_run, 600, 5000, 610)
    with pytest.raises(ValueError, match="only ceilings"):
        l01_naive.conclude([feed, compute])


def test_a_compute_ceilings_idle_loader_workers_do_not_count_as_its_own_load(make_run):
    compute = busy(make_run("compute", config={"mock": "loader", "num_workers": 4}), 0.8)
    assert metrics.machine_load(compute)["shared"]   # 0.8 cores beyond its own process


def test_the_lessons_paragraphs_carry_no_number():
    assert all(not closing.measurements(p) for p in paragraphs(LESSON))


def test_sizes_are_small_in_smoke_mode():
    assert sizes("01", smoke=True).train_size < sizes("01", smoke=False).train_size
    assert sizes("01", smoke=True).ceiling_steps < sizes("01", smoke=False).ceiling_steps
    assert "ceiling_steps" not in sizes("01", smoke=True)   # the lesson's own, not an Experiment's
