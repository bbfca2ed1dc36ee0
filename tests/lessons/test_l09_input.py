"""Lesson 09's conclusions on fake runs and fake disk reads: each case the paragraph the
lesson declares for it, the GPU ones included, with no disk test and no training."""
import re
from pathlib import Path

import pytest

from gpu_course.data.disk import ReadSpeed
from gpu_course.lessons import l09_input, sizes
from gpu_course.show import closing
from declared import paragraphs
from gpu_course.show.findings import Outcome

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


def test_the_disk_reads_are_cited_beside_the_lectures_rule_of_thumb():
    say = l09_input.conclude(reads(1200.0))
    assert "MB/s of each read: 'sequential reads of 1 MiB (cold)' 1,200" in say.text
    assert "'random reads of 32 KiB (cold)' 360" in say.text and "33.0" in say.text
    assert "The profiling lecture: a disk reads about 150 MB/s; NVMe about 3,000 MB/s." in say.text
    assert l09_input.DISK.after in say.text and say.check() == []


def test_reads_the_page_cache_could_not_drop_are_not_called_the_disks():
    say = l09_input.conclude(reads(evicted=False))
    assert "could not be emptied" in say.text and l09_input.DISK.after not in say.text
    assert say.check() == []
    table = l09_input.table(reads())
    assert list(table["read"])[3] == "sequential reads of 1 MiB (warm)"
    assert table["MB/s"].iloc[0] == pytest.approx(1200.0)


def ladder(make_run, rates, engine="gluon", gpus=0, cpu_count=2, wait=0.05):
    """Rung 1 (loose, 1 worker), rung 2 (more workers), then one rung per data format."""
    names = [("loose JPEGs, 1 worker(s)", {}), ("loose JPEGs, 2 worker(s)", {"num_workers": 2}),
             ("pre-resized, 1 worker", {"data_format": "preresized"}),
             ("in memory, 1 worker", {"data_format": "memory"})]
    return [make_run(name, rate=rate, engine=engine, gpus=gpus, cpu_count=cpu_count,
                     data_wait_share=wait, config={**LOOSE, **change})
            for (name, change), rate in zip(names, rates)]


RUNG = l09_input.RUNGS.compares[0].means


# rates of (1 worker, 2 workers, pre-resized, in memory), GPUs -> what the lesson says
LADDERS = [
    ((300, 600, 900, 1800), 0, "Fastest: 'in memory, 1 worker', beyond the noise of every other "
                               "run", RUNG[Outcome.EXPECTED]),
    ((600, 602, 598, 604), 0, "No single fastest run: '", RUNG[Outcome.NONE]),
    ((300, 400, 1500, 1510), 0, "No single fastest run: 'in memory, 1 worker' has the most "
                                "samples/s, but not beyond the noise of 'pre-resized, 1 worker' "
                                "(against the next", RUNG[Outcome.EXPECTED]),
    ((900, 300, 2500, 2600), 1, "No single fastest run: 'in memory, 1 worker' has the most "
                                "samples/s, but not beyond the noise of 'pre-resized, 1 worker' "
                                "(", RUNG[Outcome.OPPOSITE]),
]


@pytest.mark.parametrize("rates, gpus, fastest, paragraph", LADDERS)
def test_each_ladder_names_its_fastest_only_beyond_noise_and_says_the_declared_paragraph(
        make_run, capsys, rates, gpus, fastest, paragraph):
    runs = ladder(make_run, rates, engine="pytorch" if gpus else "gluon", gpus=gpus)
    say = l09_input.conclude(runs)
    assert fastest in say.text and paragraph in say.text
    assert "(data_format loose → memory)" in say.text and "(num_workers 1 → 2)" in say.text
    assert ("No GPU here" in say.text) == (gpus == 0) and say.check() == []
    assert "Diagnosis of 'loose JPEGs, 1 worker(s)'" in capsys.readouterr().out


def test_on_a_cpu_the_shared_cores_and_the_missing_gpu_rung_are_said(make_run):
    shared = l09_input.PAGE.means("no_gpu", str)["gluon"]   # the cores the network shares
    say = l09_input.conclude(ladder(make_run, (300, 600), engine="pytorch"))
    assert shared in say.text and "The GPU-memory rung needs a GPU" in say.text
    gluon = l09_input.conclude(ladder(make_run, (300, 600)))
    assert shared in gluon.text and "GPU-memory rung" not in gluon.text


