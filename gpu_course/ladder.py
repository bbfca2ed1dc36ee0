"""Walk one training job up the ladder of fixes, one change a rung (`rungs.RungName`); a CPU
ladder keeps the rungs a CPU can show and reads loose JPEGs until its data-format rung."""
from __future__ import annotations

import dataclasses
import datetime as _dt
import importlib
import math
import os
from dataclasses import dataclass
from pathlib import Path

from .config import Experiment, Graph, at_least
from .measure.records import OutOfMemory, Run, runs_root, load_run, update_meta
from .rungs import LESSON, RungName
from .page import Page

PAGE = Page.of(__name__)   # text/ladder.md

LONG_EPOCHS = 30  # the tuned rung's longer line on a GPU: long enough for the monitor to see it
CPU_MODEL = "tiny"  # on a CPU: a network that learns in minutes (ResNet-20 does ~400 images/s)
CPU_ACCURACY = 0.40  # what the CPU ladder's last rung must reach (`make run` checks it)
# large enough that decoding costs (~1,000/s loose, ~1,800 packed on 2 cores), small enough to be short
PHOTO_SIDES = (128, 192)
# what a rung may change on top of the one before; a verdict across anything else is refused
RUNG_SETTINGS = ("num_workers", "pin_memory", "persistent_workers", "prefetch_factor",
                 "data_format", "graph", "dtype", "channels_last", "batch_size", "optimizer",
                 "lr", "lr_base_batch", "optimizer_params", "lr_scheduler", "lr_steps",
                 "warmup_epochs", "data_on_gpu", "num_gpus", "threads")

# what only a GPU shows, left out of a CPU ladder: (rung or CUDA_GRAPHS, why)
CUDA_GRAPHS = "CUDA graphs"   # not a rung: what the compile and data-on-gpu rungs replay
_WHY = PAGE.means("gpu_only", str)
GPU_ONLY = {engine: [(what, _WHY[what]) for what in names] for engine, names in (
    ("gluon", (RungName.FLOAT16, RungName.LARGE_BATCH, RungName.ALL_GPUS)),
    ("pytorch", (RungName.LARGE_BATCH, CUDA_GRAPHS, RungName.ALL_GPUS)))}


def left_out(what: str, why: str) -> str:
    """A rung a CPU ladder leaves out, in words: "large-batch (lesson 05: why)"."""
    return f"{what} (lesson {LESSON.get(what, LESSON[RungName.COMPILE])}: {why})"


def cpu_left_out(engine: str) -> list[tuple[RungName, str]]:
    """(rung, why) for each rung this CPU lacks the instructions to show (bfloat16)."""
    from .env import cpu
    support = cpu.supports(cpu.Capability.BFLOAT16_INSTRUCTIONS)
    return [(RungName.BFLOAT16, support.why)] if engine == "pytorch" and not support else []


PACK_ONCE = PAGE.text("pack_once")
LEFT_OUT = PAGE.means("left_out", str)   # what a CPU ladder leaves out: needs a GPU, or this CPU lacks
NAIVE_LIMIT = PAGE.means("naive_limit", str)
NO_RUNG_BEFORE = PAGE.text("no_rung_before")
CHANGE = {name: PAGE.text(name) for name in (
    "naive", "hybridize", "float16", "lbsgd", "warm_cosine", "cosine", "one_cycle",
    "one_cycle_cpu", "compile_cuda_graphs", "bfloat16", "data_in_one_tensor", "free_threads",
    "lars", "data_on_gpu", "longer")}
# the closing lines' templates (`closing_lines`, `threads_line`) and the walk's progress
SAY = {name: PAGE.text(name) for name in (
    "cpu_model", "loose_photos", "accuracy_check", "default_threads", "threads_rung",
    "threads_busy", "threads_no_rung", "mxnet_threads", "walking", "generated", "going_on")}


@dataclass(frozen=True)
class Rung:
    name: RungName
    cfg: Experiment
    change: str  # the one thing this rung changes, in words
    limit: str | None = None  # what bounds this rung's speed, where known


