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


def test_more_cpu_processes_than_the_cores_can_run_are_refused_up_front(small_cfg, runs_dir):
    import os

    import pytest
    if torch.cuda.is_available():
        pytest.skip("a GPU machine launches one process a GPU")
    many = 2 * (os.cpu_count() or 1) + 1
    with pytest.raises(ValueError, match=rf"num_gpus={many} on the CPU starts {many} training processes"):
        gc.train(small_cfg.replace(num_gpus=many), runs_dir=runs_dir, verbose=False)
    assert not any(runs_dir.iterdir()) if runs_dir.exists() else True


def test_a_ddp_process_outside_torchrun_says_what_it_needs(small_cfg, tmp_path, monkeypatch):
    import pytest

    from gpu_course.tracks.torch import ddp
    config = tmp_path / "cfg.json"
    config.write_text(small_cfg.to_json())
    monkeypatch.setenv("WORLD_SIZE", "2")
    for name in ("RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match=r"RANK=None, LOCAL_RANK=None: .*start it with torchrun"):
        ddp.main(["--config", str(config), "--runs-dir", str(tmp_path / "runs")])
