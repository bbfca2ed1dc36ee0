"""Gluon datasets and DataLoaders over the course's image arrays; GluonCV's augmentation
runs per image in the loader's workers."""
from __future__ import annotations

import multiprocessing.connection
import multiprocessing.pool
import os
import random
import signal
import time
import weakref

import mxnet as mx
import numpy as np
from gluoncv.data import transforms as gcv_transforms
from mxnet.gluon.data import ArrayDataset, DataLoader, dataloader
from mxnet.gluon.data.vision import transforms

from ... import data as course_data
from ...data.folder import end_pool
from ...config import Experiment
from ...measure.guards import WORKER_DIED_HINT, LoaderWorkerDied, check_stop, stop_requests


class Augment:
    """Per-image transform, reseeded from (seed, pid) in each forked worker (else all alike)."""

    def __init__(self, cfg: Experiment, train: bool, source_size: int):
        steps = []
        if source_size != cfg.image_size:
            steps.append(transforms.Resize(cfg.image_size))
        if train and cfg.augment != "none":
            steps += [gcv_transforms.RandomCrop(cfg.image_size, pad=4),
                      transforms.RandomFlipLeftRight()]
        if train and cfg.augment == "heavy":  # deliberately expensive CPU work per image
            steps.append(transforms.RandomColorJitter(brightness=0.4, contrast=0.4,
                                                      saturation=0.4))
        steps.append(transforms.ToTensor())  # HWC uint8 -> CHW float32 in [0, 1]
        if train and cfg.augment == "heavy":
            steps.append(transforms.RandomRotation((-15, 15)))  # needs float32 input
        steps.append(transforms.Normalize(course_data.CIFAR_MEAN, course_data.CIFAR_STD))
        self.pipeline, self.seed, self._pid = transforms.Compose(steps), cfg.seed, os.getpid()

    def __call__(self, image):
        if os.getpid() != self._pid:  # first image in a forked worker
            self._pid = os.getpid()
            worker_seed = (self.seed * 1_000_003 + self._pid) % 2**31
            random.seed(worker_seed)
            np.random.seed(worker_seed)
            mx.random.seed(worker_seed)
        return self.pipeline(image)


def image_dataset(images: np.ndarray, labels: np.ndarray) -> ArrayDataset:
    """A Gluon dataset over uint8 NHWC images (one NDArray, shared by forked workers)."""
    return ArrayDataset(mx.nd.array(images, dtype="uint8"), np.asarray(labels, dtype="int32"))


def make_loader(dataset, cfg: Experiment, train: bool = True, sampler=None) -> DataLoader:
    """A DataLoader of cfg.batch_size images per device; training batches shuffled (or drawn
    by `sampler`), the last short one dropped; a dead worker raises WorkerDied."""
    if train and len(dataset) < cfg.global_batch:  # zero steps per epoch otherwise
        raise ValueError(f"batch_size={cfg.batch_size} gives {cfg.global_batch} images per step, but the "
                         f"training set has only {len(dataset)}: lower batch_size or raise train_size")
    return WatchedDataLoader(dataset, batch_size=cfg.global_batch,
                             shuffle=train and sampler is None, sampler=sampler,
                             last_batch="discard" if train else "keep",
                             num_workers=cfg.num_workers, thread_pool=False)


WorkerDied = LoaderWorkerDied  # a worker process ended while the loop waited for its batch


# pools whose dead worker is an error (WorkerDied), never replaced: forking a replacement
# from the pool's thread beside MXNet's engine hung 1 run in 7
_WATCHED: weakref.WeakSet = weakref.WeakSet()
_repopulate = multiprocessing.pool.Pool._repopulate_pool_static


def _repopulate_unless_watched(ctx, Process, processes, pool, *rest):
    if any(pool is watched._pool for watched in list(_WATCHED)):
        return None
    return _repopulate(ctx, Process, processes, pool, *rest)


multiprocessing.pool.Pool._repopulate_pool_static = staticmethod(_repopulate_unless_watched)