def adapter(engine: str):
    """The framework adapter module for an engine, with a clear error when it's missing."""
    from .engines import check_engine
    from .env.cores import check_thread_variables
    track, framework = {"gluon": ("gluon", "mxnet"), "pytorch": ("torch", "torch")}[check_engine(engine)]
    check_thread_variables()   # MXNet aborts the process on a garbled OMP_NUM_THREADS
    try:
        importlib.import_module(framework)
    except ImportError:
        raise SystemExit(f"engine {engine!r} needs {framework}, not installed here; "
                         f"run `make run ENGINE={engine}`") from None
    return importlib.import_module(f"gpu_course.tracks.{track}")


# CPU ladder photos: PyTorch has seven rungs to Gluon's five, so it reads fewer; Gluon's
# last rung reached 42 % at 14,000, too close to CPU_ACCURACY
CPU_TRAIN_SIZE = {"gluon": 16_000, "pytorch": 14_000}
# 24 px: 0.56 of 32 px's arithmetic, as accurate after 4 epochs (46 % against 44 %)
CPU_IMAGE_SIZE = 24


def default_sizes(gpus: int, quick: bool, engine: str = "gluon") -> dict:
    """Dataset size and epochs the machine walks in reasonable time."""
    if quick:
        return {"train_size": 1024, "test_size": 512, "epochs": 1,
                **({"image_size": CPU_IMAGE_SIZE} if gpus == 0 else {})}
    if gpus == 0:
        return {"train_size": CPU_TRAIN_SIZE[engine], "test_size": 2_000, "epochs": 4,
                "image_size": CPU_IMAGE_SIZE}
    return {"train_size": 50_000, "test_size": 10_000, "epochs": 3}


def photo_folder(train_size: int, test_size: int) -> Path:
    """The generated photo folder of ten classes that the CPU ladder reads."""
    from .data.paths import default_root
    low, high = PHOTO_SIDES
    return default_root() / f"photos-{low}-{high}px-{10 * _photos_per_class(train_size, test_size)}"


def _photos_per_class(train_size: int, test_size: int) -> int:
    return math.ceil(max(train_size + test_size, 5 * test_size) / 10)  # folder.split: <= 1/5


def ensure_photos(cfg: Experiment, progress: bool = False) -> None:
    """Write the photo folder a CPU rung reads unless it is complete, and say what it cost."""
    import time
    from .data.folder import MANIFEST, Photos, generate_folder
    folder, (low, high) = Path(cfg.data_dir), PHOTO_SIDES
    per_class = _photos_per_class(cfg.train_size, cfg.test_size)
    written = (folder / MANIFEST).exists()  # complete: generate_folder checks its settings
    start = time.perf_counter()
    generate_folder(folder, Photos(10, per_class, min_side=low, max_side=high), progress=progress)
    if written:
        return
    size = sum(f.stat().st_size for f in folder.rglob("*.jpg"))
    print(SAY["generated"].format(photos=10 * per_class, low=low, high=high, mb=size / 1e6,
                                  seconds=time.perf_counter() - start, folder=folder), flush=True)


