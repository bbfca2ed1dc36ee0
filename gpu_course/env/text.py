"""`gpu_course.env.report`'s report as text: what `gpu-course env` prints and the environment
lesson shows. Every sentence is computed from the report's numbers."""
from __future__ import annotations

# The profiling lecture's table of common bandwidths, in GB/s.
LECTURE_BANDWIDTHS = (("Intel i7 5930K (40 PCIe lanes)", 30.0), ("NVLINK", 40.0),
                      ("PCIe x8 (GPU)", 5.0), ("SATA interface", 6.0),
                      ("56 Gbps Mellanox", 6.8), ("10 Gbps Ethernet", 1.0))


def build_lines(build: dict | None) -> list[str]:
    if not build:
        return ["build: no framework installed in this Python"]
    lines = [f"build: {build['framework']} {build['version']}"]
    lines.append("  " + ", ".join(f"{k} {'on' if v else 'off'}" for k, v in build["features"].items()))
    lines += [f"  {k}: {v}" for k, v in build.get("flags", {}).items()]
    if "intra_op_threads" in build:
        lines.append(f"  threads: intra-op {build['intra_op_threads']}, inter-op {build['inter_op_threads']}")
    if build.get("features", {}).get("PROFILER") is False:
        lines.append("  the profiler is not built in: mx.profiler writes no events here")
    return lines


def cpu_lines(r: dict) -> list[str]:
    cpu = r["cpu"]
    lines = [f"CPU: {cpu['model']}, {cpu['logical']} logical cores ({cpu['physical']} physical), "
             f"{cpu['usable']} usable (cores {cpu['usable_ids']}); load average {cpu['load_average']:.1f}"]
    if "features" in cpu:
        lines.append(f"  instruction sets: {cpu['features']}"
                     + "".join(f"\n  {s}" for s in cpu.get("capabilities", [])))
    bench = r.get("cpu_bench")
    if bench:
        b, sweep = bench, bench["thread_sweep"]
        lines.append(f"  oneDNN on: {b['onednn_on']:,.0f} images/s, off: {b['onednn_off']:,.0f} "
                     f"(x{b['onednn_speedup']:.1f}; ResNet-20 forward, batch {b['batch']}, "
                     f"{b['threads']} threads)")
        lines.append("  threads: " + ", ".join(f"{t} -> {v:,.0f} images/s" for t, v in sweep.items())
                     + f"; fastest with {max(sweep, key=sweep.get)}")
        if b.get("pinned_one_core"):
            lines.append(f"  {b['threads']} threads pinned to one core: {b['pinned_one_core']:,.0f} images/s")
    runtimes = (r.get("build") or {}).get("openmp_runtimes") or []
    lines.append(f"  OpenMP runtime loaded: {', '.join(runtimes) or 'none found'}")
    for row in r.get("openmp", []):
        honoured = {True: "read here", False: "ignored here", None: "?"}[row["honoured_here"]]
        lines.append(f"    {row['variable']}={row['value'] or '(unset)'}: {row['what']} "
                     f"[{row['read_by']}; {honoured}]")
    workers = r["workers_per_process"]
    lines.append(f"  loader workers per training process: {workers} (cores / processes)")
    return lines


def gpu_lines(r: dict) -> list[str]:
    gpu = r["gpu"]
    if not gpu["available"]:
        return [f"GPU: none ({gpu['reason']})"]
    lines = [f"GPU: driver {gpu.get('driver')}, CUDA {gpu.get('cuda')}"]
    for g in gpu["gpus"]:
        lines.append(f"  GPU {g['index']}: {g.get('name')}")
        if g.get("sm_clock_mhz") and g.get("sm_clock_max_mhz"):
            lines.append(f"    SM clock {g['sm_clock_mhz']} of {g['sm_clock_max_mhz']} MHz, "
                         f"memory clock {g.get('mem_clock_mhz')} of {g.get('mem_clock_max_mhz')} MHz")
        lines.append(f"    clock-event reasons: {g.get('clock_event_reasons') or 'none'}")
        lines.append(f"    {g.get('temp_c')} C, power {g.get('power_w')} W of a "
                     f"{g.get('power_limit_w')} W limit (default {g.get('power_max_limit_w')} W)")
        if g.get("pcie_gen"):
            lines.append(f"    PCIe gen {g['pcie_gen']} x{g['pcie_width']} (max gen {g.get('pcie_gen_max')} "
                         f"x{g.get('pcie_width_max')}): {g['pcie_gbps']:.1f} GB/s each way")
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
    return (f"host -> device copy of {copy['mib']} MiB: pageable {copy['pageable_gb_s']:.1f} GB/s, "
            f"pinned {copy['pinned_gb_s']:.1f} GB/s (medians of {len(pinned)} interleaved pairs): "
            + sentence(verdict, "pinned "))


def memory_lines(r: dict) -> list[str]:
    shm, disk = r["shm"], r.get("disk")
    lines = [f"{shm['path']}: not present" if shm["total_mib"] is None else
             f"{shm['path']}: {shm['total_mib']:,.0f} MiB, {shm['free_mib']:,.0f} free: room for "
             f"{shm['batches_fit']:,} batches of 64 CIFAR images ({shm['batch_mib']:.2f} MiB each)"]
    if disk:
        cold = "cold, page cache dropped" if disk["cold"] else "may be cached"
        lines.append(f"disk ({disk['folder']}): sequential {disk['sequential_mb_s']:,.0f} MB/s, "
                     f"random 32 KiB {disk['random_32k_mb_s']:,.0f} MB/s ({cold}); "
                     "the lecture: ~150 MB/s for a disk, ~3,000 MB/s for NVMe")
    return lines


def format_report(r: dict) -> str:
    """All sections of `env.report()` as lines of text."""
    return "\n".join(build_lines(r.get("build")) + cpu_lines(r) + gpu_lines(r) + memory_lines(r))
