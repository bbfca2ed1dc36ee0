"""torch.compile's backend: "inductor" unless $GPU_COURSE_COMPILE_BACKEND names another."""
from __future__ import annotations

import os

import torch

COMPILE_BACKEND_ENV = "GPU_COURSE_COMPILE_BACKEND"  # "inductor" (default) or e.g. "aot_eager"


def compile_backend() -> str:
    """$GPU_COURSE_COMPILE_BACKEND, checked against torch.compile's backends."""
    backend = os.environ.get(COMPILE_BACKEND_ENV, "").strip() or "inductor"
    known = torch._dynamo.list_backends(exclude_tags=())
    if backend not in known:
        allowed = ", ".join(sorted(known))
        raise ValueError(f"{COMPILE_BACKEND_ENV}={backend!r} is not a torch.compile backend; allowed: {allowed}")
    return backend


def reset_stats() -> None:
    """Forget what earlier compilations counted (before a run compiles its network)."""
    from torch._dynamo.utils import counters
    counters.clear()


def stats() -> dict:
    """What torch.compile did since `reset_stats`: graphs, graph breaks and recompiles."""
    from torch._dynamo.utils import counters
    graphs = int(counters["stats"].get("unique_graphs", 0))
    frames = int(counters["frames"].get("ok", 0))
    return {"graphs": graphs, "graph_breaks": int(sum(counters["graph_break"].values())),
            "recompiles": max(0, frames - graphs), "frames": frames}
