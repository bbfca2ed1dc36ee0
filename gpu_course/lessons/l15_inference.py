"""Lesson 15: inference, latency against throughput.

Lesson 11 measured oneDNN on a forward pass's throughput; this lesson serves a network.
Each measurement is a record (`record`): one network, one variant (oneDNN off or on,
ONNX Runtime; on a GPU eager, compiled, CUDA graphs, bfloat16, TensorRT), one batch,
and the time of every timed pass, with the outputs on the lesson's probe images
(`probe_images`). Batch 1 is timed one request at a time, each pass ended by its own
sync: its median and 99th percentile are a request's latency (p50, p99). A large batch
is timed back to back, one sync at the end (CUDA events between the passes on a GPU):
its images/s is the throughput. Spreads come from `noise.BLOCKS` consecutive blocks of
the passes (each block's p50, p99 and images/s).

The adapters measure (`gpu_course/tracks/<track>/inference.py`, `time_inference`; on the
CPU with oneDNN off and on each in a fresh process, `env.report.infer`) and hand the
records here: `table(records)` and `conclude(records, ...)`. No deep-learning framework
here.
"""
from __future__ import annotations

import math
import statistics
from enum import StrEnum

import numpy as np
import pandas as pd

from ..analyse import noise
from ..show import tables
from ..show.closing import Closing
from . import talk
from .l11_environment import say_busy, say_cpu

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
SEED = 0            # the weights and probe images every measurement of a network uses
IMAGE_SHAPE = (3, 32, 32)
BLOCKS = noise.BLOCKS   # consecutive blocks of passes that stand in for repeats
MIN_PASSES = BLOCKS     # passes a record needs before a verdict (one a block)
TAIL = 1.5          # p99 at least this many times p50: a tail worth naming
# outputs agree when max |difference| / max |reference output| is within this, by number format
TOLERANCE = {"float32": 1e-3, "bfloat16": 5e-2}


class Variant(StrEnum):
    """How a network is served: the CPU's settings, then the GPU's."""

    ONEDNN_OFF = "oneDNN off"
    ONEDNN_ON = "oneDNN on"
    ONNX_RUNTIME = "ONNX Runtime"
    EAGER = "eager"
    COMPILED = "compiled"
    CUDA_GRAPHS = "CUDA graphs"
    BFLOAT16 = "bfloat16"
    TENSORRT = "TensorRT"


class Timing(StrEnum):
    """How a record's passes were timed."""

    ALONE = "alone"       # each pass ended by its own sync: what one request waits
    QUEUED = "queued"     # back to back, one sync after the last: what a stream of batches runs at


class Package(StrEnum):
    """The optional packages a lesson may find missing (pyproject.toml's torch extra pins
    onnxruntime; torch-tensorrt needs the CUDA build of PyTorch it was built for)."""

    ONNX_RUNTIME = "onnxruntime"
    TENSORRT = "torch_tensorrt"


REFERENCE = (Variant.ONEDNN_OFF, Variant.EAGER)   # what the table's speed-ups are against
ON_GPU = {Variant.EAGER, Variant.COMPILED, Variant.CUDA_GRAPHS, Variant.BFLOAT16,
          Variant.TENSORRT}
# what each GPU variant changes, said beside its verdicts
WHAT = {Variant.COMPILED: "torch.compile fuses the network's operators into fewer kernels",
        Variant.CUDA_GRAPHS: "mode=\"reduce-overhead\" records the pass once as a CUDA graph and "
                             "replays it: one launch a pass instead of one a kernel",
        Variant.BFLOAT16: "bfloat16 halves the bytes of every value and runs the products on "
                          "tensor cores",
        Variant.TENSORRT: "TensorRT builds an engine of its own kernels for the network"}
NOT_INSTALLED = {
    Package.ONNX_RUNTIME: "ONNX Runtime is not installed here (import onnxruntime failed): its "
                          "rows are left out and the rest ran; pip install -e '.[torch]' installs "
                          "the version pyproject.toml pins.",
    Package.TENSORRT: "torch-tensorrt is not installed here: no TensorRT rows (it needs the CUDA "
                      "build of PyTorch it was built for, which pip cannot put beside this one)."}


