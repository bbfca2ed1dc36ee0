"""Does the monitor agree with nvidia-smi? Read both at the same moments and compare.

    python -m tools.monitor_vs_smi --seconds 20 [--load] [--out pairs.csv]

With --load, a PyTorch matrix-multiply loop keeps GPU 0 busy for most of the window
(busy and idle stretches alternate, so agreement is checked at both ends of the scale).
Each round reads the monitor's `nvml.sample` and `nvidia-smi --query-gpu` back to back
(nvidia-smi takes ~50-100 ms to answer, so a quantity that moves within that time, the
SM clock under a changing load, can differ for a reason other than a wrong reading).
Prints one row per GPU and quantity: the mean of each side, the mean, median and largest
|monitor - nvidia-smi|, and the tolerance; exits 1 when a median difference exceeds its
tolerance. The median judges: a wrong reading moves it, a clock read on either side of
one change does not (on an H200 going idle, one pair of 15 read 1980 MHz against 420, and
moved the mean past its tolerance). Needs a GPU.
"""
from __future__ import annotations

import argparse
import csv
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from gpu_course.measure import nvml

#: (the monitor's key, nvidia-smi's field, unit, tolerance as (absolute, relative))
QUANTITIES = (
    ("util_gpu", "utilization.gpu", "%", (5.0, 0.0)),
    ("mem_used_mib", "memory.used", "MiB", (64.0, 0.02)),
    ("power_w", "power.draw", "W", (15.0, 0.05)),
    ("sm_clock_mhz", "clocks.sm", "MHz", (30.0, 0.03)),
)
FIELDS = ["index"] + [smi for _, smi, _, _ in QUANTITIES]



def nvidia_smi_query(fields, timeout=10.0):
    """``nvidia-smi --query-gpu=FIELDS`` as a dict per GPU; None when it fails."""
    if isinstance(fields, str):
        fields = fields.split(",")
    fields = [str(field).strip() for field in fields]
    bad = [f for f in fields if not re.fullmatch(r"[A-Za-z0-9_.]+", f)]
    if not fields or bad:
        raise ValueError(f"nvidia-smi fields {bad or fields!r}: expected names like 'utilization.gpu'")
    try:
        command = ["nvidia-smi", "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
    except (OSError, subprocess.SubprocessError):   # not installed, timed out or failed
        return None
    rows = []
    for line in done.stdout.splitlines():
        values = [value.strip() for value in line.split(",")]
        if len(values) == len(fields):   # a GPU name with a comma would not parse
            rows.append({f: _smi_value(v) for f, v in zip(fields, values)})
    return rows


def _smi_value(text):
    if text in ("", "N/A", "[N/A]", "[Not Supported]", "Not Supported"):
        return None
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text

def _busy_gpu(stop: threading.Event) -> None:
    import torch  # only for the optional load
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    while not stop.is_set():
        t_end = time.monotonic() + 2.0
        while time.monotonic() < t_end and not stop.is_set():  # ~2 s busy
            a @ a
        torch.cuda.synchronize()
        stop.wait(1.0)  # ~1 s idle


def compare(seconds: float, interval: float = 0.5, ours=None, smi=None,
            gpus=None) -> list[dict]:
    """One row per GPU per round: each quantity as the monitor and nvidia-smi read it
    back to back. `ours(index)`, `smi(fields)` and `gpus` default to `nvml.sample`,
    `nvidia_smi_query` and every GPU NVML sees (tests pass fakes)."""
    ours, smi = ours or nvml.sample, smi or nvidia_smi_query
    gpus = range(nvml.gpu_count()) if gpus is None else gpus
    rows = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        t = time.monotonic() - t0
        readings = {i: ours(i) for i in gpus}
        for theirs in smi(FIELDS) or []:
            i = int(theirs["index"])
            if i not in readings:
                continue
            row = {"t": round(t, 3), "gpu": i}
            for key, field, _, _ in QUANTITIES:
                row[f"{key}_ours"], row[f"{key}_smi"] = readings[i].get(key), theirs.get(field)
            rows.append(row)
        time.sleep(interval)
    return rows


def agreement(rows: list[dict]) -> list[dict]:
    """Per GPU and quantity: samples, means of both sides, mean and max |difference|,
    the tolerance at this scale, and whether the median difference is within it."""
    out = []
    for gpu in sorted({r["gpu"] for r in rows}):
        for key, field, unit, (absolute, relative) in QUANTITIES:
            pairs = [(r[f"{key}_ours"], r[f"{key}_smi"]) for r in rows if r["gpu"] == gpu
                     and r[f"{key}_ours"] is not None and r[f"{key}_smi"] is not None]
            if not pairs:
                out.append({"gpu": gpu, "quantity": field, "unit": unit, "samples": 0,
                            "agrees": None})
                continue
            diffs = [abs(a - b) for a, b in pairs]
            ours_mean = statistics.mean(a for a, _ in pairs)
            tolerance = max(absolute, relative * ours_mean)
            out.append({"gpu": gpu, "quantity": field, "unit": unit, "samples": len(pairs),
                        "ours": ours_mean, "smi": statistics.mean(b for _, b in pairs),
                        "mean_diff": statistics.mean(diffs),
                        "median_diff": statistics.median(diffs), "max_diff": max(diffs),
                        "tolerance": tolerance,
                        "agrees": statistics.median(diffs) <= tolerance})
    return out


def format_table(result: list[dict]) -> str:
    lines = [f"{'gpu':>3}  {'quantity':<16} {'samples':>7}  {'monitor':>9}  {'nvidia-smi':>10}"
             f"  {'mean |diff|':>11}  {'median |diff|':>13}  {'max |diff|':>10}  {'tolerance':>9}"]
    for r in result:
        if not r["samples"]:
            lines.append(f"{r['gpu']:>3}  {r['quantity']:<16} {0:>7}  (not reported by one side)")
            continue
        lines.append(f"{r['gpu']:>3}  {r['quantity']:<16} {r['samples']:>7}  {r['ours']:>9.1f}  "
                     f"{r['smi']:>10.1f}  {r['mean_diff']:>11.2f}  {r['median_diff']:>13.2f}  "
                     f"{r['max_diff']:>10.1f}  "
                     f"{r['tolerance']:>6.1f} {r['unit']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--load", action="store_true", help="keep GPU 0 busy with PyTorch")
    parser.add_argument("--out", type=Path, help="write every pair of readings to this CSV")
    args = parser.parse_args(argv)
    if not nvml.available() or nvidia_smi_query(["index"]) is None:
        print(f"needs a GPU with NVML and nvidia-smi: {nvml.init_error() or 'nvidia-smi missing'}")
        return 2
    stop = threading.Event()
    loader = threading.Thread(target=_busy_gpu, args=(stop,), daemon=True) if args.load else None
    if loader:
        loader.start()
        time.sleep(1.0)
    try:
        rows = compare(args.seconds, args.interval)
    finally:
        stop.set()
        if loader:
            loader.join()
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["t", "gpu"])
            writer.writeheader()
            writer.writerows(rows)
    result = agreement(rows)
    print(format_table(result))
    checked = [r for r in result if r["agrees"] is not None]
    ok = bool(checked) and all(r["agrees"] for r in checked)
    print("agree" if ok else "DISAGREE")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
