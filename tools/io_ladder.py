"""The I/O ladder on this machine: loose JPEGs -> more workers -> pre-resized -> packed ->
in memory, on one model, with the course's monitor, timer and run records; the disk's
own read speed (sequential vs random, cold); and the diagnosis of a deliberately
input-bound and a deliberately compute-bound run.

    python -m tools.io_ladder                    # the track this environment has
    python -m tools.io_ladder --quick            # a smaller folder, shorter runs

Targets on a 2-core CPU (checked and printed): 2 workers >= 1.7x the samples/s of 1
worker on loose JPEGs; the packed, pre-resized format >= 5x loose JPEGs with one worker;
the diagnosis says input-bound for heavy augmentation on a tiny model and compute-bound
for the mock loader. The results also go to <runs-dir>/io-ladder-<engine>.json.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import warnings
from pathlib import Path

from gpu_course.analyse import diagnose
from gpu_course.measure import records
from gpu_course.config import Experiment
from gpu_course.data import disk, folder, packed

TARGET_WORKERS = 1.7   # 2 workers vs 1, loose JPEGs
TARGET_PACKED = 5.0    # packed vs loose JPEGs, 1 worker


def disk_report(index: folder.FolderIndex, scratch: Path, size_mb: int = 256) -> list:
    """The disk's read speed: a scratch file read cold in 1 MiB blocks, sequential and
    random, and in 32 KiB blocks at random (a JPEG's size); the dataset's JPEGs read
    cold in sorted and in random order; one warm read for comparison (memory)."""
    scratch.parent.mkdir(parents=True, exist_ok=True)
    with open(scratch, "wb") as f:  # incompressible, so no layer can cheat
        for _ in range(size_mb):
            f.write(os.urandom(1 << 20))
    try:
        files = [index.path(i) for i in range(min(len(index), 2000))]
        rows = [disk.read_bandwidth(scratch, "sequential"),
                disk.read_bandwidth(scratch, "random"),
                disk.read_bandwidth(scratch, "random", block_size=32 << 10),
                disk.read_files(files, "sequential"),
                disk.read_files(files, "random"),
                disk.read_bandwidth(scratch, "sequential", cold=False)]
    finally:
        scratch.unlink()
    return rows


def rungs(engine: str, cfg: Experiment, workers: list, cache: Path) -> list:
    """[(name, cfg, train_iter factory)] for the track."""
    gc = _adapter(engine)
    io = _io(engine)
    out = []
    for w in workers:
        c = cfg.replace(name=f"loose, {w} worker{'s' if w > 1 else ''}", num_workers=w)
        out.append((c, lambda c=c: io.io_loaders(c, "loose", cache_dir=cache)))
    for kind, label in (("preresized", "pre-resized"), ("packed", "packed"),
                        ("memory", "in memory")):
        c = cfg.replace(name=f"{label}, 1 worker", num_workers=1)
        out.append((c, lambda c=c, kind=kind: io.io_loaders(c, kind, cache_dir=cache)))
    if engine == "gluon":
        from gpu_course.tracks.gluon.recordio import RecordIter, ensure_recordio
        c = cfg.replace(name="packed, record iterator (1 thread)", num_workers=1)

        def record_iter(c=c):
            train_index, _ = io.folder_split(c)
            rec = ensure_recordio(train_index, c.image_size, cache_dir=cache)
            _, val_iter = io.io_loaders(c, "memory", cache_dir=cache)
            return RecordIter(rec, c.batch_size, c.image_size, threads=1, seed=c.seed), val_iter
        out.append((c, record_iter))
    elif gc.gpu_count():
        c = cfg.replace(name="data on the GPU", num_workers=0)
        out.append((c, lambda c=c: io.io_loaders(c, "gpu", cache_dir=cache)))
    return out


def best_of(repeats: int, make, train, cfg: Experiment, runs_dir: Path):
    """Train `repeats` times (fresh loaders each time) and keep the fastest run: other
    processes on a shared machine only ever slow a run down."""
    from gpu_course.analyse import metrics
    runs = []
    for _ in range(repeats):
        train_iter, val_iter = make()  # pre-processing happens here, before the clock
        runs.append(train(cfg, train_iter=train_iter, val_iter=val_iter, runs_dir=runs_dir,
                          progress=False, verbose=False))
    return max(runs, key=metrics.samples_per_sec)


def run_ladder(engine: str, cfg: Experiment, workers: list, cache: Path, runs_dir: Path,
               input_steps: int = 30, repeats: int = 2) -> dict:
    """Each rung twice over: training (the model's samples/s) and its input ceiling (mock
    trainer: the same loader, batches dropped). On a CPU-only machine the model and the
    loader share the cores, so the input ceiling shows what each rung does for the
    input pipeline; training shows what is left of it next to the model."""
    gc = _adapter(engine)
    results = {}
    print(f"  {'rung':<38} {'training':>10} {'input ceiling':>14} {'data wait':>10}")
    for c, make in rungs(engine, cfg, workers, cache):
        run = best_of(repeats, make, gc.train, c, runs_dir)
        feed = best_of(repeats, make, gc.train,
                       c.replace(name=f"{c.name}: mock trainer", mock="trainer", epochs=1,
                                 max_steps=input_steps), runs_dir)
        results[c.name] = {**_row(run), "input_ceiling": _row(feed)["samples_per_sec"]}
        r = results[c.name]
        print(f"  {c.name:<38} {r['samples_per_sec']:>10,.0f} {r['input_ceiling']:>14,.0f} "
              f"{r['data_wait_share']:>10.0%}", flush=True)
    return results


def diagnosis_check(engine: str, cfg: Experiment, cache: Path, runs_dir: Path,
                    repeats: int = 2) -> dict:
    """A deliberately input-bound run (heavy augmentation, tiny model, one worker) and a
    deliberately compute-bound one (its mock loader); each diagnosed, the first with
    both ceilings (its mock loader and mock trainer)."""
    gc = _adapter(engine)
    io = _io(engine)
    heavy = cfg.replace(name="heavy augmentation", augment="heavy", num_workers=1)
    runs = {}
    for name, mock in (("heavy augmentation", "none"), ("mock loader", "loader"),
                       ("mock trainer", "trainer")):
        runs[name] = best_of(repeats, lambda: io.io_loaders(heavy, "loose", cache_dir=cache),
                             gc.train, heavy.replace(name=name, mock=mock), runs_dir)
    verdicts = {
        "heavy augmentation": (diagnose.diagnose(runs["heavy augmentation"], search=False,
                                                 compute_ceiling=runs["mock loader"],
                                                 input_ceiling=runs["mock trainer"]),
                               "input-bound"),
        "mock loader": (diagnose.diagnose(runs["mock loader"], search=False), "compute-bound"),
    }
    out = {}
    for name, (d, expected) in verdicts.items():
        out[name] = {"expected": expected, "verdict": d.verdict, "next_rung": d.next_rung,
                     "right": d.verdict == expected, "text": str(d)}
        print(f"\n{d}", flush=True)
    return out


def _row(run) -> dict:
    from gpu_course.analyse import metrics
    n = diagnose.measure(run)
    return {"samples_per_sec": metrics.samples_per_sec(run), "data_wait_share": n["wait_share"],
            "cpu_percent": n["cpu_percent"], "run": str(run.path)}


def _adapter(engine: str):
    from gpu_course.ladder import adapter
    return adapter(engine)


def _io(engine: str):
    import importlib
    return importlib.import_module(f"gpu_course.tracks.{'gluon' if engine == 'gluon' else 'torch'}"
                                   ".io_data")


def _default_engine() -> str:
    return "gluon" if importlib.util.find_spec("mxnet") else "pytorch"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engine", choices=("gluon", "pytorch"), default=None)
    p.add_argument("--data", type=Path, default=None, help="image folder (generated if absent)")
    p.add_argument("--images", type=int, default=3000, help="images to generate")
    p.add_argument("--train-size", type=int, default=1920, help="training images per epoch")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--size", type=int, default=32, help="training image size (pixels)")
    p.add_argument("--model", default="tiny")
    p.add_argument("--workers", default="1,2", help="worker counts for loose JPEGs")
    p.add_argument("--runs-dir", type=Path, default=None)
    p.add_argument("--quick", action="store_true", help="1,000 images, 640 per epoch")
    p.add_argument("--skip-disk", action="store_true")
    p.add_argument("--repeats", type=int, default=2,
                   help="runs per measurement; the fastest is kept (default 2)")
    p.add_argument("--threads", type=int, default=None,
                   help="intra-op threads of the training process (default: the framework's)")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore", message="NVML unavailable")  # said once below instead
    engine = args.engine or _default_engine()
    if args.threads:  # before the framework is imported: MXNet reads it at start-up
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
        if engine == "pytorch":
            import torch
            torch.set_num_threads(args.threads)
    if args.quick:
        args.images, args.train_size = 1000, 640
    root = folder.generate_folder(args.data or folder.default_folder().with_name(
        f"io-bench-{args.images}"), folder.Photos(per_class=max(1, args.images // 10)))
    runs_dir = Path(args.runs_dir or records.default_runs_dir()) / \
        f"io-ladder-{engine}-{time.strftime('%Y%m%d-%H%M%S')}"
    cache = packed.prepared_dir(root)
    index = folder.scan_folder(root)
    print(f"{engine}: {len(index):,} JPEGs in {root}; {os.cpu_count()} CPU cores; "
          f"model {args.model} at {args.size} px; runs in {runs_dir}", flush=True)
    result = {"engine": engine, "images": len(index), "cpu_count": os.cpu_count(),
              "size": args.size, "model": args.model, "threads": args.threads,
              "repeats": args.repeats,
              "load_average_before": os.getloadavg()}
    if not args.skip_disk:
        print("\nDisk (the lecture: ~150 MB/s for a disk, ~3,000 MB/s for NVMe):")
        rows = disk_report(index, cache / "read-test.bin")
        for row in rows:
            print(f"  {row}")
        result["disk"] = [{"what": r.pattern, "mb_per_s": r.mb_per_s, "cold": r.evicted}
                          for r in rows]
    cfg = Experiment(name="io", engine=engine, dataset="folder", data_dir=str(root),
                     image_size=args.size, model=args.model, batch_size=64,
                     train_size=args.train_size, test_size=256, epochs=args.epochs,
                     num_gpus=1, warmup_steps=5, monitor_interval=0.5)
    workers = [int(w) for w in args.workers.split(",")]
    print("\nThe ladder (samples/s after warm-up; the same model for every rung):")
    ladder = run_ladder(engine, cfg, workers, cache, runs_dir, repeats=args.repeats)
    result["ladder"] = ladder
    first = next(iter(ladder.values()))  # loose JPEGs, workers[0]
    checks = {}
    for what, key in (("training", "samples_per_sec"), ("input pipeline", "input_ceiling")):
        two = ladder.get("loose, 2 workers")
        if two and workers[0] == 1:
            checks[f"{what}: 2 workers / 1 worker (loose)"] = (two[key] / first[key],
                                                                TARGET_WORKERS)
        packed_best = max(v[key] for k, v in ladder.items() if k.startswith("packed"))
        checks[f"{what}: packed / loose (1 worker)"] = (packed_best / first[key], TARGET_PACKED)
    result["diagnosis"] = diagnosis_check(engine, cfg, cache, runs_dir, args.repeats)
    print("\nTargets:")
    for name, (value, target) in checks.items():
        print(f"  {name}: x{value:.2f} (target >= x{target}) "
              f"{'OK' if value >= target else 'BELOW TARGET'}")
    for name, d in result["diagnosis"].items():
        print(f"  diagnosis of {name!r}: {d['verdict']} (expected {d['expected']}) "
              f"{'OK' if d['right'] else 'WRONG'}")
    result["checks"] = {k: {"value": v, "target": t} for k, (v, t) in checks.items()}
    result["load_average_after"] = os.getloadavg()
    print(f"load average (1 min) before/after: {result['load_average_before'][0]:.1f} / "
          f"{result['load_average_after'][0]:.1f} on {os.cpu_count()} cores (other processes "
          "on the machine slow every number down)")
    runs_dir.mkdir(parents=True, exist_ok=True)
    out = runs_dir / f"io-ladder-{engine}.json"
    out.write_text(json.dumps(result, indent=2, default=str))
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
