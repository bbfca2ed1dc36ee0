"""PyTorch runs: build what an Experiment describes, then train it with the one PyTorch
loop (`loop.fit`) inside the course's bookkeeping (`record`).

    run = gc.train(cfg)                                     # everything from cfg
    net, train_iter, val_iter, optimizer = gc.build(cfg)    # or the parts, to show one change
"""
from __future__ import annotations

import contextlib
import os
import warnings
from dataclasses import replace

import torch
from torch import nn
from torch._dynamo.utils import counters

from ...data.folder import CorruptImage
from ...env.cores import check_loader_workers
from ...measure import provenance
from ..common import steps_per_epoch
from ...measure.guards import pending_stop, stop_requests
from ...measure.harness import Output
from ...config import Experiment, Graph
from .data import end_workers, make_loader, worker_died
from .io_data import load_datasets, order_sampler
from .devices import out_of_memory, place, try_devices
from .gpu_loader import gpu_loaders
from .loop import Precision, evaluate
from .loop import fit as fit_epochs
from .models import get_model
from .optim import lr_scheduler, make_optimizer
from .record import record
from . import static_step

COMPILE_BACKEND_ENV = "GPU_COURSE_COMPILE_BACKEND"  # torch.compile's backend: "inductor" by default
# what a request becomes without a GPU: (field, requested, what runs instead, why)
ON_CPU = (("dtype", "float16", "bfloat16",
           "dtype='float16' on the CPU: no fast float16 convolutions; this run uses bfloat16 autocast."),
          ("graph", "static", "compiled, no CUDA graphs",
           "graph='cuda-graphs' needs a GPU: on the CPU the same steps run compiled, without a graph."),
          ("data_on_gpu", True, "CPU memory",
           "data_on_gpu=True with no GPU: the data and its augmentation stay in CPU memory."))


def train(cfg: Experiment, net=None, train_iter=None, val_iter=None, devices=None, **output):
    """Train as `cfg` says and return the run record; anything passed in is used as it
    is. Several devices run DDP, a process each (`ddp`). `output`: `harness.Output`."""
    out = Output.of(output)   # an unknown option refused before any work
    here = resolve(cfg, devices, net)
    if len(here.devices) > 1:
        if any(x is not None for x in (net, train_iter, val_iter)):
            raise ValueError(f"with {len(here.devices)} devices each DistributedDataParallel process builds "
                             "its own: pass none of net, train_iter, val_iter")
        from .ddp import launch
        return launch(here.requested.replace(num_gpus=len(here.devices)), runs_dir=out.runs_dir,
                      verbose=out.verbose)
    ran, (device,) = here.cfg, here.devices
    with stop_requests():   # Ctrl-C from here on asks the run to stop (at the next step)
        torch.manual_seed(ran.seed)
        net = net if net is not None else get_model(ran)
        if train_iter is None or val_iter is None:
            made_train, made_val = build_loaders(ran, device)
            train_iter = train_iter if train_iter is not None else made_train
            val_iter = val_iter if val_iter is not None else made_val
        return fit(provenance.Parts(net, train_iter, val_iter, None, [device], ran,
                                    here.downgrades, here.notice), **output)


def resolve(cfg: Experiment, devices=None, net=None, count: int | None = None
            ) -> provenance.Resolved:
    """cfg resolved once for this machine: devices, the config that runs, what changed."""
    cfg = cfg.replace(engine="pytorch") if cfg.engine != "pytorch" else cfg
    found = None
    check_loader_workers(cfg.num_workers)   # before a worker is forked
    if devices is None:
        devices, found = try_devices(count if count is not None else cfg.num_gpus)
    devices = [torch.device(d) for d in devices]
    requested = cfg.replace(graph="hybrid") if is_compiled(net) and cfg.graph == Graph.EAGER else cfg
    ran, changed = cpu_changes(requested, devices[0])
    return provenance.Resolved(requested, ran, devices, changed,
                               provenance.notice(found, *(c["why"] for c in changed)))


def build(cfg: Experiment, device=None):
    """What cfg describes on `device`, for a notebook's own loop: `Parts`."""
    here = resolve(cfg, None if device is None else [device], count=1)
    ran, (device,) = here.cfg, here.devices
    torch.manual_seed(ran.seed)
    net = get_model(ran).to(device)
    if ran.channels_last:
        net = net.to(memory_format=torch.channels_last)
    train_iter, val_iter = build_loaders(ran, device)
    return provenance.Parts(net, train_iter, val_iter, make_optimizer(net, ran), [device], ran,
                            here.downgrades, here.notice)


def cpu_changes(cfg: Experiment, device: torch.device) -> tuple[Experiment, list]:
    """cfg as it runs on `device`, and the requests a CPU cannot honour (`ON_CPU`)."""
    if device.type == "cuda":
        return cfg, []
    changed = [provenance.not_as_asked(field, asked, ran, why) for field, asked, ran, why in ON_CPU
               if getattr(cfg, field) == asked]
    return (cfg.replace(dtype="bfloat16") if cfg.dtype == "float16" else cfg), changed


def build_loaders(cfg: Experiment, device: torch.device, rank: int = 0, world_size: int = 1):
    """(train_iter, val_iter) for this process (its shard of `world_size`)."""
    if cfg.data_on_gpu:
        dtype = Precision(cfg.dtype, device).input_dtype  # what autocast would cast to
        return gpu_loaders(cfg, device, rank, world_size, dtype=dtype)
    train_set, val_set = load_datasets(cfg)
    sampler = order_sampler(train_set, cfg)   # None: a shuffle (cfg.sample_order, page_cache)
    if world_size > 1:
        sampler = torch.utils.data.DistributedSampler(
            train_set, world_size, rank, shuffle=True, seed=cfg.seed, drop_last=True)
    return make_loader(train_set, cfg, sampler=sampler), make_loader(val_set, cfg, train=False)


