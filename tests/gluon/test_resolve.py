"""A Gluon config is resolved once on its way to the record: MXNet's threads checked
once, the devices tried once, and the record says what resolve decided."""
import importlib

from gpu_course.tracks import gluon as gc
from gpu_course.tracks.gluon import devices as gdevices

# the modules (the package's `train` and `record` are the functions of the same name)
gtrain = importlib.import_module("gpu_course.tracks.gluon.train")
grecord = importlib.import_module("gpu_course.tracks.gluon.record")


def counting(monkeypatch, module, name, calls):
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls[name] = calls.get(name, 0) + 1
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, counted)


def test_train_resolves_the_config_once(small_cfg, runs_dir, monkeypatch):
    calls = {}
    for module in (gtrain, grecord):
        counting(monkeypatch, module, "check_threads", calls)
    counting(monkeypatch, gtrain, "try_devices", calls)
    run = gc.train(small_cfg.replace(dtype="float16"), runs_dir=runs_dir, progress=False,
                   verbose=False)
    assert calls == {"check_threads": 1, "try_devices": 1}
    # on a CPU: float32 ran, the request and its reason beside it
    assert run.config["dtype"] == "float32"
    assert [d["field"] for d in run.meta["downgrades"]] == ["dtype"]


def test_resolve_says_what_runs_here_and_why(small_cfg):
    here = gtrain.resolve(small_cfg.replace(dtype="float16", num_gpus=2), count=None)
    if gdevices.gpu_count() == 0:
        assert here.cfg.dtype == "float32" and here.requested.dtype == "float16"
        assert len(here.devices) == 2 and "No GPU found" in here.notice
        assert here.downgrades[0]["why"] == gdevices.FLOAT16_ON_CPU
