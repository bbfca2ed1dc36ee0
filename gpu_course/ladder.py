"""The course's main job: walk one training job up the ladder of fixes and compare.

Each rung changes one thing on top of the rung before it, as the talk does:
naive -> more loader workers -> hybridize/compile -> lower precision -> large batch with
a large-batch optimizer -> LR schedule -> (PyTorch) data on the GPU -> the whole step
as one CUDA graph -> more GPUs. Rungs are plain `Experiment`s, so a notebook can run any
one of them by itself.

The naive rung is the way a first script is written, and stays so: batch 64 and one
loader worker that crops, flips and normalises each image in Python. The host is its
limit: that worker (about 13k images/s on one core of the course's CPU, issue 16) and,
on a fast GPU, the Python dispatch of each operator of a small step (on an H200 the
naive rung ran at 7.7k images/s with 12% of its steps' time waiting for data and 32%
GPU-Util: see gpu_course/reference/pytorch-h200).

On a CPU the loader workers and the training process share the cores, so the ladder
gives the training process the cores the workers leave (`cores.training_threads`):
PyTorch sets them per run; MXNet fixes its threads when it is imported, so its rung runs
in a process of its own, and only where MXNet's own count differs.
"""
from __future__ import annotations

import datetime as _dt
import importlib
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .config import Experiment
from .cores import mxnet_threads, training_threads
from .flags import to_flags
from .records import OutOfMemory, Run, default_runs_dir, load_run


LONG_EPOCHS = 30  # the tuned rung on a GPU: long enough for the monitor to see it
CPU_MODEL = "tiny"  # on a CPU: a network that learns in minutes (ResNet-20 does ~400 images/s)
CPU_ACCURACY = 0.40  # what the CPU ladder's last rung must reach (`make run` checks it)
# Rungs whose effect only a GPU shows, left out of a CPU ladder: (rung, lesson, why)
GPU_ONLY = {
    "gluon": [("float16", "lesson 04", "a CPU has no fast float16 convolutions"),
              ("large-batch", "lesson 05", "a large batch pays by filling a GPU; a CPU "
               "is as busy at batch 64"),
              ("more GPUs", "lesson 07", "there is no second device")],
    "pytorch": [("large-batch", "lesson 05", "a large batch pays by filling a GPU; a CPU "
                 "is as busy at batch 64"),
                ("cuda-graphs", "lesson 03", "CUDA graphs need CUDA"),
                ("more GPUs", "lesson 07", "there is no second device")],
}


@dataclass(frozen=True)
class Rung:
    name: str
    cfg: Experiment
    change: str  # the one thing this rung changes, in words
    limit: str | None = None  # what bounds this rung's speed, where it is known
    env: tuple = ()  # (name, value) a new process must start with: the rung runs in a child


def adapter(engine: str):
    """The framework adapter module for an engine, with a clear error when it's missing."""
    module = {"gluon": "gpu_course.gluon", "pytorch": "gpu_course.torch"}.get(engine)
    if module is None:
        raise ValueError(f"engine={engine!r} is not allowed; allowed: gluon, pytorch")
    framework = "mxnet" if engine == "gluon" else "torch"
    try:
        importlib.import_module(framework)
    except ImportError:
        raise SystemExit(f"engine {engine!r} needs {framework}, which is not installed in this "
                         f"environment; use `make run ENGINE={engine}` (it builds the "
                         f"{engine} environment) or that environment's gpu-course") from None
    return importlib.import_module(module)


def default_sizes(gpus: int, quick: bool) -> dict:
    """Dataset size and epochs by what the machine can do in reasonable time."""
    if quick:
        return {"train_size": 1024, "test_size": 512, "epochs": 1}
    if gpus == 0:  # the tiny net at ~2,300 images/s on 2 cores: ~40 s a rung, and it learns
        return {"train_size": 20_000, "test_size": 2_000, "epochs": 4}
    return {"train_size": 50_000, "test_size": 10_000, "epochs": 3}


