"""Lesson 02's conclusions on fake runs: worker sweeps, a large batch, the loader's
knobs and a worker's memory, every branch, the GPU ones included."""
import multiprocessing

import pandas as pd
import pytest
from fake_runs import busy

from gpu_course.lessons import l02_workers, sizes
from gpu_course.lessons.l02_workers import KNOBS_LESSON, MORE_WORKERS
from gpu_course.show import closing
from declared import paragraphs
from gpu_course.show.findings import Outcome, Where


def sweep(make_run, rates, waits, counts=(0, 1, 2), gpus=0, engine="pytorch", batch=64,
          train_size=None):
    """One run a worker count: its samples/s and its share of data wait."""
    extra = {"train_size": train_size} if train_size else {}
    return [make_run(f"num_workers={n}", rate=rate, data_wait_share=wait, gpus=gpus,
                     engine=engine, config={"num_workers": n, "batch_size": batch, **extra})
            for n, rate, wait in zip(counts, rates, waits)]




def paragraph(compare, found, gpus):
    text = compare.means[found]
    return text if isinstance(text, str) else text[Where.GPU if gpus else Where.CPU]


# samples/s and data wait of a sweep of 0, 1, 2 workers (or counts), GPUs -> the outcome
# of the fastest count against the fewest, and the knee the table marks (None: no line)
SWEEPS = [
    ((300, 600, 640), (0.6, 0.15, 0.05), (0, 1, 2), 0, Outcome.EXPECTED, "num_workers=1"),
    ((2000, 6000, 6600), (0.75, 0.3, 0.05), (1, 4, 8), 1, Outcome.EXPECTED, "num_workers=4"),
    ((4000, 12000), (0.75, 0.05), (1, 8), 2, Outcome.EXPECTED, "num_workers=8"),
    ((600, 602, 604), (0.05, 0.04, 0.04), (0, 1, 2), 0, Outcome.NONE, "num_workers=0"),
    ((600, 500, 400), (0.05, 0.02, 0.02), (0, 1, 2), 0, Outcome.OPPOSITE, "num_workers=0"),
    ((600, 500, 400), (0.05, 0.02, 0.02), (0, 1, 2), 1, Outcome.OPPOSITE, "num_workers=0"),
]


@pytest.mark.parametrize("rates, waits, counts, gpus, found, knee", SWEEPS)
def test_a_sweep_says_the_paragraph_its_outcome_declares_and_marks_the_knee(
        make_run, rates, waits, counts, gpus, found, knee):
    runs = sweep(make_run, rates, waits, counts=counts, gpus=gpus)
    say = l02_workers.conclude(runs)
    assert paragraph(MORE_WORKERS, found, gpus) in say.text and say.check() == []
    assert say.text.count(" against ") == 1   # the fastest count against the fewest only
    assert f"The knee, the fewest workers within a tenth of the best samples/s or within its " \
           f"noise: '{knee}'." in say.text
    assert "Data wait by run: 'num_workers=" in say.text and "waited for its data" not in say.text
    assert ("How spiky the GPU's utilisation" in say.text) == bool(gpus)
    assert ("No GPU here" in say.text) == (not gpus)
    assert "The talk, on a V100: one worker 306 samples/s; 29 workers 663 samples/s." in say.text


@pytest.mark.parametrize("case", ["beyond the data wait", "shared machine", "too few steps"])
def test_a_gain_the_runs_cannot_credit_to_the_workers_places_no_knee(make_run, case):
    rates = (60, 1200, 1200) if case == "beyond the data wait" else (300, 600, 640)
    runs = sweep(make_run, rates, (0.02, 0.01, 0.01) if case == "beyond the data wait" else
                 (0.6, 0.15, 0.05), train_size=448 if case == "too few steps" else None)
    if case == "shared machine":
        busy(runs[0], 3.0), busy(runs[1], 0.0), busy(runs[2], 0.0)
    say = l02_workers.conclude(runs)
    why = {"beyond the data wait": "more than removing all of 'num_workers=0''s data wait",
           "shared machine": "no verdict: the runs also differ in machine load",
           "too few steps": "too few steps to judge"}[case]
    assert why in say.text and "The knee" not in say.text and say.check() == []
    assert paragraph(MORE_WORKERS, Outcome.EXPECTED, 0) not in say.text
    if case == "shared machine":
        assert list(l02_workers.table(runs)["machine load"]) == ["shared", "not shared",
                                                                  "not shared"]


def test_a_large_batch_is_set_beside_the_talks_slide(make_run):
    runs = sweep(make_run, (300, 700), (0.7, 0.1), counts=(1, 2), batch=640)
    say = l02_workers.conclude(runs)
    assert ("The talk, on its slide's 4 V100s at batch 640 a GPU: 29 workers "
            "50,000 samples/s; an epoch 4.0 s; one worker about 1,500 samples/s; an epoch "
            "60+ s.") in say.text
    assert "306" not in say.text and say.check() == []


