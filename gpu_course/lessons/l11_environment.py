"""Lesson 11: the environment. What the framework was built with, oneDNN on against off,
a thread sweep, pinning, the OpenMP variables and which runtime reads them, loader
workers per process, the GPU's clocks, limits and PCIe link, pageable against pinned
copies, /dev/shm and the disk beside the lecture's bandwidth table.

The notebooks measure with `gpu_course.env.report` (each CPU setting in a fresh process, since
oneDNN and the OpenMP thread count are fixed when a framework starts) and hand the
records here: `table(records)` and `conclude(records, ...)` take one section's records,
all of one kind (benchmarks, a run, OpenMP settings, GPU facts, a copy measurement,
/dev/shm, the disk with its links), and never read the machine themselves.
No deep-learning framework here.
"""
from __future__ import annotations

import math

import pandas as pd

from ..analyse import metrics, noise
from ..show.closing import Closing
from ..env.text import LECTURE_BANDWIDTHS
from ..measure.records import Run
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
# Timed passes (or copies) a side before a verdict is said: with 5 a side, two ranges that
# do not overlap arise by chance under 1 % of the time (2 / C(10, 5)); with 3, 10 %.
MIN_PASSES = 5
BUSY_LOAD = 1.0   # a load average above this before a benchmark: something else was running
IMAGES = "images/s"
PASSES = "passes (images/s)"
COPY = "host → GPU (GB/s)"
LECTURE_COLUMN, HERE = "the lecture (GB/s)", "measured here (GB/s)"
SEQUENTIAL, RANDOM = "this disk, sequential", "this disk, random 32 KiB"
RUNTIMES = {"libgomp": "GNU's OpenMP", "libiomp5": "Intel's OpenMP", "libomp": "LLVM's OpenMP"}
EQUIVALENT = {"KMP_BLOCKTIME": "OMP_WAIT_POLICY (or GOMP_SPINCOUNT)",
              "KMP_AFFINITY": "OMP_PROC_BIND with OMP_PLACES",
              "GOMP_SPINCOUNT": "KMP_BLOCKTIME", "GOMP_CPU_AFFINITY": "KMP_AFFINITY"}
PREFETCH = 2      # batches each loader worker keeps in flight (the loaders' default)


def kind(records) -> str:
    """Which section `records` belong to: "bench", "run", "openmp", "gpu", "copy", "shm"
    or "links" (the disk first, then optionally the GPU facts and the copy)."""
    records = list(records)
    if not records:
        raise ValueError("records=[] is empty; pass one section's records (env.bench results, "
                         "a run, env.openmp_settings, env.gpu_facts, a copy, shm or disk facts)")
    first = records[0]
    if isinstance(first, Run):
        return "run"
    keys = set(first) if isinstance(first, dict) else set()
    for name, key in (("bench", "images_per_s"), ("openmp", "variable"), ("gpu", "gpus"),
                      ("shm", "total_mib"), ("links", "sequential_mb_s"),
                      ("copy", "available")):
        if key in keys:
            return name
    raise ValueError(f"records[0] has keys {sorted(keys)}: not a record of lesson 11; allowed: "
                     "env.bench results, a Run, env.openmp_settings rows, env.gpu_facts, "
                     "a copy measurement (envinfo copy), env.shm_facts, env.disk_facts")


def table(records) -> pd.DataFrame:
    """The table of one section's records (what its sentences cite)."""
    records = list(records)
    return TABLES[kind(records)](records)


def conclude(records, **context) -> Closing:
    """The section's sentences. context: cpu (env.cpu_facts) for benchmarks and the run,
    runtimes (the OpenMP libraries loaded) for the OpenMP settings, workers for /dev/shm."""
    records = list(records)
    section = kind(records)
    unknown = sorted(set(context) - CONTEXT[section])
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: not a context of lesson 11's {section!r} "
                         f"records; allowed: {', '.join(sorted(CONTEXT[section])) or 'none'}")
    return SAYERS[section](Closing(table(records), key=KEYS[section]), records, **context)