# -- what the adapters measure with --------------------------------------------------------
def probe_images(n: int) -> np.ndarray:
    """n images (float32, NCHW, values in [0, 1)), the same in every process and track:
    the input of every timed pass and of the outputs compared."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n={n!r} images: a whole number of at least 1")
    return np.random.default_rng(SEED).random((int(n), *IMAGE_SHAPE), dtype=np.float32)


def passes_for(batch: int, images: int) -> int:
    """Timed passes of a large batch: `images` images, and at least MIN_PASSES passes."""
    return max(MIN_PASSES, int(images) // int(batch))


def record(model: str, variant, device: str, batch: int, timing, seconds, outputs=None,
           dtype: str = "float32", **facts) -> dict:
    """One measurement: `seconds` of each timed pass of `batch` images of `model` served
    as `variant` on `device` ("cpu", "cuda:0", "cpu(0)"), timed as `timing`; `outputs`
    the outputs on the probe images (None when not taken). facts: threads, load_average."""
    variant, timing = _enum(Variant, variant, "variant"), _enum(Timing, timing, "timing")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch={batch!r}: a whole number of images, at least 1")
    seconds = [float(s) for s in seconds]
    if not seconds or not all(math.isfinite(s) and s > 0 for s in seconds):
        raise ValueError(f"{model}, {variant}, batch {batch}: seconds={seconds[:5]!r} must be "
                         "one time > 0 a timed pass, at least one")
    if dtype not in TOLERANCE:
        raise ValueError(f"dtype={dtype!r}; allowed: {', '.join(TOLERANCE)}")
    return {"model": str(model), "variant": variant.value, "device": str(device),
            "batch": int(batch), "timing": timing.value, "pass_s": seconds, "dtype": dtype,
            "outputs": None if outputs is None else np.asarray(outputs, dtype=float).tolist(),
            **facts}


def on_gpu(rec: dict) -> bool:
    return str(rec["device"]).startswith(("cuda", "gpu"))


# -- the table --------------------------------------------------------------------------------
def rung(rec: dict) -> str:
    """A row's name: 'resnet20, oneDNN on, batch 128'."""
    return f"{rec['model']}, {rec['variant']}, batch {rec['batch']}"


def table(records) -> pd.DataFrame:
    """One row a record, in the order measured: the passes timed and how, p50 and p99 of a
    pass in ms with the spread of the blocks' p50s, p99/p50, images/s with its blocks'
    spread, the speed-up against the network's reference variant at the same batch (oneDNN
    off on a CPU, eager on a GPU, else the first measured), and where outputs were taken,
    their largest difference
    from the reference's (max |difference| / max |output|) and the share of the probe
    images whose top-1 class is the same."""
    records = checked(records)
    rows = []
    for rec in records:
        s = rec["pass_s"]
        p50, blocks = statistics.median(s), _blocks(s)
        ref = _reference(records, rec)
        same = _outputs_against(ref, rec)
        rows.append({"rung": rung(rec), "timed": rec["timing"], "passes": len(s),
                     "p50_ms": 1000 * p50, "p99_ms": 1000 * percentile(s, 99),
                     "p50_blocks_ms": _span([1000 * statistics.median(b) for b in blocks]),
                     "p99_p50": percentile(s, 99) / p50,
                     "images_per_sec": rec["batch"] / p50,
                     "images_blocks": _span(block_rates(rec)),
                     "against": ref["variant"] if ref is not None and ref is not rec else "–",
                     "speedup": (statistics.median(ref["pass_s"]) / p50
                                 if ref is not None and ref is not rec else math.nan),
                     "max_rel_diff": same[0], "top1_same": same[1],
                     "load_average": rec.get("load_average", math.nan)})
    return pd.DataFrame(rows)


def percentile(values, q: float) -> float:
    """The q-th percentile of `values`, linear between the two nearest (numpy's default)."""
    return float(np.percentile(np.asarray(values, dtype=float), q))


def _blocks(values) -> list[list[float]]:
    """BLOCKS consecutive blocks of the passes (the last takes the remainder); [] when
    there are fewer passes than blocks."""
    n = len(values) // BLOCKS
    if n < 1:
        return []
    return [list(values[i * n:(i + 1) * n if i < BLOCKS - 1 else len(values)])
            for i in range(BLOCKS)]


def block_rates(rec: dict) -> list[float]:
    """Images/s of each block of passes (batch / the block's median pass)."""
    return [rec["batch"] / statistics.median(b) for b in _blocks(rec["pass_s"])]


def _span(values) -> str:
    if not values:
        return "–"
    return f"{tables.cell('p50_ms', min(values))}–{tables.cell('p50_ms', max(values))}"


