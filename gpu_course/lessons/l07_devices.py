"""Lesson 07: more devices, more hosts: data parallelism and what communication costs.

The notebook trains the same job on 1..k devices of one host (Gluon: device contexts in one
process, `split_and_load` and kvstore='device'; PyTorch: one DistributedDataParallel
process a device), then as a job of several local "hosts" (Gluon: a parameter server;
PyTorch: one torchrun a host), and measures what the gradient exchange costs. This module
decides where the processes run (`plan`), builds the tables, and says what they show.

Efficiency = samples/s on k devices ÷ (k × samples/s on one), from the runs' records. The
scaling model (`gpu_course/scale/scaling.py`) then extrapolates: its rows are model outputs
from a step time and a link's bandwidth, labelled so, never measurements.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ..scale import distributed, scaling
from ..analyse import metrics, noise
from ..show import tables
from ..show.closing import Closing
from ..env.cores import threads_per_process
from ..scale.localhosts import backend as _backend
from . import Sizes, talk

SIZES = {
    "full": dict(train_size=50_000, test_size=10_000, epochs=2, batch_size=640,   # per device
                 model="resnet20", warmup_steps=10, warmup_epochs=1.0,
                 cpu_train_size=2048, cpu_test_size=512,   # when the "devices" share a CPU
                 bench_sizes=9, bench_iters=10, bench_seconds=0.2,   # push/pull, all-reduce
                 buckets_mb=(0.05, 0.25, 1.0, 25.0), bucket_batch=640, bucket_steps=10,
                 bucket_warmup=2,
                 exercise_size=51_200, exercise_batch=1280,        # the batch a step, split over the GPUs
                 cpu_exercise_size=2048, cpu_exercise_batch=64),   # when the "devices" share a CPU
    # the tiny network, so that the processes start and finish quickly
    "smoke": dict(train_size=512, test_size=256, epochs=1, batch_size=32, model="tiny",
                  warmup_steps=2, warmup_epochs=0.5, cpu_train_size=512, cpu_test_size=128,
                  bench_sizes=5, bench_iters=3, bench_seconds=0.05, buckets_mb=(0.05, 25.0),
                  bucket_batch=8, bucket_steps=3, bucket_warmup=1,
                  exercise_size=192, exercise_batch=8,       # 22 steady steps: a noise verdict
                  cpu_exercise_size=192, cpu_exercise_batch=8),
    "check": dict(train_size=10_240, test_size=2_048, epochs=1, exercise_size=38_400),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("bench_iters", "bench_seconds", "bench_sizes", "bucket_batch", "bucket_steps",
             "bucket_warmup", "buckets_mb", "cpu_exercise_batch", "cpu_exercise_size",
             "cpu_test_size", "cpu_train_size", "exercise_batch", "exercise_size")
PCT = "{:.3g}%"            # a percent column's cell in a sentence, as the table writes it
MIN_TIMED_STEPS = 20      # fewer timed steps than this in a run: no verdict on it
MIN_EFFICIENCY = 0.7      # the efficiency below which more devices "stop paying"
# what a scaling comparison changes: the devices, how gradients meet, and the threads
# each process gets of the same cores
SCALED = ("num_gpus", "kvstore", "threads")
HOP_LATENCY_S = 20e-6     # the model's latency a hop: a typical network's
MODEL_KS = (8, 64)        # the device counts the model's table gives efficiencies for
MODEL_K_MAX = scaling.K_MAX   # stops_paying searches k = 1..this
GPU_LINKS = {"NVLink"}    # links between GPUs only: no model row for a CPU step over them
LECTURE = "the lecture"   # "Performance and Profiling": its table of link bandwidths
LECTURE_PCIE_X8_GBPS = 5.0
LECTURE_ETHERNET_GBPS = distributed.LINKS["10 Gbps Ethernet"]
LECTURE_NVLINK_GBPS = distributed.LINKS["NVLink"]


# -- where the processes run --------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """Where lesson 07 runs on a machine with `gpus` GPUs and `cores` cores: one GPU a
    device (a process, in PyTorch) when there are two or more; else two CPU "devices"
    sharing the cores. With one GPU there is nothing to scale across, and NCCL refuses two
    ranks on one GPU ("Duplicate GPU detected"): the multi-process code runs on the CPU
    over gloo, the GPU left out."""

    engine: str
    gpus: int
    cores: int
    sizes: Sizes
    nodes: int = 2

    @property
    def on_gpu(self) -> bool:
        return self.gpus >= 2

    @property
    def counts(self) -> tuple:
        """Device counts to train on one host: powers of two up to every GPU, or 1 and 2."""
        if not self.on_gpu:
            return (1, 2)
        return tuple(sorted({2 ** k for k in range(12) if 2 ** k < self.gpus} | {self.gpus}))

    @property
    def job_gpus(self) -> int:
        """GPUs the multi-process jobs may use: every one, or none (the CPU, gloo)."""
        return self.gpus if self.on_gpu else 0

    @property
    def per_host(self) -> int:
        """Processes (or GPUs of a parameter-server worker) per local "host"."""
        return max(1, self.gpus // self.nodes) if self.on_gpu else 1

    @property
    def backend(self) -> str:
        """NCCL with a GPU for every process of the largest job, else gloo."""
        return _backend(self.job_gpus, max(max(self.counts), self.nodes * self.per_host))

    @property
    def threads(self) -> int:
        """Compute threads a process: the largest multi-process job's share of the cores,
        for every run of it, the one-process run included, so that the runs compare
        (Gluon: its parameter-server workers, one a host; PyTorch: its processes)."""
        processes = self.nodes if self.engine == "gluon" else \
            max(max(self.counts), self.nodes * self.per_host)
        return threads_per_process(processes, self.cores)

    @property
    def train_sizes(self) -> Sizes:
        """The lesson's sizes, with fewer images where the "devices" share a CPU."""
        if self.on_gpu:
            return self.sizes
        return self.sizes.replace(train_size=min(self.sizes.train_size, self.sizes.cpu_train_size),
                                  test_size=min(self.sizes.test_size, self.sizes.cpu_test_size))

    @property
    def exercise_sizes(self) -> Sizes:
        """Exercise 07.1's sizes: `exercise_size` images at a batch of `exercise_batch` a
        step (split over the devices), or the CPU's (`cpu_exercise_*`) where the "devices"
        share a CPU."""
        cpu = "" if self.on_gpu else "cpu_"
        return self.train_sizes.replace(train_size=getattr(self.sizes, f"{cpu}exercise_size"),
                                        batch_size=getattr(self.sizes, f"{cpu}exercise_batch"))

    def devices(self, k: int) -> list[str] | None:
        """PyTorch: the devices of a k-process run (None: the GPUs, one a process)."""
        return None if self.on_gpu else ["cpu"] * k

    def __repr__(self) -> str:
        pytorch = self.engine == "pytorch"
        unit = "processes" if pytorch else "device contexts"
        if self.on_gpu:
            where = f"{self.gpus} GPUs: one GPU a " + ("process, NCCL between them" if pytorch
                                                     else "context, kvstore='device'")
        else:
            why = ("no GPU" if self.gpus == 0 else
                   "one GPU, and NCCL needs a GPU for every process (two ranks on one GPU it "
                   "refuses), so the GPU is left out" if pytorch else
                   "one GPU, nothing to scale across, so the GPU is left out")
            where = (f"{why}: 2 CPU {unit}{' over gloo' if pytorch else ''} sharing "
                     f"{self.cores} cores, {self.train_sizes.train_size} images an epoch")
        return f"This machine has {where}; {unit} to try: {', '.join(map(str, self.counts))}"

    __str__ = __repr__


