"""gc.watch(loader) on a plain PyTorch loop: a course run record that diagnose reads."""
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

from gpu_course import torch as gc
from gpu_course.analyse import diagnose
from gpu_course.measure import watch_loop

STEPS = 30   # past the warm-up, enough steady steps for a verdict


def slow_batches(n=STEPS, wait=0.01):
    """Any iterable: a generator whose batches take `wait` seconds each to arrive."""
    for _ in range(n):
        time.sleep(wait)
        yield torch.zeros(8, 4), torch.zeros(8, dtype=torch.long)


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


def test_a_loader_made_each_epoch_is_one_run_and_its_settings_are_read():
    data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    net = torch.nn.Linear(4, 2)
    for epoch in range(2):
        loader = DataLoader(data, batch_size=16, shuffle=True)
        for x, y in gc.watch(loader, net=net, verbose=False):
            net(x).sum().backward()
    run = gc.watch(loader).run
    assert len(run.epochs) == 2 and run.config["epochs"] == 2
    assert (run.config["batch_size"], run.config["num_workers"], run.config["model"]) == (16, 0, "own")
    assert run.meta["ran"]["network"]["parameters"] == 10


def test_breaking_out_keeps_the_last_step():
    batches = slow_batches(wait=0.0)
    for i, (x, y) in enumerate(gc.watch(batches, verbose=False)):
        if i == 6:
            break
    run = gc.watch(batches).run
    assert len(run.steps) == 7 and int(run.epochs.samples.sum()) == 7 * 8


def test_a_program_that_an_exception_ends_leaves_its_record_interrupted(monkeypatch):
    batches = slow_batches(wait=0.0)
    for i, (x, y) in enumerate(gc.watch(batches, verbose=False)):
        if i == 6:
            break
    monkeypatch.setattr(sys, "last_value", KeyboardInterrupt(), raising=False)
    watch_loop._close_all()          # what the interpreter's exit runs
    run = gc.watch(batches).run
    assert run.status == "interrupted" and len(run.steps) == 7