# -- CPU benchmarks -------------------------------------------------------------------------
def label(bench: dict) -> str:
    """'2 threads, oneDNN on' (', pinned to core 0' when pinned)."""
    n = bench["threads"]
    text = f"{n} thread{'s' if n != 1 else ''}, oneDNN {'on' if bench['onednn'] else 'off'}"
    cpus = bench.get("cpus")
    if cpus:
        text += f", pinned to core{'s' if len(cpus) > 1 else ''} {', '.join(map(str, cpus))}"
    return text


def _bench_table(benches) -> pd.DataFrame:
    rows = []
    for b in benches:
        passes = b.get("step_images_per_s") or []
        rows.append({"setting": label(b), "threads": b["threads"],
                     "oneDNN": "on" if b["onednn"] else "off", IMAGES: b["images_per_s"],
                     PASSES: f"{min(passes):,.0f}–{max(passes):,.0f}" if passes else "–",
                     "ms per batch": b["ms_per_batch"],
                     "load average before": b.get("load_average", math.nan)})
    return pd.DataFrame(rows)


def _verdict(say: Closing, a: dict, b: dict, what: str):
    """b against a judged on their passes: the verdict, or None with the line saying
    there were too few passes to judge."""
    xs, ys = a.get("step_images_per_s") or [], b.get("step_images_per_s") or []
    n = min(len(xs), len(ys))
    if n < MIN_PASSES:
        say(f"{what}: {say.ratio(IMAGES, label(a), label(b))} from {n} timed passes a setting: "
            f"too few to judge (at least {MIN_PASSES} a side: gc.sizes(\"11\", "
            f"bench=dict(batch={b.get('batch', 64)}, steps=10)).")
        return None
    return say.compare_samples(label(a), label(b), xs, ys, f"{n} timed passes each", IMAGES)


def _say_benches(say: Closing, benches, cpu=None) -> Closing:
    plain = [b for b in benches if not b.get("cpus")]
    _onednn(say, plain, cpu)
    usable = cpu["usable"] if cpu else max((b["threads"] for b in plain), default=1)
    _threads(say, [b for b in plain if b["onednn"]], usable, cpu)
    _pinned(say, benches, plain)
    say_busy(say, {label(b): b.get("load_average", 0) for b in benches}, usable)
    return say


def say_busy(say: Closing, loads: dict, usable: int, column: str = "load average before") -> None:
    """A line when a measurement started on a busy machine: `loads` maps each row's name
    to the load average before it (the table's `column`); busy is at least the usable
    cores (and BUSY_LOAD)."""
    busy = {row: load for row, load in loads.items() if (load or 0) >= max(BUSY_LOAD, usable)}
    if busy:
        worst = max(busy, key=busy.get)
        say(f"The machine was busy: a load average of {say.cell(worst, column)} before "
            f"'{worst}', with {usable} usable cores. Other programs took turns with these passes; "
            "measure again on a quiet machine before trusting a ranking.")


def say_cpu(say: Closing, cpu: dict) -> None:
    """The CPU's model and cores (env.cpu_facts), said once, with a lesson's first
    measurement."""
    model = say.quote("/proc/cpuinfo", cpu["model"])
    say(f"This CPU (/proc/cpuinfo): {model}, {cpu['logical']} logical cores "
        f"({cpu['physical']} physical), {cpu['usable']} usable by this process.")


