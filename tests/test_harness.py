"""The harness around a training loop, driven by a framework-free fake loop."""
import time

import pytest

from gpu_course.config import Experiment
from gpu_course.measure.harness import Harness, Output
from gpu_course.measure.records import OutOfMemory, load_run


def fake_loader(n, wait=0.002, fail_at=None):
    for i in range(n):
        if fail_at is not None and i == fail_at:
            raise KeyboardInterrupt
        time.sleep(wait)
        yield i


def train(cfg, runs_dir, fail_epoch=None, error=KeyboardInterrupt):
    h = Harness(cfg, output=Output(runs_dir=runs_dir, progress=False, verbose=False))
    with h:
        for epoch in h.epochs():
            if epoch == fail_epoch and error is not KeyboardInterrupt:
                raise error
            batches = fake_loader(6, fail_at=3 if epoch == fail_epoch else None)
            for _ in h.batches(batches, total=6):
                time.sleep(0.003)
                h.step(cfg.batch_size, loss=1.0 / (epoch + 1), correct=cfg.batch_size // 2)
            h.end_epoch(sync=lambda: time.sleep(0.001), evaluate=lambda: 0.25 * (epoch + 1),
                        lr=0.1)
    return h


def cfg(**kw):
    return Experiment(**{"epochs": 3, "batch_size": 8, "warmup_steps": 1,
                         "monitor_interval": 0.01, **kw})


def test_a_finished_run_has_everything(runs_dir):
    h = train(cfg(), runs_dir)
    run = h.run
    assert run.status == "finished" and len(run.epochs) == 3
    assert list(run.epochs["val_acc"]) == [0.25, 0.5, 0.75]
    assert run.epochs["train_acc"].iloc[0] == 0.5 and run.epochs["steps"].iloc[0] == 6
    assert (run.epochs["data_wait_s"] > 0).all() and (run.epochs["compute_s"] > 0).all()
    assert run.epochs["t_end"].iloc[0] > run.epochs["t_start"].iloc[0]
    assert len(run.host) > 0 and "epoch 2 end" in set(run.markers["label"])
    assert run.summary["summary_line"].startswith("NUM_GPU: 0, NUM_WORKER: 1, BATCH_SIZE_PER_GPU: 8")  # no GPU here
    assert run.summary["samples_per_sec"] > 0 and run.summary["val_acc"] == 0.75
    assert not h.monitor._thread.is_alive()


def test_max_steps_cuts_epochs(runs_dir):
    assert list(train(cfg(max_steps=2), runs_dir).run.epochs["steps"]) == [2, 2, 2]


def test_interrupt_keeps_finished_epochs_and_stops_the_monitor(runs_dir):
    h = Harness(cfg(), output=Output(runs_dir=runs_dir, progress=False, verbose=False))
    with pytest.raises(KeyboardInterrupt):
        with h:
            for epoch in h.epochs():
                for _ in h.batches(fake_loader(6, fail_at=3 if epoch == 1 else None)):
                    h.step(8)
                h.end_epoch()
    run = load_run(h.record.path)
    assert run.status == "interrupted" and len(run.epochs) == 1
    assert not h.monitor._thread.is_alive()


def test_out_of_memory_is_recorded_with_its_path(runs_dir):
    with pytest.raises(OutOfMemory) as err:
        train(cfg(), runs_dir, fail_epoch=1, error=OutOfMemory("batch 8 needs 2 GiB, 1 free"))
    run = load_run(err.value.run_path)
    assert run.status == "oom" and len(run.epochs) == 1 and "2 GiB" in run.meta["error"]


def test_on_epoch_callback_gets_each_row(runs_dir):
    rows = []
    h = Harness(cfg(epochs=2), output=Output(runs_dir=runs_dir, progress=False, verbose=False,
                                             on_epoch=rows.append))
    with h:
        for _ in h.epochs():
            for _ in h.batches(range(3)):
                h.step(8)
            h.end_epoch()
    assert [r["epoch"] for r in rows] == [0, 1]
