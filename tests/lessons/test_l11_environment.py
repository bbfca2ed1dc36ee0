"""Lesson 11's conclusions on fake records: benchmarks, a run, OpenMP settings, GPU facts
(clocks held down, an idle GPU, a narrow PCIe link, two GPUs), copies, /dev/shm, the disk."""
import pytest

from gpu_course.lessons import l11_environment as l11
from gpu_course.lessons import sizes

CPU = {"model": "Intel(R) Xeon(R) CPU @ 2.20GHz", "logical": 4, "physical": 4, "usable": 4,
       "load_average": 0.2, "usable_ids": [0, 1, 2, 3]}


def bench(threads, onednn=True, rate=100.0, spread=0.02, n=5, cpus=None, load=0.2, batch=32):
    passes = [rate * (1 - spread + 2 * spread * i / max(1, n - 1)) for i in range(n)]
    return {"images_per_s": rate, "ms_per_batch": 1000 * batch / rate,
            "step_images_per_s": passes, "threads": threads, "onednn": onednn, "build": {},
            "batch": batch, "cpus": cpus, "load_average": load}


def said(records, **context):
    say = l11.conclude(records, **context)
    assert say.check() == []
    return say.text


# -- oneDNN -------------------------------------------------------------------------------------
def test_onednn_faster_beyond_the_passes_is_said_beside_the_talks_table():
    text = said([bench(4, True, 300), bench(4, False, 100)], cpu=CPU)
    assert "This CPU (/proc/cpuinfo): Intel(R) Xeon(R) CPU @ 2.20GHz, 4 logical cores" in text
    assert "oneDNN on against off (4 threads, batch 32): ×3.00, faster" in text
    assert "pay on this CPU too" in text and "the talk's table" in text and "×15.9" in text


def test_onednn_slower_and_within_noise():
    assert "×0.50, a slow-down" in said([bench(4, True, 50), bench(4, False, 100)])
    text = said([bench(4, True, 101, spread=0.1), bench(4, False, 100, spread=0.1)])
    assert "within noise" in text and "no difference beyond the passes' spread" in text


def test_too_few_passes_give_no_verdict_and_say_how_to_get_enough():
    text = said([bench(4, True, 300, n=3), bench(4, False, 100, n=3)])
    assert "×3.00 from 3 timed passes a setting: too few to judge" in text
    assert "faster" not in text and "steps=10" in text


# -- threads and pinning ----------------------------------------------------------------------
def test_fewer_threads_faster_on_a_busy_machine_cites_the_load():
    sweep = [bench(1, rate=200, load=4.5), bench(2, rate=150), bench(4, rate=60, load=1.5)]
    text = said(sweep, cpu=CPU)
    assert "This CPU" not in text   # said once, with the oneDNN pair
    assert "Fastest: 1 thread, oneDNN on; against 4 threads, oneDNN on: ×3.33, faster" in text
    assert "other programs held cores (a load average of 4.50 before" in text
    assert "The machine was busy" in text


def test_fewer_threads_faster_on_a_quiet_machine_with_hyperthreads():
    text = said([bench(1, rate=200), bench(2, rate=100)], cpu={**CPU, "usable": 2, "logical": 2,
                                                               "physical": 1})
    assert "hyperthreads of 1 physical" in text and "The machine was busy" not in text


def test_all_cores_fastest_and_no_clear_winner():
    assert "OpenMP's default, is fastest" in said([bench(1, rate=50), bench(4, rate=200)], cpu=CPU)
    text = said([bench(1, rate=100, spread=0.2), bench(4, rate=102, spread=0.2)], cpu=CPU)
    assert "no thread count is clearly fastest" in text


