"""Lesson 09's conclusions on fake runs and fake disk reads: every branch, the GPU ones
included, with no disk test and no training."""
import re
from pathlib import Path

import pytest

from gpu_course.data.disk import ReadSpeed
from gpu_course.lessons import l09_input, sizes

LOOSE = {"dataset": "folder", "num_workers": 1, "data_format": "loose", "model": "tiny",
         "data_on_gpu": False, "train_size": 12_800}
MB = 1_000_000


def reads(sequential_mb_s=1200.0, evicted=True):
    """Fake disk reads: the scratch file at `sequential_mb_s`, the rest in proportion."""
    def read(pattern, rate, size=32 * MB, count=32, cold=evicted):
        return ReadSpeed(pattern, size, size / MB / rate, cold, count)
    return l09_input.Reads(
        read("sequential reads of 1 MiB", sequential_mb_s),
        read("random reads of 1 MiB", sequential_mb_s * 0.7),
        read("random reads of 32 KiB", sequential_mb_s * 0.3, count=1024),
        read("sequential reads of 1 MiB", 4 * sequential_mb_s, cold=False),
        read("500 files in sequential order", 400.0, size=16_500_000, count=500),
        read("500 files in random order", 300.0, size=16_500_000, count=500))


@pytest.mark.parametrize("rate, kind", [(100.0, "slower than a disk"),
                                        (1200.0, "between a disk and NVMe"),
                                        (3500.0, "as fast as NVMe or faster")])
def test_the_disk_is_placed_by_the_lectures_rule_of_thumb(rate, kind):
    say = l09_input.conclude(reads(rate))
    assert f": {kind} by the profiling lecture's rule of thumb" in say.text
    assert "(a disk about 150 MB/s, NVMe about 3,000 MB/s)" in say.text
    assert "'random reads of 32 KiB' (about one JPEG a read)" in say.text
    assert "30% of sequential" in say.text and "33.0 KB each on average" in say.text
    assert say.check() == []


def test_reads_the_page_cache_could_not_drop_are_not_called_the_disks():
    say = l09_input.conclude(reads(evicted=False))
    assert "could not be emptied" in say.text and "rule of thumb" not in say.text
    assert say.check() == []
    table = l09_input.table(reads())
    assert list(table["cache"]) == ["cold", "cold", "cold", "warm", "cold", "cold"]
    assert table["MB/s"].iloc[0] == pytest.approx(1200.0)


def ladder(make_run, rates, engine="gluon", gpus=0, cpu_count=2, wait=0.05):
    """Rung 1 (loose, 1 worker), rung 2 (more workers), then one rung per data format."""
    names = [("loose JPEGs, 1 worker(s)", {}), ("loose JPEGs, 2 worker(s)", {"num_workers": 2}),
             ("pre-resized, 1 worker", {"data_format": "preresized"}),
             ("in memory, 1 worker", {"data_format": "memory"})]
    return [make_run(name, rate=rate, engine=engine, gpus=gpus, cpu_count=cpu_count,
                     data_wait_share=wait, config={**LOOSE, **change})
            for (name, change), rate in zip(names, rates)]


def test_a_rung_beyond_the_noise_of_every_other_is_the_fastest(make_run, capsys):
    runs = ladder(make_run, (300, 600, 900, 1800))
    say = l09_input.conclude(runs)
    assert "Fastest: 'in memory, 1 worker', beyond the noise of every other rung" in say.text
    assert "(data_format loose → memory)" in say.text and "(num_workers 1 → 2)" in say.text
    assert say.check() == []
    out = capsys.readouterr().out
    assert "Diagnosis of 'loose JPEGs, 1 worker(s)'" in out
    assert "Diagnosis of 'in memory, 1 worker'" in out


def test_no_fastest_rung_is_named_when_every_comparison_is_within_noise(make_run):
    runs = ladder(make_run, (600, 602, 598, 604))
    say = l09_input.conclude(runs)
    assert "Fastest" not in say.text
    assert "No fastest rung: '" in say.text
    assert "has the most samples/s, but not beyond the noise of any other rung" in say.text
    assert say.check() == []


def test_two_rungs_that_cannot_be_told_apart_share_the_top(make_run):
    runs = ladder(make_run, (300, 400, 1500, 1510))
    say = l09_input.conclude(runs)
    assert "No single fastest rung: 'in memory, 1 worker', 'pre-resized, 1 worker' cannot " \
           "be told apart beyond their noise" in say.text
    assert "Fastest:" not in say.text
    assert say.check() == []


def test_on_a_cpu_the_shared_cores_and_the_missing_gpu_rung_are_said(make_run):
    say = l09_input.conclude(ladder(make_run, (300, 600), engine="pytorch"))
    assert "No GPU here: the tiny net computes on the same 2 cores that decode" in say.text
    assert "The GPU-memory rung needs a GPU" in say.text
    gluon = l09_input.conclude(ladder(make_run, (300, 600)))
    assert "No GPU here" in gluon.text and "GPU-memory rung" not in gluon.text


