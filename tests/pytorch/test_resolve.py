"""A PyTorch config is resolved once, by the same `resolve` for train and build."""
import importlib

import torch

from gpu_course.tracks import torch as gc

ttrain = importlib.import_module("gpu_course.tracks.torch.train")  # the module, not gc.train


def test_train_and_build_resolve_once_each(small_cfg, runs_dir, monkeypatch):
    calls = []
    real = ttrain.resolve
    monkeypatch.setattr(ttrain, "resolve", lambda *a, **k: calls.append(a) or real(*a, **k))
    tried = []
    real_try = ttrain.try_devices
    monkeypatch.setattr(ttrain, "try_devices", lambda n: tried.append(n) or real_try(n))
    cfg = small_cfg.replace(dtype="float16")
    run = gc.train(cfg, runs_dir=runs_dir, progress=False, verbose=False)
    assert len(calls) == 1 and len(tried) == 1
    parts = gc.build(cfg)
    assert len(calls) == 2 and tried[-1] == 1       # build: one device
    if not torch.cuda.is_available():
        assert run.config["dtype"] == parts.cfg.dtype == "bfloat16"
        assert [d["field"] for d in run.meta["downgrades"]] == ["dtype"]
        assert parts.downgrades == run.meta["downgrades"]
