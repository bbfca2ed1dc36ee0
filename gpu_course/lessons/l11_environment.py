"""Lesson 11: the environment: the framework's build, oneDNN on against off, threads, pinning,
the OpenMP variables, loader workers per process, the GPU's clocks and link, pinned copies,
/dev/shm and the disk. The notebooks measure with `gpu_course.env.report`; each section's
records are judged with its declaration (`LESSONS`); tables are `analyse.environment`'s.
"""
from __future__ import annotations

from ..analyse import environment as env, noise
from ..analyse.environment import (BELOW_DEFAULT, BUSY, CHEAP, COLD, COPY, COSTLY, IGNORED,
                                   IMAGES, SHARED, WARM, Clock, Cores, Link, OpenMP, Pinning,
                                   Section, label)   # noqa: F401  (label: the exercise's)
from ..env.cores import BUSY_LOAD   # noqa: F401  (the exercise's)
from ..show.closing import Closing
from ..show.findings import Compare, Context, Expect, Flag, Lesson, Outcome, Quote, Sign, judge_rows
from . import talk

SIZES = {
    "full": dict(train_size=5000, test_size=64, epochs=1, batch_size=64, warmup_steps=1,
                 bench=dict(batch=64, steps=10),   # images a forward pass, timed passes
                 disk_mb=256),                     # size of the file read back
    "smoke": dict(train_size=128, test_size=64, epochs=1, batch_size=64, warmup_steps=1,
                  bench=dict(batch=32, steps=5), disk_mb=16, monitor_interval=0.1),
    "check": dict(train_size=2048),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("bench", "disk_mb")
MIN_PASSES = noise.BLOCKS   # passes a side for a verdict: 5 give disjoint ranges by chance < 1 %
SAME = "No difference beyond the passes' spread"
BENCH = Lesson(
    compares=(
        Compare(("onednn",), when={"onednn": "on"}, against={"onednn": "off"}, cpu=Expect.FASTER,
                cells={"ms per batch": "ms per batch"},
                means={Outcome.EXPECTED: "oneDNN's kernels pay on this CPU too.",
                       Outcome.NONE: f"{SAME}: more passes, or a quieter machine, would tell.",
                       Outcome.OPPOSITE: "oneDNN's kernels lose on this CPU at this batch."}),
        Compare(("threads", "cores"), when={"cores": Cores.FEWER}, against={"cores": Cores.ALL},
                cpu=Expect.SLOWER, means={
            Outcome.EXPECTED: "One thread a usable core, OpenMP's default, is fastest here.",
            Outcome.NONE: f"{SAME}: no thread count is clearly fastest here.",
            Outcome.OPPOSITE: "Fewer threads than cores finished sooner: an OpenMP region waits "
                              "for its slowest thread, and one sharing its core (with other "
                              "programs, or as a hyperthread) holds up the rest; on a quiet "
                              "machine the extra threads cost more to synchronise than they "
                              "add at this batch."}),
        Compare(("threads", "cores"), when={"cores": Cores.MORE}, against={"cores": Cores.ALL},
                cpu=Expect.SLOWER, means={
            Outcome.EXPECTED: "More threads than cores take turns, and each OpenMP region waits "
                              "for one waiting for a core: set OMP_NUM_THREADS "
                              "(torch.set_num_threads) to the cores a process may use.",
            Outcome.NONE: f"{SAME}: the extra threads cost nothing measurable.",
            Outcome.OPPOSITE: "More threads than cores won time slices from other programs "
                              "holding cores: a share taken from them, not a setting to keep."}),
        Compare(("pinning",), when={"pinning": Pinning.CROWDED}, against={"pinning": Pinning.NONE},
                cpu=Expect.SLOWER, means={
            Outcome.EXPECTED: "Its threads take turns on fewer cores than threads.",
            Outcome.NONE: f"{SAME}.",
            Outcome.OPPOSITE: "Taking turns on few cores beat waiting for each other on cores "
                              "other programs share (see the load average)."}),
        Compare(("pinning",), when={"pinning": Pinning.CORE_EACH}, against={"pinning": Pinning.NONE},
                cpu=Expect.SAME, means={
            Outcome.EXPECTED: "Each thread has a core of its own; pinning only keeps it there.",
            Outcome.OPPOSITE: "Each thread has a core of its own, yet pinning changed the speed "
                              "beyond the passes' spread: a pinned thread keeps its caches, or "
                              "shares its core with other programs."})),
    flags=(Flag("machine", {BUSY: "Other programs took turns with these passes (the load "
                                  "average reached the usable cores): measure on a quiet "
                                  "machine before trusting a ranking."},
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
    by_sign={"num_workers": {
        Sign.POSITIVE: "Loader workers: the usable cores ÷ the training processes (the "
                       "checklist's rule); the talk's, cpu_count() − 3 and at least 2, counts "
                       "every core of the host in every process.",
        Sign.OTHER: "No loader workers: the training process loads its own batches."}},
    flags=(Flag("machine", {SHARED: "The timeline's total counts their work too."},
                cells={"other programs' cores": "other programs' cores"}),),
)
OPENMP_TEXT = {
    OpenMP.NO_RUNTIME: "No OpenMP runtime found in this process: whether these variables apply "
                       "is unknown.",
    OpenMP.GNU: "This process loaded libgomp (GNU's OpenMP).",
    OpenMP.INTEL: "This process loaded libiomp5 (Intel's OpenMP).",
    OpenMP.LLVM: "This process loaded libomp (LLVM's OpenMP).",
    OpenMP.DEFAULTS: "None of them is set: the runtime's defaults apply.",
    OpenMP.GNU_DEFAULTS: "None of them is set: GNU's defaults apply (a thread spins a while "
                         "after each parallel region, then sleeps; threads are not bound).",
    OpenMP.GNU_ONLY: "The course day's KMP_BLOCKTIME=0 and KMP_AFFINITY=granularity=fine,"
                     "compact,1,0 do nothing with GNU's runtime: its equivalents are "
                     "OMP_WAIT_POLICY=passive, OMP_PROC_BIND=close and OMP_PLACES=cores."}
OPENMP = Lesson(compares=(), key="variable", facts=OPENMP_TEXT, flags=(
    Flag("status", {IGNORED: "Set the equivalent that the loaded runtime reads instead."},
         cells={"value": "set to", "equivalent": "its equivalent here"}),))
CLOCKS = {Clock.IDLE: "Not the clock it trains at: read it while it trains (the monitor "
                      "records the SM clock in every sample).",
          Clock.POWER: "It draws up to its power limit, and its clocks drop to stay under it.",
          Clock.HEAT: "Check its cooling and airflow.",
          Clock.APPLICATIONS: "nvidia-smi -rac resets the application clocks.",
          Clock.OTHER: "See the clock-event reasons.",
          Clock.FREE: "Its clock runs as fast as it is allowed."}
LECTURE_PCIE = Quote("host → GPU", talk.LECTURE_PCIE_X8_GB_S, "{:.0f} GB/s")
GPU = Lesson(
    compares=(), key="GPU", quotes=(LECTURE_PCIE,), source=talk.LECTURE, hardware="a GPU on 8 PCIe lanes",
    empty="No GPU here: nothing to read on the GPU side (clocks, power, the PCIe link).",
    flags=(Flag("read", {"in part": "It could not be read in full."}, cells={"error": "error"}),
           Flag("clock", CLOCKS, cells={
               "SM clock (MHz)": "SM clock (MHz)", "SM max (MHz)": "of", "SM % of max":
               "% of max", "power (W)": "drawing (W)", "power limit (W)": "limit (W)",
               "temperature (°C)": "at (°C)", "clock-event reasons": "clock-event reasons"}),
           Flag("power", {BELOW_DEFAULT: "Its clocks drop sooner under load (nvidia-smi -pl "
                                         "sets the limit)."},
                cells={"power limit (W)": "limit (W)", "default limit (W)": "default (W)"}),
           Flag("link", {Link.BEST: "No copy to this GPU goes faster than this link.",
                         Link.LOWERED_IDLE: "An idle GPU lowers its link: read it while it "
                                            "trains.",
                         Link.LOWERED: "Under load that points at the slot (fewer lanes wired) "
                                       "or a riser."},
                cells={"PCIe link": "link", "PCIe (GB/s)": "GB/s each way"})))
COPY_LESSON = Lesson(
    compares=(Compare(("memory",), when={"memory": "pinned"}, against={"memory": "pageable"},
                      gpu=Expect.FASTER, cells={COPY: "GB/s"}, means={
        Outcome.EXPECTED: "pin_memory=True in the DataLoader (with non_blocking=True copies) "
                          "buys this on every batch.",
        Outcome.NONE: "Pinning buys nothing measurable here.",
        Outcome.OPPOSITE: "Pinned copies lost here: measure again before changing the loader.",
        Outcome.CANNOT_JUDGE: "Copy more times for a verdict on pinning."}),),
    key="memory", column=COPY, more="at least five copies a side", quotes=(LECTURE_PCIE,),
    source=talk.LECTURE, hardware="a GPU on 8 PCIe lanes",
    empty="No GPU here: no host → GPU copy to measure.")
SHM = Lesson(
    compares=(), key="path", source="Docker", hardware="a container started without "
    "--shm-size or --ipc=host", quotes=(Quote("/dev/shm", 64, "{} MiB"),),
    empty="/dev/shm is not present here: loader workers hand batches over another way.",
    last_row={"size (MiB)": "{} MiB", "free (MiB)": "{} MiB free", "batches that fit":
              "room for {} collated batches of 64 CIFAR images", "CIFAR batch of 64 (MiB)":
              "{} MiB each", "loader workers": "{} loader workers", "batches in flight":
              "{} batches in flight (two a worker)", "224-pixel batch of 64 (MiB)":
              "at ImageNet's 224-pixel size a batch of 64 is {} MiB"},
    by_sign={"room beyond them": {
        Sign.POSITIVE: "Enough for the loader workers here.",
        Sign.OTHER: "Too small for the loader workers: a worker dies with \"Bus error\" or "
                    "\"No space left on device\"; start the container with --shm-size or "
                    "--ipc=host."}})
LINKS = Lesson(
    compares=(), key="link", source=talk.LECTURE, hardware="read bandwidth",
    quotes=(Quote("a disk", talk.LECTURE_DISK_GB_S, "{} GB/s"),
            Quote("NVMe", talk.LECTURE_NVME_GB_S, "{:.1f} GB/s")),
    columns={env.HERE: "Measured here (GB/s)"},
    flags=(Flag("page cache", {COLD: "", WARM: "The page cache could not be dropped, so these "
                                                "may be reads from memory: upper bounds."}),
           Flag("random reads", {
               COSTLY: "Small files read in random order get the slower rate, one packed "
                       "file read in order (lesson 9) the faster.",
               CHEAP: "An SSD, or the page cache: packing files pays less than on a spinning "
                      "disk."}, cells={"sequential ÷ random": "sequential ÷ random"})))
LESSONS = {Section.BENCH: BENCH, Section.RUN: RUN, Section.OPENMP: OPENMP, Section.GPU: GPU,
           Section.COPY: COPY_LESSON, Section.SHM: SHM, Section.LINKS: LINKS}


def table(records, **context):
    """The table of one section's records (what its sentences cite)."""
    return env.table(records, **env.checked_context(env.kind(records), context))


def conclude(records, **context) -> Closing:
    """The section's sentences. context: cpu (env.cpu_facts: benchmarks, the run), runtimes
    (the OpenMP libraries loaded), workers (/dev/shm)."""
    records = list(records)
    section = env.kind(records)
    frame = env.table(records, **env.checked_context(section, context))
    rows, facts = env.rows(records, frame, context.get("runtimes"))
    cpu = context.get("cpu") if section is Section.BENCH else None
    return judge_rows(LESSONS[section], rows, frame, Context(cpu, facts=facts))