def _reference(records, rec: dict) -> dict | None:
    """The record rec is compared with: rec's network at rec's batch on the same kind of
    device, served as the reference variant (oneDNN off, eager) where one was measured,
    else as the first variant measured."""
    same = [r for r in records
            if (r["model"], r["batch"], on_gpu(r)) == (rec["model"], rec["batch"], on_gpu(rec))]
    return next((r for r in same if r["variant"] in REFERENCE), same[0])


def _outputs_against(ref: dict | None, rec: dict) -> tuple[float, float]:
    """(max |difference| / max |reference output|, share of rows with the same top-1)."""
    if ref is None or ref is rec or ref.get("outputs") is None or rec.get("outputs") is None:
        return math.nan, math.nan
    a, b = np.asarray(ref["outputs"], dtype=float), np.asarray(rec["outputs"], dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"{rung(rec)}: outputs of shape {b.shape} against {rung(ref)}'s "
                         f"{a.shape}: measure both on the same probe images")
    scale = float(np.abs(a).max()) or 1.0
    return float(np.abs(a - b).max()) / scale, float((a.argmax(1) == b.argmax(1)).mean())


# -- the sentences ---------------------------------------------------------------------------
def conclude(records=None, cpu=None, gpu=None, not_installed=()) -> Closing:
    """records: the CPU's (oneDNN off and on, ONNX Runtime), with cpu (env.cpu_facts) for
    the CPU's name and load; gpu: the GPU's records ([] where there is no GPU: what waits
    for one). not_installed: the optional packages (Package) the notebook could not import."""
    missing = [_enum(Package, p, "not_installed") for p in not_installed]
    if gpu is not None:
        if records is not None:
            raise ValueError("pass the CPU's records or gpu=the GPU's records, one at a time")
        return _gpu(checked(gpu, allow_empty=True, where=True), missing)
    if records is None:
        raise ValueError("lesson 15 concludes on records (the CPU's) or gpu= (the GPU's, [] "
                         "without a GPU); none was passed")
    return _cpu(checked(records, where=False), cpu, missing)


def _cpu(records, cpu, missing) -> Closing:
    say = Closing(table(records))
    if cpu:
        say_cpu(say, cpu)
    models = list(dict.fromkeys(r["model"] for r in records))
    said_talk = False
    for model in models:
        mine = [r for r in records if r["model"] == model]
        off, on = _variant(mine, Variant.ONEDNN_OFF), _variant(mine, Variant.ONEDNN_ON)
        if off and on:
            if not said_talk:
                _talk(say)
                said_talk = True
            _onednn(say, model, off, on)
            _agree(say, off, on, "with and without oneDNN")
        ort = _variant(mine, Variant.ONNX_RUNTIME)
        if ort:
            base = on or off
            if base:
                _against(say, model, base, ort, "ONNX Runtime")
                _agree(say, off or base, ort, f"of ONNX Runtime and {(off or base)[0]['variant']}")
        _batching(say, mine)
    if len(models) > 1:
        _across(say, records, models)
    _tail(say, records)
    usable = cpu["usable"] if cpu else max((r.get("threads") or 1 for r in records), default=1)
    say_busy(say, {rung(r): r.get("load_average", 0) or 0 for r in records}, usable,
             "load_average")
    for package in missing:
        say(NOT_INSTALLED[package])
    return say


def _gpu(records, missing) -> Closing:
    if not records:
        say = Closing(pd.DataFrame([{"rung": "none", "why": "no GPU"}]))
        say("What waits for a GPU: eager against torch.compile, CUDA graphs "
            "(mode=\"reduce-overhead\") and bfloat16, batch 1 one request at a time (p50 and p99 "
            "from CUDA events, each request ended by its own sync) against a large batch back to "
            "back; run this notebook on a GPU (the GPU check does).")
        _missing_gpu(say, missing)
        return say
    say = Closing(table(records))
    models = list(dict.fromkeys(r["model"] for r in records))
    for model in models:
        mine = [r for r in records if r["model"] == model]
        eager = _variant(mine, Variant.EAGER)
        for variant in (Variant.COMPILED, Variant.CUDA_GRAPHS, Variant.BFLOAT16, Variant.TENSORRT):
            other = _variant(mine, variant)
            if eager and other:
                _against(say, model, eager, other, variant.value)
                _agree(say, eager, other, f"of {variant.value} and eager")
        _batching(say, mine)
    _tail(say, records)
    _missing_gpu(say, missing)
    return say


