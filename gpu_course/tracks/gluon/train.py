"""Gluon runs: `gc.train(cfg)` builds what an Experiment describes (`gc.build(cfg)`: the
parts alone) and trains it with the one Gluon loop (`loop.fit`) inside `record`."""
from __future__ import annotations

import os
import random
import re

import mxnet as mx
import numpy as np

from ...env.cores import check_loader_workers
from ...measure import provenance
from ..common import steps_per_epoch
from ...config import Experiment
from ...measure.guards import stop_requests
from ...measure.harness import Output
from ...measure.records import OutOfMemory
from .data import end_workers, make_loader
from .io_data import load_datasets, order_sampler
from .devices import (FLOAT16_ON_CPU, bfloat16_refused, check_threads, effective_config,
                      try_devices)
from .loop import fit
from .models import get_model, prepare, to_bfloat16
from .optim import make_trainer
from .record import read_network, record

MiB = 2**20


def build(cfg: Experiment, devices=None, net=None, train_iter=None, val_iter=None):
    """What cfg describes on this machine, for a notebook's own loop: `Parts`."""
    here = resolve(cfg, devices, net)
    ran, devices = here.cfg, here.devices
    random.seed(ran.seed)
    np.random.seed(ran.seed)  # the DataLoader's shuffle
    mx.random.seed(ran.seed)
    if train_iter is None or val_iter is None:
        train_set, val_set = load_datasets(ran)
        train_iter = train_iter if train_iter is not None else make_loader(
            train_set, ran, sampler=order_sampler(train_set, ran))   # None: a shuffle
        val_iter = val_iter if val_iter is not None else make_loader(val_set, ran, train=False)
    net = net if net is not None else get_model(ran)
    prepare(net, ran, devices)
    if ran.dtype == "bfloat16":   # on the CPU: AMP's graph rewrite, a new network
        net = to_bfloat16(net, ran, devices)
    steps = steps_per_epoch(train_iter, ran.train_size, ran.global_batch)
    trainer = make_trainer(net, ran, min(steps, ran.max_steps or steps))
    return provenance.Parts(net, train_iter, val_iter, trainer, devices, ran,
                            here.downgrades, here.notice)


def resolve(cfg: Experiment, devices=None, net=None, count: int | None = None
            ) -> provenance.Resolved:
    """cfg resolved once for this machine: devices, the config that runs, what changed."""
    requested = cfg if cfg.engine == "gluon" else cfg.replace(engine="gluon")
    check_threads(requested)  # before any work: only a new process changes MXNet's threads
    check_loader_workers(cfg.num_workers)   # before a worker is forked
    if net is not None:  # a network the notebook hybridized or cast itself is the request
        found, _ = read_network(net)
        asked = {k: found[k] if found[k] != plain else None for k, plain in (("graph", "eager"),
                                                                             ("dtype", "float32"))}
        requested = provenance.reconcile(requested, asked, "the network")
    tried = None
    if devices is None:
        devices, tried = try_devices(count if count is not None else requested.num_gpus)
    devices = [devices] if isinstance(devices, mx.Context) else list(devices)
    ran, changed = effective_config(requested, devices)
    why = {"dtype": bfloat16_refused(devices) if requested.dtype == "bfloat16" else FLOAT16_ON_CPU}
    return provenance.Resolved(requested, ran, devices, provenance.downgrades(requested, ran, why),
                               provenance.notice(tried, changed))


def train(cfg: Experiment, net=None, train_iter=None, val_iter=None, devices=None, **output):
    """Train as `cfg` says (anything passed in used as it is); the run record."""
    out = Output.of(output)   # an unknown option refused before any work
    if os.environ.get("DMLC_ROLE") == "worker":  # one worker of a parameter-server job
        from .dist import train_worker
        return train_worker(cfg, runs_dir=out.runs_dir, verbose=out.verbose,
                            on_epoch=out.on_epoch)
    with stop_requests():   # Ctrl-C from here on asks the run to stop (at the next step)
        parts = build(cfg, devices, net, train_iter, val_iter)
        try:
            with record(parts, **output) as rec:
                try:
                    fit(rec, parts.net, parts.optimizer, parts.train_iter, parts.val_iter,
                        parts.devices)
                except mx.base.MXNetError as err:
                    if is_out_of_memory(err):
                        raise out_of_memory(err, parts.cfg, parts.devices) from err
                    raise
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM, perhaps to the workers too
            end_workers(parts.train_iter, parts.val_iter)
            raise
    return rec.run


# -- out of memory --------------------------------------------------------------------
def is_out_of_memory(err: BaseException) -> bool:
    """Whether an MXNetError (raised at the next sync) is a failed device allocation."""
    text = str(err).lower()
    return ("out of memory" in text or "memory allocation failed" in text
            or ("cudamalloc" in text and "fail" in text))


def out_of_memory(err: BaseException, cfg: Experiment, devices,
                  memory_info=None) -> OutOfMemory:
    """An OutOfMemory saying what did not fit and how much memory there is."""
    memory_info = memory_info or mx.context.gpu_memory_info
    parts = [f"batch size {cfg.batch_size} per device ({cfg.global_batch} per step) of "
             f"{cfg.model} in {cfg.dtype} does not fit"]
    if asked := re.search(r"(?:size|bytes)\D{0,3}(\d{4,})", str(err), re.IGNORECASE):
        parts.append(f"MXNet asked for {int(asked.group(1)) / MiB:,.0f} MiB more")
    for device in (d for d in devices if d.device_type == "gpu"):
        try:
            free, total = memory_info(device.device_id)
            parts.append(f"{device}: {free / MiB:,.0f} MiB free of {total / MiB:,.0f} MiB")
        except Exception:  # the device may be unusable after the failure
            pass
    first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return OutOfMemory("; ".join(parts) + f". Try a smaller batch_size. (MXNet: {first_line})")
