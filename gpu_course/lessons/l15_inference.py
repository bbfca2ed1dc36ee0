"""Lesson 15: inference, latency against throughput.

Lesson 11 measured oneDNN on a forward pass's throughput; this lesson serves a network,
one request at a time (batch 1: a request's latency, p50 and p99) and in large batches
(throughput). The adapters measure (`gpu_course/tracks/<track>/inference.py`,
`time_inference`; on the CPU with oneDNN off and on each in a fresh process,
`env.report.infer`) and make the records (`analyse.inference.record`); the table is
`analyse.inference.table`, and `conclude` judges the records through the findings engine:
`CPU` (oneDNN on against off, ONNX Runtime against oneDNN, batching) and `GPU` (eager
against torch.compile, CUDA graphs, bfloat16, TensorRT). No deep-learning framework here.
"""
from __future__ import annotations

from enum import StrEnum

from ..analyse import inference, noise
from ..analyse.inference import Outputs, Variant, table   # noqa: F401  (gc.show's table)
from ..show.closing import Closing
from ..show.findings import (Compare, Context, Expect, Flag, Lesson, Outcome, Quote, Rank,
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
                 threads=None,               # the CPU's threads (None: every usable core)
                 exercise_model="resnet20"),
    # one small network and a tiny one, 40 requests and 5 passes of 16, one thread (a
    # shared 2-core machine keeps two threads waiting for each other): CI's budget
    "smoke": dict(models=("tiny", "resnet20"), batch=16, gpu_models=("resnet20",),
                  gpu_batch=1024, requests=40, images=80, warmup=2, threads=1,
                  exercise_model="tiny"),
    # the GPU check (GPU_COURSE_SIZE=check): one network on the GPU, fewer requests and images
    "check": dict(gpu_models=("resnet20",), requests=100, images=640),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("batch", "exercise_model", "gpu_batch", "gpu_models", "images", "models",
             "requests", "warmup")


class Package(StrEnum):
    """The optional packages a lesson may find missing (pyproject.toml's torch extra pins
    onnxruntime; torch-tensorrt needs the CUDA build of PyTorch it was built for)."""

    ONNX_RUNTIME = "onnxruntime"
    TENSORRT = "torch_tensorrt"


LATENCY = {"p50_ms": "p50 (ms)", "p99_ms": "p99 (ms)"}
MISSING = {
    Package.ONNX_RUNTIME: "ONNX Runtime is not installed here (import onnxruntime failed): its "
                          "rows are left out and the rest ran; pip install -e '.[torch]' installs "
                          "the version pyproject.toml pins.",
    Package.TENSORRT: "torch-tensorrt is not installed here: no TensorRT rows (it needs the CUDA "
                      "build of PyTorch it was built for, which pip cannot put beside this one)."}
BATCHING = {
    Outcome.EXPECTED: "Batching buys throughput with latency: every request in a batch waits "
                      "for the whole pass (its p50 above). Serve in batches when requests queue "
                      "up, one at a time when each must answer fast.",
    Outcome.NONE: "Batching bought nothing beyond noise here, and it makes each request wait "
                  "for the whole pass (its p50 above).",
    Outcome.OPPOSITE: "The large batch was slower per image too (a pass whose data outgrow the "
                      "caches is a common cause), and each request in it waits for the whole "
                      "pass: on this machine, serve one at a time.",
    Outcome.CANNOT_JUDGE: "Time more requests or images for a verdict on batching."}