class _SignalsLeftAlone:
    """The `signal` module as MXNet's DataLoader sees it while it forks its workers: it
    ignored Ctrl-C meanwhile, and a Ctrl-C pressed then was lost (the run trained on)."""

    SIGINT, SIG_IGN = signal.SIGINT, signal.SIG_IGN

    @staticmethod
    def signal(signum, handler):
        return signal.getsignal(signum)


class WatchedDataLoader(DataLoader):
    """Gluon's DataLoader, watching its workers while it waits for a batch: MXNet's pool
    replaces a killed worker but loses its batch, and the run would hang."""

    def __init__(self, *args, **kwargs):
        # the workers leave Ctrl-C to this process, which ends them; one pressed while
        # they start is raised once the loader exists (or obeyed by the run it is in)
        dataloader.signal = _SignalsLeftAlone
        try:
            with stop_requests():
                super().__init__(*args, **kwargs)
        finally:
            dataloader.signal = signal
        pool = self._worker_pool
        if pool is not None and not isinstance(pool, multiprocessing.pool.ThreadPool):
            _WATCHED.add(pool)
            # its workers, also those the pool has dropped since: a worker killed between
            # epochs (holding the task queue's lock) left the next epoch waiting forever
            self._forked = list(pool._pool)

    def __iter__(self):
        pool = self._worker_pool
        if pool is None or isinstance(pool, multiprocessing.pool.ThreadPool):
            yield from super().__iter__()
            return
        if self._iter is None:
            self.refresh()
        inner, workers = self._iter, self._forked
        pool.terminate = lambda: end_pool(pool, stopped=True)   # what MXNet calls on an error
        batches = super().__iter__()
        while True:
            pending = inner._data_buffer.get(inner._rcvd_idx)
            while pending is not None and not pending.ready():
                pending.wait(0.2)
                check_stop()  # SIGTERM while waiting for a batch (to the workers too)
                _check_workers(workers, pool)
            _check_workers(workers, pool)   # its arrays are fetched from the worker now
            try:
                batch = next(batches)
            except StopIteration:
                return
            except (EOFError, ConnectionError):   # the worker died while handing them over
                _wait_for_an_exit(workers)
                _check_workers(workers, pool)
                raise
            yield batch


def end_workers(*loaders) -> None:
    """End these loaders' worker pools now, on Ctrl-C or SIGTERM (see end_pool)."""
    for loader in loaders:
        pool = getattr(loader, "_worker_pool", None)
        if pool is not None and not isinstance(pool, multiprocessing.pool.ThreadPool):
            end_pool(pool, stopped=True)


def _wait_for_an_exit(workers, timeout: float = 2.0) -> None:
    """Wait until a worker has ended and its exit status is readable (else: a bare EOFError)."""
    ended = multiprocessing.connection.wait([w.sentinel for w in workers], timeout)
    for worker in workers:
        if worker.sentinel in ended:
            worker.join(timeout)


def _check_workers(workers, pool) -> None:
    # a worker whose sentinel is ready has ended: its exit status may read None for an
    # instant while the pool's thread, which waits for the same process, stores it
    ended = multiprocessing.connection.wait([w.sentinel for w in workers], 0)
    dead = [w for w in workers if w.exitcode is not None or w.sentinel in ended]
    if not dead:
        return
    end_pool(pool, stopped=True)  # the others too; terminate() could wait for a lock it held
    check_stop()  # a SIGTERM to the whole process group reached the workers first: a stop
    deadline = time.monotonic() + 2
    while dead[0].exitcode is None and time.monotonic() < deadline:
        time.sleep(0.01)
    code = dead[0].exitcode
    if code is None:
        raise WorkerDied(f"a loader worker died (pid {dead[0].pid}, exit status unread); "
                         f"{WORKER_DIED_HINT}")
    how = (f"killed by signal {-code} ({signal.Signals(-code).name})" if code < 0
           else f"exit code {code}")
    raise WorkerDied(f"a loader worker died (pid {dead[0].pid}, {how}); {WORKER_DIED_HINT}")