def test_on_a_gpu_the_gpu_memory_rung_is_judged_and_diagnosed(make_run, capsys):
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
    assert RUNG[Outcome.EXPECTED] in say.text and "waited for its data" not in say.text
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


CACHE = l09_input.PAGE_CACHE.compares[0].means
NOTES = {n.values[0]: n.text for n in l09_input.CACHE_NOTES}


# rates of (dropped, kept), the shares each found cached -> what the lesson says, and not
CACHES = [
    ((300, 900), ((0.0,), (1.0,)), [NOTES["cold"], NOTES["warm"], CACHE[Outcome.EXPECTED]], []),
    ((600, 602), ((0.0,), (1.0,)), [CACHE[Outcome.NONE]], []),
    ((900, 300), ((0.0,), (1.0,)), [CACHE[Outcome.OPPOSITE]], []),
    ((300, 900), ((1.0,), (1.0,)), [NOTES["not cold"]], [NOTES["cold"], CACHE[Outcome.EXPECTED]]),
    ((600, 600), ((None,), (None,)), [NOTES["unmeasured"]], [NOTES["cold"], NOTES["warm"]]),
    ((600, 600), ((0.0,), (0.5, 0.2)), [NOTES["not warm"]], [CACHE[Outcome.NONE]]),
]


@pytest.mark.parametrize("rates, cached, said, unsaid", CACHES)
def test_each_page_cache_case_says_what_the_lesson_declares(make_run, rates, cached, said, unsaid):
    say = l09_input.conclude(cache_runs(make_run, rates=rates, cached=cached))
    assert "'packed, page cache: keep' against 'packed, page cache: drop': ×" in say.text
    assert all(p in say.text for p in said) and not any(p in say.text for p in unsaid)
    assert say.check() == []


def test_the_cache_table_carries_the_measured_shares(make_run):
    say = l09_input.conclude(cache_runs(make_run, rates=(300, 900)))
    assert "(mean): 'packed, page cache: drop' 0.0%, 'packed, page cache: keep' " \
        "100.0%." in say.text
    table = l09_input.table(cache_runs(make_run))
    assert list(table["cached_at_start"]) == [0.0, 1.0] and "page_cache" in table.columns


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


ORDER = l09_input.BY_ORDER.compares[0]


def test_no_order_faster_and_accuracies_alike_say_so(make_run):
    say = l09_input.conclude(order_runs(make_run))
    assert re.search(r"'packed, quasi_random order' against 'packed, random order': "
                     r"×(0\.9\d|1\.0\d), within noise", say.text)
    assert "'packed, sequential order' against 'packed, random order' in accuracy: +0.0 " \
        "points, within noise" in say.text
    assert ORDER.means[Outcome.NONE] in say.text
    assert ORDER.worse not in say.text and "chance" not in say.text
    assert say.check() == []


def test_a_faster_order_and_a_worse_accuracy_are_named(make_run):
    say = l09_input.conclude(order_runs(make_run, rates=(300, 310, 900), accs=(0.8, 0.6, 0.8)))
    assert ORDER.means[Outcome.EXPECTED] in say.text and ORDER.worse in say.text
    assert "in accuracy: -20.0 points, an effect" in say.text and say.check() == []


def test_orders_at_chance_name_no_accuracy_winner(make_run):
    say = l09_input.conclude(order_runs(make_run, accs=(0.1, 0.125, 0.05), test_size=40))
    assert "Every run's accuracy is within noise of chance" in say.text   # once, not pair by pair
    assert "both within noise of chance" not in say.text
    assert ORDER.worse not in say.text and say.check() == []


def test_orders_read_cold_are_checked_cold_or_said_not_to_be(make_run):
    say = l09_input.conclude(order_runs(make_run, cache="drop", cached=(0.0, 0.02, 0.0)))
    assert NOTES["cold"] in say.text and NOTES["not cold"] not in say.text
    say = l09_input.conclude(order_runs(make_run, cache="drop", cached=(0.0, 1.0, None)))
    assert NOTES["not cold"] in say.text and NOTES["unmeasured"] in say.text
    assert ORDER.means[Outcome.NONE] not in say.text and say.check() == []
    say = l09_input.conclude(order_runs(make_run))   # kept warm: nothing said of the disk
    assert not any(text in say.text for text in NOTES.values())


def test_the_lessons_paragraphs_carry_no_number():
    for lesson in (l09_input.RUNGS, l09_input.PAGE_CACHE, l09_input.BY_ORDER, l09_input.DISK,
                   l09_input.UNEVICTED):
        assert all(not closing.measurements(p) for p in paragraphs(lesson))