def rungs(engine: str, gpus: int, cpu_count: int | None = None, quick: bool = False,
          **sizes) -> list[Rung]:
    """The ladder for an engine on a machine with `gpus` GPUs (0 = CPU only)."""
    cpu_count, epochs_given = cpu_count or os.cpu_count() or 1, sizes.get("epochs") is not None
    sizes = {**default_sizes(gpus, quick, engine), **{k: v for k, v in sizes.items() if v is not None}}
    workers = max(2, cpu_count - 3)  # the talk's advice: cpu_count() - 3, at least 2
    # the talk's 640; PyTorch's 512 with a cosine decay held the naive rung's accuracy in 3
    # epochs, 1024 did not (reference/recipes-cpu/); a CPU gains nothing from huge batches
    large = 256 if gpus == 0 or quick else 640 if engine == "gluon" else 512
    cpu = gpus == 0  # the rungs a CPU can show; GPU_ONLY says which are left out
    data = {"model": CPU_MODEL, "dataset": "folder", "data_format": "loose",
            "data_dir": str(photo_folder(sizes["train_size"], sizes["test_size"]))} if cpu else {}
    base = Experiment(name=RungName.NAIVE, engine=engine, batch_size=64, num_workers=1,
                      warmup_steps=2 if quick else 5, num_gpus=min(gpus, 1) or 1,
                      monitor_interval=0.2 if quick else 0.5, **{**data, **sizes})
    plain = Graph.EAGER.word(engine)   # imperative (Gluon), eager (PyTorch)
    low, high = PHOTO_SIDES
    photos = f", loose JPEGs ({low}-{high} px)" if cpu else ""
    ladder = [Rung(RungName.NAIVE, base, CHANGE["naive"].format(graph=plain, photos=photos),
                   limit=NAIVE_LIMIT["cpu" if cpu else "gpu"])]

    def add(name: RungName, change: str, **fields) -> None:
        prev = ladder[-1].cfg
        ladder.append(Rung(name, prev.replace(name=name, **fields), change))

    if engine == "gluon":
        add(RungName.WORKERS, f"DataLoader(num_workers={workers})", num_workers=workers)
        if cpu:  # the talk's "off-line pre-processing" into a binary format
            add(RungName.DATA_FORMAT, PACK_ONCE, data_format="memory")
        add(RungName.HYBRIDIZE, CHANGE["hybridize"], graph=Graph.STATIC)
        if cpu:  # without a warm-up, lr 0.1 stalls the first epoch at chance
            add(RungName.LR_SCHEDULE, CHANGE["warm_cosine"],
                lr_scheduler="cosine", warmup_epochs=min(1.0, sizes["epochs"]))
            return ladder
        add(RungName.FLOAT16, CHANGE["float16"], dtype="float16")
        add(RungName.LARGE_BATCH, CHANGE["lbsgd"].format(batch=large),
            batch_size=large, optimizer="lbsgd", lr_base_batch=128,
            warmup_epochs=min(1.0, sizes["epochs"]),
            optimizer_params=(("warmup_strategy", "linear"),))
        add(RungName.LR_SCHEDULE, CHANGE["cosine"], lr_scheduler="cosine", optimizer="sgd",
            optimizer_params=())
    else:
        pin = gpus > 0  # page-locked memory only speeds up copies to a GPU
        add(RungName.WORKERS, f"DataLoader(num_workers={workers}, pin_memory={pin}, persistent_workers=True)",
            num_workers=workers, pin_memory=pin, persistent_workers=True)
        if cpu:
            add(RungName.DATA_FORMAT, PACK_ONCE, data_format="memory")
            add(RungName.COMPILE, "torch.compile(net)", graph=Graph.HYBRID)
        else:  # a batch-64 step is host-bound: only CUDA graphs remove the dispatch
            add(RungName.COMPILE, CHANGE["compile_cuda_graphs"], graph=Graph.STATIC)
        if not (cpu and cpu_left_out(engine)):
            add(RungName.BFLOAT16, CHANGE["bfloat16"], dtype="bfloat16", channels_last=True)
        if cpu:
            add(RungName.LR_SCHEDULE, CHANGE["one_cycle_cpu"], lr_scheduler="onecycle")
            add(RungName.DATA_ON_GPU, CHANGE["data_in_one_tensor"], data_on_gpu=True,
                num_workers=0, pin_memory=False, persistent_workers=False)
            # a thread a core until run_ladder reads the rung before's load (free_threads)
            add(RungName.THREADS, CHANGE["free_threads"], threads=cpu_count)
            return ladder
        # eta 0.1 keeps LARS's layer-wise rates on SGD's lr scale (the paper's 0.001
        # expects a ~100x larger lr, at which the un-adapted biases and BN diverge)
        add(RungName.LARGE_BATCH, CHANGE["lars"].format(batch=large),
            batch_size=large, optimizer="lars",
            lr_base_batch=128, lr_scheduler="cosine", warmup_epochs=min(0.5, sizes["epochs"]),
            optimizer_params=(("eta", 0.1),))
        add(RungName.LR_SCHEDULE, CHANGE["one_cycle"], lr_scheduler="onecycle", warmup_epochs=0)
        # with the data on the GPU, the static graph takes in the whole step (static_step)
        add(RungName.DATA_ON_GPU, CHANGE["data_on_gpu"], data_on_gpu=True, num_workers=0,
            pin_memory=False, persistent_workers=False)
        tuned = ladder[-1]
    if gpus > 1:
        # DDP keeps the compiled model (the whole-step graph is single-process)
        add(RungName.ALL_GPUS, f"{gpus} GPUs", num_gpus=gpus,
            **({"graph": Graph.HYBRID} if engine == "pytorch" else {}))
    if engine == "pytorch" and not (quick or epochs_given):
        ladder.append(Rung(RungName.LONGER, tuned.cfg.replace(
            name=RungName.LONGER, epochs=max(sizes["epochs"], LONG_EPOCHS)),
            CHANGE["longer"].format(rung=tuned.name, long=LONG_EPOCHS, epochs=sizes["epochs"])))
    return ladder