def plan(engine: str, gpus: int, cores: int, sizes: Sizes, nodes: int = 2) -> Plan:
    """Where lesson 07 runs (see Plan) for `engine` ("gluon" or "pytorch") on a machine
    with `gpus` GPUs and `cores` usable cores."""
    if engine not in ("gluon", "pytorch"):
        raise ValueError(f"engine={engine!r} is not allowed; allowed: gluon, pytorch")
    if gpus < 0 or cores < 1 or nodes < 1:
        raise ValueError(f"gpus={gpus!r}, cores={cores!r}, nodes={nodes!r}: need gpus >= 0, "
                         "cores >= 1, nodes >= 1")
    return Plan(engine, gpus, cores, sizes, nodes)


# -- what the records say ------------------------------------------------------------------
def devices(run) -> int:
    """The devices a run trained on: a parameter-server job's workers (times each one's
    GPUs), a DDP job's processes, else its device count."""
    notes = run.meta.get("notes") or {}
    if notes.get("workers"):
        return int(notes["workers"]) * max(1, int(run.config.get("num_gpus") or 0))
    world = (run.meta.get("ran") or {}).get("world_size")
    return int(world or run.config.get("num_gpus") or 1)


def hosts(run) -> int:
    """The local "hosts" of a multi-host PyTorch job (1 for any other run)."""
    return int((run.meta.get("notes") or {}).get("nodes") or 1)


