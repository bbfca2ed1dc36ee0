"""Lesson 07: data parallelism over devices and local hosts, and what the exchange costs
(efficiency = samples/s on k devices ÷ (k × samples/s on one))."""
from __future__ import annotations

import pandas as pd

from ..analyse import metrics, noise
from ..scale import distributed
from ..scale.exchange import (  # noqa: F401 (ranks, UPTO: the notebooks')
    BEYOND, GPU_LINKS, MIN_EFFICIENCY, SHORTER, UPTO, WITHIN, bench_table, buckets_table,
    devices, hosts, measured_table, model_table, ranks, talk_row)
from ..scale.plan import Plan, plan  # noqa: F401 (the notebooks')
from ..show.findings import (Compare, Expect, Lesson, Limit, Mark, Page, Quote, Reading, Said,
                             Where, judge, read)
from . import talk

SIZES = {
    "full": dict(train_size=50_000, test_size=10_000, epochs=2, batch_size=640,   # per device
                 model="resnet20", warmup_steps=10, warmup_epochs=1.0,
                 cpu_train_size=2048, cpu_test_size=512,   # when the "devices" share a CPU
                 bench_sizes=9, bench_iters=10, bench_seconds=0.2,   # push/pull, all-reduce
                 buckets_mb=(0.05, 0.25, 1.0, 25.0), bucket_batch=640, bucket_steps=10,
                 bucket_warmup=2,
                 exercise_size=51_200, exercise_batch=1280,        # the batch a step, split over the GPUs
                 cpu_exercise_size=2048, cpu_exercise_batch=64),   # when the "devices" share a CPU
    # the tiny network: processes that start and finish quickly; 22 exercise steady steps
    "smoke": dict(train_size=512, test_size=256, epochs=1, batch_size=32, model="tiny",
                  warmup_steps=2, warmup_epochs=0.5, cpu_train_size=512, cpu_test_size=128,
                  bench_sizes=5, bench_iters=3, bench_seconds=0.05, buckets_mb=(0.05, 25.0),
                  bucket_batch=8, bucket_steps=3, bucket_warmup=1, exercise_size=192,
                  exercise_batch=8, cpu_exercise_size=192, cpu_exercise_batch=8),
    "check": dict(train_size=10_240, test_size=2_048, epochs=1, exercise_size=38_400),
}
OWN_SIZES = ("bench_iters", "bench_seconds", "bench_sizes", "bucket_batch", "bucket_steps",
             "bucket_warmup", "buckets_mb", "cpu_exercise_batch", "cpu_exercise_size",
             "cpu_test_size", "cpu_train_size", "exercise_batch", "exercise_size")
LECTURE = "the lecture"   # "Performance and Profiling": its table of link bandwidths
PCIE_X8_GBPS = 5.0        # the lecture's: 8 lanes of PCIe, a GPU's
PCT = "{:.3g}%"           # a percent column's cell in a sentence


def table(runs) -> pd.DataFrame:
    """The ladder table with each run's devices (and hosts) and its scaling efficiency."""
    runs = list(runs)
    frame = metrics.table(runs)
    frame.insert(1, "devices", [devices(r) for r in runs])
    if any(hosts(r) > 1 for r in runs):
        frame.insert(2, "hosts", [hosts(r) for r in runs])
    per_device = frame["samples_per_sec"] / frame["devices"]
    frame["efficiency (%)"] = 100 * per_device / per_device.iloc[0]
    return frame


PAGE = Page.of(__name__)   # the paragraphs: text/l07_devices.md
LESSON = Lesson(
    compares=(Compare(
        varies=("num_gpus", "kvstore", "threads", "num_workers", "batch_size", "world_size",
                "workers", "nodes"),
        gpu=Expect.FASTER, cpu=Expect.SAME, means=PAGE.means("devices")),),
    columns=PAGE.means("columns", str),
    limits=(Limit("efficiency (%)", 100 * noise.ABOVE_PERFECT, above=True, fmt=PCT,
                  words="scaling efficiency", text=PAGE.text("above_perfect")),
            Limit("efficiency (%)", 100 * MIN_EFFICIENCY, where=Where.GPU, fmt=PCT,
                  words="scaling efficiency", text=PAGE.text("gpus_idle"))),
    cpu=PAGE.means("on_cores", str),
    quotes=(Quote(f"best scaling efficiency (at batch {talk.SCALING_BATCH} a GPU)",
                  max(k4 / (talk.SCALING_GPUS * k1) for k1, k4 in talk.SCALING.values()),
                  "{:.0%}"),),
    source=talk.SOURCE, hardware=f"{talk.SCALING_GPUS} V100s",
)
# a job of several local hosts against one host of as many processes: the same work
HOSTS = Lesson(compares=(Compare(varies=("nodes",), gpu=Expect.SAME, cpu=Expect.SAME,
                                 means=PAGE.means("hosts")),))