def rungs(engine: str, gpus: int, cpu_count: int | None = None, quick: bool = False,
          **sizes) -> list[Rung]:
    """The ladder for an engine on a machine with `gpus` GPUs (0 = CPU only)."""
    cpu_count = cpu_count or os.cpu_count() or 1
    epochs_given = sizes.get("epochs") is not None
    sizes = {**default_sizes(gpus, quick), **{k: v for k, v in sizes.items() if v is not None}}
    workers = max(2, cpu_count - 3)  # the talk's advice: cpu_count() - 3, at least 2
    threads = training_threads(cpu_count, workers)  # the cores the loader workers leave
    large = 640 if engine == "gluon" else 1024
    if gpus == 0 or quick:
        large = 256  # a CPU gains nothing from huge batches, and quick mode must be quick
    model = {"model": CPU_MODEL} if gpus == 0 else {}
    base = Experiment(name="naive", engine=engine, batch_size=64, num_workers=1,
                      warmup_steps=2 if quick else 5, num_gpus=min(gpus, 1) or 1,
                      monitor_interval=0.2 if quick else 0.5, **model, **sizes)
    cpu = gpus == 0  # the rungs a CPU can show; GPU_ONLY says which are left out
    ladder = [Rung("naive", base, "batch 64, one loader worker, float32, imperative",
                   limit="the host: one loader worker crops, flips and normalises each "
                         "image in Python, and the training process dispatches every "
                         "operator of a 64-image step from Python")]

    def add(name: str, change: str, env: tuple = (), **fields) -> None:
        prev = ladder[-1].cfg
        ladder.append(Rung(name, prev.replace(name=name, **fields), change, env=env))

    if engine == "gluon":
        add("workers", f"DataLoader(num_workers={workers})", num_workers=workers)
        add("hybridize", "net.hybridize(static_alloc=True, static_shape=True)", graph="static")
        if cpu:
            add("lr-schedule", "cosine LR schedule", lr_scheduler="cosine")
            if threads != mxnet_threads(cpu_count)[0]:  # else MXNet's count is the rung's
                # MXNet fixes its OpenMP threads at import: a process of its own
                add("threads", f"OMP_NUM_THREADS={threads}: the {cpu_count} cores less the "
                    f"{workers} loader workers, in a process of its own", threads=threads,
                    env=(("OMP_NUM_THREADS", str(threads)),))
            return ladder
        add("float16", "net.cast('float16') + multi_precision=True", dtype="float16")
        add("large-batch", f"batch {large} per device, LBSGD with linear warm-up, lr scaled",
            batch_size=large, optimizer="lbsgd", lr_base_batch=128,
            warmup_epochs=min(1.0, sizes["epochs"]),
            optimizer_params=(("warmup_strategy", "linear"),))
        add("lr-schedule", "cosine LR schedule after the warm-up", lr_scheduler="cosine",
            optimizer="sgd", optimizer_params=())
    else:
        pin = gpus > 0  # page-locked memory only speeds up copies to a GPU
        add("workers", f"DataLoader(num_workers={workers}, pin_memory={pin}, "
            "persistent_workers=True)", num_workers=workers, pin_memory=pin,
            persistent_workers=True)
        if cpu:
            add("threads", f"torch.set_num_threads({threads}): the {cpu_count} cores less the "
                f"{workers} loader workers (PyTorch's default: a thread a core)",
                threads=threads)
        add("compile", "torch.compile(net)", graph="hybrid")
        add("bfloat16", "autocast(bfloat16) + channels_last", dtype="bfloat16",
            channels_last=True)
        if cpu:
            add("lr-schedule", "one-cycle LR schedule", lr_scheduler="onecycle")
            add("data-on-gpu", "whole dataset and augmentation in one tensor (on a CPU: "
                f"in its memory); no loader workers, so {cpu_count} threads", data_on_gpu=True,
                num_workers=0, pin_memory=False, persistent_workers=False,
                threads=training_threads(cpu_count, 0))
            return ladder
        # eta 0.1 keeps LARS's layer-wise rates on SGD's lr scale (the paper's 0.001
        # expects a ~100x larger lr, at which the un-adapted biases and BN diverge)
        add("large-batch", f"batch {large}, LARS with linear warm-up, lr scaled",
            batch_size=large, optimizer="lars", lr_base_batch=128,
            warmup_epochs=min(1.0, sizes["epochs"]), optimizer_params=(("eta", 0.1),))
        add("lr-schedule", "one-cycle LR schedule", lr_scheduler="onecycle", warmup_epochs=0)
        add("data-on-gpu", "whole dataset and augmentation on the GPU", data_on_gpu=True,
            num_workers=0, pin_memory=False, persistent_workers=False)
        # an epoch of 50k images lasts ~0.3 s on an H200 (174k images/s, measured
        # 2026-11-23): 30 of them give the 2 Hz monitor ~17 samples of steady training
        long = {} if gpus == 0 or quick or epochs_given else \
            {"epochs": max(sizes["epochs"], LONG_EPOCHS)}
        add("cuda-graphs", "the whole step (batch cut, forward, backward, LARS) as one CUDA "
            "graph: one launch a step" + (f", over {LONG_EPOCHS} epochs" if long else ""),
            graph="static", **long)
    if gpus > 1:
        # DDP keeps the compiled model (the whole-step graph is single-process)
        add("all-gpus", f"{gpus} GPUs", num_gpus=gpus,
            **({"graph": "hybrid"} if engine == "pytorch" else {}))
    return ladder