def compile_model(model: nn.Module, cfg: Experiment, device: torch.device,
                  cuda_graphs: bool = True) -> nn.Module:
    """torch.compile for graph="hybrid", with CUDA graphs for "static" (unless the caller
    captures the whole step); reset first: an earlier run's graphs would make this one dynamic."""
    if cfg.graph == Graph.EAGER or is_compiled(model):
        return model
    torch._dynamo.reset()
    counters.clear()   # the record keeps this run's counts
    backend = compile_backend()
    if backend == "inductor" and cfg.graph == "static" and device.type == "cuda" and cuda_graphs:
        compiled = torch.compile(model, mode="reduce-overhead", dynamic=False)
        compiled.course_compile_mode = "reduce-overhead"   # the record says graphs replayed
        return compiled
    return torch.compile(model, backend=backend, dynamic=False)


def is_compiled(net) -> bool:
    return hasattr(net, "_orig_mod")  # torch.compile's wrapper keeps the module here


def fit(parts: provenance.Parts, on_start=None, **output):
    """Train parts as this process's part of the run; rank 0 returns the record."""
    cfg, net, train_iter, val_iter, (device,) = (parts.cfg, parts.net, parts.train_iter,
                                                 parts.val_iter, parts.devices)
    _, world_size = place()
    net = net.to(device)
    if cfg.channels_last:  # NHWC: the layout tensor-core convolutions read directly
        net = net.to(memory_format=torch.channels_last)
    steps = steps_per_epoch(train_iter, cfg.train_size, cfg.batch_size)
    steps = min(steps, cfg.max_steps or steps)
    optimizer = parts.optimizer if parts.optimizer is not None else make_optimizer(net, cfg)
    scheduler = lr_scheduler(cfg, steps, optimizer)
    model = net
    if world_size > 1:  # rank-local BatchNorm statistics; gradients in the all-reduce buckets
        with warnings.catch_warnings():  # PyTorch advises broadcast_buffers=False, then warns
            warnings.filterwarnings("ignore", "`broadcast_buffers` is deprecated", FutureWarning)
            model = nn.parallel.DistributedDataParallel(
                net, device_ids=[device] if device.type == "cuda" else None,
                broadcast_buffers=False, gradient_as_bucket_view=True)
    whole_step = static_step.applies(cfg, train_iter, optimizer, world_size) is None
    model = compile_model(model, cfg, device, cuda_graphs=not whole_step)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # time cuDNN's algorithms in the first steps
    with intra_op_threads(cfg.threads):  # the record reads the count that runs
        rec = record(replace(parts, net=model, optimizer=optimizer, devices=[device]), **output)
        with rec:
            if rec.record is not None and on_start is not None:
                on_start(rec)
            oom = None
            try:
                with warnings.catch_warnings():  # GradScaler skips the first steps: expected
                    warnings.filterwarnings("ignore", "Detected call of `lr_scheduler.step")
                    if whole_step:  # the tuned rung: the whole step as one CUDA graph
                        stepper = static_step.StaticStep(model, optimizer, train_iter, cfg, steps)
                        static_step.run_epochs(rec, stepper, lambda: evaluate(
                            net, val_iter, [device], cfg.dtype, cfg.channels_last))
                    else:
                        fit_epochs(rec, model, optimizer, scheduler, train_iter, val_iter, device)
            except torch.cuda.OutOfMemoryError as err:
                oom = out_of_memory(err, cfg.batch_size, device)
            except KeyboardInterrupt:   # Ctrl-C or SIGTERM
                end_workers(train_iter, val_iter)
                raise
            except (RuntimeError, EOFError, ConnectionError) as err:  # a worker's error or death
                stop = pending_stop()   # a signal to the process group: the workers went first
                if stop is not None:
                    end_workers(train_iter, val_iter)
                    raise stop from None
                named = CorruptImage.from_message(str(err)) if isinstance(err, RuntimeError) \
                    else worker_died(err)
                if named is None:
                    raise
                raise named from None  # the file or the worker, as the Gluon track names them
            finally:
                if rec.record is not None and is_compiled(model):   # what compiling made
                    rec.record.note(compiled={**compile_stats(), "mode": getattr(
                        model, "course_compile_mode", "default")})
            if oom is not None:
                raise oom  # outside `except`, so the failed step's tensors can be freed
    return rec.run


def compile_backend() -> str:
    """$GPU_COURSE_COMPILE_BACKEND, checked against torch.compile's backends."""
    backend = os.environ.get(COMPILE_BACKEND_ENV, "").strip() or "inductor"
    known = torch._dynamo.list_backends(exclude_tags=())
    if backend not in known:
        raise ValueError(f"{COMPILE_BACKEND_ENV}={backend!r} is not a torch.compile backend; "
                         f"allowed: {', '.join(sorted(known))}")
    return backend


def compile_stats() -> dict:
    """What torch.compile did since `compile_model`: graphs, graph breaks, recompiles."""
    graphs = int(counters["stats"].get("unique_graphs", 0))
    frames = int(counters["frames"].get("ok", 0))
    return {"graphs": graphs, "graph_breaks": int(sum(counters["graph_break"].values())),
            "recompiles": max(0, frames - graphs), "frames": frames}


@contextlib.contextmanager
def intra_op_threads(threads: int | None):
    """torch.set_num_threads(threads) for one run (None: as it is), restored after it."""
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