def test_pinned_threads_slower_faster_and_alone():
    slower = said([bench(4, rate=200), bench(4, rate=60, cpus=[0])], cpu=CPU)
    assert "4 threads, oneDNN on, pinned to core 0 against the same unpinned: ×0.30, a slow-down" \
        in slower and "take turns on 1 core" in slower
    faster = said([bench(4, rate=60, load=3.0), bench(4, rate=200, cpus=[0], load=3.0)], cpu=CPU)
    assert "taking turns on one core beat waiting" in faster and "3.00 before it" in faster
    alone = said([bench(1, rate=100), bench(1, rate=120, cpus=[0])])
    assert "each thread has a core of its own" in alone


# -- the run --------------------------------------------------------------------------------------
def test_the_runs_workers_follow_the_rule_per_gpu_process(make_run):
    run = make_run("2 workers", gpus=2, machine_gpus=2, config={"num_workers": 2}, cpu_count=8)
    text = said([run], cpu={**CPU, "usable": 8})
    assert "2 loader workers for each of 2 training processes (one a GPU) on 8 usable cores" in text
    assert "gives 5 on these 8 cores" in text
    cpu_run = make_run("2 workers", config={"num_workers": 2}, cpu_count=2)
    assert "for its one training process (no GPU) on 2 usable cores" in said([cpu_run])


# -- OpenMP ---------------------------------------------------------------------------------------
def rows(**values):
    from gpu_course.env.report import OPENMP_VARIABLES
    return [{"variable": v, "value": values.get(v), "read_by": r,
             "honoured_here": r == "all" or "libgomp" in r, "what": w}
            for v, r, w in OPENMP_VARIABLES]


def test_a_kmp_variable_ignored_by_gnus_runtime_is_named_with_its_equivalent():
    text = said(rows(KMP_BLOCKTIME="0"), runtimes=["libgomp.so.1"])
    assert "libgomp.so.1 (GNU's OpenMP)" in text
    assert "KMP_BLOCKTIME=0 is set, but no runtime loaded here reads it" in text
    assert "OMP_WAIT_POLICY" in text and "None of them is set" not in text
    assert l11.table(rows())["read here"].tolist()[:2] == ["yes", "no"]


def test_no_variable_set_and_no_runtime_found():
    assert "None of them is set" in said(rows(), runtimes=["libgomp.so.1"])
    assert "No OpenMP runtime found" in said(rows(), runtimes=[])


# -- the GPU side ---------------------------------------------------------------------------------
def gpu(index=0, sm=1980, reasons="", power=300.0, limit=700.0, default=700.0, gen=5, width=16,
        **more):
    return {"index": index, "name": "NVIDIA H100 80GB HBM3", "sm_clock_mhz": sm,
            "sm_clock_max_mhz": 1980, "mem_clock_mhz": 2619, "mem_clock_max_mhz": 2619,
            "clock_event_reasons": reasons, "temp_c": 45, "power_w": power,
            "power_limit_w": limit, "power_max_limit_w": default, "pcie_gen": gen,
            "pcie_gen_max": 5, "pcie_width": width, "pcie_width_max": 16,
            "pcie_gbps": 3.938 * width if gen == 5 else 1.969 * width, "error": None, **more}


def facts(*gpus):
    return [{"available": True, "reason": None, "gpus": list(gpus), "driver": "550", "cuda": "12.4"}]


def test_no_gpu_says_so():
    none = [{"available": False, "gpus": [], "reason": "NVML unavailable"}]
    assert said(none).startswith("No GPU here") and l11.table(none)["why"][0] == "NVML unavailable"


def test_a_gpu_at_full_clock_on_its_best_link():
    text = said(facts(gpu()))
    assert "SM clock 1,980 of 1,980 MHz (100%), and nothing reported holding it down" in text
    assert "runs at its best, gen 5 with 16 lanes: 63.0 GB/s" in text and "the profiling lecture" in text


def test_an_idle_gpu_on_a_lowered_link_is_told_to_be_read_under_load():
    text = said(facts(gpu(sm=345, reasons="gpu_idle", gen=1)))
    assert "is idle: its SM clock 345 of 1,980 MHz (17%)" in text
    assert "an idle GPU lowers its link" in text