def run_ladder(engine: str, quick: bool = False, runs_dir: str | Path | None = None,
               out: str | Path | None = None, only: list[str] | None = None,
               progress: bool = False, **sizes) -> tuple[list[Run], dict]:
    """Run every rung (a rung that runs out of memory or fails is recorded as such and
    the ladder goes on; Ctrl-C stops it), then write the report. Returns (runs, report
    paths)."""
    gc = adapter(engine)
    gpus = gc.gpu_count()
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    runs_dir = Path(runs_dir or default_runs_dir()) / f"ladder-{engine}-{stamp}"
    selected = rungs(engine, gpus, quick=quick, **sizes)
    if only:
        unknown = set(only) - {r.name for r in selected}
        if unknown:
            raise ValueError(f"unknown rung(s) {sorted(unknown)}; allowed: "
                             f"{', '.join(r.name for r in selected)}")
        selected = [r for r in selected if r.name in only]
    runs = []
    for rung in selected:
        print(f"\n=== rung {rung.name}: {rung.change}", flush=True)
        if rung.limit:
            print(f"    limited by {rung.limit}", flush=True)
        try:
            runs.append(run_in_child(rung, runs_dir, progress) if rung.env else
                        gc.train(rung.cfg, runs_dir=runs_dir, progress=progress))
        except Exception as err:  # recorded as oom or failed by the harness; the next rung runs
            what = "out of memory" if isinstance(err, OutOfMemory) else \
                f"failed with {type(err).__name__}"
            print(f"rung {rung.name}: {what}, going on ({err})", flush=True)
            if getattr(err, "run_path", None):
                runs.append(load_run(err.run_path))
    from . import report
    paths = report.write_report(runs, Path(out) if out else runs_dir / "report",
                                title=f"gpu-course ladder ({engine})")
    return runs, paths


def run_in_child(rung: Rung, runs_dir: Path, progress: bool = False) -> Run:
    """A rung whose setting the framework reads only when it starts (MXNet's OpenMP
    threads): `gpu-course run` in a child process started with rung.env, recording into
    the same runs folder. Returns its record (a failed run's too)."""
    cmd = [sys.executable, "-m", "gpu_course.cli", "run", "--runs-dir", str(runs_dir),
           *([] if progress else ["--no-progress"]), *to_flags(rung.cfg)]
    env = dict(rung.env)
    print("    in a child process: " + " ".join(f"{k}={v}" for k, v in env.items())
          + " gpu-course " + shlex.join(cmd[3:]), flush=True)
    before = set(Path(runs_dir).glob("*/run.json"))
    done = subprocess.run(cmd, env={**os.environ, **env}, check=False)
    made = sorted(set(Path(runs_dir).glob("*/run.json")) - before)
    if not made:
        raise RuntimeError(f"the child process exited with status {done.returncode} and "
                           "recorded no run")
    return load_run(made[-1].parent)


def closing_lines(engine: str, runs: list[Run], gpus: int,
                  check_accuracy: bool) -> tuple[list[str], bool]:
    """What `gpu-course ladder` says after the table and the conclusion: on a CPU, the
    rungs left out and the lessons that show them on a GPU and the threads that ran, and
    (check_accuracy: the default CPU ladder) whether its last rung learned (>=
    CPU_ACCURACY). Returns (lines, whether the check passed)."""
    from . import metrics
    lines, ok = [], True
    if gpus == 0:
        lines.append("Left out on this CPU, their effect needs a GPU: " + "; ".join(
            f"{name} ({lesson}: {why})" for name, lesson, why in GPU_ONLY[engine]) + ".")
        if runs and runs[0].config.get("model") == CPU_MODEL:
            lines.append(f"The CPU ladder trains the '{CPU_MODEL}' network (ResNet-20 learns "
                         "too slowly on a CPU to show anything in minutes).")
        line = threads_line(runs)
        if line:
            lines.append(line)
    if check_accuracy and runs:
        last = runs[-1]
        acc = metrics.val_acc(last)
        ok = acc >= CPU_ACCURACY
        lines.append(f"Accuracy check: the last rung, '{last.name}', reached {acc:.1%} "
                     f"validation accuracy; it must reach {CPU_ACCURACY:.0%} (chance is "
                     f"10%): {'met' if ok else 'MISSED'}.")
    return lines, ok


def threads_line(runs: list[Run]) -> str | None:
    """What the 'threads' rung and the rung before it ran, read from their records (the
    conclusion says what the change did); for a Gluon CPU ladder without one, why not.
    None when there is nothing to say."""
    names = [r.name for r in runs]
    if "threads" in names and names.index("threads") > 0:
        i = names.index("threads")
        return (f"Threads: the 'threads' rung ran {_threads_ran(runs[i])} in the training "
                f"process, '{runs[i - 1].name}' before it {_threads_ran(runs[i - 1])}.")
    last = runs[-1] if runs else None
    if last is None or last.meta.get("engine") != "gluon" or "threads" in names:
        return None
    ran = (last.meta.get("ran") or {})
    count, cores = (ran.get("threads") or {}).get("intra_op"), ran.get("cpu_count")
    workers = last.config.get("num_workers") or 0
    if count and cores and count == training_threads(cores, workers):
        return (f"Threads: MXNet's operators ran {_threads_ran(last)} beside {workers} loader "
                f"workers on {cores} cores, already the cores the workers leave, so this "
                "ladder has no thread rung (MXNet reads OMP_NUM_THREADS when it is imported; "
                "where the counts differ the rung runs in a process of its own).")
    return None


def _threads_ran(run) -> str:
    threads = (run.meta.get("ran") or {}).get("threads") or {}
    count, source = threads.get("intra_op"), threads.get("intra_op_from")
    if not count:
        return "unrecorded threads"
    return f"{count} thread{'s' if count != 1 else ''}" + (f" ({source})" if source else "")
