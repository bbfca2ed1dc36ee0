"""PyTorch datasets and DataLoaders over the course's image arrays; the augmentation runs
per image in the DataLoader's workers, so `num_workers` is the lesson's knob."""
from __future__ import annotations

import gc
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data._utils.signal_handling import _error_if_any_worker_fails

from ... import data as course_data
from ...config import Experiment
from ...measure.guards import WORKER_DIED_HINT, LoaderWorkerDied

# a forked DataLoader worker that collects inherited garbage frees CUDA tensors, and a CUDA
# call in a forked child aborts it (SIGABRT, seen on an H200): freeze what it inherits
os.register_at_fork(after_in_child=gc.freeze)


class ImageDataset(Dataset):
    """uint8 NHWC images and labels -> (normalised float32 CHW tensor, int64); augment
    "heavy" adds costly colour jitter and rotation, for an input-bound run."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, augment: str = "none",
                 seed: int = 0):
        if augment not in ("none", "standard", "heavy"):
            raise ValueError(f"augment={augment!r} is not allowed; allowed: none, standard, heavy")
        if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8:
            raise ValueError(f"images must be uint8 [N, H, W, 3], got {images.dtype} {list(images.shape)}")
        self.images, self.labels = images, np.asarray(labels, dtype=np.int64)
        self.augment, self.seed = augment, seed
        self.mean = torch.tensor(course_data.CIFAR_MEAN).view(3, 1, 1)
        self.std = torch.tensor(course_data.CIFAR_STD).view(3, 1, 1)
        self._rng, self._pid = None, None

    def __len__(self) -> int:
        return len(self.images)

    def rng(self) -> np.random.Generator:
        # Forked workers inherit the parent's state and would all draw the same crops: a
        # new process gets its own stream, from PyTorch's per-worker seed.
        if self._pid != os.getpid():
            self._rng = np.random.default_rng([self.seed, torch.initial_seed() % 2**32])
            self._pid = os.getpid()
        return self._rng

    def __getitem__(self, i: int):
        image = self.images[i]
        if self.augment != "none":
            image = random_crop_flip(image, self.rng())
        x = torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1))).float() / 255
        if self.augment == "heavy":
            x = jitter_and_rotate(x, self.rng()).clamp_(0, 1)
        return (x - self.mean) / self.std, self.labels[i]


def random_crop_flip(image: np.ndarray, rng: np.random.Generator, pad: int = 4) -> np.ndarray:
    """A random HxW window of the image zero-padded by `pad`, flipped left-right half the time."""
    h, w, _ = image.shape
    padded = np.pad(image, ((pad, pad), (pad, pad), (0, 0)))
    dy, dx = rng.integers(0, 2 * pad + 1, size=2)
    crop = padded[dy:dy + h, dx:dx + w]
    return crop[:, ::-1] if rng.random() < 0.5 else crop


def jitter_and_rotate(x: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
    """Colour jitter in [0.6, 1.4] and a rotation by up to 15 degrees (~0.3 ms of CPU)."""
    b, c, s = rng.uniform(0.6, 1.4, size=3)
    gray = x.mean(dim=0, keepdim=True)
    x = (gray + (x - gray) * s) * b            # saturation, brightness
    x = x.mean() + (x - x.mean()) * c          # contrast
    angle = math.radians(rng.uniform(-15, 15))
    cos, sin = math.cos(angle), math.sin(angle)
    theta = torch.tensor([[[cos, -sin, 0.0], [sin, cos, 0.0]]], dtype=x.dtype)
    grid = F.affine_grid(theta, [1, *x.shape], align_corners=False)
    return F.grid_sample(x[None], grid, align_corners=False)[0]


def make_loader(dataset, cfg: Experiment, train: bool = True, sampler=None) -> DataLoader:
    """A DataLoader for this process's device; training shuffled, short last batch dropped."""
    if train and len(dataset) < cfg.batch_size:  # zero steps per epoch otherwise
        raise ValueError(f"batch_size={cfg.batch_size} is larger than the training set ({len(dataset)} "
                         "images): lower batch_size or raise train_size")
    workers = cfg.num_workers
    # these two mean nothing without worker processes (PyTorch refuses them)
    extra = dict(persistent_workers=cfg.persistent_workers,
                 prefetch_factor=cfg.prefetch_factor) if workers > 0 else {}
    # page-locked batches only speed up copies to a GPU (PyTorch warns and ignores it without)
    pin = cfg.pin_memory and torch.cuda.is_available()
    return DataLoader(dataset, batch_size=cfg.batch_size,
                      shuffle=train and sampler is None, sampler=sampler, drop_last=train,
                      num_workers=workers, pin_memory=pin, **extra)


def end_workers(*loaders) -> None:
    """End the workers persistent_workers keeps, on Ctrl-C or SIGTERM: the loader would keep
    them until deleted (in a notebook, never); other loaders' end with their iteration."""
    for loader in loaders:
        kept = getattr(loader, "_iterator", None)   # DataLoader's persistent iterator
        if kept is not None and hasattr(kept, "_shutdown_workers"):
            kept._shutdown_workers()
            loader._iterator = None


def worker_died(err: BaseException, wait_s: float = 2.0) -> LoaderWorkerDied | None:
    """The loader worker's death behind `err` (a batch's broken connection), named with how it
    died; None when none died. Waits up to wait_s: the connection breaks an instant before."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            _error_if_any_worker_fails()   # PyTorch's check of its workers (SIGCHLD's too)
        except RuntimeError as died:   # "DataLoader worker (pid N) is killed by signal: ..."
            return LoaderWorkerDied(f"{str(died).strip()} ({type(err).__name__}); {WORKER_DIED_HINT}")
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)
