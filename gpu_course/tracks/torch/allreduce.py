"""All-reduce against message size: time and nccl-tests' bus bandwidth (gloo or NCCL), under
torchrun or `python -m gpu_course.tracks.torch.allreduce --procs 2` (starts them itself)."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist

from ...env.text import LECTURE_BANDWIDTHS
from ...scale.localhosts import exit_now, free_port
from ...scale.scaling import bus_bandwidth

KiB, MiB = 2**10, 2**20
SIZES = tuple(4 * KiB * 4**i for i in range(9))          # 4 KiB .. 256 MiB
QUICK_SIZES = tuple(4 * KiB * 4**i for i in range(6))    # 4 KiB .. 4 MiB


def measure(sizes=SIZES, device=None, min_seconds: float = 0.2, max_iters: int = 50,
            blocks: int = 5) -> list[dict]:
    """Time all-reduces of each size on every rank: the median block, the slowest rank's."""
    device = torch.device(device or ("cuda" if dist.get_backend() == "nccl" else "cpu"))
    k = dist.get_world_size()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    rows = []
    for nbytes in sizes:
        x = torch.ones(max(1, nbytes // 4), dtype=torch.float32, device=device)
        for _ in range(2):  # warm-up: connections, buffers
            dist.all_reduce(x)
        sync()
        t = _slowest(_timed(x, 1, sync), device)  # one, to choose how many fill min_seconds
        iters = int(max(3, min(max_iters, min_seconds / blocks / max(t, 1e-6))))  # same on every rank
        times = sorted(_slowest(_timed(x, iters, sync) / iters, device) for _ in range(blocks))
        t, nbytes = statistics.median(times), x.numel() * 4
        rows.append({"bytes": nbytes, "processes": k, "iters": iters, "blocks": blocks,
                     "time_s": t, "time_min_s": times[0], "time_max_s": times[-1],
                     "algbw_GBps": nbytes / t / 1e9,
                     "busbw_GBps": bus_bandwidth(nbytes, t, k) / 1e9})
    return rows


def _slowest(seconds: float, device) -> float:
    """The largest of every rank's time: a collective ends with its slowest rank."""
    t = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def _timed(x, iters: int, sync) -> float:
    dist.barrier()  # start together, or the first rank times the others' late arrival
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(x)
    sync()  # NCCL calls return before the GPU is done: wait for it
    return time.perf_counter() - t0


def run_local(procs: int = 2, sizes=SIZES, backend: str | None = None,
              min_seconds: float = 0.2) -> list[dict]:
    """Start `procs` processes on 127.0.0.1, measure, return rank 0's rows."""
    return spawn(measure, procs, dict(sizes=tuple(sizes), min_seconds=min_seconds), backend)


def spawn(fn, procs: int, kwargs: dict, backend: str | None = None) -> list[dict]:
    """fn(**kwargs) in `procs` processes on 127.0.0.1, one process group; rank 0's rows."""
    backend = backend or ("nccl" if torch.cuda.device_count() >= procs else "gloo")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="gpu_course_spawn_") as tmp:
        out = Path(tmp) / "rows.json"
        torch.multiprocessing.start_processes(
            _local_worker, args=(procs, port, backend, fn, kwargs, str(out)), nprocs=procs,
            start_method="spawn")
        return json.loads(out.read_text())


def _local_worker(rank: int, procs: int, port: int, backend: str, fn, kwargs, out):
    if backend == "gloo":  # the processes share this host's cores
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // procs))
    else:
        torch.cuda.set_device(rank)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=procs)
    try:
        rows = fn(**kwargs)
        if rank == 0:
            Path(out).write_text(json.dumps(rows))
        dist.barrier()  # no rank tears the group down while another still uses it
    finally:
        dist.destroy_process_group()
    exit_now(0)  # a spawned process would otherwise finalize with gloo's threads (SIGABRT)


def collect(fn, procs: int, kwargs: dict) -> list[dict] | None:
    """fn(**kwargs) as this rank of a torchrun job, else in `procs` processes started here."""
    if "RANK" not in os.environ:
        print(f"no torchrun: starting {procs} processes on 127.0.0.1", flush=True)
        return spawn(fn, procs, kwargs)
    if torch.cuda.is_available():
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    try:
        rows = fn(**kwargs)
    finally:
        rank = dist.get_rank()
        dist.destroy_process_group()
    return rows if rank == 0 else None


def format_rows(rows: list[dict]) -> str:
    lines = [f"{'size':>10} {'time (median)':>14} {'blocks min-max':>19} {'algbw GB/s':>11} "
             f"{'busbw GB/s':>11}"]
    for r in rows:
        size = f"{r['bytes'] / MiB:.0f} MiB" if r["bytes"] >= MiB else f"{r['bytes'] / KiB:.0f} KiB"
        spread = f"{r['time_min_s'] * 1e3:.3f}-{r['time_max_s'] * 1e3:.3f}ms"
        lines.append(f"{size:>10} {r['time_s'] * 1e3:>12.3f}ms {spread:>19} "
                     f"{r['algbw_GBps']:>11.3f} {r['busbw_GBps']:>11.3f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", type=int, default=2, help="without torchrun: processes to start")
    parser.add_argument("--quick", action="store_true", help="sizes up to 4 MiB only")
    parser.add_argument("--out", type=Path, help="write rank 0's rows here as JSON")
    args = parser.parse_args(argv)
    rows = collect(measure, args.procs, {"sizes": QUICK_SIZES if args.quick else SIZES})
    if rows is None:
        return 0
    print(f"all-reduce over {rows[0]['processes']} processes (float32):")
    print(format_rows(rows))
    print("\nthe lecture's system bandwidths:")
    for link, gbps in LECTURE_BANDWIDTHS:
        print(f"  {link:<32} {gbps:>5.1f} GB/s")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    if "RANK" in os.environ:  # a torchrun worker: no interpreter finalization (exit_now)
        exit_now(main())
    sys.exit(main())