FLAGS = (
    Flag("outputs", {
        Outputs.AGREE: "Within the tolerance of the number format, every probe image's top-1 "
                       "the same: the two serve the same network.",
        Outputs.TOP1_FLIPPED: "Within the tolerance, yet a top-1 differs: on those images the "
                              "two largest outputs were nearly tied (the weights are "
                              "untrained), and a rounding difference chose the other class.",
        Outputs.DIFFER: "Beyond the tolerance at the same precision: the two compute different "
                        "things; check the variant before trusting its speed.",
        Outputs.DIFFER_PRECISION: "Beyond the tolerance in a lower precision: bfloat16 keeps "
                                  "8 bits of mantissa, so expect it to disagree where two "
                                  "classes are close."},
         cells={"against": "against", "max_rel_diff": "max |difference| / max |output|",
                "tolerance": "tolerance", "top1_same": "top-1 the same on"}),
    Flag("tail", {inference.LONG_TAIL: "One request in a hundred waited that long or longer: "
                                       "a service that promises a latency promises its p99, "
                                       "not its p50."},
         cells={**LATENCY, "p99_p50": "p99/p50"}, worst="p99_p50"),
    Flag("machine", {inference.BUSY: "Other programs took turns with these passes (a load "
                                     "average of at least the usable cores before it): measure "
                                     "again on a quiet machine before trusting a ranking."},
         cells={"load_average": "load average before"}, worst="load_average"),
)
MORE = "five blocks a side, one pass a block at least: more requests or images in gc.sizes(\"15\")"
CPU = Lesson(
    compares=(
        Compare(("variant",), when={"variant": Variant.ONEDNN_ON},
                against={"variant": Variant.ONEDNN_OFF}, cpu=Expect.FASTER, cells=LATENCY,
                means={Outcome.EXPECTED: "oneDNN's kernels pay on this CPU too.",
                       Outcome.NONE: "oneDNN bought nothing beyond the passes' spread here.",
                       Outcome.OPPOSITE: "oneDNN's kernels lose on this CPU at this batch."},
                ranks=(Rank("batch", {noise.Order.HIGHER: f"A larger gain one request at a "
                                                          f"time, unlike {talk.SOURCE}'s table.",
                                      noise.Order.LOWER: f"A larger gain at the large batch, "
                                                         f"as in {talk.SOURCE}'s table."}),
                       Rank("model", where={"batch": 1}, means={
                           noise.Order.HIGHER: "What oneDNN buys depends on the network's layers.",
                           noise.Order.WITHIN_NOISE: "No network gained clearly more."}))),
        Compare(("variant",), when={"variant": Variant.ONNX_RUNTIME},
                against={"variant": Variant.ONEDNN_ON}, cpu=Expect.FASTER, cells=LATENCY,
                means={Outcome.EXPECTED: "ONNX Runtime's own kernels served this network "
                                         "faster than the framework with oneDNN.",
                       Outcome.NONE: "Not faster than the framework with oneDNN beyond the "
                                     "passes' spread: more passes, or a quieter machine, tell.",
                       Outcome.OPPOSITE: "ONNX Runtime served it slower than the framework "
                                         "with oneDNN."}),
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
# what each GPU variant changes, said with its outcome
WHAT = {Variant.COMPILED: "torch.compile fuses the network's operators into fewer kernels",
        Variant.CUDA_GRAPHS: "mode=\"reduce-overhead\" records the pass once as a CUDA graph and "
                             "replays it: one launch a pass instead of one a kernel",
        Variant.BFLOAT16: "bfloat16 halves the bytes of every value and runs the products on "
                          "tensor cores",
        Variant.TENSORRT: "TensorRT builds an engine of its own kernels for the network"}
BY_BATCH = Rank("batch", {
    noise.Order.HIGHER: "The gain was larger one request at a time, where launching the "
                        "kernels holds a pass.",
    noise.Order.LOWER: "The gain was larger at the large batch, where the GPU's arithmetic and "
                       "memory hold a pass."})
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
    empty="What waits for a GPU: eager against torch.compile, CUDA graphs "
          "(mode=\"reduce-overhead\") and bfloat16, batch 1 one request at a time (p50 and p99 "
          "from CUDA events, each request ended by its own sync) against a large batch back to "
          "back; run this notebook on a GPU (the GPU check does).",
)


def conclude(records=None, cpu=None, gpu=None, not_installed=()) -> Closing:
    """records: the CPU's (oneDNN off and on, ONNX Runtime), with cpu (env.cpu_facts) for
    the CPU's name and usable cores (`CPU`); gpu: the GPU's records ([] where there is no
    GPU: what waits for one; `GPU`). not_installed: the optional packages (Package) the
    notebook could not import."""
    missing = tuple(inference.choice(Package, p, "not_installed") for p in not_installed)
    if (records is None) == (gpu is None):
        raise ValueError("lesson 15 concludes on records (the CPU's) or gpu= (the GPU's, [] "
                         "without a GPU), one at a time; "
                         + ("none was passed" if records is None else "both were passed"))
    on_gpu = gpu is not None
    records = inference.checked(gpu if on_gpu else records, allow_empty=on_gpu, where=on_gpu)
    rows = [Row(inference.rung(r), {"model": r["model"], "variant": r["variant"],
                                    "batch": r["batch"]},
                tuple(inference.block_rates(r)), inference.blocks_how(r), on_gpu)
            for r in records]
    frame = table(records, cpu["usable"] if cpu else None) if records else None
    return judge_rows(GPU if on_gpu else CPU, rows, frame, Context(cpu, missing))
