"""The data sets and loaders an Experiment names, in Gluon; for an image folder the I/O
ladder: the same images as loose JPEGs, pre-resized, packed (RecordIO) or in memory."""
from __future__ import annotations

import mxnet as mx
import numpy as np
from mxnet.gluon.data import Dataset, Sampler

from ... import data as course_data
from ...config import Experiment
from ...data import folder, order, packed
from ...data.folder import folder_split
from .data import Augment, image_dataset, make_loader
from .recordio import RecordDataset, ensure_recordio, recordio_path

KINDS = ("loose", "preresized", "packed", "memory")


class SourceDataset(Dataset):
    """A Gluon Dataset over a framework-free source (`fetch(i) -> (uint8 HWC, label)`)."""

    def __init__(self, source):
        self.source = source
        self.skipped = getattr(source, "skipped", None)

    def __len__(self) -> int:
        return len(self.source)

    def __getitem__(self, i):
        image, label = self.source.fetch(i)
        return mx.nd.array(image, dtype="uint8"), np.int32(label)


def io_datasets(cfg: Experiment, kind: str = "loose", root=None, cache_dir=None,
                skip_corrupt: bool = False, progress: bool = True):
    """(train_dataset, val_dataset) over cfg's image folder, training as `kind` says."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not allowed; allowed: {', '.join(KINDS)}")
    size = cfg.image_size
    train_index, val_index = folder_split(cfg, root)
    common = dict(cache_dir=cache_dir, progress=progress, skip_corrupt=skip_corrupt)
    if kind == "loose":
        train = SourceDataset(folder.FolderSource(train_index, size, skip_corrupt))
    elif kind == "preresized":
        resized = packed.ensure_preresized(train_index, size, **common)
        train = SourceDataset(folder.FolderSource(
            packed.preresized_index(train_index, resized), size, skip_corrupt))
    elif kind == "packed":
        train = RecordDataset(ensure_recordio(train_index, size, **common), skip_corrupt)
    else:
        train = memory_dataset(packed.ensure_packed(train_index, size, **common))
    val = memory_dataset(packed.ensure_packed(val_index, size, **common))
    train_set = train.transform_first(Augment(cfg, True, size))
    train_set.skipped = getattr(train, "skipped", None)
    return train_set, val.transform_first(Augment(cfg, False, size))


class OrderSampler(order.EpochSampler, Sampler):
    """cfg.sample_order and page_cache over a RecordIO file (`data.order.EpochSampler`)."""


def order_sampler(train_set, cfg: Experiment, cache_dir=None) -> OrderSampler | None:
    """The OrderSampler cfg asks for (sample_order, page_cache), else None: a shuffle."""
    return OrderSampler.if_asked(train_set, cfg, lambda: prepare_data(
        cfg, cache_dir=cache_dir, progress=False).path)


def prepare_data(cfg: Experiment, root=None, cache_dir=None,
                 progress: bool = True) -> packed.Prepared | None:
    """Make, once and timed, the copy cfg.data_format reads ("packed" is RecordIO here)."""
    def record_file(index, size, common):
        target = recordio_path(index, size, cache_dir)
        return (f"one RecordIO file of {size} px JPEGs", target, target.with_suffix(".idx"),
                lambda: ensure_recordio(index, size, **common))
    return packed.prepare_copy(cfg, root, cache_dir, progress, record_file)


def memory_dataset(pack_path) -> Dataset:
    """The packed images read into host memory in one sequential pass, as one NDArray."""
    pack = packed.PackedArray(pack_path)
    return image_dataset(pack.load(), pack.labels)


def io_loaders(cfg: Experiment, kind: str = "loose", **kwargs):
    """(train_iter, val_iter): io_datasets in the track's DataLoaders (cfg.num_workers)."""
    train, val = io_datasets(cfg, kind, **kwargs)
    return (make_loader(train, cfg, train=True, sampler=order_sampler(
        train, cfg, kwargs.get("cache_dir"))), make_loader(val, cfg, train=False))


def load_datasets(cfg: Experiment, skip_corrupt: bool = False):
    """(train_dataset, val_dataset) for cfg.dataset; skip_corrupt leaves unreadable images out."""
    if cfg.dataset == "folder":
        return course_data.ours(*io_datasets(cfg, cfg.data_format, skip_corrupt=skip_corrupt))
    arrays = course_data.load(cfg.dataset, root=cfg.data_dir, train_size=cfg.train_size,
                              test_size=cfg.test_size, seed=cfg.seed)
    size = arrays.train_x.shape[1]
    return course_data.ours(
        image_dataset(arrays.train_x, arrays.train_y).transform_first(Augment(cfg, True, size)),
        image_dataset(arrays.test_x, arrays.test_y).transform_first(Augment(cfg, False, size)))


def load_data(cfg: Experiment):
    """(train_iter, val_iter): the two DataLoaders for cfg."""
    train, val = load_datasets(cfg)
    return (make_loader(train, cfg, train=True, sampler=order_sampler(train, cfg)),
            make_loader(val, cfg, train=False))
