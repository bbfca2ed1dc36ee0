"""gpu_course.tracks.torch.io_data: the PyTorch I/O ladder over a real (tiny) image folder."""
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from gpu_course.config import Experiment
from gpu_course.data import folder
from gpu_course.tracks.torch import io_data
from image_folders import check_prepare_data, make_folder, truncate

SIZE = 24


@pytest.fixture
def cfg(tmp_path):
    root = make_folder(tmp_path)
    return Experiment(engine="pytorch", dataset="folder", data_dir=str(root), image_size=SIZE,
                      train_size=24, test_size=8, batch_size=8, num_workers=0,
                      augment="none", num_gpus=0)


def test_every_rung_delivers_the_same_pixels(cfg, tmp_path):
    cache = tmp_path / "cache"
    datasets = {kind: io_data.io_datasets(cfg, kind, cache_dir=cache, progress=False)[0]
                for kind in ("loose", "preresized", "packed", "memory")}
    loose = datasets["loose"]
    assert len(loose) == 24
    for i in (0, 7, 23):
        x, y = loose[i]
        assert x.shape == (3, SIZE, SIZE) and x.dtype == torch.float32
        assert isinstance(y, np.int64)
        for kind in ("packed", "memory"):  # decoded once from the same JPEGs: identical
            x2, y2 = datasets[kind][i]
            assert torch.equal(x, x2) and y == y2, kind
        x3, y3 = datasets["preresized"][i]  # stored again as JPEG: close, not equal
        assert y3 == y and (x3 - x).abs().mean() < 0.2


def test_augmentation_and_loaders_on_each_rung(cfg, tmp_path):
    augmented = cfg.replace(augment="standard")
    for kind in io_data.KINDS:
        train_iter, val_iter = io_data.io_loaders(augmented, kind, cache_dir=tmp_path / "c",
                                                  progress=False, device="cpu")
        batches = list(train_iter)
        assert len(batches) == 3, kind
        x, y = batches[0]
        assert x.shape == (8, 3, SIZE, SIZE) and y.dtype == torch.int64, kind
        labels = sorted(torch.cat([b[1] for b in batches]).tolist())
        assert labels == [0] * 8 + [1] * 8 + [2] * 8, kind
        assert sum(len(b[1]) for b in val_iter) == 7, kind  # a fifth of 36, under test_size
    with pytest.raises(ValueError, match="kind='gpu' gives loaders"):
        io_data.io_datasets(cfg, "gpu")
    with pytest.raises(ValueError, match="allowed"):
        io_data.io_loaders(cfg, "tape")


def test_a_corrupt_image_is_named_or_skipped_across_workers(cfg, tmp_path):
    train_index, _ = io_data.folder_split(cfg)
    bad = [train_index.path(i) for i in (2, 9)]
    for path in bad:
        truncate(path)
    strict, _ = io_data.io_datasets(cfg, "loose", cache_dir=tmp_path / "c", progress=False)
    with pytest.raises(folder.CorruptImage, match=bad[0].name):
        strict[2]
    lenient, _ = io_data.io_datasets(cfg, "loose", cache_dir=tmp_path / "c", progress=False,
                                     skip_corrupt=True)
    x, y = lenient[2]  # the next readable image, with its own label
    assert y == train_index.labels[3]
    loader = DataLoader(lenient, batch_size=6, num_workers=2)
    assert sum(len(b[1]) for b in loader) == 24
    assert lenient.skipped.count == 1 + 2  # one direct fetch, two in the workers
    # the packer stops on it too, naming the file, unless told to skip
    with pytest.raises(folder.CorruptImage, match=bad[0].name):
        io_data.io_datasets(cfg, "packed", cache_dir=tmp_path / "c", progress=False)
    packed_set, _ = io_data.io_datasets(cfg, "packed", cache_dir=tmp_path / "c",
                                        progress=False, skip_corrupt=True)
    assert len(packed_set) == 22


def test_a_missing_folder_is_a_clear_error(cfg, tmp_path):
    with pytest.raises(FileNotFoundError, match="gpu-course data --kind folder"):
        io_data.io_datasets(cfg.replace(data_dir=str(tmp_path / "nowhere")), "loose")


@pytest.mark.parametrize("kind", ["preresized", "packed", "memory"])
def test_prepare_data_makes_a_formats_copy_once_and_training_reads_it(cfg, tmp_path, kind):
    """The ladder's data-format rung: the copy is made (and timed) before the run, and the
    run's datasets read it instead of making it again; loose JPEGs need nothing made."""
    cfg = cfg.replace(data_format=kind)
    cache = tmp_path / "cache"
    check_prepare_data(io_data, cfg, cache)


def test_the_packed_files_order_and_page_cache_reach_the_loader_and_the_record(cfg, tmp_path,
                                                                               monkeypatch):
    """cfg.sample_order and cfg.page_cache: an OrderSampler over the packed file, built by
    the loaders gc.train makes and by hand, whose epochs the run record notes."""
    from gpu_course.tracks.torch import train
    monkeypatch.setenv("GPU_COURSE_CACHE", str(tmp_path / "cache"))
    packed = cfg.replace(data_format="packed", model="tiny", epochs=2, warmup_steps=0,
                         sample_order="sequential", page_cache="drop")
    train_iter, _ = io_data.io_loaders(packed, "packed", progress=False)
    assert isinstance(train_iter.sampler, io_data.OrderSampler)
    labels = torch.cat([b[1] for b in train_iter]).tolist()
    path = io_data.prepare_data(packed, progress=False).path
    dataset = io_data.io_datasets(packed, "packed", progress=False)[0]
    assert labels == [int(dataset[i][1]) for i in range(24)]   # file order
    assert io_data.order_sampler(dataset, packed.replace(sample_order="random",
                                                         page_cache="keep")) is None
    run = train(packed, runs_dir=tmp_path / "runs", verbose=False, progress=False)
    note = run.meta["notes"]["page_cache"]
    assert run.config["sample_order"] == "sequential" and run.config["page_cache"] == "drop"
    assert note["order"] == "sequential" and note["dropped"] == [True, True]
    assert len(note["cached_at_epoch_start"]) == 2
    sampler = io_data.OrderSampler(dataset, packed.replace(sample_order="quasi_random"), path)
    assert sorted(sampler) == list(range(24)) and len(sampler) == 24
