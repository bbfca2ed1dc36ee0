"""Lesson 11's records (CPU benchmarks, a run, OpenMP, the GPU, a copy, /dev/shm, the
disk): `kind` tells a section's records apart, `table` and `rows` read them."""
from __future__ import annotations

import math
from enum import StrEnum

import pandas as pd

from ..env.cores import busy
from ..env.text import LECTURE_BANDWIDTHS
from ..measure.records import Run
from ..page import Page
from . import metrics
from .inference import BUSY


class Section(StrEnum):
    """Which of the lesson's measurements a list of records is."""

    BENCH = "bench"
    RUN = "run"
    OPENMP = "openmp"
    GPU = "gpu"
    COPY = "copy"
    SHM = "shm"
    LINKS = "links"


class Cores(StrEnum):
    """A benchmark's threads against the usable cores."""

    FEWER = "fewer threads than usable cores"
    ALL = "a thread a usable core"
    MORE = "more threads than usable cores"


class Pinning(StrEnum):
    NONE = "not pinned"
    CORE_EACH = "pinned, a core a thread"
    CROWDED = "pinned to fewer cores than threads"


class Clock(StrEnum):
    """What the GPU's clock-event reasons say holds its SM clock (`clock` column)."""

    IDLE = "idle: an idle clock"
    POWER = "held down by its power limit"
    HEAT = "slowed down by heat"
    APPLICATIONS = "pinned by the application clocks setting"
    OTHER = "held by other clock-event reasons"
    FREE = "nothing reported holding its clock down"


class Link(StrEnum):
    BEST = "its PCIe link at its best"
    LOWERED_IDLE = "its PCIe link below its best, while idle"
    LOWERED = "its PCIe link below its best"


class OpenMP(StrEnum):
    """What the OpenMP section found beside its variables (`findings.Context.facts`)."""

    NO_RUNTIME = "no runtime"
    GNU = "libgomp"
    INTEL = "libiomp5"
    LLVM = "libomp"
    DEFAULTS = "none set"
    GNU_DEFAULTS = "none set, GNU's runtime"
    GNU_ONLY = "GNU's runtime alone"


PAGE = Page.of(__name__)   # the tables' fixed words: text/environment.md
IGNORED, BELOW_DEFAULT = PAGE.text("ignored"), PAGE.text("below_default")
COLD, WARM = PAGE.text("cold"), PAGE.text("warm")
COSTLY, CHEAP = PAGE.text("costly"), PAGE.text("cheap")
SHARED = PAGE.text("shared")
SAY = {name: PAGE.text(name) for name in ("passes", "pcie", "no_copy", "gpu_link")}
RANDOM_COSTLY = 1.5   # sequential at least this many times random: packing files pays
PREFETCH = 2          # batches each loader worker keeps in flight (the loaders' default)
IMAGES = "images/s"
PASSES = "passes (images/s)"
COPY = "host → GPU (GB/s)"
LECTURE_COLUMN, HERE = "the lecture (GB/s)", "measured here (GB/s)"
SEQUENTIAL, RANDOM = PAGE.text("sequential"), PAGE.text("random")
EQUIVALENT = {"KMP_BLOCKTIME": "OMP_WAIT_POLICY (or GOMP_SPINCOUNT)",
              "KMP_AFFINITY": "OMP_PROC_BIND with OMP_PLACES",
              "GOMP_SPINCOUNT": "KMP_BLOCKTIME", "GOMP_CPU_AFFINITY": "KMP_AFFINITY"}
CONTEXT = {Section.BENCH: {"cpu"}, Section.RUN: {"cpu"}, Section.OPENMP: {"runtimes"},
           Section.SHM: {"workers"}}
RECORDS = "a Run or env.bench, openmp_settings, gpu_facts, shm_facts, disk_facts, envinfo copy"


