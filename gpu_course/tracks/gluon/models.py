"""CIFAR networks from the GluonCV model zoo and a tiny convnet; `prepare` readies one."""
from __future__ import annotations

import warnings

import mxnet as mx
import numpy as np
from gluoncv.model_zoo import get_model as zoo_model
from mxnet.gluon import nn

from ...config import MODELS, Experiment, Graph

ZOO_NAMES = {"resnet20": "cifar_resnet20_v1", "resnet56": "cifar_resnet56_v1",
             "resnet110": "cifar_resnet110_v1", "wrn16_10": "cifar_wideresnet16_10",
             "wrn28_10": "cifar_wideresnet28_10"}


def tiny_net(classes: int = 10) -> nn.HybridSequential:
    """Four layers, so little work per image that per-operator overhead shows."""
    net = nn.HybridSequential()
    for channels in (32, 64, 128):
        net.add(nn.Conv2D(channels, 3, padding=1, use_bias=False), nn.BatchNorm(),
                nn.Activation("relu"), nn.MaxPool2D(2))
    net.add(nn.GlobalAvgPool2D(), nn.Dense(classes))
    return net


def get_model(cfg_or_name: Experiment | str = "resnet20", classes: int | None = None):
    """The (uninitialised) network for cfg.model, a course name or a GluonCV CIFAR name."""
    name = cfg_or_name.model if isinstance(cfg_or_name, Experiment) else cfg_or_name
    if classes is None:
        from ...data import num_classes
        classes = num_classes(cfg_or_name) if isinstance(cfg_or_name, Experiment) else 10
    zoo_name = ZOO_NAMES.get(name, name)
    if name != "tiny" and not zoo_name.startswith("cifar_"):
        raise ValueError(f"model={name!r}; allowed: {', '.join(MODELS)}, or a zoo name like 'cifar_resnet20_v2'")
    net = tiny_net(classes) if name == "tiny" else zoo_model(zoo_name, classes=classes)
    net.course_model = name  # lets a record tell the course's networks from a user's own
    return net


def graph_of(net) -> str:
    """"eager", "hybrid" or "static": how a network will run."""
    if not isinstance(net, mx.gluon.HybridBlock) or not net._active:
        return "eager"
    flags = dict(net._flags)
    return "static" if flags.get("static_alloc") and flags.get("static_shape") else "hybrid"


def dtype_of(net) -> str:
    """float16 if any weight is float16; bfloat16 for a network `to_bfloat16` converted."""
    if getattr(net, "course_dtype", None) == "bfloat16":
        return "bfloat16"
    dtypes = {np.dtype(p.dtype).name for p in net.collect_params().values()}
    return "float16" if "float16" in dtypes else "float32"


def prepare(net, cfg: Experiment, devices) -> None:
    """Initialise `net` on `devices` (keeping weights it has), cast and hybridize it."""
    if cfg.dtype != dtype_of(net) and cfg.dtype != "bfloat16":   # bfloat16: `to_bfloat16`
        net.cast(cfg.dtype)  # BatchNorm stays float32 by Gluon's design
    with warnings.catch_warnings():  # "already initialized" for a passed-in network
        warnings.simplefilter("ignore", UserWarning)
        net.initialize(mx.init.Xavier(), ctx=devices)
    net.collect_params().reset_ctx(devices)
    if cfg.graph != graph_of(net) and cfg.graph != Graph.EAGER:
        net.hybridize(static_alloc=cfg.graph == Graph.STATIC, static_shape=cfg.graph == Graph.STATIC)


def to_bfloat16(net, cfg: Experiment, devices):
    """A copy of `net` computing in bfloat16 on the CPU: AMP rewrites its graph so that
    convolutions and matrix products run in bfloat16; weights stay float32."""
    from mxnet.contrib import amp
    if dtype_of(net) == "bfloat16":
        return net
    if not net._active:   # the conversion rewrites a graph: trace one
        net.hybridize()
    size = cfg.image_size
    net(mx.nd.zeros((1, 3, size, size), ctx=devices[0]))   # inference mode: no statistics change
    with warnings.catch_warnings():   # "data: None" while it infers the input's type
        warnings.simplefilter("ignore", UserWarning)
        low = amp.convert_hybrid_block(net, target_dtype="bfloat16", ctx=devices[0])
    low.collect_params().reset_ctx(devices)
    low.course_model = getattr(net, "course_model", None)
    low.course_dtype = "bfloat16"
    if cfg.graph != Graph.EAGER:
        low.hybridize(static_alloc=cfg.graph == Graph.STATIC, static_shape=cfg.graph == Graph.STATIC)
    return low