def test_on_a_gpu_nothing_is_said_of_the_cpu(make_run, capsys):
    runs = ladder(make_run, (900, 2500, 4000, 6000), engine="pytorch", gpus=1)
    runs.append(make_run("in GPU memory", rate=12_000, engine="pytorch", gpus=1,
                         data_wait_share=0.01,
                         config={**LOOSE, "data_format": "memory", "data_on_gpu": True,
                                 "num_workers": 0}))
    say = l09_input.conclude(runs)
    assert "No GPU here" not in say.text and "GPU-memory rung" not in say.text
    assert "Fastest: 'in GPU memory'" in say.text
    assert "data_on_gpu False → True" in say.text
    assert say.check() == []
    assert "GPU utilisation:" in capsys.readouterr().out


def test_rung_ones_advice_of_more_workers_is_judged_by_rung_two(make_run, capsys):
    first = make_run("loose JPEGs, 1 worker(s)", rate=600, cpu_count=16, data_wait_share=0.6,
                     config=LOOSE)
    for mock, rate in (("trainer", 620), ("loader", 3000)):
        make_run(f"loose JPEGs, 1 worker(s): mock {mock}", rate=rate, cpu_count=16,
                 data_wait_share=1.0 if mock == "trainer" else 0.0,
                 config={**LOOSE, "mock": mock, "max_steps": 24})
    second = make_run("loose JPEGs, 13 worker(s)", rate=1500, cpu_count=16, data_wait_share=0.1,
                      config={**LOOSE, "num_workers": 13})
    say = l09_input.conclude([first, second])
    assert "INPUT-BOUND" in capsys.readouterr().out
    assert "'loose JPEGs, 13 worker(s)' against 'loose JPEGs, 1 worker(s)' (num_workers 1 → 13)" \
        in say.text
    assert "The advice ('workers') helped, beyond the runs' noise." in say.text
    assert say.check() == []


def test_a_run_on_an_idle_cpu_without_ceilings_is_not_called_compute_bound(make_run, capsys):
    """COMPUTE-BOUND was once printed for a CPU two-thirds idle, no ceiling measured."""
    runs = ladder(make_run, (300, 1800))
    runs[1].host["cpu_percent"] = 33.0
    l09_input.conclude(runs)
    out = capsys.readouterr().out
    assert "Diagnosis of 'loose JPEGs, 2 worker(s)': OVERHEAD-BOUND" in out
    assert "neither the input nor the cores hold this run" in out
    runs[1].host["cpu_percent"] = 99.0   # the same run with every core busy: the CPU holds it
    l09_input.conclude(runs)
    assert "Diagnosis of 'loose JPEGs, 2 worker(s)': COMPUTE-BOUND" in capsys.readouterr().out


def test_a_shared_machine_is_named(make_run):
    runs = ladder(make_run, (300, 900))
    runs[1].meta["load"] = {"start": {"wall": 0.0, "cpu_busy_s": 0.0, "process_cpu_s": 0.0},
                            "end": {"wall": 10.0, "cpu_busy_s": 40.0, "process_cpu_s": 10.0}}
    say = l09_input.conclude(runs)
    assert "Another program shared the machine during 'loose JPEGs, 2 worker(s)'" in say.text


def test_an_own_folder_is_read_as_given_and_the_sizes_are_small_in_smoke_mode():
    assert l09_input.photo_folder(500, "/data/256_ObjectCategories") == \
        Path("/data/256_ObjectCategories")
    smoke, full = sizes("09", smoke=True), sizes("09", smoke=False)
    assert smoke.images < full.images and smoke.disk_test_mb < full.disk_test_mb
    assert smoke["dataset"] == "folder" and "images" not in smoke   # a lesson-only size


# -- deeper: the page cache and the sample order ---------------------------------------------
PACKED = {**LOOSE, "data_format": "packed", "sample_order": "random", "page_cache": "keep"}


def cache_runs(make_run, rates=(600, 600), cached=((0.0,), (1.0,)), test_size=10_000):
    """A run whose file was dropped before every epoch, then one kept warm; `cached`: the
    shares of the file each found at its epochs' start (None: not measured)."""
    return [make_run(f"packed, page cache: {cache}", rate=rate,
                     config={**PACKED, "page_cache": cache, "test_size": test_size},
                     notes={"page_cache": {"order": "random", "cache": cache, "window": 256,
                                           "cached_at_epoch_start": list(shares),
                                           "dropped": [True] * len(shares) if cache == "drop"
                                           else []}})
            for cache, rate, shares in zip(("drop", "keep"), rates, cached)]


def test_a_checked_cold_run_slower_than_the_warm_one_is_said_to_wait_on_the_disk(make_run):
    say = l09_input.conclude(cache_runs(make_run, rates=(300, 900)))
    assert "Cold, checked: at each epoch's start of 'packed, page cache: drop'" in say.text
    assert "held 0.0% of the file on average (a cold epoch: at most 10%)" in say.text
    assert "Warm, checked: 'packed, page cache: keep'" in say.text
    assert re.search(r"Reading from the disk cost 'packed, page cache: drop' samples/s: warm "
                     r"against cold ×[23]\.\d\d, faster", say.text)
    assert say.check() == []
    table = l09_input.table(cache_runs(make_run))
    assert list(table["cached_at_start"]) == [0.0, 1.0] and "page_cache" in table.columns


