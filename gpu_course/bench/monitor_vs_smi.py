"""Does the monitor agree with nvidia-smi? Read both at the same moments and compare.

    python -m gpu_course.bench.monitor_vs_smi --seconds 20 [--load]

With --load, a PyTorch matrix-multiply loop keeps GPU 0 busy for most of the window
(busy and idle stretches alternate, so agreement is checked at both ends of the scale).
Prints one row per GPU: mean |monitor - nvidia-smi| for utilisation (points) and memory
(MiB), and exits 1 when they differ by more than the tolerances. Needs a GPU.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time

from .. import nvml

FIELDS = ["index", "utilization.gpu", "memory.used"]


def _busy_gpu(stop: threading.Event) -> None:
    import torch  # only for the optional load
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    while not stop.is_set():
        t_end = time.monotonic() + 2.0
        while time.monotonic() < t_end and not stop.is_set():  # ~2 s busy
            a @ a
        torch.cuda.synchronize()
        stop.wait(1.0)  # ~1 s idle


def compare(seconds: float, interval: float = 0.5) -> dict:
    """Pairs of (monitor, nvidia-smi) readings taken back to back, per GPU."""
    pairs: dict[int, list] = {}
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        ours = {i: nvml.sample(i) for i in range(nvml.gpu_count())}
        smi = nvml.nvidia_smi_query(FIELDS) or []
        for row in smi:
            i = int(row["index"])
            if i in ours and ours[i]["util_gpu"] is not None:
                pairs.setdefault(i, []).append(
                    (ours[i]["util_gpu"], row["utilization.gpu"],
                     ours[i]["mem_used_mib"], row["memory.used"]))
        time.sleep(interval)
    return pairs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--load", action="store_true", help="keep GPU 0 busy with PyTorch")
    parser.add_argument("--util-tolerance", type=float, default=5.0, help="points")
    parser.add_argument("--mem-tolerance", type=float, default=0.02, help="fraction")
    args = parser.parse_args(argv)
    if not nvml.available() or nvml.nvidia_smi_query(["index"]) is None:
        print(f"needs a GPU with NVML and nvidia-smi: {nvml.init_error() or 'nvidia-smi missing'}")
        return 2
    stop = threading.Event()
    loader = threading.Thread(target=_busy_gpu, args=(stop,), daemon=True) if args.load else None
    if loader:
        loader.start()
        time.sleep(1.0)
    try:
        pairs = compare(args.seconds)
    finally:
        stop.set()
        if loader:
            loader.join()
    ok = True
    print("gpu  samples  util_ours  util_smi  |diff| pts  mem_ours MiB  |diff| MiB")
    for i, rows in sorted(pairs.items()):
        du = statistics.mean(abs(a - b) for a, b, _, _ in rows)
        dm = statistics.mean(abs(c - d) for _, _, c, d in rows)
        mem = statistics.mean(c for _, _, c, _ in rows)
        print(f"{i:>3}  {len(rows):>7}  {statistics.mean(r[0] for r in rows):>9.1f}  "
              f"{statistics.mean(r[1] for r in rows):>8.1f}  {du:>10.1f}  {mem:>12,.0f}  {dm:>10.0f}")
        ok &= du <= args.util_tolerance and dm <= max(64.0, args.mem_tolerance * mem)
    print("agree" if ok else "DISAGREE")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