def _onednn(say: Closing, plain, cpu=None) -> None:
    pairs = [(off, on) for on in plain if on["onednn"] for off in plain
             if not off["onednn"] and off["threads"] == on["threads"]]
    if not pairs:
        return
    if cpu:   # said once, with the lesson's first measurement
        say_cpu(say, cpu)
    off, on = pairs[0]
    v = _verdict(say, off, on, f"oneDNN on against off ({on['threads']} threads)")
    talk_line = (f"{talk.SOURCE}'s table ({talk.MKLDNN_HARDWARE}, ResNet-50): MKL-DNN "
                 f"{say.quote(talk.SOURCE, talk.MKLDNN_SPEEDUP[1], '×{}')} at batch 1 and "
                 f"{say.quote(talk.SOURCE, talk.MKLDNN_SPEEDUP[128], '×{}')} at batch 128")
    if v is None:
        say(f"For comparison, {talk_line}.")
        return
    reading = {"faster": "oneDNN's kernels pay on this CPU too",
               "slower": "oneDNN's kernels lose on this CPU at this batch",
               }.get(v.kind, "no difference beyond the passes' spread")
    say(f"oneDNN on against off ({on['threads']} threads, batch {on.get('batch', '?')}): {v}: "
        f"{reading}; {talk_line}.")


def _threads(say: Closing, sweep, usable: int, cpu) -> None:
    if len({b["threads"] for b in sweep}) < 2:
        return
    best = max(sweep, key=lambda b: b["images_per_s"])
    others = [b for b in sweep if b is not best]
    full = [b for b in others if b["threads"] == usable]
    other = full[0] if full else max(others, key=lambda b: b["images_per_s"])
    v = _verdict(say, other, best, f"{best['threads']} threads against {other['threads']}")
    if v is None:
        return
    head = f"Fastest: {label(best)}; against {label(other)}: {v}"
    if not v.is_effect:
        say(head + ": no thread count is clearly fastest here.")
    elif best["threads"] >= usable:
        say(head + ": one thread a usable core, OpenMP's default, is fastest here.")
    elif max(best.get("load_average", 0), other.get("load_average", 0)) >= BUSY_LOAD:
        busier = max((best, other), key=lambda b: b.get("load_average", 0))
        say(head + ": fewer threads than cores finished sooner. An OpenMP region waits for its "
            "slowest thread, and other programs held cores (a load average of "
            f"{say.cell(label(busier), 'load average before')} before '{label(busier)}'), so a "
            "thread that shares its core holds up the rest.")
    elif cpu and cpu.get("physical") and cpu["logical"] > cpu["physical"]:
        say(head + f": fewer threads than cores finished sooner. The {cpu['logical']} logical "
            f"cores are hyperthreads of {cpu['physical']} physical ones, and two threads on one "
            "physical core share its arithmetic units.")
    else:
        say(head + ": fewer threads than cores finished sooner on a quiet machine: at this "
            "batch the extra threads cost more in synchronisation than they add.")


def _pinned(say: Closing, benches, plain) -> None:
    for pinned in (b for b in benches if b.get("cpus")):
        same = [b for b in plain if b["threads"] == pinned["threads"]
                and b["onednn"] == pinned["onednn"]]
        if not same:
            continue
        v = _verdict(say, same[0], pinned, f"{label(pinned)} against unpinned")
        if v is None:
            continue
        cores = len(pinned["cpus"])
        head = f"{label(pinned)} against the same unpinned: {v}"
        if pinned["threads"] <= cores:
            say(head + ": each thread has a core of its own; pinning only keeps it from moving.")
        elif v.kind == noise.Kind.SLOWER:
            say(head + f": {pinned['threads']} threads take turns on {cores} core"
                f"{'s' if cores > 1 else ''}, as a process given fewer cores than threads does.")
        elif v.kind == noise.Kind.FASTER:
            say(head + ": taking turns on one core beat waiting for each other on cores that "
                f"other programs share (a load average of "
                f"{say.cell(label(pinned), 'load average before')} before it).")
        else:
            say(head + ": no difference beyond the passes' spread.")


