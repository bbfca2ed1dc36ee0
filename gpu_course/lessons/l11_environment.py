"""Lesson 11: the environment (build, threads, OpenMP, GPU clocks and link, /dev/shm, disk),
measured by `env.report`; each section judged by its declaration in `LESSONS`."""
from __future__ import annotations

from ..analyse import environment as env, noise
from ..analyse.environment import (BELOW_DEFAULT, BUSY, COLD, COPY, IGNORED, IMAGES, SHARED,
                                   WARM, Clock, Cores, Link, OpenMP, Pinning, Section,
                                   label)   # noqa: F401  (label: the exercise's)
from ..env.cores import BUSY_LOAD   # noqa: F401  (the exercise's)
from ..show.closing import Closing
from ..show.findings import Compare, Context, Expect, Flag, Lesson, Page, Quote, Sign, judge_rows
from . import talk

SIZES = {
    "full": dict(train_size=5000, test_size=64, epochs=1, batch_size=64, warmup_steps=1,
                 bench=dict(batch=64, steps=10),   # images a forward pass, timed passes
                 disk_mb=256),                     # size of the file read back
    "smoke": dict(train_size=128, test_size=64, epochs=1, batch_size=64, warmup_steps=1,
                  bench=dict(batch=32, steps=5), disk_mb=16, monitor_interval=0.1),
    "check": dict(train_size=2048),
}
OWN_SIZES = ("bench", "disk_mb")
MIN_PASSES = noise.BLOCKS   # passes a side for a verdict: 5 give disjoint ranges by chance < 1 %
PAGE = Page.of(__name__)   # the paragraphs: text/l11_environment.md
BENCH = Lesson(
    compares=(
        Compare(("onednn",), when={"onednn": "on"}, against={"onednn": "off"}, cpu=Expect.FASTER,
                cells={"ms per batch": "ms per batch"}, means=PAGE.means("onednn")),
        Compare(("threads", "cores"), when={"cores": Cores.FEWER}, against={"cores": Cores.ALL},
                cpu=Expect.SLOWER, means=PAGE.means("fewer_threads")),
        Compare(("threads", "cores"), when={"cores": Cores.MORE}, against={"cores": Cores.ALL},
                cpu=Expect.SLOWER, means=PAGE.means("more_threads")),
        Compare(("pinning",), when={"pinning": Pinning.CROWDED}, against={"pinning": Pinning.NONE},
                cpu=Expect.SLOWER, means=PAGE.means("crowded_pinning")),
        Compare(("pinning",), when={"pinning": Pinning.CORE_EACH}, against={"pinning": Pinning.NONE},
                cpu=Expect.SAME, means=PAGE.means("core_each"))),
    flags=(Flag("machine", {BUSY: PAGE.text("busy_machine")},
                cells={"load average before": "load average before"},
                worst="load average before"),),
    quotes=(Quote("MKL-DNN", talk.MKLDNN_SPEEDUP[1], "×{} at batch 1", when={"onednn": "off"}),
            Quote("and", talk.MKLDNN_SPEEDUP[128], "×{} at batch 128", when={"onednn": "off"})),
    hardware=f"{talk.MKLDNN_HARDWARE} ({talk.MKLDNN_NETWORK})", key="setting", column=IMAGES,
    more="at least five timed passes a side: gc.sizes(\"11\", bench=dict(batch=64, steps=10))",
)
RUN = Lesson(
    compares=(),
    last_row={"num_workers": "{} loader workers for each training process",
              "training processes": "training processes {} (one a GPU, at least one)",
              "usable cores": "usable cores {}", "the talk's workers": "the talk's rule gives {}",
              "cores": "on these {} cores"},
    by_sign={"num_workers": PAGE.means("loader_workers", Sign)},
    flags=(Flag("machine", {SHARED: PAGE.text("shared_cores")},
                cells={"other programs' cores": "other programs' cores"}),),
)
OPENMP_TEXT = PAGE.means("openmp", OpenMP)
OPENMP = Lesson(compares=(), key="variable", facts=OPENMP_TEXT, flags=(
    Flag("status", {IGNORED: PAGE.text("ignored_variable")},
         cells={"value": "set to", "equivalent": "its equivalent here"}),))
