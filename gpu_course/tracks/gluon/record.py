"""`gc.record(...)`: the course's bookkeeping (`measure.harness`) around a plain Gluon loop."""
from __future__ import annotations

import os

import mxnet as mx
from mxnet import gluon

from ...measure import provenance
from ...config import OPTIMIZERS, OWN
from ...measure.harness import Device, Harness, Output, Ran
from ...measure.watch_loop import experiment, watched
from ..common import read_dataset
from .devices import check_threads, operator_threads
from .models import dtype_of, graph_of

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MXNET_CPU_WORKER_NTHREADS", "MXNET_ENGINE_TYPE",
                    "MXNET_MKLDNN_ENABLED", "KMP_AFFINITY", "KMP_BLOCKTIME")


def record(cfg, net=None, train_iter=None, optimizer=None, **output) -> Harness:
    """The bookkeeping for one plain Gluon loop; what it is handed is read back."""
    out = Output.of(output)
    resolved = isinstance(cfg, provenance.Parts)   # `build` resolved it: threads, devices
    parts = provenance.Parts.of(cfg).fill(net, train_iter, optimizer)
    cfg, net, train_iter, optimizer = parts.cfg, parts.net, parts.train_iter, parts.optimizer
    cfg = cfg.replace(engine="gluon")
    devices = list(parts.devices) if parts.devices is not None else None
    if not resolved:
        check_threads(cfg)
    count, source = operator_threads()
    facts = {"threads": {"intra_op": count, "intra_op_from": source,
                         **{k: os.environ.get(k) for k in THREAD_VARIABLES if os.environ.get(k)}},
             "cpu_count": os.cpu_count()}
    if net is not None:
        found, facts["network"] = read_network(net)
        cfg = provenance.reconcile(cfg, found, "the network",
                                   ("model",) if found["model"] == OWN else ())
    if train_iter is not None:
        found, facts["train_data"] = read_loader(train_iter, len(devices or [None]))
        cfg = provenance.reconcile(cfg, found, "the DataLoader",
                                   provenance.OWN_DATA_FIELDS if found.get("dataset") else ())
    if optimizer is not None:
        found, facts["optimizer"] = read_trainer(optimizer)
        cfg = provenance.reconcile(cfg, found, "the Trainer")
    return Harness(cfg, Ran(engine="gluon", devices=str(devices) if devices is not None else None,
                            device_notice=parts.notice, downgrades=tuple(parts.downgrades or ()),
                            facts=facts),
                   Device(read=lambda a: a.asscalar(),
                          late_facts=(lambda: {"network": read_network(net)[1]})
                          if net is not None else None),
                   out)


def watch(loader, net=None, name: str = "watch", **output):
    """`for data, label in gc.watch(train_loader):` times a plain loop's steps into one run
    record, a pass an epoch (`measure.watch_loop`); `net` adds the network's facts."""
    return watched(loader, lambda: record(experiment(name, "gluon"), net=net, train_iter=loader,
                                          **{"progress": False, **output}), mx.nd.waitall)


def read_network(net) -> tuple[dict, dict]:
    """(config fields, facts) of a Gluon network."""
    try:  # shapes are known once initialised (deferred init leaves zeros)
        count = sum(int(p.data().size) for p in net.collect_params().values())
    except Exception:  # not initialised yet
        count = None
    model = getattr(net, "course_model", None)
    found = {"model": model if model else OWN, "graph": graph_of(net), "dtype": dtype_of(net)}
    return found, {"class": type(net).__name__, "parameters": count,
                   "classes": getattr(getattr(net, "output", None), "_units", None)}


def read_loader(loader, num_devices: int) -> tuple[dict, dict]:
    """(config fields, facts) of a training DataLoader (one sample read for its size)."""
    if not isinstance(loader, gluon.data.DataLoader):
        return {}, {"class": type(loader).__name__}
    dataset = loader._dataset
    batch = getattr(loader._batch_sampler, "_batch_size", None)
    found = {"num_workers": loader._num_workers, "train_size": len(dataset)}
    if isinstance(batch, int) and batch % num_devices == 0:
        found["batch_size"] = batch // num_devices
    facts = {"class": type(loader).__name__, "global_batch": batch}
    read_dataset(dataset, found, facts)
    return found, facts


def read_trainer(trainer) -> tuple[dict, dict]:
    """(config fields, facts) of a gluon.Trainer: its optimizer's name and settings."""
    opt = trainer._optimizer
    name = type(opt).__name__.lower()
    return {"optimizer": name} if name in OPTIMIZERS["gluon"] else {}, {
        "optimizer": name, "lr": trainer.learning_rate,
        **{k: getattr(opt, k, None) for k in ("wd", "momentum", "multi_precision")},
        "kvstore": str(getattr(trainer, "_kvstore_params", {}).get("kvstore"))}