def kind(records) -> Section:
    """Which section `records` belong to (the disk first, then the GPU facts and copy: LINKS)."""
    records = list(records)
    if not records:
        raise ValueError(f"records=[] is empty; pass one section's records: {RECORDS}")
    first = records[0]
    if isinstance(first, Run):
        return Section.RUN
    keys = set(first) if isinstance(first, dict) else set()
    for section, key in ((Section.BENCH, "images_per_s"), (Section.OPENMP, "variable"),
                         (Section.GPU, "gpus"), (Section.SHM, "total_mib"),
                         (Section.LINKS, "sequential_mb_s"), (Section.COPY, "available")):
        if key in keys:
            return section
    raise ValueError(f"records[0] has keys {sorted(keys)}: not a record of lesson 11; "
                     f"allowed: {RECORDS}")


def checked_context(section: Section, context: dict) -> dict:
    """`context` where every name is one `section`'s records take, else ValueError."""
    unknown = sorted(set(context) - CONTEXT.get(section, set()))
    if unknown:
        allowed = ", ".join(sorted(CONTEXT.get(section, ()))) or "none"
        raise ValueError(f"{', '.join(unknown)}: not a context of {section.value!r}; "
                         f"allowed: {allowed}")
    return context


def table(records, cpu=None, workers=None, runtimes=None) -> pd.DataFrame:
    """The table of one section's records, with the usable cores and loader workers where given."""
    records = list(records)
    usable = cpu["usable"] if cpu else None
    return {Section.BENCH: lambda: _bench_table(records, usable),
            Section.RUN: lambda: _run_table(records, usable),
            Section.OPENMP: lambda: _openmp_table(records),
            Section.GPU: lambda: _gpu_table(records[0]),
            Section.COPY: lambda: _copy_table(records[0]),
            Section.SHM: lambda: _shm_table(records[0], workers),
            Section.LINKS: lambda: _links_table(records)}[kind(records)]()


def rows(records, frame: pd.DataFrame, runtimes=None) -> tuple[list, tuple]:
    """(the rows `findings.judge_rows` reads, the facts beside them) of one section, named as `frame`."""
    from ..show.findings import Row
    records, section = list(records), kind(records)
    names = [] if "why" in frame.columns else list(frame.iloc[:, 0])
    if section is Section.BENCH:
        return [Row(name, {"onednn": frame["oneDNN"].iloc[i], "threads": b["threads"],
                           "cores": frame["cores"].iloc[i], "pinning": frame["pinning"].iloc[i]},
                    tuple(b.get("step_images_per_s") or ()),
                    SAY["passes"].format(n=len(b.get("step_images_per_s") or ())))
                for i, (name, b) in enumerate(zip(names, records))], ()
    if section is Section.COPY:
        each = {m: tuple(records[0].get(f"{m}_all") or ()) for m in names}
        return [Row(m, {"memory": m}, each[m], f"{len(each[m])} copies", True)
                for m in names], ()
    names = [SEQUENTIAL, RANDOM] if section is Section.LINKS else names
    facts = openmp_facts(records, runtimes or []) if section is Section.OPENMP else ()
    return [Row(name, {}, gpu=section is Section.GPU) for name in names], facts


def label(bench: dict) -> str:
    """'2 threads, oneDNN on' (', pinned to core 0' when pinned)."""
    n = bench["threads"]
    text = f"{n} thread{'s' if n != 1 else ''}, oneDNN {'on' if bench['onednn'] else 'off'}"
    cpus = bench.get("cpus")
    if cpus:
        text += f", pinned to core{'s' if len(cpus) > 1 else ''} {', '.join(map(str, cpus))}"
    return text


def _bench_table(benches, usable=None) -> pd.DataFrame:
    usable = usable or max((b["threads"] for b in benches if not b.get("cpus")), default=1)
    rows = []
    for b in benches:
        passes = b.get("step_images_per_s") or []
        cpus = len(b.get("cpus") or ())
        rows.append({"setting": label(b), "threads": b["threads"], "batch": b.get("batch"),
                     "oneDNN": "on" if b["onednn"] else "off",
                     "cores": (Cores.FEWER if b["threads"] < usable else Cores.ALL
                               if b["threads"] == usable else Cores.MORE),
                     "pinning": (Pinning.NONE if not cpus else Pinning.CORE_EACH
                                 if b["threads"] <= cpus else Pinning.CROWDED),
                     IMAGES: b["images_per_s"],
                     PASSES: f"{min(passes):,.0f}–{max(passes):,.0f}" if passes else "–",
                     "ms per batch": b["ms_per_batch"],
                     "load average before": b.get("load_average", math.nan),
                     "machine": BUSY if busy(b.get("load_average"), usable) else ""})
    return pd.DataFrame(rows)


