"""gpu_course.tracks.gluon.recordio and io_data: RecordIO packing and the Gluon I/O ladder."""
import json

import numpy as np
import pytest
from mxnet import recordio as mx_recordio
from mxnet.gluon.data import DataLoader

from gpu_course.config import Experiment
from gpu_course.data import folder
from gpu_course.tracks.gluon import io_data
from gpu_course.tracks.gluon.recordio import RecordDataset, RecordIter, check_recordio, pack_recordio
from image_folders import check_prepare_data, leftovers, make_folder, truncate

SIZE = 24


@pytest.fixture
def index(tmp_path):
    return folder.scan_folder(make_folder(tmp_path))


@pytest.fixture
def rec(index, tmp_path):
    return pack_recordio(index, tmp_path / "out" / "train.rec", SIZE, workers=2,
                         progress=False).path


def test_pack_round_trip_every_record_label_and_index(index, rec):
    assert check_recordio(rec, index, workers=1, progress=False) == len(index)
    assert sorted(p.name for p in rec.parent.iterdir()) == ["train.idx", "train.json",
                                                              "train.rec"]
    assert leftovers(rec.parent) == []
    reader = mx_recordio.MXIndexedRecordIO(str(rec.with_suffix(".idx")), str(rec), "r")
    header, _ = mx_recordio.unpack(reader.read_idx(4))
    assert header.id == 4 and int(header.label) == index.labels[4]
    dataset = RecordDataset(rec)
    assert len(dataset) == len(index)
    for i in (0, 13, len(index) - 1):
        image, label = dataset[i]
        assert image.shape == (SIZE, SIZE, 3) and image.dtype == np.uint8
        assert int(label) == index.labels[i]
        reference = folder.load_image(index.path(i), SIZE).astype(int)
        assert np.abs(image.asnumpy().astype(int) - reference).mean() < 10  # JPEG q95