@dataclass(frozen=True)
class Walk:
    """Which rungs `run_ladder` walks (`only`, then the `first` of those) and how often."""

    only: tuple | None = None
    first: int | None = None
    repeats: int = 1

    def __post_init__(self):
        at_least("repeats", self.repeats, 1)
        if self.only is not None:
            object.__setattr__(self, "only", tuple(self.only))


def run_ladder(engine: str, quick: bool = False, walk: Walk = Walk(),
               runs_dir: str | Path | None = None, out: str | Path | None = None,
               **sizes) -> tuple[list, dict]:
    """Run every rung `walk` selects (a failed one is recorded and the ladder goes on), walk i
    with seed + i, then write the report: (runs, report paths), repeats a list per rung."""
    only, repeats = walk.only, walk.repeats
    gc = adapter(engine)
    gpus = gc.gpu_count()
    runs_dir = runs_root(runs_dir) / f"ladder-{engine}-{_dt.datetime.now():%Y%m%d-%H%M%S}"
    selected = rungs(engine, gpus, quick=quick, **sizes)
    if only and (unknown := set(only) - {r.name for r in selected}):
        raise ValueError(f"unknown rung(s) {sorted(unknown)}; "
                         f"allowed: {', '.join(r.name for r in selected)}")
    selected = [r for r in selected if not only or r.name in only]
    if walk.first is not None:  # the first rungs only (a summary walked in CI's smoke mode)
        selected = selected[:walk.first]
    if selected and selected[0].cfg.dataset == "folder" and gpus == 0:
        ensure_photos(selected[0].cfg, progress=False)
    done: dict[str, list[Run]] = {rung.name: [] for rung in selected}
    prepared: dict[str, dict] = {}  # rung -> the copy of the photos made before it, timed
    for repeat in range(repeats):
        last = None  # this walk's latest run: the thread rung reads the load it saw
        before = None  # the data of the rung before: a new data format is prepared
        for rung in selected:
            which = f" (run {repeat + 1} of {repeats})" if repeats > 1 else ""
            if rung.name == RungName.THREADS:  # its count comes from the load the rung before saw
                threads, other = free_threads(last) if last else (rung.cfg.threads, math.nan)
                if threads == rung.cfg.threads:
                    why = threads_left_out(last, other)
                    print(f"\n=== rung threads{which}: left out: {why}", flush=True)
                    continue
                rung = dataclasses.replace(rung, cfg=rung.cfg.replace(threads=threads), change=(
                    f"torch.set_num_threads({threads}): {other:.1f} of {rung.cfg.threads} cores busy"))
            print(f"\n=== rung {rung.name}{which}: {rung.change}", flush=True)
            if rung.limit and repeat == 0:
                print(f"    limited by {rung.limit}", flush=True)
            data = (rung.cfg.data_format, rung.cfg.data_dir)
            new_format, before = data != before, data
            try:
                if new_format and rung.name not in prepared:  # offline: not in the run's time
                    made = gc.prepare_data(rung.cfg, progress=False)
                    if made is not None:
                        print(f"    {made}", flush=True)
                        prepared[rung.name] = made.note()
                # each walk its own seed: a rung's spread covers the initial weights and data order
                cfg = rung.cfg.replace(seed=rung.cfg.seed + repeat) if repeat else rung.cfg
                last = gc.train(cfg, runs_dir=runs_dir, progress=False)
                if rung.name in prepared:  # the record keeps what its format cost to make
                    update_meta(last.path, notes={"prepared": prepared[rung.name]})
                    last = load_run(last.path)
                done[rung.name].append(last)
            except Exception as err:  # recorded as oom or failed; the next rung runs
                what = "out of memory" if isinstance(err, OutOfMemory) else type(err).__name__
                print(SAY["going_on"].format(rung=rung.name, what=what, err=err), flush=True)
                if getattr(err, "run_path", None):
                    last = load_run(err.run_path)
                    done[rung.name].append(last)
    runs = [group if repeats > 1 else group[0] for group in done.values() if group]
    if not runs:
        raise RuntimeError(f"every rung of the {engine} ladder failed (each says why above)")
    from .show import report
    return runs, report.write_report(runs, Path(out) if out else runs_dir / "report",
                                     title=f"gpu-course ladder ({engine})", varies=RUNG_SETTINGS)


