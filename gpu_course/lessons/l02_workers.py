"""Lesson 02: more DataLoader workers (`num_workers`), and what each one costs.

A sweep of worker counts up to the talk's advice (`cpu_count() - 3`, `gc.workers()`), the
same two counts at a large batch, and (PyTorch) the loader's other knobs at the talk's
count. `conclude(runs)` reads from the runs' records what they differ in and says the
sentences that comparison allows:

    num_workers only          the fewest workers against the fastest count, judged
                              against noise; the knee; data wait and spikiness per count;
                              at a batch above the talk's 64, beside the talk's slide
    the loader's knobs only   the plain loader against the tuned one (pin_memory,
                              persistent_workers, prefetch_factor), and the later epochs

It credits the workers with nothing the records contradict: no verdict from fewer than
MIN_STEPS steady steps, none across runs of which one had the machine to itself and the
other shared it with other programs, and no gain beyond what removing all of the first
run's data wait could buy. `worker_memory` measures what each worker process adds.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..analyse import alike, metrics, noise
from ..show import report
from ..show.closing import Closing
from ..scale.distributed import TALK as SLIDE   # the talk's 4-GPU, batch-640 slide
from . import talk
from .l01_naive import LOAD_WORDS, MIN_STEPS, shared, steady_steps

SIZES = {
    "full": dict(train_size=50_000, test_size=10_000, epochs=2, warmup_steps=5,
                 worker_counts=(1, 2, 4, 8, 16, 32, 64),   # those below gc.workers(), then it
                 large_batch=640,                           # the talk's batch a GPU
                 knob_epochs=3,                             # persistent workers pay from epoch 2
                 exercise_size=10_240, exercise_model="resnet20"),   # each exercise run
    "smoke": dict(train_size=768, test_size=256, epochs=1, warmup_steps=2,
                  worker_counts=(1,), large_batch=128, knob_epochs=2,
                  exercise_size=1_536, exercise_model="tiny"),   # 22 steady steps: a noise verdict
    "check": dict(train_size=10_240, test_size=2_048, epochs=1, worker_counts=(1, 4),
                  knob_epochs=2, exercise_size=5_120),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("exercise_model", "exercise_size", "knob_epochs", "large_batch", "worker_counts")
BATCH = 64          # the lesson's batch, the talk's: a sweep at a larger one is its slide's
KNEE = 0.9          # the knee: the fewest workers within 10 % of the best samples/s
KNOBS = ("pin_memory", "persistent_workers", "prefetch_factor")   # DataLoader's other knobs


def workers(run) -> int:
    return int(run.config.get("num_workers") or 0)


def util_spread(run) -> float:
    """Std of GPU-Util (percentage points) over the monitor's samples while the run
    trained steadily (the ones `metrics.gpu_util` averages); NaN without a GPU."""
    gpu = run.gpu
    if not len(gpu) or "util_gpu" not in gpu.columns:
        return math.nan
    values = pd.to_numeric(gpu["util_gpu"], errors="coerce")[metrics.steady_samples(run)].dropna()
    return float(values.std()) if len(values) > 1 else math.nan


def later_epochs_s(run) -> float:
    """Mean time of the epochs after the first (which starts the workers); NaN with one."""
    times = pd.to_numeric(run.epochs["epoch_time_s"], errors="coerce").iloc[1:].dropna()
    return float(times.mean()) if len(times) else math.nan


def table(runs, memory: pd.DataFrame | None = None) -> pd.DataFrame:
    """The ladder table with each run's workers (and the loader settings that differ
    between the runs), the spread of its GPU's utilisation, its median step, the share
    of its steps that waited and how many steady steps it had; the epochs after the
    first where every run had several; whether the machine was shared, where any run's
    was; and `memory`'s columns (`worker_memory`) beside the run with the same count."""
    runs = list(runs)
    frame = report.ladder_table(runs)   # a column for whatever differs between the runs
    if "num_workers" not in frame.columns:
        frame.insert(1, "num_workers", [workers(r) for r in runs])
    frame["gpu_util_std"] = [util_spread(r) for r in runs]
    frame["step_ms_median"] = [1e3 * metrics.steadiness(r)["step_p50_s"] for r in runs]
    frame["waited_share"] = [metrics.steadiness(r)["waited_share"] for r in runs]
    frame["steady_steps"] = [steady_steps(r) for r in runs]
    if all(len(r.epochs) > 1 for r in runs):
        frame["later_epochs_s"] = [later_epochs_s(r) for r in runs]
    if any(shared(r) for r in runs) and alike.Aspect.LOAD not in frame.columns:
        frame[alike.Aspect.LOAD.value] = [LOAD_WORDS[shared(r)] for r in runs]
    if memory is not None and len(memory):
        frame = frame.merge(memory, on="num_workers", how="left")
    return frame