# -- the short run with the checklist's workers ----------------------------------------------
def _run_table(runs) -> pd.DataFrame:
    return pd.DataFrame([{"rung": r.name, "num_workers": (r.config or {}).get("num_workers"),
                          "samples_per_sec": metrics.samples_per_sec(r)} for r in runs])


def _say_run(say: Closing, runs, cpu=None) -> Closing:
    for run in runs:
        hardware = run.meta.get("hardware") or {}
        processes = max(1, len(hardware.get("gpus") or []))
        cores = hardware.get("cpu_count") or 1
        usable = cpu["usable"] if cpu else cores
        workers = (run.config or {}).get("num_workers")
        each = (f"each of {processes} training processes (one a GPU)" if processes > 1 else
                "its one training process" + (" (one GPU)" if hardware.get("gpus") else
                                              " (no GPU)"))
        say(f"'{run.name}': {workers} loader worker{'s' if workers != 1 else ''} for {each} on "
            f"{usable} usable cores: usable cores / processes, the checklist's rule. The talk's "
            f"rule, cpu_count() − 3 and at least 2, gives {max(2, cores - 3)} on these {cores} "
            "cores.")
        if metrics.machine_load(run)["shared"]:
            say("Other programs shared the machine while it ran: the timeline's total counts "
                "their work too.")
    return say


# -- OpenMP ----------------------------------------------------------------------------------
def _openmp_table(rows) -> pd.DataFrame:
    read = {True: "yes", False: "no", None: "?"}
    return pd.DataFrame([{"variable": r["variable"], "value": r["value"] or "(unset)",
                          "read by": r["read_by"], "read here": read[r["honoured_here"]],
                          "what": r["what"]} for r in rows])


def _say_openmp(say: Closing, rows, runtimes=()) -> Closing:
    runtimes = list(runtimes or [])
    if not runtimes:
        say("No OpenMP runtime found in this process: whether these variables apply is unknown.")
        return say
    names = [f"{r} ({RUNTIMES.get(_base(r), 'an OpenMP runtime')})" for r in runtimes]
    say(f"This process loaded {' and '.join(names)}.")
    ignored = [r for r in rows if r["value"] and r["honoured_here"] is False]
    for r in ignored:
        say(f"{r['variable']}={r['value']} is set, but no runtime loaded here reads it; its "
            f"equivalent here is {EQUIVALENT.get(r['variable'], 'another variable')}.")
    if not any(r["value"] for r in rows):
        say("None of them is set: the runtime's defaults apply"
            + (" (GNU's: a thread spins a while after each parallel region, then sleeps; "
               "threads are not bound to cores)." if "libgomp" in map(_base, runtimes) else "."))
    if "libgomp" in map(_base, runtimes) and not {"libiomp5", "libomp"} & set(map(_base, runtimes)):
        say("The course day's KMP_BLOCKTIME=0 and KMP_AFFINITY=granularity=fine,compact,1,0 do "
            "nothing with GNU's runtime: OMP_WAIT_POLICY=passive and OMP_PROC_BIND=close with "
            "OMP_PLACES=cores are its equivalents.")
    return say


def _base(library: str) -> str:
    return library.split(".")[0].split("-")[0]


# -- the GPU side ----------------------------------------------------------------------------
def _gpu_table(records) -> pd.DataFrame:
    facts = records[0]
    if not facts.get("available") or not facts.get("gpus"):
        return pd.DataFrame([{"GPU": "none", "why": facts.get("reason") or "no GPU found"}])
    rows = []
    for g in facts["gpus"]:
        sm, top = g.get("sm_clock_mhz"), g.get("sm_clock_max_mhz")
        link = (f"gen {g['pcie_gen']}, {g['pcie_width']} lanes of gen {g.get('pcie_gen_max')}, "
                f"{g.get('pcie_width_max')}" if g.get("pcie_gen") else None)
        rows.append({"GPU": f"GPU {g['index']} ({g.get('name') or '?'})", "SM clock (MHz)": sm,
                     "SM max (MHz)": top, "SM % of max": 100 * sm / top if sm and top else None,
                     "memory clock (MHz)": g.get("mem_clock_mhz"),
                     "memory max (MHz)": g.get("mem_clock_max_mhz"),
                     "temperature (°C)": g.get("temp_c"), "power (W)": g.get("power_w"),
                     "power limit (W)": g.get("power_limit_w"),
                     "default limit (W)": g.get("power_max_limit_w"), "PCIe link": link,
                     "PCIe (GB/s)": g.get("pcie_gbps"),
                     "clock-event reasons": g.get("clock_event_reasons") or "none"})
    return pd.DataFrame(rows)


