"""The data sets and loaders an Experiment names, for the Gluon track (this only chooses)."""
from __future__ import annotations

from ... import data as course_data
from ...config import Experiment
from .data import Augment, image_dataset, make_loader
from .io_data import io_datasets, order_sampler


def load_datasets(cfg: Experiment, skip_corrupt: bool = False):
    """(train_dataset, val_dataset) for cfg.dataset; skip_corrupt leaves unreadable images out."""
    if cfg.dataset == "folder":  # a Caltech-256-style image folder: see io_data
        return course_data.ours(*io_datasets(cfg, cfg.data_format, skip_corrupt=skip_corrupt))
    arrays = course_data.load(cfg.dataset, root=cfg.data_dir, train_size=cfg.train_size,
                              test_size=cfg.test_size, seed=cfg.seed)
    size = arrays.train_x.shape[1]
    train = image_dataset(arrays.train_x, arrays.train_y)
    val = image_dataset(arrays.test_x, arrays.test_y)
    return course_data.ours(train.transform_first(Augment(cfg, True, size)),
                            val.transform_first(Augment(cfg, False, size)))


def load_data(cfg: Experiment):
    """(train_iter, val_iter): the two DataLoaders for cfg."""
    train, val = load_datasets(cfg)
    return (make_loader(train, cfg, train=True, sampler=order_sampler(train, cfg)),
            make_loader(val, cfg, train=False))