def conclude(runs, memory: pd.DataFrame | None = None) -> Closing:
    """The sentences for a worker sweep or a knob comparison (see the module), and what
    a worker costs in memory when `memory` (`worker_memory`) is given."""
    runs = list(runs)
    if len(runs) < 2:
        raise ValueError(f"runs has {len(runs)} run(s); the lesson compares two or more")
    say = Closing(table(runs, memory), runs, varies=("num_workers", *KNOBS))
    changed = set().union(*(alike.differences(runs[0], r) for r in runs[1:]))
    changed -= {alike.Aspect.LOAD}   # said for the pair it concerns (`_judge`)
    if changed <= {"num_workers"}:
        _sweep(say, runs)
        if memory is not None and len(memory):
            _memory(say, runs)
    elif changed <= set(KNOBS):
        _knobs(say, runs)
    else:
        say("These runs differ in more than the loader: "
            + ", ".join(sorted(changed)) + ". This lesson compares runs that differ in "
            "num_workers alone, or in the loader's other knobs alone; set the rest alike.")
    return say


def _judge(say: Closing, a, b, lead: str):
    """Say `lead` and the noise verdict of run b against run a, or why there is none
    (too few steady steps; runs that differ in more than the loader, such as a machine
    shared for one run and not the other). Returns the verdict when it was said, else
    None."""
    verdict = say.compare(a, b)
    few = [r for r in (a, b) if steady_steps(r) < MIN_STEPS]
    ratio = say.ratio("samples_per_sec", a, b)
    if few:
        say(f"{lead}: {ratio}, from too few steady steps to judge ("
            + ", ".join(f"'{r.name}' {say.cell(r, 'steady_steps')}" for r in few)
            + f", fewer than {say.setting('MIN_STEPS', MIN_STEPS)}): more epochs or a larger "
            "train_size would tell (gc.sizes(\"02\", epochs=...)).")
        return None
    if verdict.kind == noise.Kind.UNLIKE:
        say(f"{lead}: {ratio}; but the runs also differ in {say.unlike(a, b)}, which could be "
            "the difference as much as the loader: it is not credited to the loader. Run both "
            "again alike (on a quiet machine).")
        return None
    say(f"{lead}: {verdict}.")
    return verdict


def _sweep(say: Closing, runs) -> None:
    table = say.table
    base = min(runs, key=workers)
    best = runs[int(table["samples_per_sec"].idxmax())]
    other = best if best is not base else max(runs, key=workers)
    lead = (f"{say.cell(base, 'num_workers')} worker(s): {say.cell(base, 'samples_per_sec')} "
            "samples/s; " + (f"best: {say.cell(best, 'samples_per_sec')} samples/s with "
                             f"{say.cell(best, 'num_workers')} worker(s)" if other is best else
                             f"the fastest; {say.cell(other, 'num_workers')} worker(s): "
                             f"{say.cell(other, 'samples_per_sec')} samples/s"))
    gain = _judge(say, base, other, lead)
    wait = metrics.data_wait_share(base)
    if gain is None:
        pass
    elif gain.kind == noise.Kind.FASTER and wait < 1 and gain.low > 1 / (1 - wait):
        say(f"That is more than removing all the data wait of '{base.name}' "
            f"({say.cell(base, 'data_wait_share')} of its steady step time) could buy: something "
            "besides the feeding changed between the runs, so the workers are not credited "
            "with it.")
    elif gain.kind == noise.Kind.FASTER:
        rates = table["samples_per_sec"]
        knee = runs[int(table.index[rates >= KNEE * rates.max()][0])]
        if workers(knee) < max(map(workers, runs)):
            say(f"The knee: {say.cell(knee, 'num_workers')} worker(s) already reach "
                f"{say.ratio('samples_per_sec', best, knee, percent=True)} of the best.")
        else:
            say(f"No knee among the counts tried: only the most workers, "
                f"{say.cell(knee, 'num_workers')}, came within {say.setting('KNEE', 1 - KNEE, '{:.0%}')} "
                "of the best, so more might still pay.")
    elif gain.kind == noise.Kind.SLOWER:
        say("More workers were slower here, beyond noise: they took "
            + ("cores from the host's other work." if metrics.on_gpu(base) else
               "cores from the model, which computes on the same CPU."))
    else:
        say("The best is within noise of the first: no knee can be placed on this machine.")
    spread = "gpu_util_std" if table["gpu_util_std"].notna().all() else "spikiness"
    unit = "GPU-Util std" if spread == "gpu_util_std" else "p95/median step time"
    say(f"Data wait and spikiness ({unit}) by workers: "
        + ", ".join(f"{say.cell(r, 'num_workers')} worker(s) {say.cell(r, 'data_wait_share')} "
                    f"and {say.cell(r, spread)}" for r in runs) + ".")
    if int(base.config.get("batch_size") or BATCH) > BATCH:
        say(f"The talk's slide ({SLIDE['k']} V100s, batch {SLIDE['batch']} a GPU): "
            f"{SLIDE['workers']} workers "
            f"{say.quote(talk.SOURCE, SLIDE['samples_per_sec_k'], '{:,} samples/s')}, "
            f"{say.quote(talk.SOURCE, SLIDE['epoch_s_k'], '{:.1f} s')} an epoch; one worker "
            f"about {say.quote(talk.SOURCE, SLIDE['samples_per_sec_k_one_worker'], '{:,} samples/s')}, "
            f"{say.quote(talk.SOURCE, SLIDE['epoch_s_k_one_worker'], '{}+ s')} an epoch: a "
            "large batch needs many images a step, and one worker prepares them one after "
            "the other.")
    elif not metrics.on_gpu(base):
        cores = (base.meta.get("hardware") or {}).get("cpu_count") or "its"
        talk_gain = talk.WORKERS_SAMPLES_PER_SEC / talk.NAIVE_SAMPLES_PER_SEC
        say(f"No GPU here: the workers and the model share {cores} CPU cores, so each extra "
            "worker takes a core from the computation. On a GPU machine the model runs on "
            "the GPU and the cores are free to feed it: that is where the talk's "
            f"{say.quote(talk.SOURCE, talk_gain, '×{:.1f}')} came from "
            f"({say.quote(talk.SOURCE, talk.NAIVE_SAMPLES_PER_SEC, '{:,}')} → "
            f"{say.quote(talk.SOURCE, talk.WORKERS_SAMPLES_PER_SEC, '{:,} samples/s')} with "
            f"{talk.WORKERS} workers).")