def _say_gpu(say: Closing, records) -> Closing:
    facts = records[0]
    if not facts.get("available") or not facts.get("gpus"):
        say("No GPU here: nothing to read on the GPU side (clocks, power, the PCIe link).")
        return say
    for i, g in enumerate(facts["gpus"]):
        name = say.table["GPU"].iloc[i]
        if g.get("error"):
            say(f"{name} could not be read in full: {g['error']}.")
        _clocks(say, i, g, name)
        limit, default = g.get("power_limit_w"), g.get("power_max_limit_w")
        if limit and default and limit < default:
            say(f"{name}: its power limit is set below the default "
                f"({say.cell(i, 'power limit (W)')} of {say.cell(i, 'default limit (W)')} W): "
                "its clocks drop sooner under load (nvidia-smi -pl sets it).")
        _link(say, i, g, name)
    return say


def _clocks(say: Closing, i: int, g: dict, name: str) -> None:
    sm, top = g.get("sm_clock_mhz"), g.get("sm_clock_max_mhz")
    if not (sm and top):
        return
    reasons = set(filter(None, str(g.get("clock_event_reasons") or "").split("|")))
    clock = (f"SM clock {say.cell(i, 'SM clock (MHz)')} of {say.cell(i, 'SM max (MHz)')} MHz "
             f"({say.cell(i, 'SM % of max', '{:.0f}%')})")
    if "gpu_idle" in reasons:
        say(f"{name} is idle: its {clock} is an idle clock, not the one it trains at; read "
            "the clocks while it trains (the monitor records the SM clock in every sample).")
    elif reasons & {"sw_power_cap", "hw_power_brake", "board_limit"}:
        say(f"{name}: {clock}, held down by its power limit (drawing "
            f"{say.cell(i, 'power (W)')} of {say.cell(i, 'power limit (W)')} W).")
    elif reasons & {"sw_thermal", "hw_thermal", "hw_slowdown"}:
        say(f"{name}: {clock}, slowed down by heat at {say.cell(i, 'temperature (°C)')} °C: "
            "check its cooling and airflow.")
    elif "applications_clocks" in reasons:
        say(f"{name}: {clock}, pinned by the application clocks setting "
            "(nvidia-smi -rac resets it).")
    elif reasons:
        say(f"{name}: {clock}; clock-event reasons: {', '.join(sorted(reasons))}.")
    else:
        say(f"{name}: {clock}, and nothing reported holding it down.")


def _link(say: Closing, i: int, g: dict, name: str) -> None:
    if not g.get("pcie_gen"):
        return
    gen, width = g["pcie_gen"], g["pcie_width"]
    gen_max, width_max = g.get("pcie_gen_max") or gen, g.get("pcie_width_max") or width
    rate = say.cell(i, "PCIe (GB/s)")
    lecture = say.quote(talk.LECTURE, talk.LECTURE_PCIE_X8_GB_S, "{:.0f} GB/s")
    if gen < gen_max or width < width_max:
        idle = "gpu_idle" in str(g.get("clock_event_reasons") or "")
        say(f"{name}: its PCIe link runs at gen {gen} with {width} lanes ({rate} GB/s each way), "
            f"below its gen {gen_max} with {width_max} lanes: "
            + ("an idle GPU lowers its link; read it again while it trains." if idle else
               "under load that points at the slot (fewer lanes wired) or a riser."))
    else:
        say(f"{name}: its PCIe link runs at its best, gen {gen} with {width} lanes: {rate} GB/s "
            f"each way ({talk.LECTURE}'s GPU on 8 lanes: {lecture}).")