def _missing_gpu(say: Closing, missing) -> None:
    for package in missing:
        if package is Package.TENSORRT:
            name, speedup = next(iter(talk.TENSORRT_SPEEDUP.items()))
            say(NOT_INSTALLED[package][:-1] + f"; {talk.SOURCE}'s TensorRT table: "
                f"{say.quote(talk.SOURCE, speedup, '×{:.2f}')} for {name} on "
                f"{talk.TENSORRT_HARDWARE}.")
        else:
            say(NOT_INSTALLED[package])


def _variant(records, variant: Variant) -> tuple[dict, dict] | None:
    """(batch-1 record, largest-batch record) of `variant`, or None without both."""
    mine = [r for r in records if r["variant"] == variant]
    one = [r for r in mine if r["batch"] == 1]
    big = [r for r in mine if r["batch"] > 1]
    if not one or not big:
        return None
    return one[0], max(big, key=lambda r: r["batch"])


def _talk(say: Closing) -> None:
    (lat_off, lat_on), (thr_off, thr_on) = talk.MKLDNN_LATENCY_MS, talk.MKLDNN_THROUGHPUT
    q = lambda value, fmt: say.quote(talk.SOURCE, value, fmt)   # noqa: E731
    say(f"{talk.SOURCE.capitalize()}'s table ({talk.MKLDNN_NETWORK}, MXNet v{talk.MKLDNN_MXNET} "
        f"on {talk.MKLDNN_HARDWARE}): MKL-DNN took a batch-1 request from "
        f"{q(lat_off, '{:.2f} ms')} to {q(lat_on, '{:.2f} ms')} "
        f"({q(talk.MKLDNN_SPEEDUP[1], '×{:.2f}')}) and batch {talk.MKLDNN_BATCH} from "
        f"{q(thr_off, '{:.2f}')} to {q(thr_on, '{:.2f} images/s')} "
        f"({q(talk.MKLDNN_SPEEDUP[talk.MKLDNN_BATCH], '×{:.2f}')}), with top-1 and top-5 "
        f"unchanged ({q(talk.MKLDNN_TOP1, '{:.2%}')} and {q(talk.MKLDNN_TOP5, '{:.2%}')} both "
        "ways). Yours, network by network:")