def timed_steps(run) -> int:
    """Steps whose time counts in samples/s (rank 0's), warm-up left out."""
    epochs = run.epochs
    if "timed_steps" in epochs and epochs["timed_steps"].notna().any():
        return int(epochs["timed_steps"].fillna(0).sum())
    steps = int(epochs["steps"].sum()) if "steps" in epochs else 0
    return max(0, steps - int(run.config.get("warmup_steps") or 0))


def _cores(run) -> int:
    return int((run.meta.get("hardware") or {}).get("cpu_count") or 0)


def _machine_gpus(run) -> int:
    return len((run.meta.get("hardware") or {}).get("gpus") or [])


def table(runs) -> pd.DataFrame:
    """The ladder table with each run's devices and its scaling efficiency: samples/s a
    device against the first run's (k devices against one: speed-up ÷ k)."""
    runs = list(runs)
    frame = metrics.table(runs)
    k = [devices(r) for r in runs]
    frame.insert(1, "devices", k)
    per_device = frame["samples_per_sec"] / frame["devices"]
    frame["efficiency (%)"] = 100 * per_device / per_device.iloc[0]
    return frame


def ranks(run) -> pd.DataFrame:
    """Each process's own timings in a multi-process run (its notes' "ranks"): steps, time
    waiting for data and computing, and seconds a step."""
    rows = []
    for r in (run.meta.get("notes") or {}).get("ranks") or []:
        epochs = r.get("epochs") or []
        row = {"rank": r.get("rank")}
        if "group_rank" in r:
            row["host"] = r["group_rank"]
        row.update({k: sum(e.get(k) or 0 for e in epochs)
                    for k in ("steps", "data_wait_s", "compute_s")})
        row["step_s"] = (row["data_wait_s"] + row["compute_s"]) / row["steps"] \
            if row["steps"] else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


class Said(list):
    """The closings a conclusion said, one a table, in order."""

    @property
    def text(self) -> str:
        return "\n".join(s.text for s in self)

    def check(self) -> list[str]:
        return [problem for s in self for problem in s.check()]


# -- the scaling runs -----------------------------------------------------------------------
def conclude(runs, bench=None, grad_bytes: int | None = None, buckets=None) -> Said:
    """Without `bench`: what the runs' table shows (k devices against one, the hosts
    against one host). With `bench` (push/pull rows of gluon.dist.bench_local, or
    all-reduce rows of bench.allreduce; PyTorch adds `buckets`, DDP's bucket rows; Gluon
    `grad_bytes`): what the exchange costs, measured and modelled, each table shown
    before its sentences."""
    runs = list(runs)
    if bench is None:
        return Said([_scaling(runs)])
    return _communication(runs, list(bench), grad_bytes, buckets)


