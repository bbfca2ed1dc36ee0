"""How far each ResNet-20 convolution runs from its bound, pass by pass.

    python -m tools.conv_bench                     # the tuned rung's batch (1024), on this device
    python -m tools.conv_bench --quick             # batch 32, fewer repeats: seconds on a CPU

For each stage of ResNet-20 (the stem, then 16, 32 and 64 channels at 32, 16 and 8
pixels) it times one 3x3 convolution's three passes, forward (fprop), the gradient of
its input (dgrad) and of its weight (wgrad), in each 16-bit type and memory layout
(NHWC, channels_last, is what tensor-core kernels read; NCHW is PyTorch's default), and
on a GPU with cuDNN's algorithm search as shipped and exhaustive
(`torch.backends.cudnn.benchmark_limit` 10 and 0), and, where Triton runs, by the kernel
rung's own kernels (`gpu_course.tracks.torch.conv_kernels`, search "triton", each pass's
speed against cuDNN's as shipped said after the table). Every pass is timed with CUDA
events (perf_counter on a CPU) after a warm-up, as the median of its repeats.

Each pass's floor is the larger of its arithmetic over the device's measured matrix rate
and its bytes (input, weight and output, each once) over the device's measured copy
bandwidth, both measured here first. "× off" is the pass's time over that floor; the
table ends by naming the stage and pass furthest from its floor, the one a purpose-written
kernel would have most room in. Nothing here changes the GPU's settings.
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.nn.grad import conv2d_input, conv2d_weight

# (stage, input channels, output channels, pixels a side): ResNet-20 on 32-px images
STAGES = (("stem", 3, 16, 32), ("16 ch", 16, 16, 32), ("32 ch", 32, 32, 16), ("64 ch", 64, 64, 8))
PASSES = ("fprop", "dgrad", "wgrad")
LAYOUTS = {"NHWC": torch.channels_last, "NCHW": torch.contiguous_format}
TUNED_BATCH = 1024   # issue 28's tuned rung's batch (tools/levers.py)


@dataclass(frozen=True)
class Limits:
    """What this device was measured to do: bytes/s of a large copy and FLOP/s of a
    large matrix product in each dtype."""
    bytes_per_s: float
    flops_per_s: dict


def timer(device: torch.device):
    """A function that times `fn` (after `warmup` calls) `repeats` times and returns the
    median seconds: CUDA events on a GPU, perf_counter on a CPU."""
    def run(fn, repeats: int, warmup: int = 3) -> float:
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(repeats):
            if device.type == "cuda":
                start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / 1e3)
            else:
                began = time.perf_counter()
                fn()
                times.append(time.perf_counter() - began)
        return statistics.median(times)
    return run


def measure_limits(device: torch.device, dtypes, quick: bool) -> Limits:
    """The device's copy bandwidth (bytes read and written) and matrix rate per dtype."""
    run = timer(device)
    n = (1 << 22) if quick or device.type == "cpu" else (1 << 28)   # 16 MB / 1 GB of float32
    src = torch.empty(n, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    copy_s = run(lambda: dst.copy_(src), 3 if quick else 10)
    side = 512 if quick or device.type == "cpu" else 8192
    flops = {}
    for dtype in dtypes:
        a = torch.randn(side, side, device=device, dtype=dtype)
        b = torch.randn(side, side, device=device, dtype=dtype)
        flops[dtype] = 2 * side ** 3 / run(lambda: a @ b, 3 if quick else 10)
    return Limits(bytes_per_s=2 * src.numel() * src.element_size() / copy_s, flops_per_s=flops)


def passes(batch: int, cin: int, cout: int, side: int, dtype, layout, device):
    """The three passes of a 3x3, stride-1, padding-1 convolution as callables, and each
    pass's (FLOPs, bytes moved at least)."""
    x = torch.randn(batch, cin, side, side, device=device, dtype=dtype).to(memory_format=layout)
    w = torch.randn(cout, cin, 3, 3, device=device, dtype=dtype).to(memory_format=layout)
    dy = torch.randn(batch, cout, side, side, device=device, dtype=dtype).to(memory_format=layout)
    flops = 2 * batch * cout * side * side * cin * 9
    size = x.element_size()
    nx, nw, ny = x.numel(), w.numel(), dy.numel()
    return {"fprop": (lambda: F.conv2d(x, w, padding=1), flops, size * (nx + nw + ny)),
            "dgrad": (lambda: conv2d_input(x.shape, w, dy, padding=1), flops,
                      size * (ny + nw + nx)),
            "wgrad": (lambda: conv2d_weight(x, w.shape, dy, padding=1), flops,
                      size * (nx + ny + nw))}


def kernel_passes(batch: int, cin: int, cout: int, side: int, dtype, device):
    """The same three passes by the kernel rung's Triton kernels (channels last)."""
    from gpu_course.tracks.torch import conv_kernels as ck
    layout = torch.channels_last
    x = torch.randn(batch, cin, side, side, device=device, dtype=dtype).to(memory_format=layout)
    w = torch.randn(cout, cin, 3, 3, device=device, dtype=dtype)
    dy = torch.randn(batch, cout, side, side, device=device, dtype=dtype).to(memory_format=layout)
    flops = 2 * batch * cout * side * side * cin * 9
    nbytes = x.element_size() * (x.numel() + w.numel() + dy.numel())
    return {"fprop": (lambda: ck.conv3x3(x, w), flops, nbytes),
            "dgrad": (lambda: ck.conv3x3_input_grad(dy, w), flops, nbytes),
            "wgrad": (lambda: ck.conv3x3_weight_grad(x, dy), flops, nbytes)}


def _row(dtype, layout, search, stage, name, seconds, flops, nbytes, limits) -> dict:
    floor = max(flops / limits.flops_per_s[dtype], nbytes / limits.bytes_per_s)
    return {"dtype": str(dtype).replace("torch.", ""), "layout": layout, "search": search,
            "stage": stage, "pass": name, "ms": 1e3 * seconds,
            "TFLOP/s": flops / seconds / 1e12, "GB/s": nbytes / seconds / 1e9,
            "bound": "arithmetic" if flops / limits.flops_per_s[dtype]
            >= nbytes / limits.bytes_per_s else "memory",
            "x_off": seconds / floor}


class Stopped(Exception):
    """SIGTERM (a session's `timeout`) while passes were being timed."""


def run(batch: int, dtypes, layouts, device: torch.device, quick: bool,
        rows: list | None = None, limits: list | None = None) -> tuple[list, Limits]:
    """Time every pass; `rows` (and `limits`, a list that gets the Limits) fill as they
    are measured, so that a run stopped part-way still has what it measured."""
    rows = [] if rows is None else rows
    measured = measure_limits(device, dtypes, quick)
    if limits is not None:
        limits.append(measured)
    limits = measured
    time_it = timer(device)
    searches = (10, 0) if device.type == "cuda" else (None,)
    from gpu_course.tracks.torch import conv_kernels as ck
    if device.type == "cuda" and ck.available():   # the kernel rung's kernels, first
        for dtype in dtypes:
            for stage, cin, cout, side in STAGES:
                if cin not in ck.CHANNELS or cout not in ck.CHANNELS:
                    continue
                for name, (fn, flops, nbytes) in kernel_passes(batch, cin, cout, side, dtype,
                                                                device).items():
                    seconds = time_it(fn, 5 if quick else 50)
                    rows.append(_row(dtype, "NHWC", "triton", stage, name, seconds, flops,
                                     nbytes, limits))
    for dtype, layout, search in itertools.product(dtypes, layouts, searches):
        if search is not None:
            torch.backends.cudnn.benchmark = True   # the course's runs search, as they do
            torch.backends.cudnn.benchmark_limit = search
        for stage, cin, cout, side in STAGES:
            for name, (fn, flops, nbytes) in passes(batch, cin, cout, side, dtype,
                                                    LAYOUTS[layout], device).items():
                seconds = time_it(fn, 5 if quick else 50)
                rows.append(_row(dtype, layout, "as shipped" if search == 10 else
                                 "exhaustive" if search == 0 else "-", stage, name, seconds,
                                 flops, nbytes, limits))
    return rows, limits


def against_cudnn(rows: list) -> list[str]:
    """Each Triton pass's time over cuDNN's as shipped, same type, stage and pass, NHWC."""
    cudnn = {(r["dtype"], r["stage"], r["pass"]): r["ms"] for r in rows
             if r["search"] == "as shipped" and r["layout"] == "NHWC"}
    lines = []
    for r in rows:
        key = (r["dtype"], r["stage"], r["pass"])
        if r["search"] == "triton" and key in cudnn:
            lines.append(f"{r['dtype']} {r['stage']} {r['pass']}: Triton {r['ms']:.3f} ms "
                         f"against cuDNN's {cudnn[key]:.3f} ms, ×{cudnn[key] / r['ms']:.2f} "
                         f"the speed; ×{r['x_off']:.1f} its floor")
    return lines


def table(rows: list, limits: Limits) -> str:
    head = ["dtype", "layout", "search", "stage", "pass", "ms", "TFLOP/s", "GB/s", "bound",
            "× off"]
    lines = [f"measured limits: copy {limits.bytes_per_s / 1e9:,.0f} GB/s; matrix "
             + ", ".join(f"{str(d).replace('torch.', '')} {f / 1e12:,.1f} TFLOP/s"
                         for d, f in limits.flops_per_s.items()), "",
             "  ".join(f"{h:>10}" for h in head)]
    for r in rows:
        lines.append("  ".join(f"{v:>10}" for v in (
            r["dtype"], r["layout"], r["search"], r["stage"], r["pass"], f"{r['ms']:.3f}",
            f"{r['TFLOP/s']:.2f}", f"{r['GB/s']:,.0f}", r["bound"], f"×{r['x_off']:.1f}")))
    triton_lines = against_cudnn(rows)
    if triton_lines:
        lines += ["", "the kernel rung's Triton kernels against cuDNN (as shipped, NHWC):"] \
            + [f"  {line}" for line in triton_lines]
    worst = max((r for r in rows if r["search"] != "triton"), key=lambda r: r["x_off"])
    lines += ["", f"furthest from its floor: the {worst['stage']} stage's {worst['pass']} "
                  f"({worst['dtype']}, {worst['layout']}, search {worst['search']}), "
                  f"×{worst['x_off']:.1f} its floor ({worst['bound']}-bound)"]
    under = [r for r in rows if r["x_off"] < 1]
    if under:
        lines.append(f"{len(under)} pass{'es' if len(under) > 1 else ''} ran under the floor: "
                     "the measured limits read low (a busy machine, or data in a cache), so "
                     "read the ratios against each other, not as distances to a true bound")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=None,
                        help=f"images a pass (default {TUNED_BATCH}; 32 with --quick)")
    parser.add_argument("--quick", action="store_true", help="batch 32, few repeats")
    args = parser.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    batch = args.batch or (32 if args.quick else TUNED_BATCH)
    if batch < 1:
        parser.error(f"--batch={batch} must be at least 1")
    # float16 convolutions are slow emulations on a CPU: bfloat16 is its 16-bit type
    dtypes = [torch.bfloat16, torch.float16] if device.type == "cuda" else [torch.bfloat16]
    import signal

    def stop(signum, frame):
        raise Stopped()
    previous = signal.signal(signal.SIGTERM, stop)
    rows, limits, stopped = [], [], False
    try:
        run(batch, dtypes, list(LAYOUTS), device, args.quick, rows, limits)
    except (Stopped, KeyboardInterrupt):
        stopped = True
    finally:   # called in a test's process: leave it the handler it had
        signal.signal(signal.SIGTERM, previous)
    print(f"{torch.cuda.get_device_name() if device.type == 'cuda' else 'CPU'}, batch {batch}")
    if rows:
        print(table(rows, limits[0]))
    if stopped:
        print(f"stopped by its time limit after {len(rows)} passes: the rest were not timed")
    return 1 if stopped else 0


if __name__ == "__main__":
    raise SystemExit(main())
