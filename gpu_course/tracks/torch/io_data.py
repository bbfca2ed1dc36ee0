"""The I/O ladder in PyTorch: the same images delivered five ways.

    kind="loose"       every sample a JPEG opened, decoded, resized and augmented
    kind="preresized"  small JPEGs resized once, out of band: decode + augment per sample
    kind="packed"      one packed array file, memory-mapped: no decode, augment only
    kind="memory"      the decoded images held in host memory: augment only
    kind="gpu"         the images and their augmentation on the GPU (`GpuLoader`)

The augmentation is the track's own (`data.ImageDataset`: pad-4 crop, flip, normalise;
plus colour jitter and rotation for augment="heavy") and runs in the DataLoader's
workers, so `num_workers` stays the knob on every rung. Only where the pixels come from
changes.

    train_iter, val_iter = io_loaders(cfg, "packed")
"""
from __future__ import annotations

import numpy as np
from torch.utils.data import Sampler

from ...config import Experiment
from ...data import folder, order, packed
from ...data.folder import folder_split
from .data import ImageDataset, make_loader

KINDS = ("loose", "preresized", "packed", "memory", "gpu")


class LazyImages:
    """Images fetched one at a time from a source (`fetch(i) -> (uint8 HWC, label)`),
    looking like the uint8 [N, H, W, 3] array `ImageDataset` expects. The label of the
    last fetch is kept: with skip_corrupt a source may hand back the next readable
    sample instead, and its label must travel with it."""

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
    """ImageDataset (same augmentation, same output) over images read per sample from
    files or a packed file. `skipped.count`: unreadable samples skipped."""

    def __init__(self, source, size: int, augment: str = "none", seed: int = 0):
        super().__init__(LazyImages(source, size), np.zeros(len(source)), augment, seed)
        self.skipped = getattr(source, "skipped", None)

    def __getitem__(self, i: int):
        x, _ = super().__getitem__(i)   # reads self.images[i]: one fetch
        return x, np.int64(self.images.last_label)


def io_datasets(cfg: Experiment, kind: str = "loose", root=None, cache_dir=None,
                skip_corrupt: bool = False, progress: bool = True):
    """(train_dataset, val_dataset) over cfg's image folder at cfg.image_size, the
    training set delivered as `kind` says (see the module docstring; "gpu" has no
    Dataset: use io_loaders), augmented as cfg.augment says. Pre-processed copies are
    made on first use (in parallel, with progress) and reused. The validation set always
    comes from memory: it is not timed. `train_dataset.skipped.count`: unreadable
    samples skipped (skip_corrupt=True)."""
    if kind not in KINDS or kind == "gpu":
        allowed = [k for k in KINDS if k != "gpu"]
        raise ValueError(f"kind={kind!r} is not allowed here; allowed: {', '.join(allowed)} "
                         "(kind='gpu' gives loaders: io_loaders(cfg, 'gpu'))")
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
        pack = packed.PackedArray(packed.ensure_packed(train_index, size, **common))
        train = ImageDataset(pack.load(), pack.labels, cfg.augment, cfg.seed)
        train.skipped = None
    else:
        train = SourceDataset(source, size, cfg.augment, cfg.seed)
    val = packed.PackedArray(packed.ensure_packed(val_index, size, **common))
    return train, ImageDataset(val.load(), val.labels, "none", cfg.seed)


class OrderSampler(order.EpochSampler, Sampler):
    """The order of cfg.sample_order over the packed file at `path` read by
    `data_source`, and with cfg.page_cache="drop" the file's pages dropped before every
    epoch (`data.order.EpochSampler`; the run record notes what the cache held):

        DataLoader(packed_set, batch_size, sampler=OrderSampler(packed_set, cfg, path))"""


def order_sampler(train_set, cfg: Experiment, cache_dir=None) -> OrderSampler | None:
    """The OrderSampler cfg asks for (sample_order, page_cache), else None: a shuffle."""
    return OrderSampler.if_asked(train_set, cfg, lambda: prepare_data(
        cfg, cache_dir=cache_dir, progress=False).path)


def prepare_data(cfg: Experiment, root=None, cache_dir=None,
                 progress: bool = True) -> packed.Prepared | None:
    """Make, once and before training, the copy of cfg's training images that
    cfg.data_format reads, timed (the offline pre-processing a format costs); None when
    there is nothing to make (loose JPEGs, or a data set that is not a folder). Training
    then reuses the copy, so its runs time only the reading."""
    return packed.prepare_copy(cfg, root, cache_dir, progress)


def io_loaders(cfg: Experiment, kind: str = "loose", device=None, **kwargs):
    """(train_iter, val_iter): io_datasets in the track's DataLoaders (cfg.num_workers,
    pin_memory, ...), or for kind="gpu" two GpuLoaders holding the packed images on
    `device` (default: the first device of cfg)."""
    if kind != "gpu":
        train, val = io_datasets(cfg, kind, **kwargs)
        return (make_loader(train, cfg, train=True, sampler=order_sampler(
                    train, cfg, kwargs.get("cache_dir"))), make_loader(val, cfg, train=False))
    from .devices import try_devices
    from .gpu_loader import Batches, GpuLoader
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
