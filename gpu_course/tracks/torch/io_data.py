"""The data sets and loaders an Experiment names, in PyTorch; for an image folder the I/O
ladder: the same images as loose JPEGs, pre-resized, packed, in memory or on the GPU."""
from __future__ import annotations

import numpy as np
from torch.utils.data import Sampler

from ... import data as course_data
from ...config import Experiment
from ...data import folder, order, packed
from ...data.folder import folder_split
from .data import ImageDataset, make_loader
from .devices import try_devices
from .gpu_loader import Batches, GpuLoader, gpu_loaders

KINDS = ("loose", "preresized", "packed", "memory", "gpu")


class LazyImages:
    """A source's images as the array `ImageDataset` expects, fetched one at a time; the last
    fetch's label travels with it (skip_corrupt may move on)."""

    ndim, dtype = 4, np.dtype(np.uint8)

    def __init__(self, source, size: int):
        self.source = source
        self.shape = (len(source), size, size, 3)
        self.last_label = None

    def __len__(self) -> int:
        return len(self.source)

    def __getitem__(self, i):
        image, self.last_label = self.source.fetch(int(i))
        return image


class SourceDataset(ImageDataset):
    """ImageDataset over images read per sample from files or a packed file."""

    def __init__(self, source, size: int, augment: str = "none", seed: int = 0):
        super().__init__(LazyImages(source, size), np.zeros(len(source)), augment, seed)
        self.skipped = getattr(source, "skipped", None)

    def __getitem__(self, i: int):
        x, _ = super().__getitem__(i)   # reads self.images[i]: one fetch
        return x, np.int64(self.images.last_label)


def io_datasets(cfg: Experiment, kind: str = "loose", root=None, cache_dir=None,
                skip_corrupt: bool = False, progress: bool = True):
    """(train_dataset, val_dataset) over cfg's image folder, training as `kind` says."""
    if kind not in KINDS or kind == "gpu":
        allowed = [k for k in KINDS if k != "gpu"]
        raise ValueError(f"kind={kind!r}; allowed: {', '.join(allowed)} (kind='gpu' gives loaders: io_loaders)")
    size = cfg.image_size
    train_index, val_index = folder_split(cfg, root)
    common = dict(cache_dir=cache_dir, progress=progress, skip_corrupt=skip_corrupt)
    if kind == "loose":
        source = folder.FolderSource(train_index, size, skip_corrupt)
    elif kind == "preresized":
        resized = packed.ensure_preresized(train_index, size, **common)
        source = folder.FolderSource(packed.preresized_index(train_index, resized), size,
                                     skip_corrupt)
    elif kind == "packed":
        source = packed.PackedSource(packed.ensure_packed(train_index, size, **common),
                                     skip_corrupt=skip_corrupt)
    if kind == "memory":
        train = _in_memory(packed.ensure_packed(train_index, size, **common), cfg.augment, cfg.seed)
        train.skipped = None
    else:
        train = SourceDataset(source, size, cfg.augment, cfg.seed)
    return train, _in_memory(packed.ensure_packed(val_index, size, **common), "none", cfg.seed)


def _in_memory(pack_path, augment: str, seed: int) -> ImageDataset:
    """The packed images read into memory in one sequential pass."""
    pack = packed.PackedArray(pack_path)
    return ImageDataset(pack.load(), pack.labels, augment, seed)


class OrderSampler(order.EpochSampler, Sampler):
    """cfg.sample_order and page_cache over a packed file (`data.order.EpochSampler`)."""


def order_sampler(train_set, cfg: Experiment, cache_dir=None) -> OrderSampler | None:
    """The OrderSampler cfg asks for (sample_order, page_cache), else None: a shuffle."""
    return OrderSampler.if_asked(train_set, cfg, lambda: prepare_data(
        cfg, cache_dir=cache_dir, progress=False).path)


prepare_data = packed.prepare_copy   # make, once and timed, the copy cfg.data_format reads


def io_loaders(cfg: Experiment, kind: str = "loose", device=None, **kwargs):
    """(train_iter, val_iter): io_datasets in DataLoaders, or GpuLoaders for kind="gpu"."""
    if kind != "gpu":
        train, val = io_datasets(cfg, kind, **kwargs)
        return (make_loader(train, cfg, train=True, sampler=order_sampler(
                    train, cfg, kwargs.get("cache_dir"))), make_loader(val, cfg, train=False))
    device = device if device is not None else try_devices(cfg.num_gpus)[0][0]
    train_index, val_index = folder_split(cfg, kwargs.get("root"))
    common = {k: v for k, v in kwargs.items() if k in ("cache_dir", "progress", "skip_corrupt")}
    loaders = []
    for index, train in ((train_index, True), (val_index, False)):
        pack = packed.PackedArray(packed.ensure_packed(index, cfg.image_size, **common))
        loaders.append(GpuLoader(pack.load(), pack.labels, Batches(
            cfg.batch_size, train=train, augment=cfg.augment, channels_last=cfg.channels_last,
            seed=cfg.seed), device))
    return tuple(loaders)


def load_datasets(cfg: Experiment, skip_corrupt: bool = False):
    """(train_dataset, val_dataset) for cfg.dataset; skip_corrupt leaves unreadable images out."""
    if cfg.dataset == "folder":
        return course_data.ours(*io_datasets(cfg, cfg.data_format, skip_corrupt=skip_corrupt))
    arrays = course_data.load(cfg.dataset, root=cfg.data_dir, train_size=cfg.train_size,
                              test_size=cfg.test_size, seed=cfg.seed)
    return course_data.ours(ImageDataset(arrays.train_x, arrays.train_y, cfg.augment, cfg.seed),
                            ImageDataset(arrays.test_x, arrays.test_y, "none", cfg.seed))


def load_data(cfg: Experiment, device=None):
    """(train_iter, val_iter) for cfg: DataLoaders, or GpuLoaders with cfg.data_on_gpu."""
    if cfg.data_on_gpu:
        return gpu_loaders(cfg, device if device is not None else try_devices(cfg.num_gpus)[0][0])
    train, val = load_datasets(cfg)
    return (make_loader(train, cfg, train=True, sampler=order_sampler(train, cfg)),
            make_loader(val, cfg, train=False))
