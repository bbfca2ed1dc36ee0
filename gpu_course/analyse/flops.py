"""How close to the hardware's peak a run computes: FLOPs per image from the layer shapes,
times samples/s, over the device's peak for the precision that ran. Only convolutions and
dense layers count: the element-wise rest is under 1 % of the work but moves memory,
which is why no real run reaches 100 %.
"""
from __future__ import annotations

import functools
import math
import socket
import time
from dataclasses import dataclass

import numpy as np

from ..page import Page
from . import metrics

PAGE = Page.of(__name__)   # what a number cannot say: text/flops.md
OWN, NO_PEAK, ABOVE_PEAK = (PAGE.text(name) for name in ("own_network", "no_peak", "above_peak"))
SAY = {name: PAGE.text(name) for name in ("unknown", "achieved", "cpu_peak", "of_peak")}

TRAIN_FACTOR = 3  # backward = gradient w.r.t. inputs + w.r.t. weights: each ~ one forward

# Dense peaks in TFLOP/s from NVIDIA's data sheets (None: no such unit); the first name
# found in the NVML name wins, so the more specific names come first.
PEAK_TFLOPS = {
    "H200": {"fp32": 67.0, "tf32": 495.0, "bf16": 989.0, "fp16": 989.0},
    "H100 PCIe": {"fp32": 51.0, "tf32": 378.0, "bf16": 756.0, "fp16": 756.0},
    "H100": {"fp32": 67.0, "tf32": 495.0, "bf16": 989.0, "fp16": 989.0},   # SXM5
    "A100": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
    "A10G": {"fp32": 31.2, "tf32": 35.0, "bf16": 70.0, "fp16": 70.0},      # AWS G5
    "V100": {"fp32": 15.7, "tf32": None, "bf16": None, "fp16": 125.0},     # SXM2
    "T4": {"fp32": 8.1, "tf32": None, "bf16": None, "fp16": 65.0},
}
TF32_FROM = (8, 0)  # Ampere and newer have TF32 tensor cores
# the CIFAR ResNets and WRNs: (width factor, basic blocks a stage)
RESNETS = {"resnet20": (1, 3), "resnet56": (1, 9), "resnet110": (1, 18),
           "wrn16_10": (10, 2), "wrn28_10": (10, 4)}


@dataclass(frozen=True)
class Layer:
    """One weight layer applied to one image: its multiply-adds and output shape."""

    macs: int
    out_shape: tuple   # (channels, height, width) or (features,)


