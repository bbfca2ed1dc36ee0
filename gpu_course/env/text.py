"""`gpu_course.env.report`'s report as text: what `gpu-course env` prints and the environment
lesson shows. Every sentence is computed from the report's numbers."""
from __future__ import annotations

from ..page import Page

PAGE = Page.of(__name__)   # the sentences, each a template of the report's numbers: text/text.md
BUILD, CPU, GPU, MEMORY = (PAGE.means(name, str) for name in ("build", "cpu", "gpu", "memory"))
HONOURED = {True: "read here", False: "ignored here", None: "?"}   # does this runtime read it
# The profiling lecture's table of common bandwidths, in GB/s.
LECTURE_BANDWIDTHS = (("Intel i7 5930K (40 PCIe lanes)", 30.0), ("NVLINK", 40.0),
                      ("PCIe x8 (GPU)", 5.0), ("SATA interface", 6.0),
                      ("56 Gbps Mellanox", 6.8), ("10 Gbps Ethernet", 1.0))


class _Read(dict):
    """A GPU's facts as NVML gave them: a fact it could not read says None."""

    def __missing__(self, key):
        return None


def build_lines(build: dict | None) -> list[str]:
    if not build:
        return [BUILD["none"]]
    lines = [BUILD["framework"].format(**build)]
    lines.append("  " + ", ".join(f"{k} {'on' if v else 'off'}" for k, v in build["features"].items()))
    lines += [f"  {k}: {v}" for k, v in build.get("flags", {}).items()]
    if "intra_op_threads" in build:
        lines.append("  " + BUILD["threads"].format(**build))
    if build.get("features", {}).get("PROFILER") is False:
        lines.append("  " + BUILD["no_profiler"])
    return lines


def cpu_lines(r: dict) -> list[str]:
    cpu = r["cpu"]
    lines = [CPU["cpu"].format(**cpu)]
    if "features" in cpu:
        lines.append("  " + CPU["features"].format(**cpu)
                     + "".join(f"\n  {s}" for s in cpu.get("capabilities", [])))
    bench = r.get("cpu_bench")
    if bench:
        sweep = bench["thread_sweep"]
        lines.append("  " + CPU["onednn"].format(**bench))
        rates = ", ".join(CPU["rate"].format(threads=t, rate=v) for t, v in sweep.items())
        lines.append("  " + CPU["sweep"].format(rates=rates, fastest=max(sweep, key=sweep.get)))
        if bench.get("pinned_one_core"):
            lines.append("  " + CPU["pinned"].format(**bench))
    runtimes = (r.get("build") or {}).get("openmp_runtimes") or []
    lines.append("  " + CPU["runtimes"].format(runtimes=", ".join(runtimes) or "none found"))
    for row in r.get("openmp", []):
        lines.append("    " + CPU["variable"].format(**row, shown=row["value"] or "(unset)",
                                                     honoured=HONOURED[row["honoured_here"]]))
    lines.append("  " + CPU["workers"].format(workers=r["workers_per_process"]))
    return lines


def gpu_lines(r: dict) -> list[str]:
    gpu = r["gpu"]
    if not gpu["available"]:
        return [GPU["none"].format(**gpu)]
    lines = [GPU["driver"].format_map(_Read(gpu))]
    for g in gpu["gpus"]:
        facts = _Read(g, reasons=g.get("clock_event_reasons") or "none")
        lines.append("  " + GPU["name"].format_map(facts))
        if g.get("sm_clock_mhz") and g.get("sm_clock_max_mhz"):
            lines.append("    " + GPU["clocks"].format_map(facts))
        lines.append("    " + GPU["reasons"].format_map(facts))
        lines.append("    " + GPU["power"].format_map(facts))
        if g.get("pcie_gen"):
            lines.append("    " + GPU["pcie"].format_map(facts))
        if g.get("error"):
            lines.append(f"    unreadable: {g['error']}")
    copy = r.get("copy")
    if copy and copy.get("available"):
        lines.append("  " + copy_sentence(copy))
    return lines


def copy_sentence(copy: dict) -> str:
    """The pageable-against-pinned copy measurement in words, judged against its spread."""
    from ..analyse.noise import compare_samples, sentence
    pageable, pinned = copy["pageable_all"], copy["pinned_all"]
    verdict = compare_samples(pageable, pinned, f"{len(pinned)} copies each",
                              copy["pageable_gb_s"], copy["pinned_gb_s"])
    return GPU["copy"].format(**copy, pairs=len(pinned)) + " " + sentence(verdict, "pinned ")


def memory_lines(r: dict) -> list[str]:
    shm, disk = r["shm"], r.get("disk")
    lines = [MEMORY["no_shm" if shm["total_mib"] is None else "shm"].format(**shm)]
    if disk:
        cache = MEMORY["cold" if disk["cold"] else "cached"]
        lines.append(MEMORY["disk"].format(**disk, cache=cache))
    return lines


def format_report(r: dict) -> str:
    """All sections of `env.report()` as lines of text."""
    return "\n".join(build_lines(r.get("build")) + cpu_lines(r) + gpu_lines(r) + memory_lines(r))
