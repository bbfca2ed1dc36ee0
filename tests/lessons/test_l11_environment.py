"""Lesson 11's conclusions on fake records: each scenario gets the paragraph its section's
declaration gives it (benchmarks, a run, OpenMP settings, GPU facts, copies, /dev/shm, the
disk), and the few lines with numbers: verdicts, the talk's and the lecture's figures."""
import pytest

import fake_runs
from gpu_course.analyse import environment as env
from gpu_course.lessons import l11_environment as l11
from gpu_course.lessons import sizes
from gpu_course.show import closing
from declared import paragraphs
from gpu_course.show.findings import Outcome, Sign

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


def rows(**values):
    from gpu_course.env.report import OPENMP_VARIABLES
    return [{"variable": v, "value": values.get(v), "read_by": r,
             "honoured_here": r == "all" or "libgomp" in r, "what": w}
            for v, r, w in OPENMP_VARIABLES]


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


def copy(pageable, pinned, n=5):
    return {"available": True, "mib": 256, "pageable_gb_s": pageable, "pinned_gb_s": pinned,
            "pageable_all": [pageable * (0.99 + 0.005 * i) for i in range(n)],
            "pinned_all": [pinned * (0.99 + 0.005 * i) for i in range(n)]}


SHM = {"path": "/dev/shm", "total_mib": 64.0, "free_mib": 2.0, "batch_mib": 0.75, "batches_fit": 2}
ROOMY = {**SHM, "total_mib": 24152.0, "free_mib": 24150.0, "batches_fit": 32199}
DISK = {"folder": "data", "size_mb": 16, "sequential_mb_s": 1349.0, "random_32k_mb_s": 416.0,
        "cold": True}
