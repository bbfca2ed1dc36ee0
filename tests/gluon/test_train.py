import math
import os
import threading

import mxnet as mx
import numpy as np
import pytest

from gpu_course.analyse import noise
from gpu_course.env import cpu
from gpu_course.tracks import gluon as gc
from gpu_course.tracks.gluon.devices import FLOAT16_ON_CPU
from gpu_course.tracks.gluon.train import is_out_of_memory, out_of_memory
from gpu_course.measure.records import OutOfMemory, load_runs


class Loader:
    """Wraps a DataLoader: counts the batches fetched and can raise on a given one."""

    def __init__(self, loader, raise_at=None):
        self.loader, self.raise_at, self.fetched = loader, raise_at, 0

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for batch in self.loader:
            self.fetched += 1
            if self.fetched == self.raise_at:
                raise KeyboardInterrupt
            yield batch


def _weights(net):
    return [p.data(p.list_ctx()[0]).asnumpy().copy() for p in net.collect_params().values()
            if p.grad_req != "null"]


def test_two_cpu_contexts_with_kvstore_device_write_a_full_record(small_cfg, runs_dir):
    cfg = small_cfg.replace(num_gpus=2, epochs=2, lr_scheduler="cosine", warmup_epochs=0.5)
    run = gc.train(cfg, devices=[mx.cpu(0), mx.cpu(1)], progress=False, verbose=False)
    assert run.status == "finished" and run.path.parent == runs_dir
    assert run.config["num_gpus"] == 2 and run.meta["ran"]["optimizer"]["kvstore"] == "device"
    assert run.meta["notes"]["devices"] == "[cpu(0), cpu(1)]"
    epochs = run.epochs
    assert list(epochs["epoch"]) == [0, 1]
    assert list(epochs["steps"]) == [4, 4] and list(epochs["samples"]) == [256, 256]
    assert epochs["loss"].map(math.isfinite).all()
    assert epochs["val_acc"].between(0, 1).all() and epochs["train_acc"].between(0, 1).all()
    assert epochs["lr"].iloc[-1] == pytest.approx(0, abs=1e-9)  # cosine ends at 0
    assert (epochs["data_wait_s"] + epochs["compute_s"] <= epochs["epoch_time_s"] + 1e-6).all()
    assert run.summary["samples_per_sec"] > 0 and run.summary["val_acc"] is not None
    assert "epoch 1 end" in set(run.markers["label"])


def test_lbsgd_through_the_loop_on_two_contexts(small_cfg):
    cfg = small_cfg.replace(optimizer="lbsgd", num_gpus=2, warmup_epochs=1,
                            optimizer_params=(("batch_scale", 2),))
    run = gc.train(cfg, devices=[mx.cpu(0), mx.cpu(1)], progress=False, verbose=False)
    assert run.status == "finished" and math.isfinite(run.epochs["loss"].iloc[0])


def test_float16_on_a_cpu_trains_in_float32_and_says_so(small_cfg, capsys):
    cfg = small_cfg.replace(dtype="float16", max_steps=2)
    run = gc.train(cfg, devices=[mx.cpu(0)], progress=False)
    assert run.config["dtype"] == "float32"
    assert FLOAT16_ON_CPU in run.meta["notes"]["device_notice"]
    assert FLOAT16_ON_CPU in capsys.readouterr().out
    assert "TYPECAST: float32" in run.summary["summary_line"]


def test_ctrl_c_in_epoch_two_keeps_epoch_one(small_cfg, runs_dir):
    cfg = small_cfg.replace(epochs=3)
    train_iter, val_iter = gc.load_data(cfg)
    interrupting = Loader(train_iter, raise_at=len(train_iter) + 2)  # epoch 2, step 2
    with pytest.raises(KeyboardInterrupt):
        gc.train(cfg, train_iter=interrupting, val_iter=val_iter, progress=False,
                 verbose=False)
    (run,) = load_runs(runs_dir)
    assert run.status == "interrupted" and "1 finished epoch" in run.meta["error"]
    assert list(run.epochs["epoch"]) == [0]
    assert "epoch 1 start" in set(run.markers["label"])
    assert not any(t.name == "GpuMonitor" and t.is_alive() for t in threading.enumerate())


