"""Lesson 02's conclusions on fake runs: worker sweeps, a large batch, the loader's
knobs and a worker's memory, every branch, the GPU ones included."""
import multiprocessing

import pandas as pd
import pytest
from fake_runs import busy

from gpu_course.lessons import l02_workers, sizes


def sweep(make_run, rates, waits, counts=(0, 1, 2), gpus=0, engine="pytorch", batch=64,
          train_size=None):
    """One run a worker count: its samples/s and its share of data wait."""
    extra = {"train_size": train_size} if train_size else {}
    return [make_run(f"num_workers={n}", rate=rate, data_wait_share=wait, gpus=gpus,
                     engine=engine, config={"num_workers": n, "batch_size": batch, **extra})
            for n, rate, wait in zip(counts, rates, waits)]




def test_workers_that_feed_a_starved_run_are_credited_with_a_knee(make_run):
    runs = sweep(make_run, (300, 600, 640), (0.6, 0.15, 0.05))
    say = l02_workers.conclude(runs)
    assert "0 worker(s): " in say.text and "samples/s with 2 worker(s): ×2." in say.text
    assert ", faster (" in say.text
    assert "The knee: 1 worker(s) already reach 9" in say.text   # 600 of 640: 93-94 %
    assert "Data wait and spikiness (p95/median step time) by workers: 0 worker(s) 60" in say.text
    assert "No GPU here: the workers and the model share 16 CPU cores" in say.text
    assert "the talk's ×2.2 came from (306 → 663 samples/s with 29 workers)" in say.text
    assert say.check() == []


def test_a_gain_beyond_what_the_data_wait_allows_is_not_credited_to_the_workers(make_run):
    runs = sweep(make_run, (60, 1200, 1200), (0.02, 0.01, 0.01))
    say = l02_workers.conclude(runs)
    assert ", faster (" in say.text
    assert "more than removing all the data wait of 'num_workers=0'" in say.text
    assert "The knee" not in say.text
    assert say.check() == []


def test_runs_on_a_machine_shared_for_one_only_are_not_compared(make_run):
    runs = sweep(make_run, (60, 1000, 1200), (0.02, 0.01, 0.01))
    busy(runs[0], 3.0), busy(runs[1], 0.0), busy(runs[2], 0.0)
    say = l02_workers.conclude(runs)
    assert ("but the runs also differ in machine load (shared with other programs while "
            "'num_workers=0' ran, not shared while 'num_workers=2' ran, by the runs' "
            "records)") in say.text
    assert "not credited to the loader" in say.text
    assert "faster" not in say.text and "The knee" not in say.text
    assert list(l02_workers.table(runs)["machine load"]) == ["shared", "not shared", "not shared"]
    assert say.check() == []


def test_too_few_steady_steps_give_no_verdict(make_run):
    runs = sweep(make_run, (300, 600, 640), (0.6, 0.15, 0.05), train_size=448)  # 14 steps
    say = l02_workers.conclude(runs)
    assert "from too few steady steps to judge ('num_workers=0' 14" in say.text
    assert "faster" not in say.text and "within noise" not in say.text
    assert say.check() == []


def test_a_best_within_noise_places_no_knee(make_run):
    runs = sweep(make_run, (600, 602, 604), (0.05, 0.04, 0.04))
    say = l02_workers.conclude(runs)
    assert "within noise" in say.text and "no knee can be placed" in say.text
    assert say.check() == []


def test_more_workers_slower_beyond_noise_on_a_cpu(make_run):
    runs = sweep(make_run, (600, 500, 400), (0.05, 0.02, 0.02))
    say = l02_workers.conclude(runs)
    assert "0 worker(s): " in say.text and "the fastest; 2 worker(s): " in say.text
    assert "a slow-down" in say.text
    assert "More workers were slower here, beyond noise: they took cores from the model" in say.text
    assert say.check() == []


def test_a_gpu_sweep_reads_the_utilisation_spread_and_says_nothing_of_a_cpu(make_run):
    runs = sweep(make_run, (2000, 6000, 6600), (0.75, 0.3, 0.05), counts=(1, 4, 8), gpus=1)
    say = l02_workers.conclude(runs)
    assert "Data wait and spikiness (GPU-Util std) by workers: 1 worker(s)" in say.text
    assert "The knee: 4 worker(s) already reach 9" in say.text
    assert "No GPU" not in say.text and "CPU" not in say.text
    assert say.check() == []


def test_a_two_gpu_sweep_is_judged_like_one(make_run):
    runs = sweep(make_run, (4000, 12000), (0.75, 0.05), counts=(1, 8), gpus=2)
    say = l02_workers.conclude(runs)
    assert ", faster (" in say.text and "GPU-Util std" in say.text
    assert "No knee among the counts tried: only the most workers, 8, came within 10%" in say.text
    assert say.check() == []


def test_a_large_batch_is_set_beside_the_talks_slide(make_run):
    runs = sweep(make_run, (300, 700), (0.7, 0.1), counts=(1, 2), batch=640)
    say = l02_workers.conclude(runs)
    assert ("The talk's slide (4 V100s, batch 640 a GPU): 29 workers 50,000 samples/s, 4.0 s "
            "an epoch; one worker about 1,500 samples/s, 60+ s an epoch") in say.text
    assert "No GPU here" not in say.text
    assert say.check() == []


def knobs(make_run, gpus=0, rates=(600, 700)):
    plain = make_run("num_workers=2, 3 epochs", rate=rates[0], gpus=gpus,
                     config={"num_workers": 2, "batch_size": 64, "pin_memory": False,
                             "persistent_workers": False, "prefetch_factor": 2})
    tuned = make_run("workers", rate=rates[1], gpus=gpus,
                     config={"num_workers": 2, "batch_size": 64, "pin_memory": bool(gpus),
                             "persistent_workers": True, "prefetch_factor": 4})
    return [plain, tuned]


def test_the_loader_knobs_on_a_cpu(make_run):
    runs = knobs(make_run)
    say = l02_workers.conclude(runs)
    assert ("persistent_workers=True + prefetch_factor=4 at 2 workers ('workers') against the "
            "plain loader ('num_workers=2, 3 epochs'): ") in say.text
    assert ", faster (" in say.text and "The epochs after the first" in say.text
    assert "No GPU here: pinned memory only speeds up copies to a GPU" in say.text
    assert "pin_memory=False" in say.text
    table = l02_workers.table(runs)
    assert {"persistent_workers", "prefetch_factor", "later_epochs_s"} <= set(table.columns)
    assert "pin_memory" not in table.columns   # alike in both: not a column
    assert say.check() == []


def test_the_loader_knobs_on_a_gpu_pin_memory(make_run):
    runs = knobs(make_run, gpus=1, rates=(600, 602))
    say = l02_workers.conclude(runs)
    assert "pin_memory=True + persistent_workers=True + prefetch_factor=4" in say.text
    assert "within noise" in say.text and "No GPU" not in say.text
    assert say.check() == []


def test_runs_that_differ_in_more_than_the_loader_are_not_compared(make_run):
    a = make_run("a", config={"num_workers": 1, "batch_size": 64})
    b = make_run("b", config={"num_workers": 2, "batch_size": 128})
    say = l02_workers.conclude([a, b])
    assert "These runs differ in more than the loader: batch_size, num_workers." in say.text
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
    assert ("Each worker adds about 60.2 MiB of its own memory (RSS 405 MiB with the pages it "
            "shares with the notebook): the 2 workers cost 120 MiB, 0.51% of this machine's "
            "RAM.") in say.text
    assert say.check() == []


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