def test_power_and_heat_and_a_lowered_power_limit_on_two_gpus():
    text = said(facts(gpu(0, sm=1400, reasons="sw_power_cap", power=450.0, limit=450.0),
                      gpu(1, sm=1500, reasons="hw_thermal|sw_thermal", width=8)))
    assert "held down by its power limit (drawing 450 of 450 W)" in text
    assert "its power limit is set below the default (450 of 700 W)" in text
    assert "GPU 1 (NVIDIA H100 80GB HBM3): SM clock 1,500 of 1,980 MHz (76%), slowed down by heat" in text
    assert "gen 5 with 8 lanes" in text and "the slot" in text


# -- copies, /dev/shm, the disk ---------------------------------------------------------------
def copy(pageable, pinned, n=5):
    return {"available": True, "mib": 256, "pageable_gb_s": pageable, "pinned_gb_s": pinned,
            "pageable_all": [pageable * (0.99 + 0.005 * i) for i in range(n)],
            "pinned_all": [pinned * (0.99 + 0.005 * i) for i in range(n)]}


def test_pinned_copies_faster_within_noise_and_too_few():
    text = said([copy(12.0, 24.0)])
    assert "Host → GPU copies of 256 MiB: pageable 12.0 GB/s, pinned 24.0 GB/s: pinned ×2.00, faster" \
        in text and "pin_memory=True" in text and "5 GB/s" in text
    assert "nothing measurable" in said([copy(12.0, 12.01)])
    assert "too few to judge" in said([copy(12.0, 24.0, n=2)])
    assert "needs CUDA" in said([{"available": False}])


def test_shm_enough_and_too_small():
    shm = {"path": "/dev/shm", "total_mib": 64.0, "free_mib": 2.0, "batch_mib": 0.75,
           "batches_fit": 2}
    text = said([shm], workers=4)
    assert "too small" in text and "room for 2 collated batches" in text and "36.8 MiB" in text
    roomy = {**shm, "total_mib": 24152.0, "free_mib": 24150.0, "batches_fit": 32199}
    assert "room for 32,199 collated" in said([roomy], workers=2) and "enough here" in said([roomy], workers=2)
    assert "not present" in said([{"path": "/dev/shm", "total_mib": None}])


def test_the_disk_beside_the_lecture_with_gpu_links_and_copies():
    disk = {"folder": "data", "size_mb": 16, "sequential_mb_s": 1349.0, "random_32k_mb_s": 416.0,
            "cold": True}
    records = [disk, facts(gpu())[0], copy(12.0, 24.0)]
    frame = l11.table(records)
    assert "GPU 0 PCIe gen 5, 16 lanes (the link)" in frame["link"].tolist()
    assert "host → GPU copy, pinned" in frame["link"].tolist()
    text = said(records)
    assert "reads 1.35 GB/s sequentially and 0.416 GB/s at random" in text and "cold" in text
    assert "×3.24 as fast as random ones" in text and "packed file" in text
    flat = said([{**disk, "random_32k_mb_s": 1200.0, "cold": False}])
    assert "upper bounds" in flat and "packing the files pays less" in flat


def test_records_of_no_known_kind_are_refused_and_sizes_shrink_in_smoke():
    with pytest.raises(ValueError, match="not a record of lesson 11"):
        l11.table([{"what": 1}])
    with pytest.raises(ValueError, match="empty"):
        l11.table([])
    with pytest.raises(ValueError, match="cpus: not a context of lesson 11's 'bench' records; "
                                         "allowed: cpu"):
        l11.conclude([bench(1)], cpus=CPU)
    assert sizes("11", smoke=True).bench["steps"] >= l11.MIN_PASSES
    assert sizes("11", smoke=True).disk_mb < sizes("11", smoke=False).disk_mb