def conv(cin, cout, k, size, stride=1) -> Layer:
    """A k x k convolution, padded by k // 2, of a (cin, size, size) input."""
    out = (size + 2 * (k // 2) - k) // stride + 1
    return Layer(cout * out * out * cin * k * k, (cout, out, out))


def dense(n_in, n_out) -> Layer:
    """A fully connected layer: n_in * n_out MACs."""
    return Layer(n_in * n_out, (n_out,))


def _stages(widths, blocks, size):
    """The basic blocks of a CIFAR ResNet/WRN, in GluonCV's layout as the course's models."""
    out, h = [], size
    for i in range(1, len(widths)):
        for b in range(blocks):
            cin = widths[i - 1] if b == 0 else widths[i]
            stride = 2 if (b == 0 and i > 1) else 1
            first = conv(cin, widths[i], 3, h, stride)
            h2 = first.out_shape[1]
            out += [first, conv(widths[i], widths[i], 3, h2)]
            if cin != widths[i]:   # the shortcut's 1x1 projection
                out.append(conv(cin, widths[i], 1, h, stride))
            h = h2
    return out


def layers(model: str, image_size: int = 32, classes: int = 10) -> list[Layer]:
    """Every conv and dense layer of a course model (config.MODELS) for one image."""
    s = image_size
    if model in RESNETS:
        k, blocks = RESNETS[model]
        return ([conv(3, 16, 3, s)] + _stages([16, 16 * k, 32 * k, 64 * k], blocks, s)
                + [dense(64 * k, classes)])
    if model == "tiny":
        out, cin, h = [], 3, s
        for channels in (32, 64, 128):
            out.append(conv(cin, channels, 3, h))
            cin, h = channels, h // 2          # each block ends with a 2x2 max-pool
        return out + [dense(cin, classes)]
    raise ValueError(f"model={model!r} is unknown; allowed: {', '.join(RESNETS)}, tiny")


def forward_macs(model: str, image_size: int = 32) -> int:
    """Multiply-adds of one forward pass of one image."""
    return sum(layer.macs for layer in layers(model, image_size))


def train_flops(model: str, image_size: int = 32) -> int:
    """FLOPs to train on one image: 2 per MAC, forward plus backward (x TRAIN_FACTOR)."""
    return 2 * TRAIN_FACTOR * forward_macs(model, image_size)


# -- the peak ----------------------------------------------------------------------------
def precision(dtype: str, engine: str, compute_capability: str | None) -> str:
    """The arithmetic that ran: fp16/bf16, TF32 on Ampere+ in PyTorch, else fp32."""
    if dtype in ("float16", "bfloat16"):
        return {"float16": "fp16", "bfloat16": "bf16"}[dtype]
    try:
        cc = tuple(int(p) for p in str(compute_capability).split("."))
    except ValueError:
        cc = (0, 0)
    return "tf32" if engine == "pytorch" and cc >= TF32_FROM else "fp32"


def gpu_peak_tflops(gpu_name: str, prec: str):
    """(peak TFLOP/s, its PEAK_TFLOPS name), fp32 where the GPU lacks `prec`; (None, None)."""
    for name, peaks in PEAK_TFLOPS.items():
        if name in (gpu_name or ""):
            return peaks.get(prec) or peaks["fp32"], name
    return None, None


@functools.lru_cache(maxsize=None)
def cpu_peak_tflops(n: int = 768, repeats: int = 20) -> float:
    """This CPU's best float32 n x n matmul rate in TFLOP/s, once per process."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    a @ b  # the first call loads the BLAS threads: not timed
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * n ** 3 / best / 1e12


def achieved(run, samples_per_sec: float | None = None) -> dict:
    """Achieved TFLOP/s of a run and its share of the device's peak."""
    if samples_per_sec is None:
        samples_per_sec = metrics.samples_per_sec(run)
    cfg = run.config or {}
    model, size = cfg.get("model", "resnet20"), int(cfg.get("image_size") or 32)
    per_sample = 0 if cfg.get("mock", "none") == "trainer" else \
        math.nan if model == "own" else train_flops(model, size)   # an own network: not counted
    rate = float(samples_per_sec)
    tflops = per_sample * rate / 1e12 if not math.isnan(rate) else math.nan
    hw = run.meta.get("hardware") or {}
    gpus = hw.get("gpus") or []
    out = {"model": model, "image_size": size, "train_flop_per_sample": per_sample,
           "samples_per_sec": rate, "achieved_tflops": tflops, "device": None,
           "precision": None, "peak_tflops": math.nan, "fraction_of_peak": math.nan,
           "peak_source": None}
    dtype = metrics.ran_as(run).get("dtype", (None, cfg.get("dtype", "float32")))[1]
    if gpus and int(cfg.get("num_gpus") or 1) > 0:
        used = min(int(cfg.get("num_gpus") or 1), len(gpus))
        gpu = gpus[0]
        prec = precision(dtype, cfg.get("engine", run.meta.get("engine")),
                         gpu.get("compute_capability"))
        peak, known = gpu_peak_tflops(gpu.get("name"), prec)
        out.update(device=f"{used} x {gpu.get('name')}", precision=prec)
        if peak is not None:
            out.update(peak_tflops=peak * used, peak_source=f"data sheet ({known}, {prec})")
    else:
        prec = precision(dtype, "cpu", None)
        out.update(device=f"CPU: {hw.get('cpu_model') or '?'}", precision=prec)
        # the measured peak is a float32 matmul's: none for a bf16/fp16 run
        if prec == "fp32" and hw.get("hostname") == socket.gethostname():
            out.update(peak_tflops=cpu_peak_tflops(), peak_source="measured fp32 matmul")
    if out["peak_tflops"] > 0 and not math.isnan(tflops):
        out["fraction_of_peak"] = tflops / out["peak_tflops"]
    return out


def table_columns(table, runs):
    """`table` (one row per run) with "tflops" and "peak_pct" inserted before "status"."""
    numbers = [achieved(run, rate) for run, rate in zip(runs, table["samples_per_sec"])]
    at = list(table.columns).index("status") if "status" in table.columns else len(table.columns)
    table.insert(at, "tflops", [n["achieved_tflops"] for n in numbers])
    table.insert(at + 1, "peak_pct", [100 * n["fraction_of_peak"] for n in numbers])
    return table


def sentence(numbers: dict) -> str:
    """'2.1 TFLOP/s (fp32), 38 % of the peak 5.5 TFLOP/s (measured fp32 matmul)'."""
    t = numbers["achieved_tflops"]
    if math.isnan(t):
        return SAY["unknown"].format(why=OWN if numbers["model"] == "own" else "no throughput")
    text = SAY["achieved"].format(**numbers, tflops=_tflops(t))
    if math.isnan(numbers["fraction_of_peak"]):
        if str(numbers.get("device") or "").startswith("CPU") and numbers["precision"] != "fp32":
            return SAY["cpu_peak"].format(text=text, precision=numbers["precision"])
        return f"{text}; {NO_PEAK}"
    text += ", " + SAY["of_peak"].format(percent=100 * numbers["fraction_of_peak"],
                                         peak=_tflops(numbers["peak_tflops"]),
                                         source=numbers["peak_source"])
    if numbers["fraction_of_peak"] > 1:
        text += f" ({ABOVE_PEAK})"
    return text


def _tflops(value: float) -> str:
    return f"{value:.3f}" if value < 1 else f"{value:,.1f}"
