"""gc.watch(loader) on a plain Gluon loop: a course run record that diagnose reads."""
import time

import mxnet as mx
from mxnet import autograd, gluon

from gpu_course import gluon as gc
from gpu_course.analyse import diagnose

STEPS = 30   # past the warm-up, enough steady steps for a verdict


def slow_batches(n=STEPS, wait=0.01):
    """Any iterable: a generator whose batches take `wait` seconds each to arrive."""
    for _ in range(n):
        time.sleep(wait)
        yield mx.nd.zeros((8, 4)), mx.nd.zeros((8,))


def test_a_slow_iterable_is_named_input_bound():
    batches = slow_batches()
    for x, y in gc.watch(batches, name="slow input", verbose=False):
        x.sum()
    run = gc.watch(batches).run
    assert run.status == "finished" and len(run.steps) == STEPS
    assert diagnose.diagnose(run).verdict == "input-bound"


def test_a_slow_step_is_not_named_input_bound():
    batches = slow_batches(wait=0.0)
    for x, y in gc.watch(batches, name="slow step", verbose=False):
        time.sleep(0.01)
    assert diagnose.diagnose(gc.watch(batches).run).verdict != "input-bound"


def test_a_plain_gluon_loop_is_one_run_and_its_settings_are_read():
    data = gluon.data.ArrayDataset(mx.nd.random.normal(shape=(64, 4)), mx.nd.zeros((64,)))
    net = gluon.nn.Dense(2)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loader = gluon.data.DataLoader(data, batch_size=16, shuffle=True)
    for epoch in range(2):
        for x, y in gc.watch(loader, net=net, verbose=False):
            with autograd.record():
                loss = net(x).sum()
            loss.backward()
            trainer.step(x.shape[0])
    run = gc.watch(loader).run
    assert len(run.epochs) == 2 and run.config["epochs"] == 2
    assert (run.config["batch_size"], run.config["num_workers"], run.config["model"]) == (16, 0, "own")
    assert run.meta["ran"]["network"]["parameters"] == 10