def test_the_check_catches_records_out_of_order(index, tmp_path):
    shuffled = index.subset([1, 0] + list(range(2, len(index))))
    rec = pack_recordio(shuffled, tmp_path / "s.rec", SIZE, workers=1, progress=False).path
    meta = json.loads(rec.with_suffix(".json").read_text())
    meta["sources"][0], meta["sources"][1] = meta["sources"][1], meta["sources"][0]
    rec.with_suffix(".json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="record 0 .*image bytes differ"):
        check_recordio(rec, index, workers=1, progress=False)


def test_missing_index_or_record_file_is_a_clear_error(rec):
    rec.with_suffix(".idx").unlink()
    with pytest.raises(FileNotFoundError, match="train.rec has no index train.idx"):
        RecordDataset(rec)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        RecordDataset(rec.with_name("nothing.rec"))


def test_a_truncated_record_file_names_the_record_or_is_skipped(index, rec):
    data = rec.read_bytes()
    rec.write_bytes(data[:int(len(data) * 0.6)])
    strict = RecordDataset(rec)
    strict[0]  # the early records are intact
    with pytest.raises(ValueError, match=r"train.rec: record \d+ (is damaged|does not decode)"):
        for i in range(len(strict)):
            strict[i]
    lenient = RecordDataset(rec, skip_corrupt=True)
    seen = [lenient[i] for i in range(20)]
    assert len(seen) == 20 and lenient.skipped.count == 0
    for i in range(len(lenient) - 3, len(lenient)):
        image, label = lenient[i]  # wraps round to a readable record
        assert image.shape == (SIZE, SIZE, 3)
    assert lenient.skipped.count >= 3


def test_a_corrupt_source_stops_the_packer_or_is_listed(index, tmp_path):
    truncate(index.path(2))
    out = tmp_path / "out" / "bad.rec"
    with pytest.raises(folder.CorruptImage, match=index.paths[2]):
        pack_recordio(index, out, SIZE, workers=1, progress=False)
    assert not out.parent.exists() or sorted(out.parent.iterdir()) == []
    result = pack_recordio(index, out, SIZE, workers=1, progress=False, skip_corrupt=True)
    assert result.count == len(index) - 1 and result.skipped[0][0] == index.paths[2]
    assert check_recordio(out, index, workers=1, progress=False) == len(index) - 1


@pytest.mark.parametrize("text", ['{"classes": ["a"], "sour', '{"classes": ["a"]}'])
def test_a_damaged_description_beside_the_record_file_is_named(rec, index, text):
    rec.with_suffix(".json").write_text(text)
    with pytest.raises(folder.DataError, match="train.json is unreadable .*pack the images again"):
        RecordIter(rec, batch_size=8, size=SIZE, train=True, threads=1)
    with pytest.raises(folder.DataError, match="train.json"):
        check_recordio(rec, index, workers=1, progress=False)


def test_record_iter_gives_normalised_batches(rec):
    it = RecordIter(rec, batch_size=8, size=SIZE, train=True, threads=1)
    batches = list(it)
    assert len(batches) == len(it) == 36 // 8
    data, label = batches[0]
    assert data.shape == (8, 3, SIZE, SIZE) and label.shape == (8,)
    assert abs(float(data.mean().asscalar())) < 2  # normalised, not 0..255


@pytest.mark.parametrize("kind", io_data.KINDS)
def test_every_rung_gives_the_same_batches_shape(index, tmp_path, kind):
    cfg = Experiment(dataset="folder", data_dir=str(index.root), image_size=SIZE,
                     train_size=24, test_size=8, batch_size=8, num_workers=0)
    train_iter, val_iter = io_data.io_loaders(cfg, kind, cache_dir=tmp_path / "cache",
                                              progress=False)
    batches = list(train_iter)
    assert len(batches) == 3
    data, label = batches[0]
    assert data.shape == (8, 3, SIZE, SIZE) and data.dtype == np.float32
    labels = np.concatenate([b[1].asnumpy() for b in batches]).astype(int)
    assert sorted(labels.tolist()) == [0] * 8 + [1] * 8 + [2] * 8
    val_data, _ = next(iter(val_iter))
    assert val_data.shape[1:] == (3, SIZE, SIZE)


def test_skips_are_counted_across_loader_workers(index, tmp_path):
    for i in (0, 5, 9):
        truncate(index.path(i))
    cfg = Experiment(dataset="folder", data_dir=str(index.root), image_size=SIZE,
                     train_size=30, test_size=6, batch_size=6, num_workers=2, augment="none")
    train, _ = io_data.io_datasets(cfg, "loose", cache_dir=tmp_path / "cache",
                                   skip_corrupt=True, progress=False)
    loader = DataLoader(train, batch_size=6, num_workers=2)
    total = sum(batch[0].shape[0] for batch in loader)
    assert total == 30
    # each unreadable file in the training split was skipped once, in whichever worker
    bad = {index.paths[i] for i in (0, 5, 9)}
    train_index, _ = io_data.folder_split(cfg)
    assert train.skipped.count == len(bad & set(train_index.paths)) > 0
    with pytest.raises(ValueError, match="kind"):
        io_data.io_datasets(cfg, "gpu")


def test_the_parsers_thread_count_line_is_held_back_and_other_lines_pass(rec, capfd):
    """Gluon lesson 09 printed MXNet's C++ "ImageRecordIOParser2: ... use 1 threads for
    decoding" in its output; anything else C++ writes still shows."""
    import os

    from gpu_course.tracks.gluon.recordio import _cpp_info_filtered
    it = RecordIter(rec, batch_size=8, size=SIZE, train=True, threads=1)
    next(iter(it))
    with _cpp_info_filtered():
        os.write(2, b"[12:00:00] x.cc:1: ImageRecordIOParser2: held back\n")
        os.write(2, b"[12:00:00] x.cc:2: a warning the user must see\n")
    err = capfd.readouterr().err
    assert "ImageRecordIOParser" not in err
    assert "a warning the user must see" in err


@pytest.mark.parametrize("kind", ["preresized", "packed", "memory"])
def test_prepare_data_makes_a_formats_copy_once_and_training_reads_it(index, tmp_path, kind):
    """The ladder's data-format rung: the copy is made (and timed) before the run, and the
    run's datasets read it instead of making it again; loose JPEGs need nothing made."""
    cfg = Experiment(dataset="folder", data_dir=str(index.root), image_size=SIZE,
                     train_size=24, test_size=8, batch_size=8, num_workers=0,
                     data_format=kind)
    cache = tmp_path / "cache"
    check_prepare_data(io_data, cfg, cache)


def test_the_packed_files_order_and_page_cache_reach_the_loader_and_the_record(index, tmp_path,
                                                                               monkeypatch):
    """cfg.sample_order and cfg.page_cache: an OrderSampler over the RecordIO file, built
    by the loaders gc.train makes and by hand, whose epochs the run record notes."""
    from gpu_course.tracks.gluon import train
    monkeypatch.setenv("GPU_COURSE_CACHE", str(tmp_path / "cache"))
    cfg = Experiment(dataset="folder", data_dir=str(index.root), image_size=SIZE, model="tiny",
                     train_size=24, test_size=8, batch_size=8, num_workers=0, augment="none",
                     num_gpus=0, data_format="packed", epochs=2, warmup_steps=0,
                     sample_order="sequential", page_cache="drop")
    train_iter, _ = io_data.io_loaders(cfg, "packed", progress=False)
    assert isinstance(train_iter._batch_sampler._sampler, io_data.OrderSampler)
    labels = np.concatenate([b[1].asnumpy() for b in train_iter]).astype(int).tolist()
    dataset = io_data.io_datasets(cfg, "packed", progress=False)[0]
    assert labels == [int(dataset[i][1]) for i in range(24)]   # file order
    assert io_data.order_sampler(dataset, cfg.replace(sample_order="random",
                                                      page_cache="keep")) is None
    run = train(cfg, runs_dir=tmp_path / "runs", verbose=False, progress=False)
    note = run.meta["notes"]["page_cache"]
    assert run.config["sample_order"] == "sequential" and run.config["page_cache"] == "drop"
    assert note["order"] == "sequential" and note["dropped"] == [True, True]
    assert len(note["cached_at_epoch_start"]) == 2
    path = io_data.prepare_data(cfg, progress=False).path
    sampler = io_data.OrderSampler(dataset, cfg.replace(sample_order="quasi_random"), path)
    assert sorted(sampler) == list(range(24)) and len(sampler) == 24
