import math

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

from gpu_course.tracks import gluon as gc
from gpu_course.config import OPTIMIZERS, SCHEDULERS_BY_ENGINE


def _steps(trainer_cfg, steps=2):
    """Build the tiny net and a Trainer from the config, take `steps` steps on a fixed
    batch; returns (losses, how much each step moved the weights)."""
    mx.random.seed(0)
    net = gc.get_model("tiny")
    net.initialize(mx.init.Xavier())
    trainer = gc.make_trainer(net, trainer_cfg, steps_per_epoch=4)
    x = mx.nd.random.uniform(shape=(8, 3, 32, 32))
    y = mx.nd.array(np.arange(8) % 10)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses, moved = [], []
    net(x)  # resolve deferred shapes
    weights = [p for p in net.collect_params().values() if p.grad_req != "null"]
    for _ in range(steps):  # (BatchNorm's running statistics change in every forward)
        before = [p.data().copy() for p in weights]
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(8)
        losses.append(float(loss.mean().asscalar()))
        moved.append(sum(float((p.data() - b).abs().sum().asscalar())
                         for p, b in zip(weights, before)))
    return losses, moved


@pytest.mark.parametrize("name", OPTIMIZERS["gluon"])
def test_every_optimizer_constructs_and_steps(name):
    cfg = gc.Experiment(optimizer=name, lr=0.01, warmup_epochs=0.5, epochs=2)
    losses, moved = _steps(cfg)
    assert all(math.isfinite(v) for v in losses)
    assert all(m > 0 for m in moved)


def test_lbsgd_gets_its_warmup_bookkeeping_and_accumulates_batch_scale_steps():
    cfg = gc.Experiment(optimizer="lbsgd", warmup_epochs=1, epochs=3,
                        optimizer_params=(("batch_scale", 2),))
    params = gc.optimizer_params(cfg, steps_per_epoch=7)
    assert (params["updates_per_epoch"], params["warmup_epochs"], params["batch_scale"]) \
        == (7, 1, 2)
    # LBSGD's batch_scale emulates a batch that many times larger: it sums batch_scale
    # gradients and updates the weights only every batch_scale-th step
    _, moved = _steps(cfg, steps=4)
    assert moved[0] == moved[2] == 0 and moved[1] > 0 and moved[3] > 0


def test_optimizer_params_pass_through_and_float16_uses_master_weights():
    assert gc.optimizer_params(gc.Experiment(dtype="float16"), 10)["multi_precision"] is True
    assert gc.optimizer_params(gc.Experiment(), 10)["multi_precision"] is False
    off = gc.Experiment(dtype="float16", optimizer="lars",
                        optimizer_params=(("multi_precision", False), ("eta", 0.002)))
    params = gc.optimizer_params(off, 10)
    assert (params["multi_precision"], params["eta"], params["momentum"]) == (False, 0.002, 0.9)
    assert "momentum" not in gc.optimizer_params(gc.Experiment(optimizer="lamb"), 10)


def _schedule(cfg, steps_per_epoch=10):
    schedule = gc.lr_scheduler(cfg, steps_per_epoch)
    return [schedule(u) for u in range(cfg.epochs * steps_per_epoch + 1)]


def test_warmup_rises_linearly_from_zero_to_the_scaled_lr():
    cfg = gc.Experiment(lr=0.1, lr_base_batch=32, batch_size=64, warmup_epochs=1, epochs=3,
                        lr_scheduler="cosine")
    lrs = _schedule(cfg)
    assert lrs[0] == 0 and lrs[5] == pytest.approx(0.1)  # halfway to 0.2
    assert lrs[10] == pytest.approx(0.2)
    assert lrs[-1] == pytest.approx(0, abs=1e-9)


def test_step_schedules_change_at_the_epochs_asked_for():
    factor = _schedule(gc.Experiment(lr=1.0, lr_scheduler="factor", lr_steps=(1,),
                                     epochs=3))   # LR_FACTOR: the talk's 0.5
    assert factor[10] == 1.0 and factor[11] == 0.5 and factor[21] == 0.25
    multi = _schedule(gc.Experiment(lr=1.0, lr_scheduler="multifactor", lr_steps=(2,),
                                    epochs=3))
    assert multi[20] == 1.0 and multi[21] == pytest.approx(0.5)


def test_poly_decays_to_zero_and_none_is_constant():
    poly = _schedule(gc.Experiment(lr=1.0, lr_scheduler="poly", epochs=2))
    assert poly[0] == 1.0 and poly[10] == pytest.approx(0.25) and poly[-1] == 0
    assert gc.lr_scheduler(gc.Experiment(), 10) is None
    warm = _schedule(gc.Experiment(lr=1.0, warmup_epochs=1, epochs=2))
    assert warm[5] == 0.5 and warm[10:] == [1.0] * 11


@pytest.mark.parametrize("kind", SCHEDULERS_BY_ENGINE["gluon"])
def test_every_scheduler_drives_a_trainer(kind):
    cfg = gc.Experiment(lr_scheduler=kind, lr_steps=(1,), warmup_epochs=0.5, epochs=2)
    losses, moved = _steps(cfg, steps=3)
    assert all(math.isfinite(v) for v in losses) and moved[-1] > 0


def test_the_trainer_a_notebooks_loop_builds_is_the_one_recorded(small_cfg):
    """Lesson 05: the lbsgd Trainer the notebook builds is the one gc.record records."""
    parts = gc.build(small_cfg.replace(name="own trainer", max_steps=2, optimizer="lbsgd"))
    net, train_iter, _, _ = parts
    trainer = gluon.Trainer(net.collect_params(), "lbsgd",
                            {"learning_rate": 0.05, "momentum": 0.9, "warmup_strategy": "lars"})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    with gc.record(parts, optimizer=trainer, progress=False, verbose=False) as rec:
        for _ in rec.epochs():
            for data, label in rec.batches(train_iter):
                xs, ys = gc.split(data, label, parts.devices)
                with autograd.record():
                    losses = [loss_fn(net(x), y) for x, y in zip(xs, ys)]
                autograd.backward(losses)
                trainer.step(data.shape[0])
                rec.step(data.shape[0], loss_sum=[loss.sum() for loss in losses])
            rec.end_epoch(sync=mx.nd.waitall)
    recorded = rec.run.meta["ran"]["optimizer"]
    assert recorded["optimizer"] == "lbsgd" and recorded["lr"] == pytest.approx(0.05)
    assert trainer._optimizer.warmup_strategy == "lars"