def closing_lines(engine: str, runs: list[Run], gpus: int,
                  check_accuracy: bool) -> tuple[list[str], bool]:
    """(lines, check passed): what a CPU left out, the threads, whether the last rung reached
    CPU_ACCURACY; `gpu-course ladder` prints them after the table."""
    from .analyse import metrics
    runs = [metrics.representative(r) for r in runs]  # a group of repeats: its median run
    lines, ok = [], True
    if gpus == 0:
        for needs, lacking in (("gpu", GPU_ONLY[engine]), ("cpu", cpu_left_out(engine))):
            if lacking:
                lines.append(LEFT_OUT[needs].format(
                    rungs="; ".join(left_out(what, why) for what, why in lacking)))
        first = runs[0].config if runs else {}
        if first.get("model") == CPU_MODEL:
            lines.append(SAY["cpu_model"].format(model=CPU_MODEL))
        if first.get("dataset") == "folder" and first.get("data_format") == "loose":
            low, high = PHOTO_SIDES
            lines.append(SAY["loose_photos"].format(
                train_size=first.get("train_size"), low=low, high=high,
                image_size=first.get("image_size"), data_dir=first.get("data_dir")))
        lines += [line for line in [threads_line(engine, runs)] if line]
    if check_accuracy and runs:
        last = runs[-1]
        ok = (acc := metrics.val_acc(last)) >= CPU_ACCURACY
        lines.append(SAY["accuracy_check"].format(rung=last.name, acc=acc, bar=CPU_ACCURACY,
                                                  verdict="met" if ok else "MISSED"))
    return lines, ok


def free_threads(before: Run) -> tuple[int, float]:
    """(intra-op threads, others' load in cores): the cores left free while `before` ran."""
    from .analyse import metrics
    load = metrics.machine_load(before)
    cores = int(load["cpu_count"]) if not math.isnan(load["cpu_count"]) else os.cpu_count() or 1
    other = load["other_load"]
    if math.isnan(other) or not load["shared"]:
        return cores, other
    return max(1, min(cores, round(cores - other))), other