def knobs(make_run, gpus=0, rates=(600, 700)):
    plain = make_run("num_workers=2, 3 epochs", rate=rates[0], gpus=gpus,
                     config={"num_workers": 2, "batch_size": 64, "pin_memory": False,
                             "persistent_workers": False, "prefetch_factor": 2})
    tuned = make_run("workers", rate=rates[1], gpus=gpus,
                     config={"num_workers": 2, "batch_size": 64, "pin_memory": bool(gpus),
                             "persistent_workers": True, "prefetch_factor": 4})
    return [plain, tuned]


@pytest.mark.parametrize("gpus, rates, found", [(0, (600, 602), Outcome.EXPECTED),
                                                (0, (600, 700), Outcome.OPPOSITE),
                                                (1, (600, 700), Outcome.EXPECTED),
                                                (1, (600, 602), Outcome.NONE)])
def test_the_loader_knobs_say_the_paragraph_their_outcome_declares(make_run, gpus, rates, found):
    runs = knobs(make_run, gpus=gpus, rates=rates)
    say = l02_workers.conclude(runs)
    assert "'workers' against 'num_workers=2, 3 epochs': ×" in say.text
    assert paragraph(KNOBS_LESSON.compares[0], found, gpus) in say.text and say.check() == []
    assert "Mean time of the epochs after the first" in say.text and "The knee" not in say.text
    assert ("pinned memory only speeds up copies to a GPU, so the notebook leaves it off"
            in say.text) == (not gpus)
    table = l02_workers.table(runs)
    assert {"persistent_workers", "prefetch_factor", "later_epochs_s"} <= set(table.columns)
    assert ("pin_memory" in table.columns) == bool(gpus)   # a column only where it differs


def test_runs_that_differ_in_more_than_the_loader_are_not_compared(make_run):
    a = make_run("a", config={"num_workers": 1, "batch_size": 64})
    b = make_run("b", config={"num_workers": 2, "batch_size": 128})
    say = l02_workers.conclude([a, b])
    assert "'b' differs from 'a' in batch_size, num_workers, which this lesson does not " \
           "compare: no verdict." in say.text
    assert say.check() == []


def test_one_run_is_refused(make_run):
    with pytest.raises(ValueError, match="compares two or more"):
        l02_workers.conclude([make_run("a")])


def test_a_workers_memory_is_said_from_the_table(make_run):
    runs = sweep(make_run, (300, 600, 640), (0.6, 0.15, 0.05))
    memory = pd.DataFrame({"num_workers": [1, 2], "processes": [1, 2],
                           "rss_mib_per_worker": [410.0, 405.0],
                           "uss_mib_per_worker": [61.5, 60.25], "uss_mib_all": [61.5, 120.5],
                           "share_of_ram_pct": [0.26, 0.51]})
    say = l02_workers.conclude(runs, memory=memory)
    assert ("What each worker adds on its own by run, in MiB (its unique set, pages shared with "
            "the notebook left out): 'num_workers=1' 61.5, "
            "'num_workers=2' 60.2.") in say.text
    assert "this machine's RAM, in percent: 'num_workers=1' 0.26, 'num_workers=2' 0.51." in say.text
    assert say.check() == []


def test_the_lessons_paragraphs_carry_no_number():
    for lesson in (l02_workers.SWEEP, l02_workers.LARGE, KNOBS_LESSON):
        assert all(not closing.measurements(p) for p in paragraphs(lesson))


class Forking:
    """A loader whose iterator starts `n` worker processes and hands over one batch."""

    def __init__(self, n):
        self.n, self.stop, self.processes = n, multiprocessing.Event(), []

    def __iter__(self):
        ctx = multiprocessing.get_context("fork")
        self.processes = [ctx.Process(target=self.stop.wait, args=(30,)) for _ in range(self.n)]
        for p in self.processes:
            p.start()
        return iter([b"batch"])


def test_worker_memory_reads_the_processes_each_loader_started():
    made = []

    def make(n):
        made.append(Forking(n))
        return made[-1]

    try:
        memory = l02_workers.worker_memory(make, [0, 1, 2])
    finally:
        for loader in made:
            loader.stop.set()
            for p in loader.processes:
                p.join(5)
    assert list(memory["num_workers"]) == [1, 2] and list(memory["processes"]) == [1, 2]
    assert (memory["uss_mib_per_worker"] > 0).all()
    assert (memory["rss_mib_per_worker"] >= memory["uss_mib_per_worker"]).all()
    assert memory["uss_mib_all"][1] == pytest.approx(2 * memory["uss_mib_per_worker"][1])
    assert (memory["share_of_ram_pct"] < 100).all()


def test_sizes_are_small_in_smoke_mode():
    smoke, full = sizes("02", smoke=True), sizes("02", smoke=False)
    assert smoke.train_size < full.train_size and smoke.large_batch < full.large_batch
    assert full.large_batch == 640 and full.knob_epochs > 1 and smoke.knob_epochs > 1
    assert "worker_counts" not in smoke   # the lesson's own, not an Experiment's