def test_mock_loader_fetches_one_batch_and_trains_on_it(small_cfg):
    cfg = small_cfg.replace(mock="loader", epochs=2)
    train_iter, val_iter = gc.load_data(cfg)
    counting = Loader(train_iter)
    net = gc.get_model(cfg)
    run = gc.train(cfg, net=net, train_iter=counting, val_iter=val_iter, progress=False,
                   verbose=False)
    assert counting.fetched == 1
    assert list(run.epochs["samples"]) == [256, 256]
    assert run.epochs["loss"].notna().all() and run.epochs["val_acc"].isna().all()


def test_mock_trainer_fetches_every_batch_and_computes_nothing(small_cfg):
    cfg = small_cfg.replace(mock="trainer")
    train_iter, val_iter = gc.load_data(cfg)
    counting = Loader(train_iter)
    net = gc.get_model(cfg)
    net.initialize(mx.init.Xavier())
    net(mx.nd.zeros((1, 3, 32, 32)))
    before = _weights(net)
    run = gc.train(cfg, net=net, train_iter=counting, val_iter=val_iter, progress=False,
                   verbose=False)
    assert counting.fetched == 8 and run.epochs["samples"].iloc[0] == 256
    assert run.epochs["loss"].isna().all()
    for a, b in zip(before, _weights(net)):
        np.testing.assert_array_equal(a, b)


def test_a_network_passed_in_is_recorded_as_it_runs(small_cfg):
    net = gc.get_model("tiny")
    net.hybridize(static_alloc=True, static_shape=True)
    run = gc.train(small_cfg.replace(max_steps=2), net=net, progress=False, verbose=False)
    assert run.config["graph"] == "static"


def test_a_loader_passed_in_is_recorded_as_it_runs(small_cfg):
    # the user's own loader (batch 50, 2 workers) over the user's own dataset
    train_set, _ = gc.load_datasets(small_cfg)
    own = mx.gluon.data.ArrayDataset(*zip(*[train_set[i] for i in range(150)]))
    loader = mx.gluon.data.DataLoader(own, batch_size=50, shuffle=True,
                                      last_batch="discard", num_workers=2)
    cfg = small_cfg.replace(max_steps=None, num_workers=1, batch_size=64)  # the defaults
    run = gc.train(cfg, train_iter=loader, progress=False, verbose=False)
    c = run.config
    assert (c["num_workers"], c["batch_size"], c["train_size"], c["dataset"]) == (2, 50, 150, "own")
    assert run.meta["ran"]["train_data"]["image_shape"] == [3, 32, 32]
    assert run.epochs["samples"].iloc[0] == 150  # three batches of 50
    assert "batch_size" not in run.meta["requested"]  # read back, not downgraded


def test_a_loader_contradicting_the_config_is_refused(small_cfg):
    train_set, _ = gc.load_datasets(small_cfg)
    loader = mx.gluon.data.DataLoader(train_set, batch_size=64, num_workers=2)
    with pytest.raises(ValueError, match=r"num_workers=0 in the Experiment, but the "
                                         r"DataLoader has num_workers=2"):
        gc.train(small_cfg.replace(num_workers=0), train_iter=loader, progress=False,
                 verbose=False)


def test_an_own_network_is_recorded_as_own(small_cfg):
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Conv2D(8, 3), mx.gluon.nn.GlobalAvgPool2D(), mx.gluon.nn.Dense(10))
    run = gc.train(small_cfg.replace(max_steps=2), net=net, progress=False, verbose=False)
    assert run.config["model"] == "own"
    network = run.meta["ran"]["network"]
    assert network["class"] == "HybridSequential" and network["parameters"] == 8 * 27 + 8 + 8 * 10 + 10