# -- pageable against pinned copies ------------------------------------------------------------
def _copy_table(records) -> pd.DataFrame:
    copy = records[0]
    if not copy.get("available"):
        return pd.DataFrame([{"memory": "pageable and pinned", "why": "no GPU: not measured"}])
    rows = []
    for memory in ("pageable", "pinned"):
        each = copy.get(f"{memory}_all") or []
        rows.append({"memory": memory, COPY: copy[f"{memory}_gb_s"],
                     "copies (GB/s)": f"{min(each):.1f}–{max(each):.1f}" if each else "–",
                     "copies": len(each)})
    return pd.DataFrame(rows)


def _say_copy(say: Closing, records) -> Closing:
    copy = records[0]
    if not copy.get("available"):
        say("No GPU here: no host → GPU copy to measure (pageable against pinned needs CUDA).")
        return say
    lecture = say.quote(talk.LECTURE, talk.LECTURE_PCIE_X8_GB_S, "{:.0f} GB/s")
    size = say.setting("the copy's size", copy.get("mib"), "{} MiB")
    head = (f"Host → GPU copies of {size}: pageable "
            f"{say.cell('pageable', COPY)} GB/s, pinned {say.cell('pinned', COPY)} GB/s")
    xs, ys = copy.get("pageable_all") or [], copy.get("pinned_all") or []
    n = min(len(xs), len(ys))
    if n < MIN_PASSES:
        say(f"{head}; pinned {say.ratio(COPY, 'pageable', 'pinned')} from {n} copies each: too "
            f"few to judge (at least {MIN_PASSES}); {talk.LECTURE}'s GPU on 8 lanes: {lecture}.")
        return say
    v = say.compare_samples("pageable", "pinned", xs, ys, f"{n} copies each", COPY)
    reading = {"faster": "pin_memory=True in the DataLoader (with non_blocking=True copies) buys "
                         "this on every batch",
               "slower": "pinned copies lost here; measure again before changing the loader",
               }.get(v.kind, "pinning buys nothing measurable here")
    say(f"{head}: pinned {v}: {reading} ({talk.LECTURE}'s GPU on 8 lanes: {lecture}).")
    return say


# -- shared memory -----------------------------------------------------------------------------
def _shm_table(records) -> pd.DataFrame:
    shm = records[0]
    if shm.get("total_mib") is None:
        return pd.DataFrame([{"path": shm.get("path", "/dev/shm"), "why": "not present"}])
    return pd.DataFrame([{"path": shm["path"], "size (MiB)": shm["total_mib"],
                          "free (MiB)": shm["free_mib"],
                          "CIFAR batch of 64 (MiB)": shm["batch_mib"],
                          "batches that fit": int(shm["batches_fit"]),
                          "224-pixel batch of 64 (MiB)": shm["batch_mib"] * 49}])


def _say_shm(say: Closing, records, workers=None) -> Closing:
    shm = records[0]
    docker = say.quote("Docker", 64, "{} MiB")
    if shm.get("total_mib") is None:
        say(f"{shm.get('path', '/dev/shm')} is not present here: loader workers hand batches over "
            f"another way (Docker gives a container {docker} of it unless told otherwise).")
        return say
    path = shm["path"]
    say(f"{path}: {say.cell(0, 'size (MiB)')} MiB, {say.cell(0, 'free (MiB)')} MiB free: room for "
        f"{say.cell(0, 'batches that fit')} collated batches of 64 CIFAR images "
        f"({say.cell(0, 'CIFAR batch of 64 (MiB)')} MiB each).")
    if workers is not None:
        flight = workers * PREFETCH
        enough = shm["batches_fit"] >= flight
        say(f"{workers} loader workers keep up to {flight} batches in flight ({PREFETCH} each): "
            + ("enough here." if enough else "too small: a worker dies with \"Bus error\" or "
               "\"No space left on device\"; start the container with --shm-size or --ipc=host."))
    big = say.cell(0, "224-pixel batch of 64 (MiB)")
    say(f"At ImageNet's 224-pixel size a batch of 64 is {big} MiB: Docker gives a container "
        f"{docker} of {path} unless started with --shm-size or --ipc=host.")
    return say


