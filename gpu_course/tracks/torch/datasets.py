"""The data sets and loaders an Experiment names, for the PyTorch track (this only chooses)."""
from __future__ import annotations

import torch

from ... import data as course_data
from ...config import Experiment
from .data import ImageDataset, make_loader
from .io_data import io_datasets, order_sampler


def load_datasets(cfg: Experiment, skip_corrupt: bool = False
                  ) -> tuple[ImageDataset, ImageDataset]:
    """(train_dataset, val_dataset) for cfg.dataset; skip_corrupt leaves unreadable images out."""
    if cfg.dataset == "folder":  # a Caltech-256-style image folder: see io_data
        return course_data.ours(*io_datasets(cfg, cfg.data_format, skip_corrupt=skip_corrupt))
    arrays = course_data.load(cfg.dataset, root=cfg.data_dir, train_size=cfg.train_size,
                              test_size=cfg.test_size, seed=cfg.seed)
    return course_data.ours(ImageDataset(arrays.train_x, arrays.train_y, cfg.augment, cfg.seed),
                            ImageDataset(arrays.test_x, arrays.test_y, "none", cfg.seed))


def load_data(cfg: Experiment, device: torch.device | str | None = None):
    """(train_iter, val_iter) for cfg: DataLoaders, or GpuLoaders with cfg.data_on_gpu."""
    if cfg.data_on_gpu:
        from .devices import try_devices
        from .gpu_loader import gpu_loaders
        device = device if device is not None else try_devices(cfg.num_gpus)[0][0]
        return gpu_loaders(cfg, device)
    train, val = load_datasets(cfg)
    return (make_loader(train, cfg, train=True, sampler=order_sampler(train, cfg)),
            make_loader(val, cfg, train=False))