LECTURE_PCIE = Quote("host → GPU", talk.LECTURE_PCIE_X8_GB_S, "{:.0f} GB/s")
GPU = Lesson(
    compares=(), key="GPU", quotes=(LECTURE_PCIE,), source=talk.LECTURE, hardware="a GPU on 8 PCIe lanes",
    empty=PAGE.text("no_gpu"),
    flags=(Flag("read", {"in part": PAGE.text("read_in_part")}, cells={"error": "error"}),
           Flag("clock", PAGE.means("clock", Clock), cells={
               "SM clock (MHz)": "SM clock (MHz)", "SM max (MHz)": "of", "SM % of max":
               "% of max", "power (W)": "drawing (W)", "power limit (W)": "limit (W)",
               "temperature (°C)": "at (°C)", "clock-event reasons": "clock-event reasons"}),
           Flag("power", {BELOW_DEFAULT: PAGE.text("power_below_default")},
                cells={"power limit (W)": "limit (W)", "default limit (W)": "default (W)"}),
           Flag("link", PAGE.means("link", Link),
                cells={"PCIe link": "link", "PCIe (GB/s)": "GB/s each way"})))
COPY_LESSON = Lesson(
    compares=(Compare(("memory",), when={"memory": "pinned"}, against={"memory": "pageable"},
                      gpu=Expect.FASTER, cells={COPY: "GB/s"}, means=PAGE.means("pinned_copy")),),
    key="memory", column=COPY, more="at least five copies a side", quotes=(LECTURE_PCIE,),
    source=talk.LECTURE, hardware="a GPU on 8 PCIe lanes", empty=PAGE.text("no_copy"))
SHM = Lesson(
    compares=(), key="path", source="Docker", hardware="a container started without "
    "--shm-size or --ipc=host", quotes=(Quote("/dev/shm", 64, "{} MiB"),),
    empty=PAGE.text("no_shm"),
    last_row={"size (MiB)": "{} MiB", "free (MiB)": "{} MiB free",
              "batches that fit": "room for {} collated batches of 64 CIFAR images",
              "CIFAR batch of 64 (MiB)": "{} MiB each", "loader workers": "{} loader workers",
              "batches in flight": "{} batches in flight (two a worker)",
              "224-pixel batch of 64 (MiB)": "at ImageNet's 224-pixel size a batch of 64 is {} MiB"},
    by_sign={"room beyond them": PAGE.means("shm_room", Sign)})
LINKS = Lesson(
    compares=(), key="link", source=talk.LECTURE, hardware="read bandwidth",
    quotes=(Quote("a disk", talk.LECTURE_DISK_GB_S, "{} GB/s"),
            Quote("NVMe", talk.LECTURE_NVME_GB_S, "{:.1f} GB/s")),
    columns={env.HERE: "Measured here (GB/s)"},
    flags=(Flag("page cache", {COLD: "", WARM: PAGE.text("warm_reads")}),
           Flag("random reads", PAGE.means("random_reads", str),   # env.COSTLY, env.CHEAP
                cells={"sequential ÷ random": "sequential ÷ random"})))
LESSONS = {Section.BENCH: BENCH, Section.RUN: RUN, Section.OPENMP: OPENMP, Section.GPU: GPU,
           Section.COPY: COPY_LESSON, Section.SHM: SHM, Section.LINKS: LINKS}


def table(records, **context):
    """The table of one section's records (what its sentences cite)."""
    return env.table(records, **env.checked_context(env.kind(records), context))


def conclude(records, **context) -> Closing:
    """The section's sentences. context: cpu (env.cpu_facts: benchmarks, the run), runtimes
    (the OpenMP libraries loaded), workers (/dev/shm)."""
    records = list(records)
    section, frame = env.kind(records), table(records, **context)
    rows, facts = env.rows(records, frame, context.get("runtimes"))
    cpu = context.get("cpu") if section is Section.BENCH else None
    return judge_rows(LESSONS[section], rows, frame, Context(cpu, facts=facts))
