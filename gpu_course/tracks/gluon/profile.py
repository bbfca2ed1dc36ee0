"""MXNet's profiler around a few training steps, where the build has it; else (the pip
CPU wheel) cProfile, which shows where the Python side of each step goes."""
from __future__ import annotations

import cProfile
from pathlib import Path

import mxnet as mx
from mxnet import gluon

from ...analyse import profiling
from .data import make_loader
from .io_data import load_datasets
from .devices import effective_config, try_devices
from .models import get_model, prepare
from .optim import make_trainer
from .loop import forward_backward, split

NO_PROFILER = "this MXNet build has PROFILER off (the pip CPU wheel does): the steps ran under cProfile ({prof})"


def profile_steps(cfg, folder, wait: int = 1, warmup: int = 1, active: int = 3) -> dict:
    """Train `wait + warmup + active` steps, the last under mx.profiler or cProfile."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    devices, _ = try_devices(1)
    cfg, _ = effective_config(cfg, devices)
    net = get_model(cfg)
    prepare(net, cfg, devices)
    train_set, _ = load_datasets(cfg)
    train_iter = make_loader(train_set, cfg)
    trainer = make_trainer(net, cfg, wait + warmup + active)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    batches = profiling.iterate(train_iter, wait + warmup + active)

    def step():
        xs, ys = split(*next(batches), devices, cfg.dtype)
        forward_backward(net, loss_fn, xs, ys)   # the step as the run's loop takes it
        trainer.step(sum(y.shape[0] for y in ys))
        mx.nd.waitall()   # sync point: the step's work ends inside the profiled window

    for _ in range(wait + warmup):
        step()
    if mx.runtime.Features().is_enabled("PROFILER"):
        raw = folder / "trace.json"
        mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename=str(raw))
        mx.profiler.set_state("run")
        for _ in range(active):
            step()
        mx.profiler.set_state("stop")
        table = mx.profiler.dumps(reset=True)   # the per-operator aggregate, as text
        mx.profiler.dump()
        return {"trace": profiling.gzip_trace(raw), "ops": None, "table": table, "note": None}
    prof = folder / "steps.prof"
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(active):
        step()
    profiler.disable()
    profiler.dump_stats(str(prof))
    return {"trace": None, "ops": profiling.top_functions(prof), "table": None,
            "note": NO_PROFILER.format(prof=prof)}