def test_a_cold_run_within_noise_of_the_warm_one_says_the_disk_cost_nothing_visible(make_run):
    say = l09_input.conclude(cache_runs(make_run, rates=(600, 602)))
    assert re.search(r"Warm against cold: ×(0\.9\d|1\.0\d), within noise", say.text)
    assert "cost nothing the runs' noise can show" in say.text
    assert say.check() == []


def test_a_cold_run_faster_than_the_warm_one_is_read_as_the_machine(make_run):
    say = l09_input.conclude(cache_runs(make_run, rates=(900, 300)))
    assert "The cold run was the faster one" in say.text and say.check() == []


def test_a_drop_the_file_system_ignored_calls_nothing_cold(make_run):
    say = l09_input.conclude(cache_runs(make_run, rates=(300, 900), cached=((1.0,), (1.0,))))
    assert "The drop did not take: after dropping, 100.0% of the file was still" in say.text
    assert "(tmpfs)" in say.text and "Cold, checked" not in say.text
    assert re.search(r"Against each other, as measured \(not cold against warm\): ×[23]\.\d\d, "
                     "faster", say.text)
    assert "Reading from the disk" not in say.text and say.check() == []


def test_an_unmeasured_cache_or_a_warm_run_that_was_not_warm_is_said(make_run):
    say = l09_input.conclude(cache_runs(make_run, cached=((None,), (None,))))
    assert "could not be measured here (no mincore)" in say.text
    assert "Cold, checked" not in say.text and "Warm, checked" not in say.text
    assert "not cold against warm" in say.text and say.check() == []
    say = l09_input.conclude(cache_runs(make_run, cached=((0.0,), (0.5, 0.2))))
    assert "'packed, page cache: keep' was not warm throughout: 35.0% of the file" in say.text
    assert "not cold against warm" in say.text and say.check() == []


def order_runs(make_run, rates=(600, 600, 600), accs=(0.8, 0.8, 0.8), test_size=10_000,
               cache="keep", cached=(None, None, None)):
    """Three orders over the packed file; with cache="drop", each run's file dropped before
    every epoch, `cached` the share each then found (None: not measured)."""
    runs = [make_run(f"packed, {o} order", rate=rate,
                     config={**PACKED, "sample_order": o, "test_size": test_size,
                             "page_cache": cache},
                     notes={"page_cache": {"cached_at_epoch_start": [share]}})
            for o, rate, share in zip(("random", "quasi_random", "sequential"), rates, cached)]
    for run, acc in zip(runs, accs):
        run.epochs["val_acc"] = [*run.epochs["val_acc"][:-1], acc]
    return runs


def test_no_order_faster_and_accuracies_alike_say_so(make_run):
    say = l09_input.conclude(order_runs(make_run))
    assert re.search(r"'packed, random order' \(random order\): 6\d\d samples/s, val acc 80\.0%",
                     say.text)
    assert re.search(r"'packed, quasi_random order': samples/s ×(0\.9\d|1\.0\d), within noise",
                     say.text)
    assert "accuracy +0.0 points, within noise" in say.text
    assert "No order read faster beyond the runs' noise" in say.text
    assert "Lower accuracy" not in say.text and "chance" not in say.text
    assert say.check() == []


def test_a_faster_order_and_a_worse_accuracy_are_named(make_run):
    say = l09_input.conclude(order_runs(make_run, rates=(300, 310, 900), accs=(0.8, 0.6, 0.8)))
    assert "Faster beyond noise: 'packed, sequential order'." in say.text
    assert re.search(r"'packed, quasi_random order': samples/s ×(0\.9\d|1\.\d\d), within noise",
                     say.text)
    assert "accuracy -20.0 points, an effect" in say.text
    assert "Lower accuracy beyond noise: 'packed, quasi_random order'" in say.text
    assert "No order read faster" not in say.text and say.check() == []


def test_orders_at_chance_name_no_accuracy_winner(make_run):
    say = l09_input.conclude(order_runs(make_run, accs=(0.1, 0.125, 0.05), test_size=40))
    assert "both within noise of chance" in say.text
    assert "Every order's accuracy is within noise of chance" in say.text
    assert "Lower accuracy" not in say.text and say.check() == []


def test_orders_read_cold_are_checked_cold_or_said_not_to_be(make_run):
    say = l09_input.conclude(order_runs(make_run, cache="drop", cached=(0.0, 0.02, 0.0)))
    assert "Every order read its file from the disk" in say.text
    assert "held at most 10% of it after (checked)" in say.text and say.check() == []
    say = l09_input.conclude(order_runs(make_run, cache="drop", cached=(0.0, 1.0, None)))
    assert "Not checked cold: 'packed, quasi_random order', 'packed, sequential order'" in say.text
    assert "Every order read" not in say.text and say.check() == []
    say = l09_input.conclude(order_runs(make_run))   # kept warm: nothing said of the disk
    assert "checked cold" not in say.text.lower() and "Every order read" not in say.text
