"""Faults in the PyTorch track: the same faults as the Gluon track's, the same
answers. Real worker processes, real signals, real image files."""
import importlib
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from support import REPO

from gpu_course.measure import records
from gpu_course.tracks import torch as gc
from gpu_course.config import Experiment

ttrain = importlib.import_module("gpu_course.tracks.torch.train")  # the module, not the function


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


def test_a_corrupt_image_in_a_worker_is_named_or_skipped_and_recorded(tmp_path):
    """A DataLoader worker's CorruptImage reaches the loop as PyTorch's RuntimeError
    text: it is named again as the Gluon track names it, and the run fails saying so;
    loaded with skip_corrupt the record says which file was left out."""
    from image_folders import make_folder, truncate
    from gpu_course.data.folder import CorruptImage
    root = make_folder(tmp_path, classes=2, per_class=12)
    bad = truncate(sorted(root.rglob("*.jpg"))[0])
    cfg = gc.Experiment(name="t", dataset="folder", data_dir=str(root), image_size=16,
                        model="tiny", train_size=19, test_size=4, batch_size=8, epochs=2,
                        num_workers=1, num_gpus=0, warmup_steps=0, monitor_interval=0.2)
    with pytest.raises(CorruptImage, match=bad.name) as err:
        gc.train(cfg, progress=False, verbose=False)
    assert err.value.path == bad and "Traceback" not in str(err.value)
    failed = records.load_runs()[0]
    assert failed.status == "failed" and str(bad) in failed.meta["error"]
    train_set, val_set = gc.load_datasets(cfg, skip_corrupt=True)
    run = gc.train(cfg, train_iter=gc.make_loader(train_set, cfg),
                   val_iter=gc.make_loader(val_set, cfg, train=False), progress=False,
                   verbose=False)
    assert run.status == "finished"
    skipped = run.meta["notes"]["skipped"]
    assert skipped["files"] == [str(bad)] and skipped["distinct"] == 1
    assert skipped["reads"] >= 1


def test_sigterm_to_the_process_group_is_an_interrupt_not_a_dead_worker(tmp_path):
    """`timeout` and a stopped container signal every process: the workers die first,
    and the run still ends as stopped (status interrupted), not failed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpu_course.cli", "run", "--engine", "pytorch", "--model",
         "tiny", "--train-size", "256", "--test-size", "32", "--batch-size", "32",
         "--epochs", "500", "--num-workers", "2", "--num-gpus", "0", "--no-progress",
         "--runs-dir", tmp_path], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True)
    while "[Epoch 0]" not in proc.stdout.readline():
        assert proc.poll() is None, proc.stderr.read()
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=120)  # a hang guard
    assert proc.returncode == 130 and "Traceback" not in err, err
    run = records.load_runs(tmp_path)[0]
    assert run.status == "interrupted" and "SIGTERM" in run.meta["error"]


class KilledMidEpoch:
    """A DataLoader whose third batch is read from a worker killed just then: the
    connection breaks before the worker's death can be read (EOFError), as it did once."""

    def __init__(self, loader):
        self.loader = loader

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        batches = iter(self.loader)
        for i, batch in enumerate(batches):
            if i == 2:
                os.kill(batches._workers[0].pid, signal.SIGKILL)
                raise EOFError
            yield batch


def test_a_worker_killed_mid_epoch_is_named_with_how_it_died(tmp_path):
    cfg = gc.Experiment(name="t", model="tiny", train_size=256, test_size=32, batch_size=32,
                        epochs=1, num_workers=2, num_gpus=0, warmup_steps=0)
    train_set, val_set = gc.load_datasets(cfg)
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) is killed by "
                                           "signal: Killed"):
        gc.train(cfg, train_iter=KilledMidEpoch(gc.make_loader(train_set, cfg)),
                 val_iter=gc.make_loader(val_set, cfg, train=False), progress=False,
                 verbose=False)
    run = records.load_runs()[0]
    assert run.status == "failed" and "is killed by signal: Killed" in run.meta["error"]


def test_more_than_ten_classes_train(tmp_path):
    cfg = gc.Experiment(name="t", dataset="folder", data_dir=str(many_classes(tmp_path)),
                        image_size=16, model="tiny", train_size=24, test_size=8,
                        batch_size=8, epochs=1, num_workers=0, num_gpus=0, warmup_steps=0,
                        monitor_interval=0.2)
    run = gc.train(cfg, progress=False, verbose=False)  # labels 10 and 11 fit the output
    assert run.status == "finished"
    assert gc.get_model(cfg).output.out_features == 12  # a notebook's own network too


def test_the_track_experiment_defaults_to_pytorch():
    cfg = gc.Experiment(optimizer="adamw")
    assert cfg.engine == "pytorch" and isinstance(cfg, Experiment)
    assert gc.Experiment.from_dict(cfg.to_dict()) == cfg


def test_clear_errors_before_training(small_cfg, monkeypatch):
    train, _ = gc.load_datasets(small_cfg.replace(train_size=16))
    with pytest.raises(ValueError, match="batch_size=32 is larger than the training set"):
        gc.make_loader(train, small_cfg)
    monkeypatch.setenv(gc.COMPILE_BACKEND_ENV, "turbo")
    with pytest.raises(ValueError, match="GPU_COURSE_COMPILE_BACKEND='turbo' is not a "
                                         "torch.compile backend; allowed: .*aot_eager"):
        gc.train(small_cfg.replace(graph="hybrid"), progress=False, verbose=False)


def test_a_loss_that_explodes_ends_as_diverged(small_cfg):
    with pytest.raises(Exception, match="diverged"):
        gc.train(small_cfg.replace(lr=1e30, epochs=3, max_steps=4), progress=False,
                 verbose=False)
    run = records.load_runs()[0]
    assert run.status == "diverged" and "lr=1e+30" in run.meta["error"]


def test_sigterm_keeps_finished_epochs_and_ends_the_loader_workers(tmp_path):
    import psutil
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpu_course.cli", "run", "--engine", "pytorch", "--model",
         "tiny", "--train-size", "128", "--test-size", "32", "--batch-size", "32",
         "--epochs", "500", "--num-workers", "1", "--persistent-workers", "true",
         "--num-gpus", "0", "--no-progress", "--runs-dir", tmp_path],
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