LINKS = (Quote("10 Gbps Ethernet", distributed.LINKS["10 Gbps Ethernet"], "{:g} GB/s"),
         Quote("NVLink", distributed.LINKS["NVLink"], "{:g} GB/s"))
BENCH = Reading(
    key="size", source=LECTURE, hardware="its table of links", quotes=LINKS,
    text=(PAGE.means("bench", str), PAGE.text("marked_row")))
BUCKETS = Reading(
    key="bucket (MB)", text=(PAGE.text("buckets"),),
    marks=(Mark("exposed is", (WITHIN,), PAGE.text("exposed_within")),
           Mark("exposed is", (BEYOND,), PAGE.text("exposed_beyond"))))
MEASURED = Reading(
    key="rung", source=LECTURE, hardware="its table of links",
    quotes=(Quote("8 lanes of PCIe (a GPU's)", PCIE_X8_GBPS, "{:g} GB/s"),),
    text=(PAGE.text("measured"), PAGE.means("measured_on_cpu", Where)),
    columns=PAGE.means("measured_columns", str),
    marks=(Mark("lost is", (WITHIN,), PAGE.text("lost_within")),
           Mark("lost is", (BEYOND,), PAGE.means("lost_beyond", Where)),
           Mark("lost is", (SHORTER,), PAGE.text("lost_shorter"))),
    limits=(Limit("steady steps", metrics.MIN_STEADY_STEPS, words="steady steps", fmt="{:.0f}",
                  text=PAGE.text("too_few_steps")),
            *(Limit("implied bandwidth (GB/s)", PCIE_X8_GBPS, above=above, row=talk_row(),
                    words=PAGE.text("implied_bandwidth"), fmt="{:.3g} GB/s", text=PAGE.text(text))
              for above, text in ((False, "far_below_pcie"), (True, "pcie_carries")))))
# the model's steps of machines not measured here: (label, step seconds, gradient bytes)
TALK = distributed.TALK
MODELLED = (("a V100 step (the talk)", TALK["batch"] / TALK["samples_per_sec_1"], TALK["grad_bytes"]),
            ("ResNet-50 on an A100", talk.RESNET50_BATCH / talk.RESNET50_A100_SAMPLES_PER_SEC,
             talk.RESNET50_PARAMETERS * 2))
MODEL = Reading(
    key="model",
    text=(PAGE.text("model_outputs"),
          {Where.CPU: "This step is a CPU's: the model sets it beside network links only, not "
                      f"beside {', '.join(sorted(GPU_LINKS))}, links between GPUs."},
          PAGE.text("ethernet_rows")))


def conclude(runs, bench=None, grad_bytes: int | None = None, buckets=None) -> Said:
    """Without `bench`: k devices against one, and local hosts against one host. With `bench`
    (push/pull or all-reduce rows; `buckets`, DDP's bucket rows, or `grad_bytes`): what the
    exchange costs, measured and modelled, each table before its sentences."""
    runs = list(runs)
    if bench is None:
        said = Said([judge(LESSON, runs, table(runs))])
        one_host = [r for r in runs if hosts(r) == 1 and devices(r) == devices(runs[-1])]
        if hosts(runs[-1]) > 1 and one_host:
            pair = [one_host[-1], runs[-1]]
            said.append(judge(HOSTS, pair, table(pair)))
        return said
    if grad_bytes is None and not buckets:
        raise ValueError("pass grad_bytes (gradients' bytes) or buckets (bench.ddp_comm's rows)")
    grad_bytes = int(buckets[0]["grad_bytes"]) if grad_bytes is None else grad_bytes
    bench = list(bench)
    context = (metrics.engine(runs[-1]), Where.GPU if metrics.on_gpu(runs[-1]) else Where.CPU)
    said = Said([read(BENCH, bench_table(bench, grad_bytes), *context)])
    said += [read(BUCKETS, buckets_table(buckets), *context)] if buckets else []
    return Said(said + [read(MEASURED, measured_table(runs, bench, grad_bytes), *context),
                        read(MODEL, model_table(runs, grad_bytes, MODELLED), *context)])