def threads_left_out(last: Run | None, other: float) -> str:
    """Why the PyTorch ladder has no thread rung (`last`: the rung before, if one ran)."""
    if last is None:
        return NO_RUNG_BEFORE
    return SAY["default_threads"].format(other=max(0.0, other), rung=last.name)


def threads_line(engine: str, runs: list[Run]) -> str | None:
    """The threads a CPU ladder ran, read from its records; None without runs."""
    if not runs:
        return None
    names = [r.name for r in runs]
    i = names.index(RungName.THREADS) if RungName.THREADS in names else 0
    if i > 0:
        now, then = _threads_ran(runs[i]), _threads_ran(runs[i - 1])
        return SAY["threads_rung"].format(now=now, before=runs[i - 1].name, then=then)
    last = runs[-1]
    if engine == "pytorch":
        threads, other = free_threads(last)
        if threads < ((last.meta.get("ran") or {}).get("cpu_count") or threads):
            return SAY["threads_busy"].format(rung=last.name, ran=_threads_ran(last), other=other,
                                              threads=threads)
        return SAY["threads_no_rung"].format(rung=last.name, ran=_threads_ran(last),
                                             why=threads_left_out(last, other))
    return SAY["mxnet_threads"].format(ran=_threads_ran(last),
                                       workers=last.config.get("num_workers") or 0,
                                       cores=(last.meta.get("ran") or {}).get("cpu_count"))


def _threads_ran(run) -> str:
    threads = (run.meta.get("ran") or {}).get("threads") or {}
    if not (count := threads.get("intra_op")):
        return "unrecorded threads"
    source = threads.get("intra_op_from")
    return f"{count} thread{'s' if count != 1 else ''}" + (f" ({source})" if source else "")


# -- a ladder to read: the newest recorded, or one walked now ---------------------------------
def latest_ladder(engine: str, runs_dir=None) -> list:
    """The newest ladder of `engine` under `runs_dir`, a rung's repeats as one list."""
    from .analyse import metrics
    from .measure.records import load_runs
    root = runs_root(runs_dir)
    for folder in sorted((p for p in root.glob(f"ladder-{engine}-*") if p.is_dir()), reverse=True):
        if runs := [r for r in load_runs(folder) if metrics.engine(r) == engine]:
            groups: dict = {}
            for run in runs:
                groups.setdefault(run.name, []).append(run)
            return [g[0] if len(g) == 1 else g for g in groups.values()]
    return []


def ladder(engine: str, sizes, runs_dir=None) -> list:
    """The newest ladder of `engine`, or one walked now when none is recorded."""
    if runs := latest_ladder(engine, runs_dir):
        return runs
    print(SAY["walking"].format(engine=engine, quick=" (quick)" * sizes.quick), flush=True)
    runs, _ = run_ladder(engine, quick=sizes.quick, train_size=sizes.ladder_train_size,
                         test_size=sizes.ladder_test_size, runs_dir=runs_dir,
                         walk=Walk(first=sizes.ladder_rungs))
    return runs


def exercise_ladder(engine: str, sizes, gpus: int) -> dict:
    """Exercise 08.1's rungs, {rung: Experiment}: the ladder's first on one device, at its sizes."""
    steps = [r for r in rungs(engine, min(gpus, 1), quick=sizes.quick,
                              train_size=sizes.exercise_size or sizes.ladder_train_size,
                              test_size=sizes.ladder_test_size, epochs=sizes.exercise_epochs)
             if r.name not in (RungName.THREADS, RungName.LONGER)]
    steps = steps[:sizes.exercise_rungs or sizes.ladder_rungs]
    if steps and steps[0].cfg.dataset == "folder":
        ensure_photos(steps[0].cfg)
    own = {k: v for k, v in (("batch_size", sizes.exercise_batch),
                             ("warmup_steps", sizes.exercise_warmup_steps),
                             ("threads", sizes.exercise_torch_threads
                              if engine == "pytorch" else None)) if v}
    return {r.name: r.cfg.replace(name=f"exercise: {r.name}", **own) for r in steps}
