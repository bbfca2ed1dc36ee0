"""torch.profiler around a few of the steps a run takes (compiled, or one CUDA graph where
`static_step` applies): "trace" (folder/trace.json.gz, for ui.perfetto.dev), "ops" (a
per-operator DataFrame, also folder/ops.csv) and PyTorch's own "table"."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

from ...analyse import profiling
from .devices import try_devices
from .models import get_model
from .optim import make_optimizer
from .loop import Precision, to_device
from .train import build_loaders, compile_model, cpu_changes
from . import static_step


def profile_steps(cfg, folder, wait: int = 1, warmup: int = 1, active: int = 3) -> dict:
    """Train `wait + warmup + active` steps, the last `active` under torch.profiler."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    device = try_devices(1)[0][0]
    cfg, _ = cpu_changes(cfg, device)
    torch.manual_seed(cfg.seed)
    net = get_model(cfg).to(device)
    optimizer = make_optimizer(net, cfg)
    precision = Precision(cfg.dtype, device)
    loss_fn = nn.CrossEntropyLoss()
    if cfg.channels_last:
        net = net.to(memory_format=torch.channels_last)
    train_iter, _ = build_loaders(cfg, device)
    cuda, raw, steps = device.type == "cuda", folder / "trace.json", wait + warmup + active
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    whole_step = static_step.applies(cfg, train_iter, optimizer) is None
    model = compile_model(net, cfg, device, cuda_graphs=not whole_step)
    if whole_step:  # compile and capture before the window, as the run does
        per_epoch = len(train_iter)
        epochs = max(cfg.epochs, -(-(steps + static_step.WARMUP_STEPS + 1) // per_epoch))
        stepper = static_step.StaticStep(model, optimizer, train_iter, cfg.replace(
            epochs=epochs), per_epoch)  # its LR table covers the window
        stepper.start_epoch(0)

        def graph_step():
            if stepper.epoch_calls == stepper.steps:  # the epoch's plan is used up: the next
                stepper.start_epoch(stepper.calls // stepper.steps)
            stepper.step()
        for _ in range(static_step.WARMUP_STEPS + 1):
            graph_step()
    else:
        batches = profiling.iterate(train_iter, steps)
    with profile(activities=activities, schedule=schedule(wait=wait, warmup=warmup,
                                                          active=active),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(raw))) as prof:
        for _ in range(steps):
            if whole_step:
                graph_step()  # one graph replay
            else:
                with record_function(profiling.DATA_WAIT):
                    x, y = next(batches)
                x, y = to_device(x, y, device, cfg.channels_last)
                with precision.autocast():
                    loss = loss_fn(model(x), y)
                optimizer.zero_grad(set_to_none=True)
                precision.backward_and_step(loss, optimizer)
            if cuda:  # sync point: this step's kernels end inside its ProfilerStep window
                torch.cuda.synchronize(device)
            prof.step()
    trace = profiling.gzip_trace(raw)
    ops = operator_table(prof)
    ops.to_csv(folder / "ops.csv", index=False)
    size_mb = trace.stat().st_size / 1e6
    sort = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    return {"trace": trace, "ops": ops, "table": prof.key_averages().table(sort_by=sort, row_limit=15),
            "note": None if size_mb <= profiling.MAX_TRACE_MB else
            f"the trace is {size_mb:.0f} MB: profile fewer active steps"}


def operator_table(prof) -> pd.DataFrame:
    """One row per operator: calls and times (ms over the active steps), costliest first."""
    rows = []
    for event in prof.key_averages():
        rows.append({"operator": event.key, "calls": event.count,
                     "self_cpu_ms": event.self_cpu_time_total / 1000,
                     "cpu_total_ms": event.cpu_time_total / 1000,
                     "self_device_ms": event.self_device_time_total / 1000})
    table = pd.DataFrame(rows)
    key = "self_device_ms" if table["self_device_ms"].sum() > 0 else "self_cpu_ms"
    return table.sort_values(key, ascending=False).reset_index(drop=True)