# -- the disk and the lecture's links ----------------------------------------------------------
def _links_table(records) -> pd.DataFrame:
    disk = records[0]
    rows = [(name, gbps, None) for name, gbps in LECTURE_BANDWIDTHS]
    rows += [("a disk", talk.LECTURE_DISK_GB_S, None), ("NVMe", talk.LECTURE_NVME_GB_S, None),
             (SEQUENTIAL, None, disk["sequential_mb_s"] / 1000),
             (RANDOM, None, disk["random_32k_mb_s"] / 1000)]
    for other in records[1:]:
        for g in other.get("gpus") or []:
            if g.get("pcie_gbps"):
                rows.append((f"GPU {g['index']} PCIe gen {g['pcie_gen']}, {g['pcie_width']} lanes "
                             "(the link)", None, g["pcie_gbps"]))
        if other.get("available") and "pinned_gb_s" in other:
            rows += [("host → GPU copy, pageable", None, other["pageable_gb_s"]),
                     ("host → GPU copy, pinned", None, other["pinned_gb_s"])]
    return pd.DataFrame(rows, columns=["link", LECTURE_COLUMN, HERE])


def _say_links(say: Closing, records) -> Closing:
    disk = records[0]
    cold = "cold: its pages dropped from the page cache first" if disk.get("cold") else \
        "the page cache could not be dropped, so these may be reads from memory: upper bounds"
    say(f"This disk reads {say.cell(SEQUENTIAL, HERE)} GB/s sequentially and "
        f"{say.cell(RANDOM, HERE)} GB/s at random 32 KiB blocks ({cold}); {talk.LECTURE}: about "
        f"{say.cell('a disk', LECTURE_COLUMN)} GB/s for a disk, {say.cell('NVMe', LECTURE_COLUMN)} "
        "GB/s for NVMe.")
    rnd = disk["random_32k_mb_s"]
    ratio = disk["sequential_mb_s"] / rnd if rnd else math.nan
    times = say.ratio(HERE, RANDOM, SEQUENTIAL)
    if ratio >= 1.5:
        say(f"Sequential reads are {times} as fast as random ones: a data set of small files "
            "read in random order gets the slower rate, one packed file read in order (lesson 9) "
            "the faster.")
    elif not math.isnan(ratio):
        say(f"Sequential reads are {times} as fast as random ones: random reads cost little "
            "more here (an SSD, or the page cache), so packing the files pays less than on a "
            "spinning disk.")
    return say


TABLES = {"bench": _bench_table, "run": _run_table, "openmp": _openmp_table, "gpu": _gpu_table,
          "copy": _copy_table, "shm": _shm_table, "links": _links_table}
SAYERS = {"bench": _say_benches, "run": _say_run, "openmp": _say_openmp, "gpu": _say_gpu,
          "copy": _say_copy, "shm": _say_shm, "links": _say_links}
CONTEXT = {"bench": {"cpu"}, "run": {"cpu"}, "openmp": {"runtimes"}, "gpu": set(), "copy": set(),
           "shm": {"workers"}, "links": set()}
KEYS = {"bench": "setting", "run": "rung", "openmp": "variable", "gpu": "GPU", "copy": "memory",
        "shm": "path", "links": "link"}
