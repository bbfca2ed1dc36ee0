"""Which torch.compile backend the course uses: "inductor" unless
$GPU_COURSE_COMPILE_BACKEND names another ("aot_eager" compiles in seconds instead of
minutes on a CPU, which is what the smoke runs use)."""
from __future__ import annotations

import os

import torch

COMPILE_BACKEND_ENV = "GPU_COURSE_COMPILE_BACKEND"  # "inductor" (default) or e.g. "aot_eager"


def compile_backend() -> str:
    """$GPU_COURSE_COMPILE_BACKEND, checked against torch.compile's backends."""
    backend = os.environ.get(COMPILE_BACKEND_ENV, "").strip() or "inductor"
    known = torch._dynamo.list_backends(exclude_tags=())
    if backend not in known:
        raise ValueError(f"{COMPILE_BACKEND_ENV}={backend!r} is not a torch.compile "
                         f"backend; allowed: {', '.join(sorted(known))}")
    return backend