def _scaling(runs) -> Closing:
    say = Closing(table(runs), runs, varies=SCALED)
    base, last = runs[0], runs[-1]
    k = devices(last)
    ps = bool((last.meta.get("notes") or {}).get("workers"))
    pytorch = metrics.engine(last) == "pytorch"
    unit = "workers" if ps else "processes" if pytorch else "devices"
    eff = say.cell(last, "efficiency (%)", PCT)
    best = max(k4 / (talk.SCALING_GPUS * k1) for k1, k4 in talk.SCALING.values())
    talks = (f"the talk's best: {say.quote(talk.SOURCE, best, '{:.0%}')} at batch "
             f"{talk.SCALING_BATCH} on {talk.SCALING_GPUS} V100s")
    few = min(timed_steps(base), timed_steps(last))
    if few < MIN_TIMED_STEPS:
        say(f"'{last.name}' ({k} {unit}) against '{base.name}': "
            f"{say.ratio('samples_per_sec', base, last)} and a scaling efficiency of {eff} "
            f"({talks}), over only {timed_steps(base)} and {timed_steps(last)} timed steps: too "
            f"few to call either an effect or noise (at least {MIN_TIMED_STEPS} a run; raise "
            "the train size or the epochs: gc.sizes(\"07\", epochs=...)).")
    else:
        say(f"'{last.name}' ({k} {unit}) against '{base.name}': {say.compare(base, last)}; "
            f"scaling efficiency {eff} ({talks}).")
    efficiency = say.table["efficiency (%)"].iloc[-1] / 100
    if efficiency > noise.ABOVE_PERFECT:
        say(f"Unreliable: a scaling efficiency of {eff} means {k} {unit} did more than {k} "
            "times the work of one, which they cannot; the runs compared differ in more than "
            "their count (threads a process, cores, the machine's load).")
    if not metrics.on_gpu(last):
        cores = _cores(last)
        checked = ("torchrun launches with --nnodes, a c10d rendezvous, gloo" if hosts(last) > 1
                   else "torchrun, gloo, DistributedSampler, gradient averaging" if pytorch else
                   "a scheduler, servers and workers, kvstore='dist_sync'" if ps else
                   f"split_and_load over {k} contexts, kvstore='device'")
        who = ("These 'hosts' ran their processes" if hosts(last) > 1 else
               "These 'devices' were CPU contexts" if unit == "devices" else f"These {unit} ran")
        say(f"{who} on the same {cores} CPU cores, so {eff} says nothing about GPUs or "
            f"networks: the run checked that the code works ({checked}). Run it on a machine "
            "with two or more GPUs to measure scaling.")
        if _machine_gpus(last) == 1:
            say("This machine has one GPU: " + (
                "NCCL needs a GPU for every process and refuses two ranks on one, so the "
                "processes ran on the CPU over gloo." if pytorch else
                "one device is nothing to scale across, so the contexts were CPU ones."))
    elif efficiency < MIN_EFFICIENCY:
        say(f"Below {say.setting('MIN_EFFICIENCY', MIN_EFFICIENCY, '{:.0%}')}: each GPU is not "
            "kept busy. Look at the run's utilisation timeline; the usual causes are the input "
            "pipeline (more loader workers a process) and the Python loop or small batches "
            "(the gradient exchange then costs as much as the step).")
    _hosts(say, runs)
    return say


def _hosts(say: Closing, runs) -> None:
    """A multi-host job against the one-host run of as many processes: the same work,
    started as separate hosts (rendezvous, TCP between them)."""
    many = [r for r in runs if hosts(r) > 1]
    if not many:
        return
    job = many[-1]
    alike = [r for r in runs if hosts(r) == 1 and devices(r) == devices(job)]
    if not alike:
        return
    one = alike[-1]
    steps = min(timed_steps(one), timed_steps(job))
    what = (f"'{job.name}' ({hosts(job)} hosts × {devices(job) // hosts(job)} process"
            f"{'es' if devices(job) // hosts(job) > 1 else ''}) against '{one.name}' (one host)")
    if steps < MIN_TIMED_STEPS:
        say(f"{what}: {say.ratio('samples_per_sec', one, job)} over only {steps} timed steps, "
            "too few to call it an effect or noise.")
        return
    verdict = say.compare(one, job)
    say(f"{what}: {verdict}" + (
        ": the same work, and the difference is this machine's run-to-run noise."
        if not verdict.is_effect else
        ": beyond this machine's noise, so starting them as separate hosts (a rendezvous, "
        "TCP between them) cost or saved something real."))


# -- communication: measured, then modelled --------------------------------------------------
def _size(nbytes: float) -> str:
    return f"{nbytes / 2**20:g} MiB" if nbytes >= 2**20 else f"{nbytes / 2**10:g} KiB"


def _allreduce(rows) -> bool:
    """Rows of bench.allreduce (bus bandwidth), else of gluon.dist's push and pull."""
    return "busbw_GBps" in rows[0]