def test_float16_on_a_cpu_is_labelled_as_what_ran(small_cfg):
    run = gc.train(small_cfg.replace(max_steps=2, dtype="float16", name="half"),
                   progress=False, verbose=False)
    assert run.config["dtype"] == "float32" and run.meta["requested"]["dtype"] == "float16"
    assert gc.metrics.label(run) == "half (dtype float32 ran, float16 requested)"
    assert gc.report.ladder_table([run])["ran"][0] == "dtype float32 ran, float16 requested"


REAL_BF16 = cpu.supports(cpu.Capability.MXNET_BFLOAT16, cpu._features("", os.environ.get(cpu.ISA_CAP, "")) or ())


@pytest.mark.skipif(not REAL_BF16, reason=f"not on this CPU: {REAL_BF16.why}")
def test_bfloat16_on_a_cpu_trains_and_is_recorded_as_bfloat16(small_cfg, monkeypatch):
    monkeypatch.delenv(cpu.FAKE, raising=False)   # the CPU as it is: it has AVX-512
    run = gc.train(small_cfg.replace(max_steps=3, dtype="bfloat16", graph="hybrid", num_gpus=2),
                   devices=[mx.cpu(0), mx.cpu(1)], progress=False, verbose=False)
    assert run.status == "finished" and run.config["dtype"] == "bfloat16" and not run.meta.get("downgrades")
    assert run.meta["ran"]["network"]["class"] == "SymbolBlock" and run.config["model"] == "tiny"
    assert math.isfinite(run.epochs["loss"].iloc[0]) and 0 <= run.epochs["val_acc"].iloc[0] <= 1


def test_bfloat16_on_a_cpu_without_avx512_trains_in_float32_and_says_why(small_cfg, monkeypatch):
    monkeypatch.setenv(cpu.FAKE, "-avx512,-amx")
    run = gc.train(small_cfg.replace(max_steps=3, dtype="bfloat16", graph="hybrid"),
                   progress=False, verbose=False)
    assert run.status == "finished" and run.config["dtype"] == "float32"
    assert run.meta["requested"] == {"dtype": "bfloat16"}
    (down,) = run.meta["downgrades"]
    assert (down["field"], down["ran"]) == ("dtype", "float32") and "no AVX-512" in down["why"]
    hw = run.meta["hardware"]
    assert f"{cpu.FAKE}=-avx512,-amx" in hw["cpu_features_faked"]
    assert not any(f.startswith(("avx512", "amx")) for f in hw["cpu_features"])


# -- out of memory ----------------------------------------------------------------------
CUDA_OOM = ("[10:01:02] src/storage/./pooled_storage_manager.h:161: cudaMalloc retry failed: "
            "out of memory\nStack trace:\n  [bt] (0) libmxnet.so(+0x1234) [0x7f]")


def test_oom_messages_are_recognised():
    assert is_out_of_memory(mx.base.MXNetError(CUDA_OOM))
    assert is_out_of_memory(mx.base.MXNetError("Memory allocation failed: size 123456789"))
    assert not is_out_of_memory(mx.base.MXNetError("Check failed: shape mismatch"))


def test_oom_says_batch_size_and_device_memory():
    cfg = gc.Experiment(batch_size=1024, num_gpus=2, model="wrn28_10")
    free_total = {0: (300 * 2**20, 16_000 * 2**20), 1: (12 * 2**30, 16_000 * 2**20)}
    err = out_of_memory(mx.base.MXNetError(CUDA_OOM), cfg, [mx.gpu(0), mx.gpu(1)],
                        memory_info=free_total.__getitem__)
    text = str(err)
    assert isinstance(err, OutOfMemory)
    assert "batch size 1024 per device (2048 per step) of wrn28_10" in text
    assert "gpu(0): 300 MiB free of 16,000 MiB" in text and "gpu(1): 12,288 MiB" in text
    assert "cudaMalloc retry failed: out of memory" in text and "Stack trace" not in text
    asked = out_of_memory(mx.base.MXNetError("Memory allocation failed: size 2147483648"),
                          cfg, [mx.cpu(0)])
    assert "asked for 2,048 MiB" in str(asked)


