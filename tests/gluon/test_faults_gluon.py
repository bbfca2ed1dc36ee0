"""Faults in the Gluon track end a run quickly, with a true status and an
error that names the cause. Real worker processes, real signals, real image files."""
import importlib
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time

import mxnet as mx
import numpy as np
import pytest
from mxnet.gluon.data import Dataset

from image_folders import make_folder, truncate
from support import REPO

from gpu_course.measure import guards, records
from gpu_course.config import Experiment
from gpu_course.data.folder import CorruptImage
from gpu_course.tracks.gluon import data as gdata
gtrain = importlib.import_module("gpu_course.tracks.gluon.train")  # the module: the package exports the function


def many_classes(tmp_path, classes=12, per_class=4):
    """A folder of `classes` class folders of small JPEGs (more than CIFAR's ten)."""
    from PIL import Image
    rng = np.random.default_rng(0)
    root = tmp_path / "many"
    for k in range(classes):
        (root / f"{k:03d}.c{k}").mkdir(parents=True)
        for i in range(per_class):
            pixels = rng.integers(0, 255, (20, 20, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / f"{k:03d}.c{k}" / f"{i}.jpg")
    return root


def folder_cfg(root, **changes):
    values = dict(name="t", dataset="folder", data_dir=str(root), image_size=16,
                  model="tiny", train_size=24, test_size=8, batch_size=8, epochs=1,
                  num_workers=0, warmup_steps=0, monitor_interval=0.2, max_steps=2)
    return Experiment(**{**values, **changes})


def test_the_output_layer_has_as_many_classes_as_the_folder(tmp_path, monkeypatch):
    built = []

    def spy(cfg, classes=None):
        built.append(get_model(cfg, classes))
        return built[-1]
    get_model = gtrain.get_model
    monkeypatch.setattr(gtrain, "get_model", spy)
    run = gtrain.train(folder_cfg(many_classes(tmp_path)), progress=False, verbose=False)
    assert run.status == "finished"
    assert built[0](mx.nd.zeros((1, 3, 16, 16))).shape == (1, 12)  # the trained network


def test_a_corrupt_image_in_a_worker_is_named_at_once(tmp_path):
    root = make_folder(tmp_path, classes=2, per_class=12)
    bad = truncate(sorted(root.rglob("*.jpg"))[0])
    start = time.monotonic()
    with pytest.raises(CorruptImage, match=bad.name):
        gtrain.train(folder_cfg(root, num_workers=1, train_size=19, max_steps=None),
                     progress=False, verbose=False)
    assert time.monotonic() - start < 60  # not MXNet's 120 s timeout
    cfg = folder_cfg(root, num_workers=1, train_size=19, max_steps=None, epochs=2)
    train_set, val_set = gtrain.load_datasets(cfg, skip_corrupt=True)
    run = gtrain.train(cfg, train_iter=gdata.make_loader(train_set, cfg),
                       val_iter=gdata.make_loader(val_set, cfg, train=False), progress=False,
                       verbose=False)
    assert run.status == "finished"
    skipped = run.meta["notes"]["skipped"]  # the record says which and how often
    assert skipped["files"] == [str(bad)] and skipped["distinct"] == 1
    assert skipped["reads"] >= 1


class Slow(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(0.05)
        return np.zeros(2, np.float32), np.int32(0)


def test_a_killed_loader_worker_ends_the_iteration_within_seconds():
    cfg = Experiment(batch_size=4, num_workers=1, train_size=64)
    loader = gdata.make_loader(Slow(), cfg)
    batches = iter(loader)
    next(batches)
    worker = loader._worker_pool._pool[0]
    os.kill(worker.pid, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(gdata.WorkerDied, match="a loader worker died .*SIGKILL"):
        for _ in batches:
            pass
    assert time.monotonic() - start < 5


def test_a_dead_worker_is_not_replaced_behind_the_engine():
    """A replacement is forked from the pool's own thread while MXNet's engine runs in the
    main one; MXNet's fork handlers then stop the engine, and after a SIGTERM to the
    process group the run hung in 1 of 7 trials. The dead worker is reported instead."""
    loader = gdata.make_loader(Slow(), Experiment(batch_size=4, num_workers=2, train_size=64))
    batches = iter(loader)
    next(batches)
    first = list(loader._worker_pool._pool)
    os.kill(first[0].pid, signal.SIGKILL)
    first[0].join(10)
    time.sleep(1.0)   # the pool's thread wakes on the dead worker's sentinel at once
    assert [w.pid for w in loader._worker_pool._pool if w not in first] == []
    with pytest.raises(gdata.WorkerDied, match="a loader worker died .*SIGKILL"):
        for _ in batches:
            pass


class Ready(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return np.zeros((3, 8, 8), np.float32), np.int32(i % 10)


def test_a_worker_that_died_after_its_batch_was_ready_is_named_and_nothing_hangs():
    """Its batch's arrays are fetched from the worker itself: this gave "Connection reset"
    or EOFError, then MXNet's Pool.terminate() waited forever for the queue lock the dead,
    idle worker held, and the test hung."""
    loader = gdata.make_loader(Ready(), Experiment(batch_size=4, num_workers=1, train_size=64))
    batches = iter(loader)
    next(batches)
    inner = batches.gi_frame.f_locals["inner"]   # MXNet's iterator of this epoch
    deadline = time.monotonic() + 30
    while not inner._data_buffer[inner._rcvd_idx].ready() and time.monotonic() < deadline:
        time.sleep(0.05)   # the next batch is made and waits to be fetched
    os.kill(loader._worker_pool._pool[0].pid, signal.SIGKILL)
    loader._worker_pool._pool[0].join(10)
    start = time.monotonic()
    with pytest.raises(gdata.WorkerDied, match="a loader worker died .*SIGKILL"):
        next(batches)
    assert time.monotonic() - start < 5


def test_a_worker_killed_between_epochs_is_named_in_the_next():
    """The pool drops a dead worker: the next epoch did not know of it and waited forever
    when it had died holding the task queue's lock (a worker killed in validation's
    pool while training ran)."""
    loader = gdata.make_loader(Ready(), Experiment(batch_size=4, num_workers=2, train_size=64))
    for _ in loader:
        pass
    pool = loader._worker_pool
    victim = pool._pool[0]
    os.kill(victim.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while victim in pool._pool and time.monotonic() < deadline:
        time.sleep(0.05)   # the pool's thread drops it
    raised = []

    def epoch():
        try:
            for _ in loader:
                pass
        except Exception as err:
            raised.append(err)
    waiting = threading.Thread(target=epoch, daemon=True)
    waiting.start()
    waiting.join(10)
    assert not waiting.is_alive(), "the epoch waited for a worker that had died"
    assert raised and isinstance(raised[0], gdata.WorkerDied), raised
    assert f"pid {victim.pid}, killed by signal 9 (SIGKILL)" in str(raised[0])


def test_a_worker_killed_by_a_stop_request_reads_as_the_stop(monkeypatch):
    """SIGTERM to the process group: the workers die of it before the main process reads
    its own request; the run was stopped, not broken (it exited 1, "worker died", in 1 of
    7 trials)."""
    loader = gdata.make_loader(Ready(), Experiment(batch_size=4, num_workers=1, train_size=64))
    batches = iter(loader)
    next(batches)
    inner = batches.gi_frame.f_locals["inner"]
    deadline = time.monotonic() + 30
    while not inner._data_buffer[inner._rcvd_idx].ready() and time.monotonic() < deadline:
        time.sleep(0.05)   # the next batch waits to be fetched: no wait left to check in
    os.kill(loader._worker_pool._pool[0].pid, signal.SIGKILL)
    loader._worker_pool._pool[0].join(10)
    monkeypatch.setattr(guards, "_asked", [signal.SIGTERM])
    with pytest.raises(guards.Terminated, match="stopped by SIGTERM"):
        next(batches)


def test_ctrl_c_while_the_workers_start_is_not_lost(monkeypatch):
    """MXNet ignores Ctrl-C while it forks a loader's workers: one pressed then was lost
    and the run trained on. It is raised once the loader exists."""
    pool = multiprocessing.Pool

    def pressed(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)   # Ctrl-C as the workers start
        return pool(*args, **kwargs)
    monkeypatch.setattr(multiprocessing, "Pool", pressed)
    with pytest.raises(KeyboardInterrupt, match="Ctrl-C"):
        gdata.make_loader(Ready(), Experiment(batch_size=4, num_workers=1, train_size=64))


def test_clear_errors_before_training(tmp_path):
    with pytest.raises(ValueError, match="batch_size=64 gives 64 images per step, but the "
                                         "training set has only 32"):
        gdata.make_loader(gdata.image_dataset(np.zeros((32, 32, 32, 3), np.uint8),
                                              np.zeros(32)), Experiment(train_size=32))
    cfg = Experiment(model="tiny", optimizer="sgd", optimizer_params=(("batch_scale", 4),),
                     train_size=128, test_size=32, batch_size=32, epochs=1, num_workers=0)
    with pytest.raises(ValueError, match="do not fit optimizer='sgd'"):
        gtrain.train(cfg, progress=False, verbose=False)


def test_a_loss_that_explodes_ends_as_diverged(small_cfg):
    with pytest.raises(Exception, match="diverged"):
        gtrain.train(small_cfg.replace(lr=1e30, epochs=3, max_steps=4), progress=False,
                     verbose=False)
    run = records.load_runs()[0]
    assert run.status == "diverged" and "lr=1e+30" in run.meta["error"]


def test_a_diverged_run_on_the_command_line_is_one_line(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "gpu_course.cli", "run", "--engine", "gluon", "--model",
         "tiny", "--train-size", "64", "--test-size", "32", "--batch-size", "32", "--lr",
         "1e30", "--num-workers", "0", "--no-progress", "--runs-dir", tmp_path],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "Diverged: the training loss became nan" in out.stderr
    assert records.load_runs(tmp_path)[0].status == "diverged"


def test_sigterm_keeps_finished_epochs_and_ends_the_loader_workers(tmp_path):
    import psutil
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpu_course.cli", "run", "--engine", "gluon", "--model",
         "tiny", "--train-size", "128", "--test-size", "32", "--batch-size", "32",
         "--epochs", "500", "--num-workers", "1", "--no-progress", "--runs-dir", tmp_path],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while "[Epoch 0]" not in proc.stdout.readline():
        assert proc.poll() is None, proc.stderr.read()
    workers = psutil.Process(proc.pid).children(recursive=True)
    assert workers
    os.kill(proc.pid, signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 130
    run = records.load_runs(tmp_path)[0]
    assert run.status == "interrupted" and len(run.epochs) >= 1
    _, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive


def test_sigterm_to_the_process_group_ends_the_run_without_hanging(tmp_path):
    """`timeout` and a stopped container signal every process: the loader workers die
    with the run, and a dead worker's queue lock no longer keeps the process waiting at
    exit (it hung after saying 'interrupted')."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpu_course.cli", "run", "--engine", "gluon", "--model",
         "tiny", "--train-size", "256", "--test-size", "32", "--batch-size", "32",
         "--epochs", "500", "--num-workers", "2", "--no-progress", "--runs-dir", tmp_path],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    while "[Epoch 0]" not in proc.stdout.readline():
        assert proc.poll() is None, proc.stderr.read()
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=120)  # a hang guard
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and "gpu-course run: interrupted" in err, err
    run = records.load_runs(tmp_path)[0]
    assert run.status == "interrupted" and "SIGTERM" in run.meta["error"]