def _run_table(runs, usable=None) -> pd.DataFrame:
    rows = []
    for run in runs:
        hardware = run.meta.get("hardware") or {}
        gpus, cores = len(hardware.get("gpus") or []), hardware.get("cpu_count") or 1
        load = metrics.machine_load(run)
        rows.append({"rung": run.name, "num_workers": (run.config or {}).get("num_workers"),
                     "GPUs": gpus, "training processes": max(1, gpus),
                     "usable cores": usable or cores, "cores": cores,
                     "the talk's workers": max(2, cores - 3),
                     "samples_per_sec": metrics.samples_per_sec(run),
                     "other programs' cores": load["other_load"],
                     "machine": SHARED if load["shared"] else ""})
    return pd.DataFrame(rows)


def _openmp_table(rows) -> pd.DataFrame:
    read = {True: "yes", False: "no", None: "?"}
    return pd.DataFrame([{"variable": r["variable"], "value": r["value"] or "(unset)",
                          "read by": r["read_by"], "read here": read[r["honoured_here"]],
                          "equivalent": EQUIVALENT.get(r["variable"], ""),
                          "status": IGNORED if r["value"] and r["honoured_here"] is False else "",
                          "what": r["what"]} for r in rows])


def openmp_facts(rows, runtimes) -> tuple[OpenMP, ...]:
    """The OpenMP runtimes loaded and what their variables, set or not, leave in force."""
    bases = {r.split(".")[0].split("-")[0] for r in runtimes}
    unset = not any(r["value"] for r in rows)
    gnu = OpenMP.GNU in bases
    facts = [OpenMP(b) for b in sorted(bases) if b in {o.value for o in OpenMP}]
    facts += [OpenMP.GNU_DEFAULTS if gnu else OpenMP.DEFAULTS] if unset and bases else []
    facts += [OpenMP.GNU_ONLY] if gnu and not {OpenMP.INTEL, OpenMP.LLVM} & bases else []
    return tuple(facts) if bases else (OpenMP.NO_RUNTIME,)


def clock(g: dict) -> Clock | None:
    """What holds the GPU's SM clock, by its clock-event reasons; None where unread."""
    if not (g.get("sm_clock_mhz") and g.get("sm_clock_max_mhz")):
        return None
    reasons = set(filter(None, str(g.get("clock_event_reasons") or "").split("|")))
    for state, names in ((Clock.IDLE, {"gpu_idle"}),
                         (Clock.POWER, {"sw_power_cap", "hw_power_brake", "board_limit"}),
                         (Clock.HEAT, {"sw_thermal", "hw_thermal", "hw_slowdown"}),
                         (Clock.APPLICATIONS, {"applications_clocks"})):
        if reasons & names:
            return state
    return Clock.OTHER if reasons else Clock.FREE


def link(g: dict) -> Link | None:
    if not g.get("pcie_gen"):
        return None
    best = g["pcie_gen"] >= (g.get("pcie_gen_max") or g["pcie_gen"]) and \
        g["pcie_width"] >= (g.get("pcie_width_max") or g["pcie_width"])
    idle = "gpu_idle" in str(g.get("clock_event_reasons") or "")
    return Link.BEST if best else Link.LOWERED_IDLE if idle else Link.LOWERED