ONEDNN, FEWER, MORE, CROWDED, CORE_EACH = l11.BENCH.compares
OPENMP = l11.OPENMP_TEXT
GPU_FLAGS = {f.column: f.means for f in l11.GPU.flags}
LINK_FLAGS = {f.column: f.means for f in l11.LINKS.flags}
# a section's records -> a paragraph its declaration gives them
SCENARIOS = [
    ("onednn faster", [bench(4, True, 300), bench(4, False, 100)], {"cpu": CPU},
     ONEDNN.means[Outcome.EXPECTED]),
    ("onednn slower", [bench(4, True, 50), bench(4, False, 100)], {}, ONEDNN.means[Outcome.OPPOSITE]),
    ("onednn within noise", [bench(4, True, 101, spread=0.1), bench(4, False, 100, spread=0.1)],
     {}, ONEDNN.means[Outcome.NONE]),
    ("all cores fastest", [bench(1, rate=50), bench(4, rate=200)], {"cpu": CPU},
     FEWER.means[Outcome.EXPECTED]),
    ("no thread count clearly fastest", [bench(1, rate=100, spread=0.2),
                                         bench(4, rate=102, spread=0.2)], {"cpu": CPU},
     FEWER.means[Outcome.NONE]),
    ("fewer threads faster", [bench(1, rate=200), bench(2, rate=100)],
     {"cpu": {**CPU, "usable": 2, "logical": 2, "physical": 1}}, FEWER.means[Outcome.OPPOSITE]),
    ("more threads than cores slower", [bench(4, rate=200), bench(8, rate=100)], {"cpu": CPU},
     MORE.means[Outcome.EXPECTED]),
    ("crowded pinning slower", [bench(4, rate=200), bench(4, rate=60, cpus=[0])], {"cpu": CPU},
     CROWDED.means[Outcome.EXPECTED]),
    ("crowded pinning faster", [bench(4, rate=60, load=3.0), bench(4, rate=200, cpus=[0], load=3.0)],
     {"cpu": CPU}, CROWDED.means[Outcome.OPPOSITE]),
    ("a core each", [bench(1, rate=100), bench(1, rate=101, cpus=[0], spread=0.1)], {},
     CORE_EACH.means[Outcome.EXPECTED]),
    ("busy machine", [bench(1, rate=200, load=4.5), bench(4, rate=60, load=1.5)], {"cpu": CPU},
     l11.BENCH.flags[0].means[env.BUSY]),
    ("kmp ignored by gnu", rows(KMP_BLOCKTIME="0"), {"runtimes": ["libgomp.so.1"]},
     l11.OPENMP.flags[0].means[env.IGNORED]),
    ("gnu alone", rows(KMP_BLOCKTIME="0"), {"runtimes": ["libgomp.so.1"]}, OPENMP[env.OpenMP.GNU_ONLY]),
    ("gnu's defaults", rows(), {"runtimes": ["libgomp.so.1"]}, OPENMP[env.OpenMP.GNU_DEFAULTS]),
    ("intel's defaults", rows(), {"runtimes": ["libiomp5.so"]}, OPENMP[env.OpenMP.DEFAULTS]),
    ("no runtime", rows(), {"runtimes": []}, OPENMP[env.OpenMP.NO_RUNTIME]),
    ("no gpu", [{"available": False, "gpus": [], "reason": "NVML unavailable"}], {}, l11.GPU.empty),
    ("full clock", facts(gpu()), {}, GPU_FLAGS["clock"][env.Clock.FREE]),
    ("best link", facts(gpu()), {}, GPU_FLAGS["link"][env.Link.BEST]),
    ("idle gpu", facts(gpu(sm=345, reasons="gpu_idle", gen=1)), {}, GPU_FLAGS["clock"][env.Clock.IDLE]),
    ("idle link", facts(gpu(sm=345, reasons="gpu_idle", gen=1)), {},
     GPU_FLAGS["link"][env.Link.LOWERED_IDLE]),
    ("power capped", facts(gpu(sm=1400, reasons="sw_power_cap", limit=450.0)), {},
     GPU_FLAGS["clock"][env.Clock.POWER]),
    ("limit below default", facts(gpu(limit=450.0)), {}, GPU_FLAGS["power"][env.BELOW_DEFAULT]),
    ("hot", facts(gpu(sm=1500, reasons="hw_thermal|sw_thermal")), {}, GPU_FLAGS["clock"][env.Clock.HEAT]),
    ("narrow link", facts(gpu(width=8)), {}, GPU_FLAGS["link"][env.Link.LOWERED]),
    ("unread", facts(gpu(error="NVML: not supported")), {}, GPU_FLAGS["read"]["in part"]),
    ("pinned faster", [copy(12.0, 24.0)], {}, l11.COPY_LESSON.compares[0].means[Outcome.EXPECTED]),
    ("pinned the same", [copy(12.0, 12.01)], {}, l11.COPY_LESSON.compares[0].means[Outcome.NONE]),
    ("too few copies", [copy(12.0, 24.0, n=2)], {}, l11.COPY_LESSON.compares[0].means[Outcome.CANNOT_JUDGE]),
    ("no copy", [{"available": False}], {}, l11.COPY_LESSON.empty),
    ("shm too small", [SHM], {"workers": 4}, l11.SHM.by_sign["room beyond them"][Sign.OTHER]),
    ("shm enough", [ROOMY], {"workers": 2}, l11.SHM.by_sign["room beyond them"][Sign.POSITIVE]),
    ("no shm", [{"path": "/dev/shm", "total_mib": None}], {}, l11.SHM.empty),
    ("random costly", [DISK], {}, LINK_FLAGS["random reads"][env.COSTLY]),
    ("random cheap, warm", [{**DISK, "random_32k_mb_s": 1200.0, "cold": False}], {},
     LINK_FLAGS["random reads"][env.CHEAP]),
    ("warm", [{**DISK, "cold": False}], {}, LINK_FLAGS["page cache"][env.WARM]),
]


