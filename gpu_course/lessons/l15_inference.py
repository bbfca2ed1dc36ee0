"""Lesson 15: inference, latency (batch 1) against throughput (large batches), CPU and GPU."""
from __future__ import annotations

from enum import StrEnum

from ..analyse import inference, noise
from ..analyse.inference import Outputs, Variant, table   # noqa: F401  (gc.show's table)
from ..show.closing import Closing
from ..show.findings import (Compare, Context, Expect, Flag, Lesson, Outcome, Page, Quote, Rank,
                             Row, judge_rows)
from . import talk

SIZES = {
    "full": dict(models=("tiny", "resnet20", "resnet56"),   # the CPU's networks, oneDNN off and on
                 batch=128,                  # the CPU's large batch (the talk's)
                 gpu_models=("resnet20", "resnet56"),
                 gpu_batch=1024,             # the GPU's large batch
                 requests=200,               # batch-1 requests timed, one at a time
                 images=1280,                # images timed at a large batch (at least 5 passes)
                 warmup=3,                   # untimed passes first (CUDA graphs record on the 2nd)
                 threads=None, exercise_model="resnet20"),   # threads None: every usable core
    # one thread: on a shared 2-core machine two threads wait for each other
    "smoke": dict(models=("tiny", "resnet20"), batch=16, gpu_models=("resnet20",),
                  gpu_batch=1024, requests=40, images=80, warmup=2, threads=1,
                  exercise_model="tiny"),
    "check": dict(gpu_models=("resnet20",), requests=100, images=640),
}
OWN_SIZES = ("batch", "exercise_model", "gpu_batch", "gpu_models", "images", "models",
             "requests", "warmup")


class Package(StrEnum):
    """The optional packages a lesson may find missing."""

    ONNX_RUNTIME = "onnxruntime"
    TENSORRT = "torch_tensorrt"


LATENCY = {"p50_ms": "p50 (ms)", "p99_ms": "p99 (ms)"}
PAGE = Page.of(__name__)   # the paragraphs: text/l15_inference.md
MISSING = PAGE.means("missing", Package)
BATCHING = PAGE.means("batching")
FLAGS = (
    Flag("outputs", PAGE.means("outputs", Outputs),
         cells={"against": "against", "max_rel_diff": "max |difference| / max |output|",
                "tolerance": "tolerance", "top1_same": "top-1 the same on"}),
    Flag("tail", {inference.LONG_TAIL: PAGE.text("long_tail")},
         cells={**LATENCY, "p99_p50": "p99/p50"}, worst="p99_p50"),
    Flag("machine", {inference.BUSY: PAGE.text("busy_machine")},
         cells={"load_average": "load average before"}, worst="load_average"),
)
MORE = "five blocks a side, one pass a block at least: more requests or images in gc.sizes(\"15\")"
CPU = Lesson(
    compares=(
        Compare(("variant",), when={"variant": Variant.ONEDNN_ON},
                against={"variant": Variant.ONEDNN_OFF}, cpu=Expect.FASTER, cells=LATENCY,
                means=PAGE.means("onednn"),
                ranks=(Rank("batch", {
                    noise.Order.HIGHER: f"A larger gain at batch 1, unlike {talk.SOURCE}'s table.",
                    noise.Order.LOWER: f"A larger gain batched, as in {talk.SOURCE}'s table."}),
                       Rank("model", where={"batch": 1},
                            means=PAGE.means("onednn_by_model", noise.Order)))),
        Compare(("variant",), when={"variant": Variant.ONNX_RUNTIME},
                against={"variant": Variant.ONEDNN_ON}, cpu=Expect.FASTER, cells=LATENCY,
                means=PAGE.means("onnx_runtime")),
        Compare(("batch",), when={"variant": Variant.ONEDNN_ON}, against={"batch": 1},
                cpu=Expect.FASTER, cells={"p50_ms": "p50 (ms)"}, means=BATCHING)),
    group_by="model", flags=FLAGS, missing=MISSING, column="images_per_sec", more=MORE,
    quotes=tuple(Quote(what, value, fmt, when={"variant": Variant.ONEDNN_OFF})   # not beside ONNX
                 for what, value, fmt in (
        ("a batch-1 request without MKL-DNN", talk.MKLDNN_LATENCY_MS[0], "{:.2f} ms"),
        ("with it", talk.MKLDNN_LATENCY_MS[1], "{:.2f} ms"),
        ("a speed-up of", talk.MKLDNN_SPEEDUP[1], "×{:.2f}"),
        (f"batch {talk.MKLDNN_BATCH} without it", talk.MKLDNN_THROUGHPUT[0], "{:.2f} images/s"),
        ("with it", talk.MKLDNN_THROUGHPUT[1], "{:.2f} images/s"),
        ("a speed-up of", talk.MKLDNN_SPEEDUP[talk.MKLDNN_BATCH], "×{:.2f}"),
        ("top-1 both ways", talk.MKLDNN_TOP1, "{:.2%}"),
        ("top-5 both ways", talk.MKLDNN_TOP5, "{:.2%}"))),
    hardware=f"{talk.MKLDNN_HARDWARE} ({talk.MKLDNN_NETWORK}, MXNet v{talk.MKLDNN_MXNET})",
)
WHAT = PAGE.means("what", Variant)   # what each GPU variant changes, said with its outcome
BY_BATCH = Rank("batch", PAGE.means("by_batch", noise.Order))
GPU = Lesson(
    compares=tuple(
        Compare(("variant",), when={"variant": v}, against={"variant": Variant.EAGER},
                gpu=Expect.FASTER, cells=LATENCY, ranks=(BY_BATCH,),
                means={Outcome.EXPECTED: f"{what}.",
                       Outcome.NONE: f"{what}; here that bought nothing beyond noise.",
                       Outcome.OPPOSITE: f"{what}; here it was slower."})
        for v, what in WHAT.items()) + (
        Compare(("batch",), when={"variant": Variant.EAGER}, against={"batch": 1},
                gpu=Expect.FASTER, cells={"p50_ms": "p50 (ms)"}, means=BATCHING),),
    group_by="model", flags=FLAGS, missing=MISSING, column="images_per_sec", more=MORE,
    quotes=tuple(Quote(f"TensorRT for {name}", speedup, "×{:.2f}")
                 for name, speedup in talk.TENSORRT_SPEEDUP.items()),
    hardware=talk.TENSORRT_HARDWARE,
    empty=PAGE.text("gpu_empty"),
)


def conclude(records=None, cpu=None, gpu=None, not_installed=()) -> Closing:
    """records: the CPU's, with cpu (env.cpu_facts) (`CPU`); or gpu: the GPU's ([] without a
    GPU) (`GPU`). not_installed: the optional packages (Package) that failed to import."""
    missing = tuple(inference.choice(Package, p, "not_installed") for p in not_installed)
    if (records is None) == (gpu is None):
        raise ValueError("pass records (the CPU's) or gpu= (the GPU's, [] without one); "
                         + ("none was passed" if records is None else "both were passed"))
    on_gpu = gpu is not None
    records = inference.checked(gpu if on_gpu else records, allow_empty=on_gpu, where=on_gpu)
    rows = [Row(inference.rung(r), {k: r[k] for k in ("model", "variant", "batch")},
                tuple(inference.block_rates(r)), inference.blocks_how(r), on_gpu)
            for r in records]
    frame = table(records, cpu["usable"] if cpu else None) if records else None
    return judge_rows(GPU if on_gpu else CPU, rows, frame, Context(cpu, missing))
