"""What one training step asks of the host, rung by rung of the PyTorch ladder.

An eager operator costs the host one dispatch and, on a GPU, one or more kernel
launches of 5-10 us each; at 100k images/s a 1024-image step has 10 ms in all. For each
rung this builds the rung's model, optimizer, schedule and batches as `train` does, runs
a few warm-up steps (compilation, optimizer state), then one step under an operator
counter, then times steps side by side:

    python -m tools.step_launches            # ResNet-20 at the ladder's batches
    python -m tools.step_launches --quick    # tiny model, batch 32: seconds

Columns: operators dispatched by one step (views excluded) and host reads of device
values; on a GPU also the kernel launches and CUDA graph replays the profiler sees; the
host's time per step (on a GPU: until the step is queued) and the step's time with the
device waited for. The batches' loading is left out (see `io_ladder`): every rung gets
its batch ready in host memory, the data-on-GPU rungs from a GpuLoader. On a CPU the
compiled rungs use the aot_eager backend (traced, not fused: their operators are counted
as eager would dispatch them) unless --backend says otherwise; the data-on-gpu rung (the whole step as one graph) runs
its step eagerly, and on a GPU it is one graph replay. Target the course set: the tuned rung
<= 60 launches a step, or one graph replay.
"""
from __future__ import annotations

import argparse
import itertools
import os
import time

import torch
from torch import nn

from gpu_course.ladder import rungs
from gpu_course.rungs import RungName
from gpu_course.tracks.torch import static_step
from gpu_course.tracks.torch.devices import gpu_count
from gpu_course.tracks.torch.gpu_loader import Batches, GpuLoader
from gpu_course.tracks.torch.models import get_model
from gpu_course.tracks.torch.optim import lr_scheduler, make_optimizer
from gpu_course.tracks.torch.loop import Precision, to_device
from gpu_course.tracks.torch.train import COMPILE_BACKEND_ENV, compile_model
from tools.op_count import count_ops

TARGET_LAUNCHES = 60
LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
                "cudaMemcpyAsync", "cudaMemsetAsync")


def build(cfg, device, steps: int):
    """A callable running one step of cfg's rung, as `train` would."""
    torch.manual_seed(cfg.seed)
    net = get_model(cfg).to(device)
    if cfg.channels_last:
        net = net.to(memory_format=torch.channels_last)
    optimizer = make_optimizer(net, cfg)
    precision = Precision(cfg.dtype, device)
    b = cfg.batch_size
    if cfg.data_on_gpu:
        g = torch.Generator().manual_seed(0)
        images = torch.randint(0, 256, (b * steps, 32, 32, 3), dtype=torch.uint8, generator=g)
        loader = GpuLoader(images, torch.arange(b * steps) % 10, Batches(
            b, dtype=precision.input_dtype, channels_last=cfg.channels_last), device)
        if static_step.applies(cfg, loader, optimizer) is None:
            model = compile_model(net, cfg, device, cuda_graphs=False)
            stepper = static_step.StaticStep(model, optimizer, loader, cfg.replace(epochs=1),
                                             len(loader))
            stepper.start_epoch(0)
            return stepper.step, lambda: stepper.graph is not None
        batches = itertools.chain.from_iterable(itertools.repeat(loader))
    else:
        x = torch.randn(b, 3, 32, 32).pin_memory() if cfg.pin_memory else torch.randn(b, 3, 32, 32)
        batches = itertools.repeat((x, torch.arange(b) % 10))
    model = compile_model(net, cfg, device)
    scheduler = lr_scheduler(cfg.replace(epochs=1), 10 * steps, optimizer)
    loss_fn = nn.CrossEntropyLoss()
    totals = torch.zeros(2, dtype=torch.float64, device=device)

    def step():  # the body of train._run_epochs' loop
        x, y = next(batches)
        x, y = to_device(x, y, device, cfg.channels_last)
        with precision.autocast():
            out = model(x)
            loss = loss_fn(out, y)
        optimizer.zero_grad(set_to_none=True)
        precision.backward_and_step(loss, optimizer)
        scheduler.step()
        totals[0].add_(loss.detach(), alpha=len(y))
        totals[1].add_((out.argmax(dim=1) == y).sum())
    return step, lambda: False


