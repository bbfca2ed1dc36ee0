"""gpu_course.data.order and disk.cached_share: the orders a packed file is read in, and
its pages dropped from the page cache before an epoch, measured on a real file."""
import os

import numpy as np
import pytest

from gpu_course.config import Experiment, PageCache, SampleOrder
from gpu_course.data import disk, order
from gpu_course.measure.harness import order_of


@pytest.mark.parametrize("name", list(SampleOrder))
def test_every_order_is_a_permutation_and_random_ones_change_with_the_epoch(name):
    a = order.epoch_order(1000, name, seed=3, window=64)
    assert sorted(a.tolist()) == list(range(1000))
    b = order.epoch_order(1000, name, seed=4, window=64)
    assert np.array_equal(a, b) == (name == SampleOrder.SEQUENTIAL)
    if name == SampleOrder.SEQUENTIAL:
        assert a.tolist() == list(range(1000))


def test_quasi_random_reads_stay_within_their_window():
    window = 64
    got = order.epoch_order(1000, "quasi_random", seed=1, window=window)
    runs, start = [], 0
    while start < len(got):   # each window's records come together, all from one window
        block = got[start:start + window]
        first = block.min() // window
        assert (block // window == first).all()
        size = min(window, 1000 - first * window)
        assert len(set(got[start:start + size].tolist())) == size
        runs.append(first)
        start += size
    assert sorted(runs) == list(range(16)) and runs != sorted(runs)   # the windows shuffled
    assert not np.array_equal(got, np.arange(1000))                   # and inside each
    # the random order leaves its window far more often
    jumps = lambda o: int((np.abs(np.diff(o)) >= window).sum())       # noqa: E731
    assert jumps(got) <= 16 < jumps(order.epoch_order(1000, "random", seed=1))


def test_a_window_is_a_mebibyte_of_records_and_at_least_a_batch():
    assert order.window_records(1000, 1000 * 4096) == 256
    assert order.window_records(1000, 1000 * 4096, batch_size=512) == 512
    assert order.window_records(10, 10 * (4 << 20)) == 1


@pytest.mark.parametrize("field, value, allowed", [
    ("sample_order", "shuffled", "random, quasi_random, sequential"),
    ("page_cache", "cold", "keep, drop")])
def test_a_bad_order_or_cache_is_named_with_what_is_allowed(field, value, allowed):
    with pytest.raises(ValueError, match=f"{field}='{value}' is not allowed; allowed: {allowed}"):
        Experiment(dataset="folder", data_format="packed", **{field: value})
    with pytest.raises(ValueError, match=f"{field}=.* applies to data_format='packed' only"):
        Experiment(dataset="folder", data_format="loose",
                   **{field: {"sample_order": "sequential", "page_cache": "drop"}[field]})
    cfg = Experiment(dataset="folder", data_format="packed", sample_order=SampleOrder.QUASI_RANDOM,
                     page_cache=PageCache.DROP)
    assert cfg.to_dict()["sample_order"] == "quasi_random"   # recorded with the run
    assert Experiment.from_dict(cfg.to_dict()) == cfg


@pytest.fixture
def packed_file(tmp_path):
    path = tmp_path / "data.pack"
    path.write_bytes(os.urandom(4 << 20))
    return path


def test_dropping_the_file_empties_its_pages_from_the_page_cache(packed_file):
    if disk.cached_share(packed_file) is None:
        pytest.skip("mincore cannot be asked here")
    packed_file.read_bytes()
    assert disk.cached_share(packed_file) > 0.95
    if not disk.evict(packed_file):
        pytest.skip("posix_fadvise is not available here")
    assert disk.cached_share(packed_file) < 0.05
    with open(packed_file, "rb") as f:   # a quarter read again: a quarter cached
        f.read(1 << 20)
    assert 0.2 < disk.cached_share(packed_file) < 0.6


@pytest.mark.parametrize("cache", list(PageCache))
def test_an_epoch_order_drops_the_file_first_and_notes_what_was_cached(packed_file, cache):
    epochs = order.EpochOrder(packed_file, 100, "sequential", cache, seed=0, batch_size=8)
    for _ in range(2):
        packed_file.read_bytes()      # the previous epoch read it all
        assert list(epochs) == list(range(100))
    note = epochs.note()
    assert note["order"] == "sequential" and note["cache"] == cache.value
    assert note["window"] == order.window_records(100, 4 << 20, 8)
    cached = note["cached_at_epoch_start"]
    assert len(cached) == 2
    if cached[0] is not None:
        assert all(c < 0.05 for c in cached) if cache == PageCache.DROP else all(c > 0.95 for c in cached)
    assert note["dropped"] == ([True, True] if cache == PageCache.DROP else [])


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.pack does not exist"):
        order.EpochOrder(tmp_path / "nothing.pack", 10)


def test_the_harness_finds_the_order_behind_a_loader(packed_file):
    class Sampler:
        epochs = order.EpochOrder(packed_file, 10)

    class TorchLike:
        sampler = Sampler()

    class GluonLike:
        class _batch_sampler:
            _sampler = Sampler()

    assert order_of(TorchLike()) is Sampler.epochs
    assert order_of(GluonLike()) is Sampler.epochs
    assert order_of(object()) is None