def bench_table(rows) -> pd.DataFrame:
    """The exchange against the array's size: the median round's time and bandwidth, and
    the bandwidth of the slowest and the fastest round (block)."""
    rate = "busbw_GBps" if _allreduce(rows) else "worker_GBps"
    name = "bus bandwidth (GB/s)" if _allreduce(rows) else "GB/s"
    frame = pd.DataFrame({
        "size": [_size(r["bytes"]) for r in rows],
        "time (ms)": [1e3 * r["time_s"] for r in rows],
        name: [r[rate] for r in rows],
        "slowest (GB/s)": [r[rate] * r["time_s"] / r["time_max_s"] for r in rows],
        "fastest (GB/s)": [r[rate] * r["time_s"] / r["time_min_s"] for r in rows]})
    return frame


def buckets_table(rows) -> pd.DataFrame:
    """DDP's step with and without the all-reduce, per gradient bucket size."""
    return pd.DataFrame({
        "bucket (MB)": [f"{r['bucket_cap_mb']:g}" for r in rows],
        "buckets": [r["buckets"] for r in rows],
        "step (ms)": [1e3 * r["t_step_sync_s"] for r in rows],
        "no_sync (ms)": [1e3 * r["t_step_nosync_s"] for r in rows],
        "all-reduce alone (ms)": [1e3 * r["t_allreduce_s"] for r in rows],
        "exposed (ms)": [1e3 * r["exposed_s"] for r in rows],
        "spread (ms)": [1e3 * r["spread_s"] for r in rows],
        "hidden (%)": [100 * r["overlap"] for r in rows]})


def _near(rows, nbytes: float) -> int:
    """The row whose array is closest to `nbytes`."""
    return min(range(len(rows)), key=lambda i: abs(rows[i]["bytes"] - nbytes))


def _rate(rows, i: int) -> float:
    """The row's bandwidth in bytes/s."""
    return 1e9 * rows[i]["busbw_GBps" if _allreduce(rows) else "worker_GBps"]


def _exchange_s(rows, grad_bytes: float, k: int) -> float:
    """Seconds to exchange every gradient alone at the measured rate nearest their size:
    a ring all-reduce over k, or a worker's push and pull (2 × bytes)."""
    rate = _rate(rows, _near(rows, grad_bytes))
    if _allreduce(rows):
        return scaling.allreduce_time(grad_bytes, k, rate)
    return 2 * grad_bytes / rate


def _step_spread_s(run) -> float:
    """Half the range of the run's step time over its blocks of steady steps."""
    blocks = [b for b in metrics.steady_block_rates(run) if b > 0]
    rate = metrics.samples_per_sec(run)
    if len(blocks) < 2 or not rate > 0:
        return math.nan
    step = distributed.step_seconds(run)
    return step * (rate / min(blocks) - rate / max(blocks)) / 2


def measured_table(runs, bench, grad_bytes: float) -> pd.DataFrame:
    """The model's terms, measured: one row a run (the first is the one-device run every
    other is set against) and the talk's 4 V100s, each with its step time, what it lost a
    step against one device, the bus bandwidth that loss would mean if it were all
    communication, and (k > 1) the efficiency the model predicts from the one-device step
    and the measured bandwidth, with no overlap."""
    base = runs[0]
    t1 = distributed.step_seconds(base)
    s1 = metrics.samples_per_sec(base)
    rate = _rate(bench, _near(bench, grad_bytes))
    rows = []
    for run in runs:
        k, step = devices(run), distributed.step_seconds(run)
        lost = step - t1
        exchange = _exchange_s(bench, grad_bytes, k) if k > 1 else math.nan
        rows.append({
            "rung": run.name, "devices": k, "samples_per_sec": metrics.samples_per_sec(run),
            "efficiency (%)": 100 * scaling.measured_efficiency(s1, metrics.samples_per_sec(run), k),
            "step (ms)": 1e3 * step, "± (ms)": 1e3 * _step_spread_s(run),
            "lost a step (ms)": 1e3 * lost if k > 1 else math.nan,
            "implied bandwidth (GB/s)": 2 * (k - 1) / k * grad_bytes / lost / 1e9
            if k > 1 and lost > 0 else math.nan,
            "exchange alone (ms)": 1e3 * exchange,
            "hidden (%)": 100 * scaling.overlap_from_steps(step, t1, exchange)
            if k > 1 and not _allreduce(bench) else math.nan,
            "model (%)": 100 * scaling.predict([k], t1, grad_bytes, rate)[0]["efficiency"]
            if k > 1 else math.nan})
    t = distributed.TALK
    t1_talk, tk_talk = t["batch"] / t["samples_per_sec_1"], t["k"] * t["batch"] / t["samples_per_sec_k"]
    rows.append({
        "rung": f"the talk, {t['k']} V100s", "devices": t["k"],
        "samples_per_sec": t["samples_per_sec_k"],
        "efficiency (%)": 100 * scaling.measured_efficiency(t["samples_per_sec_1"],
                                                            t["samples_per_sec_k"], t["k"]),
        "step (ms)": 1e3 * tk_talk, "lost a step (ms)": 1e3 * (tk_talk - t1_talk),
        "implied bandwidth (GB/s)": scaling.implied_busbw(
            t["samples_per_sec_1"], t["samples_per_sec_k"], t["k"], t["batch"], t["grad_bytes"]) / 1e9})
    return pd.DataFrame(rows)