class RunsOutOfMemory(mx.gluon.HybridBlock):
    """A network whose second forward fails the way a too-large batch does on a GPU."""

    def __init__(self):
        super().__init__()
        self.body = gc.get_model("tiny")
        self.calls = 0

    def hybrid_forward(self, F, x):
        self.calls += 1
        if self.calls == 2:
            raise mx.base.MXNetError(CUDA_OOM)
        return self.body(x)


def test_oom_in_training_is_recorded_and_raised_as_out_of_memory(small_cfg, runs_dir):
    with pytest.raises(OutOfMemory, match="batch size 32") as caught:
        gc.train(small_cfg, net=RunsOutOfMemory(), progress=False, verbose=False)
    (run,) = load_runs(runs_dir)
    assert run.status == "oom" and "batch size 32" in run.meta["error"]
    assert caught.value.run_path == run.path


def test_sweep_goes_on_after_an_oom_point(small_cfg, monkeypatch):
    real_get_model = gc.train.__globals__["get_model"]
    monkeypatch.setitem(gc.train.__globals__, "get_model",
                        lambda cfg, classes=None: RunsOutOfMemory() if cfg.batch_size == 64
                        else real_get_model(cfg, classes))
    runs = gc.sweep(small_cfg.replace(max_steps=2), "batch_size", [32, 64],
                    progress=False, verbose=False)
    assert [r.status for r in runs] == ["finished", "oom"]


# -- it learns ----------------------------------------------------------------------------
def test_the_tiny_cnn_learns_the_generated_data():
    """Two short epochs of 2,000 images (~5 s of CPU): the loss falls and the accuracy
    clears chance beyond noise. Seeds 0-2 read 21.4%, 18.8% and 18.6% after the second
    epoch (25.6% on twice the images), their epoch's mean loss falling by 0.20-0.22: the
    bars, chance + 2 standard errors on 500 images (12.7%) and a fall of 0.05, lie far
    below what one CPU's arithmetic moves against another's (an image or two)."""
    cfg = gc.Experiment(name="learns", model="tiny", train_size=2000, test_size=500,
                        batch_size=32, epochs=2, num_workers=1, optimizer="adam", lr=0.001,
                        optimizer_params={"wd": 0}, augment="none", graph="static",
                        warmup_steps=2)
    run = gc.train(cfg, progress=False, verbose=False)
    assert not noise.at_chance(run), run.epochs["val_acc"].tolist()
    loss = run.epochs["loss"].tolist()
    assert loss[-1] < loss[0] - 0.05, loss



def test_a_notebooks_own_loop_is_recorded_by_gc_record(small_cfg):
    """The lesson's code is the measured code: a plain Gluon loop inside gc.record."""
    from mxnet import autograd, gluon
    parts = gc.build(small_cfg.replace(name="own loop", max_steps=3, dtype="float16"))
    net, train_iter, val_iter, trainer = parts
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    with gc.record(parts, progress=False, verbose=False) as rec:
        for _ in rec.epochs():
            for data, label in rec.batches(train_iter):
                xs, ys = gc.split(data, label, parts.devices)
                with autograd.record():
                    losses = [loss_fn(net(x), y) for x, y in zip(xs, ys)]
                autograd.backward(losses)
                trainer.step(data.shape[0])
                rec.step(data.shape[0], loss_sum=[loss.sum() for loss in losses])
            rec.end_epoch(sync=mx.nd.waitall,
                          evaluate=lambda: gc.evaluate(net, val_iter, parts.devices))
    run = rec.run
    assert run.status == "finished" and len(run.steps) == 3
    assert run.epochs.loss[0] > 0 and 0 <= run.epochs.val_acc[0] <= 1
    assert run.meta["requested"] == {"dtype": "float16"}  # a CPU: float32 ran
    assert run.meta["ran"]["optimizer"]["optimizer"] == "sgd"