@pytest.mark.parametrize("name, records, context, paragraph", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_each_scenario_gets_its_paragraph(name, records, context, paragraph):
    assert paragraph and paragraph in said(records, **context)


@pytest.mark.parametrize("lesson", l11.LESSONS.values(), ids=[s.value for s in l11.LESSONS])
def test_paragraphs_carry_no_number(lesson):
    assert all(closing.measurements(t) == [] for t in paragraphs(lesson))


def test_the_verdicts_cells_and_the_talks_figures():
    text = said([bench(4, True, 300), bench(4, False, 100)], cpu=CPU)
    assert "This CPU (/proc/cpuinfo): Intel(R) Xeon(R) CPU @ 2.20GHz, 4 logical cores" in text
    assert ("'4 threads, oneDNN on' against '4 threads, oneDNN off': ms per batch 320 → 107; "
            "×3.00, faster (×2.88–×3.12 over 5 timed passes each).") in text
    assert "The talk, on a 72-vCPU c5.18xlarge" in text and "×15.9 at batch 128" in text
    sweep = said([bench(1, rate=200), bench(4, rate=60)])   # no oneDNN off: no talk's figures
    assert "This CPU" not in sweep and "MKL-DNN" not in sweep
    few = said([bench(4, True, 300, n=3), bench(4, False, 100, n=3)])
    assert "×3.00, too few measured to judge" in few and "steps=10" in few and "faster" not in few
    busy = said([bench(1, rate=200, load=4.5), bench(4, rate=60, load=1.5)], cpu=CPU)
    assert "'1 thread, oneDNN on': on a busy machine (load average before 4.50)." in busy


def test_gpu_facts_and_copies_cite_their_cells():
    text = said(facts(gpu(0, sm=1400, reasons="sw_power_cap", power=450.0, limit=450.0),
                      gpu(1, width=8)))
    assert "'GPU 0 (NVIDIA H100 80GB HBM3)': held down by its power limit (SM clock (MHz) 1,400" in text
    assert "drawing (W) 450; limit (W) 450" in text and "limit (W) 450; default (W) 700" in text
    assert "'GPU 1 (NVIDIA H100 80GB HBM3)': its PCIe link below its best (link gen 5, 8 lanes" in text
    assert "The profiling lecture, on a GPU on 8 PCIe lanes: host → GPU 5 GB/s." in text
    pinned = said([copy(12.0, 24.0)])
    assert "'pinned' against 'pageable': GB/s 12.0 → 24.0; ×2.00, faster" in pinned
    assert l11.table([copy(12.0, 24.0)])["MiB a copy"].tolist() == [256, 256]


def test_the_runs_workers_follow_the_rule_per_gpu_process(make_run):
    run = make_run("2 workers", gpus=2, machine_gpus=2, config={"num_workers": 2}, cpu_count=8)
    text = said([run], cpu={**CPU, "usable": 8})
    assert ("'2 workers': 2 loader workers for each training process, training processes 2 "
            "(one a GPU, at least one), usable cores 8, the talk's rule gives 5, on these 8 "
            "cores.") in text
    assert l11.RUN.by_sign["num_workers"][Sign.POSITIVE] in text and "This CPU" not in text
    none = make_run("no workers", config={"num_workers": 0}, cpu_count=2)
    assert l11.RUN.by_sign["num_workers"][Sign.OTHER] in said([none])
    shared = fake_runs.busy(make_run("shared", config={"num_workers": 2}, cpu_count=2), 3.0)
    assert "'shared': shared with other programs (other programs' cores 3.00)." in said([shared])


def test_shm_and_disk_lines():
    text = said([SHM], workers=4)
    assert "room for 2 collated batches" in text and "36.8 MiB" in text and "8 batches in flight" in text
    assert "Docker, on a container started without --shm-size or --ipc=host: /dev/shm 64 MiB." in text
    assert "room for 32,199 collated" in said([ROOMY])
    records = [DISK, facts(gpu())[0], copy(12.0, 24.0)]
    links = l11.table(records)["link"].tolist()
    assert "GPU 0 PCIe gen 5, 16 lanes (the link)" in links and "host → GPU copy, pinned" in links
    disk = said(records)
    assert "Measured here (GB/s): 'this disk, sequential' 1.35, 'this disk, random 32 KiB' 0.416." in disk
    assert "cold" in disk and "(sequential ÷ random 3.24)" in disk and "NVMe 3.0 GB/s" in disk


def test_openmp_names_the_ignored_variable_and_its_equivalent():
    text = said(rows(KMP_BLOCKTIME="0"), runtimes=["libgomp.so.1"])
    assert "This process loaded libgomp (GNU's OpenMP)." in text
    assert "'KMP_BLOCKTIME': set, but no runtime loaded here reads it (set to 0; its equivalent " \
           "here OMP_WAIT_POLICY (or GOMP_SPINCOUNT))." in text
    assert OPENMP[env.OpenMP.GNU_DEFAULTS] not in text
    assert l11.table(rows())["read here"].tolist()[:2] == ["yes", "no"]


def test_records_of_no_known_kind_are_refused_and_sizes_shrink_in_smoke():
    with pytest.raises(ValueError, match="not a record of lesson 11"):
        l11.table([{"what": 1}])
    with pytest.raises(ValueError, match="empty"):
        l11.table([])
    with pytest.raises(ValueError, match="cpus: not a context of 'bench'; allowed: cpu"):
        l11.conclude([bench(1)], cpus=CPU)
    assert sizes("11", smoke=True).bench["steps"] >= l11.MIN_PASSES
    assert sizes("11", smoke=True).disk_mb < sizes("11", smoke=False).disk_mb