def _memory(say: Closing, runs) -> None:
    measured = [r for r, v in zip(runs, say.table["uss_mib_per_worker"]) if not math.isnan(v)]
    if not measured:
        return
    most = max(measured, key=workers)
    say(f"Each worker adds about {say.cell(most, 'uss_mib_per_worker')} MiB of its own memory "
        f"(RSS {say.cell(most, 'rss_mib_per_worker')} MiB with the pages it shares with the "
        f"notebook): the {say.cell(most, 'num_workers')} workers cost "
        f"{say.cell(most, 'uss_mib_all')} MiB, "
        f"{say.cell(most, 'share_of_ram_pct', '{:.3g}%')} of this machine's RAM.")


def _knobs(say: Closing, runs) -> None:
    plain = runs[0]
    for tuned in runs[1:]:
        knobs = " + ".join(f"{k}={tuned.config.get(k)}" for k in KNOBS
                           if tuned.config.get(k) != plain.config.get(k))
        _judge(say, plain, tuned,
               f"{knobs} at {workers(tuned)} workers ('{tuned.name}') against the plain "
               f"loader ('{plain.name}'): {say.cell(plain, 'samples_per_sec')} → "
               f"{say.cell(tuned, 'samples_per_sec')} samples/s")
        if "later_epochs_s" in say.table.columns:
            say(f"The epochs after the first (the first starts the workers): "
                f"{say.cell(plain, 'later_epochs_s')} s → {say.cell(tuned, 'later_epochs_s')} s.")
    if not metrics.on_gpu(plain):
        cores = (plain.meta.get("hardware") or {}).get("cpu_count") or "its"
        pinned = runs[-1].config.get("pin_memory")
        say(f"No GPU here: pinned memory only speeds up copies to a GPU, so it was left off "
            f"(pin_memory={pinned}); the workers and the model share {cores} CPU cores, "
            "where on a GPU machine the cores only feed the GPU.")


def worker_memory(make_loader, counts) -> pd.DataFrame:
    """What each loader worker process costs: for each count above 0, the loader
    `make_loader(count)` is started and hands over one batch, then its new processes are
    read (psutil): the resident set (RSS, pages shared with this process included) and
    the unique set (USS, what the worker adds on its own), per worker, all of them
    together, and that as a share of the machine's RAM."""
    import psutil
    me, total = psutil.Process(), psutil.virtual_memory().total
    rows = []
    for n in [c for c in counts if c > 0]:
        before = {p.pid for p in me.children(recursive=True)}
        loader = make_loader(n)
        batches = iter(loader)
        next(batches)                      # the workers are up and have done real work
        infos = []
        for process in me.children(recursive=True):
            if process.pid not in before:
                try:
                    infos.append(process.memory_full_info())
                except psutil.Error:       # it ended between listing and reading
                    pass
        uss = np.mean([i.uss for i in infos]) / 2**20 if infos else math.nan
        rows.append({"num_workers": n, "processes": len(infos),
                     "rss_mib_per_worker": np.mean([i.rss for i in infos]) / 2**20
                     if infos else math.nan,
                     "uss_mib_per_worker": uss, "uss_mib_all": uss * len(infos),
                     "share_of_ram_pct": 100 * uss * len(infos) * 2**20 / total})
        del batches, loader
    return pd.DataFrame(rows, columns=["num_workers", "processes", "rss_mib_per_worker",
                                       "uss_mib_per_worker", "uss_mib_all", "share_of_ram_pct"])