UPTO = f"above {MIN_EFFICIENCY:.0%} up to k"   # the model table's column of stops_paying


def _upto(t_compute: float, grad_bytes: float, gbps: float) -> int:
    return scaling.stops_paying(t_compute, grad_bytes, gbps * 1e9, latency=HOP_LATENCY_S,
                                min_efficiency=MIN_EFFICIENCY)


def _upto_text(k: int) -> str:
    """stops_paying's k as the table writes it: the search's cap is no limit found."""
    if k >= MODEL_K_MAX:
        return f"≥ {MODEL_K_MAX} (all it tried)"
    return "none: below from k = 2" if k == 1 else str(k)


def _reach(frame: pd.DataFrame, i: int, bar: str) -> str:
    """How far row i of the model table stays above `bar` (MIN_EFFICIENCY), in words."""
    k = int(frame["k_upto"].iloc[i])
    if k >= MODEL_K_MAX:
        return f"above {bar} for every k the model tried (up to {MODEL_K_MAX})"
    if k == 1:
        return f"below {bar} from the second device on"
    return f"above {bar} up to k = {k}"


def model_table(runs, grad_bytes: float) -> pd.DataFrame:
    """The model's outputs, not measurements: efficiency at MODEL_KS devices and the
    largest k still at MIN_EFFICIENCY, from a step time and a link of the lecture's table
    (HOP_LATENCY_S a hop, no overlap), for this machine's one-device step (a CPU step only
    over network links), the talk's V100 step and a ResNet-50 step on an A100."""
    base = runs[0]
    steps = [("this machine's step", distributed.step_seconds(base), grad_bytes,
              metrics.on_gpu(base)),
             ("a V100 step (the talk)", distributed.TALK["batch"] / distributed.TALK["samples_per_sec_1"],
              distributed.TALK["grad_bytes"], True),
             ("ResNet-50 on an A100", talk.RESNET50_BATCH / talk.RESNET50_A100_SAMPLES_PER_SEC,
              talk.RESNET50_PARAMETERS * 2, True)]
    rows = []
    for label, t_compute, nbytes, gpu in steps:
        for link, gbps in distributed.LINKS.items():
            if link in GPU_LINKS and not gpu:
                continue
            effs = scaling.predict(MODEL_KS, t_compute, nbytes, gbps * 1e9, latency=HOP_LATENCY_S)
            rows.append({"model": f"{label}, {link}", "step (ms)": 1e3 * t_compute,
                         "gradients (MiB)": nbytes / 2**20, "link (GB/s)": gbps,
                         **{f"{e['k']} devices (%)": 100 * e["efficiency"] for e in effs},
                         UPTO: _upto_text(_upto(t_compute, nbytes, gbps)),
                         "k_upto": _upto(t_compute, nbytes, gbps)})
    return pd.DataFrame(rows)