def _gpu_table(facts: dict) -> pd.DataFrame:
    if not facts.get("available") or not facts.get("gpus"):
        return pd.DataFrame([{"GPU": "none", "why": facts.get("reason") or "no GPU found"}])
    rows = []
    for g in facts["gpus"]:
        sm, top = g.get("sm_clock_mhz"), g.get("sm_clock_max_mhz")
        limit, default = g.get("power_limit_w"), g.get("power_max_limit_w")
        rows.append({"GPU": f"GPU {g['index']} ({g.get('name') or '?'})", "SM clock (MHz)": sm,
                     "SM max (MHz)": top, "SM % of max": 100 * sm / top if sm and top else None,
                     "memory clock (MHz)": g.get("mem_clock_mhz"),
                     "memory max (MHz)": g.get("mem_clock_max_mhz"),
                     "temperature (°C)": g.get("temp_c"), "power (W)": g.get("power_w"),
                     "power limit (W)": limit, "default limit (W)": default,
                     "PCIe link": (SAY["pcie"].format(g=g, gen_max=g.get("pcie_gen_max"),
                                                      width_max=g.get("pcie_width_max"))
                                   if g.get("pcie_gen") else None),
                     "PCIe (GB/s)": g.get("pcie_gbps"),
                     "clock-event reasons": g.get("clock_event_reasons") or "none",
                     "clock": clock(g), "power": BELOW_DEFAULT if limit and default
                     and limit < default else "", "link": link(g),
                     "read": "in part" if g.get("error") else "", "error": g.get("error")})
    return pd.DataFrame(rows)


def _copy_table(copy: dict) -> pd.DataFrame:
    if not copy.get("available"):
        return pd.DataFrame([{"memory": "pageable and pinned", "why": SAY["no_copy"]}])
    return pd.DataFrame([{"memory": m, "MiB a copy": copy.get("mib"), COPY: copy[f"{m}_gb_s"],
                          "copies (GB/s)": _span(copy.get(f"{m}_all") or []),
                          "copies": len(copy.get(f"{m}_all") or [])}
                         for m in ("pageable", "pinned")])


def _span(values) -> str:
    return f"{min(values):.1f}–{max(values):.1f}" if values else "–"


def _shm_table(shm: dict, workers=None) -> pd.DataFrame:
    if shm.get("total_mib") is None:
        return pd.DataFrame([{"path": shm.get("path", "/dev/shm"), "why": "not present"}])
    flight = workers * PREFETCH if workers is not None else math.nan
    return pd.DataFrame([{"path": shm["path"], "size (MiB)": shm["total_mib"],
                          "free (MiB)": shm["free_mib"],
                          "CIFAR batch of 64 (MiB)": shm["batch_mib"],
                          "batches that fit": int(shm["batches_fit"]),
                          "loader workers": workers if workers is not None else math.nan,
                          "batches in flight": flight,
                          "room beyond them": shm["batches_fit"] - flight,
                          "224-pixel batch of 64 (MiB)": shm["batch_mib"] * 49}])


def _links_table(records) -> pd.DataFrame:
    disk = records[0]
    rnd, seq = disk["random_32k_mb_s"], disk["sequential_mb_s"]
    rows = [{"link": name, LECTURE_COLUMN: gbps} for name, gbps in LECTURE_BANDWIDTHS]
    rows += [{"link": SEQUENTIAL, HERE: seq / 1000, "sequential ÷ random": seq / rnd if rnd
              else math.nan, "page cache": COLD if disk.get("cold") else WARM,
              "random reads": (COSTLY if seq >= RANDOM_COSTLY * rnd else CHEAP) if rnd else ""},
             {"link": RANDOM, HERE: rnd / 1000}]
    for other in records[1:]:
        rows += [{"link": SAY["gpu_link"].format(g=g), HERE: g["pcie_gbps"]}
                 for g in other.get("gpus") or [] if g.get("pcie_gbps")]
        if other.get("available") and "pinned_gb_s" in other:
            rows += [{"link": f"host → GPU copy, {m}", HERE: other[f"{m}_gb_s"]}
                     for m in ("pageable", "pinned")]
    return pd.DataFrame(rows, columns=["link", LECTURE_COLUMN, HERE, "sequential ÷ random",
                                       "page cache", "random reads"])
