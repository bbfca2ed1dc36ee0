"""The order a packed file is read in, and what the page cache holds of it: lesson 09.

QUASI_RANDOM reads windows of WINDOW_BYTES in a random order, each shuffled inside (as
FFCV's). With PageCache.DROP, `EpochOrder` drops the file's pages before each epoch.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..config import PageCache, SampleOrder
from . import disk

WINDOW_BYTES = 1 << 20   # a quasi-random window: 1 MiB of the file (several read-aheads)


def window_records(records: int, file_bytes: int, batch_size: int = 1) -> int:
    """Records in a quasi-random window: WINDOW_BYTES worth, at least one batch."""
    per_record = max(1, file_bytes // max(records, 1))
    return max(batch_size, 1, WINDOW_BYTES // per_record)


def epoch_order(records: int, order, seed: int = 0, window: int = 1) -> np.ndarray:
    """The indices 0..records-1 in `order` for one epoch (`window`: quasi-random)."""
    order = SampleOrder(order)
    if order is SampleOrder.SEQUENTIAL:
        return np.arange(records)
    if order is SampleOrder.RANDOM:
        return np.random.default_rng(seed).permutation(records)
    return disk.block_shuffle(records, window, seed)


class EpochOrder:
    """One epoch's indices each time it is iterated; `cached[e]`: the share cached."""

    def __init__(self, path, records: int, order=SampleOrder.RANDOM,
                 cache=PageCache.KEEP, seed: int = 0, batch_size: int = 1):
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"packed file {self.path} does not exist: make it with gc.prepare_data(cfg)")
        self.records, self.seed = int(records), int(seed)
        self.order, self.cache = SampleOrder(order), PageCache(cache)   # checked by Experiment
        self.window = window_records(self.records, self.path.stat().st_size, batch_size)
        self.cached, self.dropped = [], []   # per epoch: the share cached, whether dropped
        self._epoch = 0

    def __len__(self) -> int:
        return self.records

    def __iter__(self):
        if self.cache is PageCache.DROP:
            self.dropped.append(disk.evict(self.path))
        self.cached.append(disk.cached_share(self.path))
        seed = self.seed + self._epoch
        self._epoch += 1
        return iter(epoch_order(self.records, self.order, seed, self.window).tolist())

    def note(self) -> dict:
        """What a run record keeps of it (`notes["page_cache"]`)."""
        return {"order": self.order.value, "cache": self.cache.value, "window": self.window,
                "cached_at_epoch_start": [None if c is None else round(c, 4)
                                          for c in self.cached],
                "dropped": self.dropped}


class EpochSampler:
    """A loader's sampler over an EpochOrder (.epochs) of cfg's sample_order and page_cache."""

    def __init__(self, data_source, cfg, path):
        self.epochs = EpochOrder(path, len(data_source), cfg.sample_order, cfg.page_cache,
                                 cfg.seed, cfg.global_batch)

    @classmethod
    def if_asked(cls, data_source, cfg, packed_path):
        """One over packed_path() if cfg asks for an order or page cache, else None (a shuffle)."""
        asked = (cfg.sample_order, cfg.page_cache) != (SampleOrder.RANDOM, PageCache.KEEP)
        return cls(data_source, cfg, packed_path()) if asked else None

    def __len__(self) -> int:
        return len(self.epochs)

    def __iter__(self):
        return iter(self.epochs)