def measure(step, device, warmup: int, steps: int) -> dict:
    """Operators of one step, launches and replays (GPU), host and synced time per step."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(warmup):
        step()
    sync()
    counts = count_ops(step)
    launches = replays = None
    if device.type == "cuda":
        sync()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            step()
            sync()
        names = [e.name for e in prof.events()]
        launches = sum(names.count(n) for n in LAUNCH_CALLS)
        replays = names.count("cudaGraphLaunch")
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    queued = time.perf_counter() - start
    sync()  # the device catches up: one wait for all the timed steps
    done = time.perf_counter() - start
    return {"ops": counts.launching, "syncs": counts.syncs, "launches": launches,
            "replays": replays, "host_ms": 1e3 * queued / steps, "step_ms": 1e3 * done / steps}


def table(rows: list[dict]) -> str:
    def cell(v, fmt="d"):
        return "–" if v is None else format(v, fmt)
    lines = [f"{'rung':<13} {'batch':>5} {'graph':>6} {'ops/step':>8} {'syncs':>5} "
             f"{'launches':>8} {'replays':>7} {'host ms':>8} {'step ms':>8} {'images/s':>9}"]
    for r in rows:
        lines.append(f"{r['rung']:<13} {r['batch']:>5} {r['graph']:>6} {r['ops']:>8} "
                     f"{r['syncs']:>5} {cell(r['launches']):>8} {cell(r['replays']):>7} "
                     f"{r['host_ms']:>8.2f} {r['step_ms']:>8.2f} "
                     f"{r['batch'] / r['step_ms'] * 1e3:>9,.0f}")
    return "\n".join(lines)


def run(quick: bool = False, steps: int = 5, warmup: int = 5, only=None,
        model: str | None = None, batch: int | None = None) -> list[dict]:
    """One row per rung (see the module's docstring)."""
    gpus = gpu_count()
    device = torch.device("cuda" if gpus else "cpu")
    rows = []
    # the GPU ladder's rungs also on a CPU (whose own ladder leaves the GPU-only ones out):
    # what each step asks of the host is the question, and a CPU can count it
    for rung in rungs("pytorch", 1, quick=quick):
        if (only and rung.name not in only) or rung.name == RungName.LONGER:   # same step
            continue
        cfg = rung.cfg.replace(num_workers=0, persistent_workers=False)
        if model or quick:
            cfg = cfg.replace(model=model or "tiny")
        if batch or quick:
            cfg = cfg.replace(batch_size=batch or (16 if cfg.batch_size == 64 else 32))
        step, graphed = build(cfg, device, warmup + steps + 2)
        row = measure(step, device, warmup, steps)
        rows.append({"rung": rung.name, "batch": cfg.batch_size,
                     "graph": "cuda" if graphed() else cfg.graph, **row})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny model, small batches")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per rung")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--rung", action="append", help="only these rungs (repeatable)")
    parser.add_argument("--model", help="instead of the ladder's resnet20")
    parser.add_argument("--batch", type=int, help="instead of the ladder's batch sizes")
    parser.add_argument("--backend", help="torch.compile backend (default: inductor on a "
                        "GPU, aot_eager on a CPU)")
    args = parser.parse_args(argv)
    backend = args.backend or os.environ.get(COMPILE_BACKEND_ENV) or \
        ("inductor" if gpu_count() else "aot_eager")
    os.environ[COMPILE_BACKEND_ENV] = backend
    rows = run(args.quick, args.steps, args.warmup, args.rung, args.model, args.batch)
    device = torch.cuda.get_device_name() if gpu_count() else "CPU"
    print(f"step cost per rung on {device}, compile backend {backend}, "
          f"{torch.get_num_threads()} threads")
    print(table(rows))
    tuned = rows[-1]
    if tuned["replays"]:
        verdict = f"{tuned['rung']}: {tuned['replays']} graph replay(s) and " \
                  f"{tuned['launches'] - tuned['replays'] if tuned['launches'] else 0} other launches a step"
    else:
        verdict = f"{tuned['rung']}: {tuned['ops']} operators a step (target <= " \
                  f"{TARGET_LAUNCHES} launches or one graph replay" + \
                  ("; on a GPU its step is one replay)" if tuned["graph"] == "static" else ")")
    print(verdict)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