def _verdict(say: Closing, a: dict, b: dict) -> noise.Verdict | None:
    """b against a in images/s, judged on their blocks of passes; None with too few."""
    xs, ys = block_rates(a), block_rates(b)
    if len(xs) < BLOCKS or len(ys) < BLOCKS:
        return None
    sizes = sorted({len(a["pass_s"]) // BLOCKS, len(b["pass_s"]) // BLOCKS})
    how = (f"{BLOCKS} passes each" if sizes == [1] else
           f"{BLOCKS} blocks of {' and '.join(map(str, sizes))} passes each")
    return say.compare_samples(rung(a), rung(b), xs, ys, how, "images_per_sec")


def _judged(say: Closing, a: dict, b: dict) -> str:
    v = _verdict(say, a, b)
    if v is None:
        return (f"{say.ratio('images_per_sec', rung(a), rung(b))}, too few passes to judge "
                f"(at least {MIN_PASSES} a side: more requests or images in gc.sizes(\"15\", ...))")
    return str(v)


def _onednn(say: Closing, model: str, off, on) -> None:
    (off1, offb), (on1, onb) = off, on
    r1, rb = rung(on1), rung(onb)
    v1, vb = _verdict(say, off1, on1), _verdict(say, offb, onb)
    say(f"{model}, one request at a time: p50 {say.cell(rung(off1), 'p50_ms')} ms without "
        f"oneDNN, {say.cell(r1, 'p50_ms')} ms with it (p99 {say.cell(rung(off1), 'p99_ms')} → "
        f"{say.cell(r1, 'p99_ms')} ms): " + (str(v1) if v1 else _judged(say, off1, on1)) + ".")
    text = (f"{model} at batch {onb['batch']}: {say.cell(rung(offb), 'images_per_sec')} images/s "
            f"without oneDNN, {say.cell(rb, 'images_per_sec')} with it: "
            + (str(vb) if vb else _judged(say, offb, onb)))
    if v1 and vb and (v1.is_effect or vb.is_effect):
        order = noise.ranked(vb, v1)
        text += {noise.Order.HIGHER: f"; a larger gain than at batch 1, as in {talk.SOURCE}",
                 noise.Order.LOWER: f"; a smaller gain than at batch 1, unlike {talk.SOURCE}'s",
                 }.get(order, "; within noise of its gain at batch 1")
    say(text + ".")


def _against(say: Closing, model: str, base, other, name: str) -> None:
    (b1, bb), (o1, ob) = base, other
    v1, vb = _verdict(say, b1, o1), _verdict(say, bb, ob)
    text = (f"{model}, {name} against {b1['variant']}: p50 {say.cell(rung(b1), 'p50_ms')} → "
            f"{say.cell(rung(o1), 'p50_ms')} ms one request at a time (p99 "
            f"{say.cell(rung(b1), 'p99_ms')} → {say.cell(rung(o1), 'p99_ms')} ms), "
            + (str(v1) if v1 else _judged(say, b1, o1)) + f"; at batch {ob['batch']} "
            f"{say.cell(rung(bb), 'images_per_sec')} → {say.cell(rung(ob), 'images_per_sec')} "
            "images/s, " + (str(vb) if vb else _judged(say, bb, ob)) + ".")
    variant = Variant(o1["variant"])
    if variant in WHAT:
        text += f" {WHAT[variant]}"
        if v1 and vb and (v1.is_effect or vb.is_effect):
            order = noise.ranked(v1, vb)
            text += {noise.Order.HIGHER: ": it gained more at batch 1, where launching the "
                                         "kernels holds a pass",
                     noise.Order.LOWER: f": it gained more at batch {ob['batch']}, where the "
                                        "GPU's arithmetic and memory hold a pass"}.get(order, "")
        text += "."
        if variant is Variant.TENSORRT:
            name, speedup = next(iter(talk.TENSORRT_SPEEDUP.items()))
            text += (f" {talk.SOURCE.capitalize()}'s TensorRT table: "
                     f"{say.quote(talk.SOURCE, speedup, '×{:.2f}')} for {name} on "
                     f"{talk.TENSORRT_HARDWARE}.")
    say(text)


def _agree(say: Closing, a, b, what: str) -> None:
    """The outputs of the larger batch's records, b against the reference a."""
    ref, rec = a[1], b[1]
    row = rung(rec)
    diff = say.table.set_index("rung").loc[row, "max_rel_diff"]
    if ref.get("outputs") is None or rec.get("outputs") is None or math.isnan(diff):
        return
    n = len(rec["outputs"])
    tol = max(TOLERANCE[rec["dtype"]], TOLERANCE[ref["dtype"]])
    limit = say.setting(f"the tolerance for {rec['dtype']}", tol, "{:.0e}")
    same = say.table.set_index("rung").loc[row, "top1_same"]
    top1 = f"top-1 the same on {say.cell(row, 'top1_same')} of the {n} probe images"
    measured = (f"max |difference| / max |output| = {say.cell(row, 'max_rel_diff', '{:.1e}')}")
    if diff <= tol and same == 1:
        say(f"{rec['model']}: the outputs {what} agree within the tolerance ({measured}, at most "
            f"{limit}), {top1}.")
    elif diff <= tol:
        say(f"{rec['model']}: the outputs {what} agree within the tolerance ({measured}, at most "
            f"{limit}), yet {top1}: on the others the two largest outputs were nearly tied "
            "(the weights are untrained), and a rounding difference chose the other class.")
    else:
        say(f"{rec['model']}: the outputs {what} differ beyond the tolerance ({measured}, more "
            f"than {limit}); {top1}." + (
                " bfloat16 keeps 8 bits of mantissa: expect it to disagree where two classes "
                "are close." if rec["dtype"] == "bfloat16" else
                " The two compute different things: check the variant before trusting its speed."))


def _batching(say: Closing, records) -> None:
    """Latency against throughput for the variant with the most images/s at its large batch."""
    pairs = [p for p in (_variant(records, v) for v in Variant) if p]
    if not pairs:
        return
    one, big = max(pairs, key=lambda p: say.table.set_index("rung").loc[rung(p[1]),
                                                                         "images_per_sec"])
    v = _verdict(say, one, big)
    head = (f"{one['model']} with {one['variant']}, latency against throughput: batch "
            f"{big['batch']} ran {say.cell(rung(big), 'images_per_sec')} images/s, one request "
            f"at a time {say.cell(rung(one), 'images_per_sec')}: "
            + (str(v) if v else _judged(say, one, big)))
    wait = (f"a request in that batch waits for the whole pass, "
            f"{say.cell(rung(big), 'p50_ms')} ms against {say.cell(rung(one), 'p50_ms')} ms alone "
            f"({say.ratio('p50_ms', rung(one), rung(big))})")
    kind = v.kind if v else None
    if kind == noise.Kind.FASTER:
        say(f"{head}. Batching buys throughput with latency: {wait}. Serve in batches when "
            "requests queue up, one at a time when each must answer fast.")
    elif kind == noise.Kind.SLOWER:
        say(f"{head}: the large batch was slower per image too (a pass whose data outgrow the "
            f"caches is a common cause), and {wait}: on this machine, serve one at a time.")
    elif kind == noise.Kind.WITHIN_NOISE:
        say(f"{head}: batching bought nothing beyond noise here, and it makes each request "
            f"wait: {wait}.")
    else:
        say(f"{head}; {wait}.")


def _across(say: Closing, records, models) -> None:
    """Which network oneDNN helped most at batch 1, judged against the spreads."""
    judged = []
    for model in models:
        mine = [r for r in records if r["model"] == model]
        off, on = _variant(mine, Variant.ONEDNN_OFF), _variant(mine, Variant.ONEDNN_ON)
        if off and on:
            frame = say.table.set_index("rung")["images_per_sec"]
            v = noise.compare_samples(block_rates(off[0]), block_rates(on[0]), "blocks",
                                      frame[rung(off[0])], frame[rung(on[0])])
            if not math.isnan(v.ratio) and len(block_rates(off[0])) >= BLOCKS:
                judged.append((model, v))
    if len(judged) < 2:
        return
    most = max(judged, key=lambda p: p[1].ratio)
    least = min(judged, key=lambda p: p[1].ratio)
    apart = noise.ranked(most[1], least[1]) == noise.Order.HIGHER
    say(f"Across networks, oneDNN cut the batch-1 latency most for {most[0]} and least for "
        f"{least[0]}: " + ("apart beyond their spreads, so what oneDNN buys depends on the "
                           "network's layers." if apart else
                           "within each other's spreads, so no network gained clearly more."))


def _tail(say: Closing, records) -> None:
    """The batch-1 record whose p99 stands furthest from its p50."""
    alone = [r for r in records if r["batch"] == 1 and len(r["pass_s"]) >= 2 * BLOCKS]
    if not alone:
        return
    frame = say.table.set_index("rung")
    worst = max(alone, key=lambda r: frame.loc[rung(r), "p99_p50"])
    row = rung(worst)
    if frame.loc[row, "p99_p50"] >= TAIL:
        say(f"The longest tail: '{row}', p99 {say.cell(row, 'p99_ms')} ms against p50 "
            f"{say.cell(row, 'p50_ms')} ms ({say.cell(row, 'p99_p50')}): one request in a "
            "hundred waited that long or longer. A service that promises a latency promises its "
            "p99, not its p50.")
    else:
        say(f"The tails are short: at most {say.cell(row, 'p99_p50')} between p99 and p50 "
            f"('{row}'), under the lesson's {say.setting('tail', TAIL, '×{}')}.")


# -- helpers ----------------------------------------------------------------------------------
def _enum(kind, value, name: str):
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"{name}={value!r}; allowed: "
                         f"{', '.join(repr(k.value) for k in kind)}") from None


def checked(records, allow_empty: bool = False, where: bool | None = None) -> list[dict]:
    """The records as a list, each one a record (`record`), every rung once; where: True
    (all on a GPU), False (all on the CPU) or None (either)."""
    if records is None or isinstance(records, dict):
        raise ValueError(f"records={type(records).__name__}: pass a list of lesson 15's "
                         "records (what time_inference and env.infer return)")
    records = list(records)
    if not records and not allow_empty:
        raise ValueError("records=[] is empty: pass what time_inference and env.infer returned")
    keys = {"model", "variant", "device", "batch", "timing", "pass_s", "dtype"}
    seen = set()
    for rec in records:
        if not isinstance(rec, dict) or not keys <= set(rec):
            raise ValueError(f"{str(rec)[:80]!r} is not a record of lesson 15: it needs "
                             f"{', '.join(sorted(keys))} (l15.record)")
        _enum(Variant, rec["variant"], "variant")
        if rung(rec) in seen:
            raise ValueError(f"'{rung(rec)}' was measured twice; each network, variant and "
                             "batch once")
        seen.add(rung(rec))
        if where is not None and on_gpu(rec) != where:
            raise ValueError(f"'{rung(rec)}' ran on {rec['device']}: pass the CPU's records "
                             "first, the GPU's as gpu=")
    return records