def _communication(runs, bench, grad_bytes, buckets) -> Said:
    from . import _display
    said = Said()
    pytorch = _allreduce(bench)
    if grad_bytes is None:
        if not buckets:
            raise ValueError("pass grad_bytes (the gradients' bytes) or buckets (rows of "
                             "bench.ddp_comm, which measured them)")
        grad_bytes = int(buckets[0]["grad_bytes"])
    base, last = runs[0], runs[-1]
    on_gpu = metrics.on_gpu(last)

    frame = bench_table(bench)
    _display(tables.show(frame))
    say = Closing(frame, key="size")
    said.append(say)
    rate = "bus bandwidth (GB/s)" if pytorch else "GB/s"
    best = int(frame[rate].idxmax())

    def bandwidth(i, over):
        return (f"{say.cell(i, rate, '{:.3g}')} GB/s ({say.cell(i, 'slowest (GB/s)', '{:.3g}')}–"
                f"{say.cell(i, 'fastest (GB/s)', '{:.3g}')} over its {over})")
    if pytorch:
        say(f"{'NCCL' if on_gpu else 'gloo'} over {bench[0]['processes']} processes reached "
            f"{bandwidth(best, 'blocks')} bus bandwidth at {frame['size'][best]}, "
            f"{bandwidth(0, 'blocks')} at {frame['size'][0]}; {LECTURE}'s 10 Gbps Ethernet is "
            f"{say.quote(LECTURE, LECTURE_ETHERNET_GBPS, '{:g} GB/s')}, NVLink "
            f"{say.quote(LECTURE, LECTURE_NVLINK_GBPS, '{:g} GB/s')}.")
    else:
        say(f"Through the server on this machine: {bandwidth(0, 'rounds')} at "
            f"{frame['size'][0]} (latency-bound), {bandwidth(best, 'rounds')} at best, at "
            f"{frame['size'][best]}.")
    near = _near(bench, grad_bytes)
    mib = say.setting("the gradients (parameters × 4 bytes)", grad_bytes / 2**20, "{:.2f} MiB")
    say(f"The gradients, {mib}, are nearest {frame['size'][near]}: "
        f"{say.cell(near, rate, '{:.3g}')} GB/s there, the rate the model below uses.")

    if buckets:
        frame = buckets_table(buckets)
        _display(tables.show(frame))
        say = Closing(frame, key="bucket (MB)")
        said.append(say)
        default = len(frame) - 1   # the largest: DDP's default, 25 MB
        row = buckets[default]
        if abs(row["exposed_s"]) <= row["spread_s"]:
            say(f"With DDP's default buckets the all-reduce cost "
                f"{say.cell(default, 'exposed (ms)', '{:+.1f} ms')} a step, within the steps' "
                f"spread (±{say.cell(default, 'spread (ms)', '{:.1f} ms')}): not measurable "
                f"here against {say.cell(default, 'no_sync (ms)', '{:.0f} ms')} of compute.")
        else:
            say(f"With DDP's default buckets the all-reduce showed "
                f"{say.cell(default, 'exposed (ms)', '{:.1f} ms')} a step (spread "
                f"{say.cell(default, 'spread (ms)', '{:.1f} ms')}) of the "
                f"{say.cell(default, 'all-reduce alone (ms)', '{:.1f} ms')} it takes alone: "
                f"{say.cell(default, 'hidden (%)', PCT)} hidden behind backward.")

    frame = measured_table(runs, bench, grad_bytes)
    _display(tables.show(frame))
    say = Closing(frame)
    said.append(say)
    if pytorch:
        say(f"One step of '{base.name}': {say.cell(0, 'step (ms)', '{:.0f} ms')}, the model's "
            "compute time.")
    else:
        extra, spread = frame["lost a step (ms)"].iloc[len(runs) - 1], frame["± (ms)"].iloc[0]
        say(f"A step: {say.cell(0, 'step (ms)', '{:.0f} ms')} with "
            f"'{base.name}', {say.cell(len(runs) - 1, 'step (ms)', '{:.0f} ms')} with "
            f"'{last.name}' (its slowest worker); pushing and pulling all gradients alone ≈ "
            f"{say.cell(len(runs) - 1, 'exchange alone (ms)', '{:.1f} ms')}.")
        lost = say.cell(len(runs) - 1, "lost a step (ms)", "{:+.1f} ms")
        if not abs(extra) > spread:   # a NaN spread (too few steps) lands here too
            say(f"Extra per step with '{last.name}': {lost}, within '{base.name}''s own spread "
                f"(±{say.cell(0, '± (ms)', '{:.1f} ms')} over its blocks of steps): the "
                "exchange's cost is not measurable here.")
        else:
            say(f"Extra per step with '{last.name}': {lost} (beyond '{base.name}''s own spread, "
                f"±{say.cell(0, '± (ms)', '{:.1f} ms')}), so "
                f"{say.cell(len(runs) - 1, 'hidden (%)', PCT)} of the exchange hid "
                "behind compute" + (" (on one CPU the workers also take cores from each "
                                    "other: the extra time is not all communication)."
                                    if not on_gpu else "."))
    for i, run in enumerate(runs[1:], 1):
        say(f"'{run.name}': the model says {say.cell(i, 'model (%)', PCT)} (no overlap), "
            f"measured {say.cell(i, 'efficiency (%)', PCT)}.")
    if not on_gpu:
        say("On one CPU the processes share the cores, so the measured efficiencies fall below "
            "the model by what they take from each other: the model counts communication only.")
    few = timed_steps(base)
    if few < MIN_TIMED_STEPS:
        say(f"Only {few} timed steps in '{base.name}': these efficiencies are noise, not a "
            f"result (raise the train size or the epochs).")
    t = len(frame) - 1
    implied = frame["implied bandwidth (GB/s)"].iloc[t]
    say(f"The talk lost {say.cell(t, 'lost a step (ms)', '{:.1f} ms')} a step going to 4 V100s: "
        f"were it all the all-reduce of ResNet-20's float16 gradients it would mean "
        f"{say.cell(t, 'implied bandwidth (GB/s)', '{:.2f} GB/s')}, " + (
            f"far below what 8 lanes of PCIe carry, {say.quote(LECTURE, LECTURE_PCIE_X8_GBPS, '{:g} GB/s')} "
            f"({LECTURE}): the loss was elsewhere (one Python thread driving four GPUs, the "
            "input pipeline), not in communication."
            if implied < LECTURE_PCIE_X8_GBPS else
            f"what 8 lanes of PCIe carry ({say.quote(LECTURE, LECTURE_PCIE_X8_GBPS, '{:g} GB/s')}, "
            f"{LECTURE}): communication can explain it."))

    frame = model_table(runs, grad_bytes)
    _display(tables.show(frame.drop(columns="k_upto")))
    say = Closing(frame, key="model")
    said.append(say)
    say(f"Model outputs, not measurements: each row puts a step time and a link of "
        f"{LECTURE}'s table into t_step(k) (scaling.py) with "
        f"{say.setting('HOP_LATENCY_S', HOP_LATENCY_S * 1e6, '{:g} µs')} a hop and no overlap. "
        f"\"≥ {MODEL_K_MAX}\" means the efficiency stayed above "
        f"{say.setting('MIN_EFFICIENCY', MIN_EFFICIENCY, '{:.0%}')} for every k the model tried "
        "(up to that): it finds no limit in its range, and a real job meets others first (the "
        "network's topology, the batch each device keeps).")
    if not metrics.on_gpu(base):
        say("This machine's step is a CPU step: the model sets it beside network links only "
            f"(a cluster of CPUs); over {', '.join(sorted(GPU_LINKS))}, a link between GPUs, it "
            "would describe no machine.")
    ethernet = {label: i for i, label in enumerate(frame["model"])
                if label.endswith("10 Gbps Ethernet")}
    bar = say.setting("MIN_EFFICIENCY", MIN_EFFICIENCY, "{:.0%}")
    reach = [f"{what} {_reach(frame, i, bar)}" for what, i in (
        ("a V100's ResNet-20 step", ethernet["a V100 step (the talk), 10 Gbps Ethernet"]),
        (f"ResNet-50's on an A100 (its {say.cell(ethernet['ResNet-50 on an A100, 10 Gbps Ethernet'], 'gradients (MiB)', '{:.0f} MiB')} "
         "of float16 gradients)", ethernet["ResNet-50 on an A100, 10 Gbps Ethernet"]))]
    say(f"Over 10 Gbps Ethernet the model keeps {reach[0]}, {reach[1]}: large gradients need "
        "fast links.")
    return said
