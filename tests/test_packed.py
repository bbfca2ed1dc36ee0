"""gpu_course.data.packed: pre-resizing, the packed array file and its round trip."""
import pickle
import struct

import numpy as np
import pytest

from gpu_course.data import folder, packed
from image_folders import leftovers, make_folder, truncate

SIZE = 24


@pytest.fixture
def index(tmp_path):
    return folder.scan_folder(make_folder(tmp_path))


@pytest.fixture
def pack(index, tmp_path):
    return packed.pack_images(index, tmp_path / "out" / "train.pack", SIZE, workers=1,
                              progress=False).path


def test_pack_round_trip_every_image_label_and_index(index, pack):
    array = packed.PackedArray(pack, verify=True)
    assert array.images.shape == (len(index), SIZE, SIZE, 3)
    assert array.sources == index.paths and array.classes == index.classes
    assert array.labels.tolist() == index.labels.tolist() and array.skipped == []
    for i in range(len(index)):
        image, label = array.images[i], array.labels[i]
        assert np.array_equal(image, folder.load_image(index.path(i), SIZE))
        assert label == index.labels[i]
    assert packed.check_roundtrip(pack, index, workers=1, progress=False) == len(index)
    assert array.load().shape == array.images.shape and array.verify() == []
    assert pack.stat().st_size > len(index) * SIZE * SIZE * 3
    assert leftovers(pack.parent) == []


def test_parallel_packing_writes_the_same_file(index, pack, tmp_path):
    parallel = packed.pack_images(index, tmp_path / "p2.pack", SIZE, workers=2, progress=False)
    assert parallel.count == len(index)
    assert parallel.path.read_bytes() == pack.read_bytes()


def test_round_trip_check_catches_a_changed_label_or_pixel(index, pack):
    array = packed.PackedArray(pack)
    header = packed.PREAMBLE.unpack(pack.read_bytes()[:packed.PREAMBLE.size])
    labels_at = header[7]
    data = bytearray(pack.read_bytes())
    data[labels_at:labels_at + 8] = struct.pack("<q", 2)  # record 0 now says class 2
    pack.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="record 0 .*label 2"):
        packed.check_roundtrip(pack, index, workers=1, progress=False)
    data[labels_at:labels_at + 8] = struct.pack("<q", int(array.labels[0]))
    data[packed.ALIGN + 5 * SIZE * SIZE * 3 + 7] ^= 0xFF  # one byte of record 5
    pack.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="record 5 .*CRC"):
        packed.check_roundtrip(pack, index, workers=1, progress=False)


def test_a_damaged_record_is_named_or_skipped(index, pack):
    data = bytearray(pack.read_bytes())
    data[packed.ALIGN + 3 * SIZE * SIZE * 3] ^= 0xFF  # first byte of record 3
    pack.write_bytes(bytes(data))
    assert packed.PackedArray(pack).verify() == [3]
    with pytest.raises(ValueError, match="record 3 .*fails its CRC"):
        packed.PackedArray(pack, verify=True)
    lenient = packed.PackedArray(pack, verify=True, skip_corrupt=True)
    assert lenient.corrupt == [3]
    source = packed.PackedSource(pack, verify=True, skip_corrupt=True)
    image, label = source.fetch(3)
    assert label == index.labels[4] and source.skipped.count == 1


def test_truncated_foreign_and_missing_files_are_clear_errors(pack, tmp_path):
    record = SIZE * SIZE * 3
    cut = tmp_path / "cut.pack"
    cut.write_bytes(pack.read_bytes()[:packed.ALIGN + 10 * record + 100])
    with pytest.raises(ValueError, match=r"cut.pack is truncated.*10 of 36 records"):
        packed.PackedArray(cut)
    foreign = tmp_path / "photo.pack"
    foreign.write_bytes(b"\xff\xd8\xff" + b"\0" * 100)
    with pytest.raises(ValueError, match="not a packed image file"):
        packed.PackedArray(foreign)
    with pytest.raises(FileNotFoundError, match="pack_images"):
        packed.PackedArray(tmp_path / "none.pack")


def test_a_footer_without_its_classes_is_a_clear_error(pack, tmp_path):
    data = pack.read_bytes()
    footer = tmp_path / "footer.pack"
    footer.write_bytes(data[:data.rindex(b'{"classes"')] + b'{"size": 8}')
    with pytest.raises(ValueError, match="footer.pack: the footer lacks its classes or sources"):
        packed.PackedArray(footer)


def test_a_corrupt_source_stops_the_packer_or_is_skipped(index, tmp_path):
    truncate(index.path(7))
    out = tmp_path / "out" / "x.pack"
    with pytest.raises(folder.CorruptImage, match=index.paths[7]):
        packed.pack_images(index, out, SIZE, workers=2, progress=False)
    assert not out.exists() and leftovers(out.parent) == []  # nothing half-written
    result = packed.pack_images(index, out, SIZE, workers=1, progress=False,
                                skip_corrupt=True)
    assert result.count == len(index) - 1 and [p for p, _ in result.skipped] == [index.paths[7]]
    assert "1 image(s) could not be decoded" in str(result)
    array = packed.PackedArray(out)
    assert index.paths[7] not in array.sources and len(array.skipped) == 1
    # the check knows which images were left out on purpose
    assert packed.check_roundtrip(out, index, workers=1, progress=False) == len(index) - 1


def test_packed_source_pickles_as_a_path(pack, index):
    source = packed.PackedSource(pack)
    source.fetch(0)
    blob = pickle.dumps(source)
    assert len(blob) < 10_000  # not the images
    copy = pickle.loads(blob)
    image, label = copy.fetch(2)
    assert np.array_equal(image, packed.PackedArray(pack).images[2])
    assert label == index.labels[2]


def test_preresize_mirrors_the_folder_at_the_training_size(index, tmp_path):
    truncate(index.path(0))
    out = tmp_path / "small"
    with pytest.raises(folder.CorruptImage):
        packed.preresize_folder(index, out, SIZE, workers=1, progress=False)
    assert not out.exists() and leftovers(tmp_path) == []
    result = packed.preresize_folder(index, out, SIZE, workers=2, progress=False,
                                     skip_corrupt=True)
    assert result.count == len(index) - 1 and len(result.skipped) == 1
    small = packed.preresized_index(index, out)
    assert len(small) == len(index) - 1 and small.labels.tolist() == index.labels[1:].tolist()
    image = folder.load_image(small.path(0))
    assert image.shape == (SIZE, SIZE, 3)
    assert np.abs(image.astype(int) - folder.load_image(index.path(1), SIZE)).mean() < 10
    with pytest.raises(FileNotFoundError):
        packed.preresized_index(index, tmp_path / "nothing")


def test_a_second_resizer_keeps_the_first_ones_finished_copy_and_replaces_an_unfinished_one(
        index, tmp_path):
    """Two kernels (or two test phases) that resize one data set at once: the copy the
    first finished stays where a training may be reading it; a folder without the finished
    marker is replaced."""
    out = tmp_path / "small"
    packed.preresize_folder(index, out, SIZE, workers=1, progress=False)
    first = out.stat().st_ino
    packed.preresize_folder(index, out, SIZE, workers=1, progress=False)
    assert out.stat().st_ino == first and leftovers(tmp_path) == []
    (out / ".gpu_course.json").unlink()
    packed.preresize_folder(index, out, SIZE, workers=1, progress=False)
    assert out.stat().st_ino != first and (out / ".gpu_course.json").exists()
    assert len(packed.preresized_index(index, out)) == len(index) and leftovers(tmp_path) == []


def test_ensure_functions_make_once_then_reuse(index, tmp_path, capsys):
    cache = tmp_path / "cache"
    first = packed.ensure_packed(index, SIZE, cache_dir=cache, workers=1, progress=False)
    assert "images ->" in capsys.readouterr().out
    stamp = first.stat().st_mtime_ns
    assert packed.ensure_packed(index, SIZE, cache_dir=cache) == first
    assert first.stat().st_mtime_ns == stamp and capsys.readouterr().out == ""
    other = packed.ensure_packed(index.subset(range(5)), SIZE, cache_dir=cache, workers=1,
                                 progress=False)
    assert other != first  # another selection of images is another file
    index.path(0).write_bytes(index.path(1).read_bytes())  # an image replaced in place
    changed = packed.ensure_packed(index, SIZE, cache_dir=cache, workers=1, progress=False)
    assert changed != first and np.array_equal(packed.PackedArray(changed).images[0],
                                               packed.PackedArray(changed).images[1])
    default = packed.prepared_dir(index.root)  # never beside the user's folder
    assert index.root.parent not in (default, default.parent) and default.name.startswith("images-")


def test_load_folder_gives_cifar_like_arrays(index, tmp_path):
    data = packed.load_folder(index.root, image_size=SIZE, train_size=20, test_size=6,
                              cache_dir=tmp_path / "cache")
    assert data.train_x.shape == (20, SIZE, SIZE, 3) and data.train_x.dtype == np.uint8
    assert data.test_x.shape == (6, SIZE, SIZE, 3) and len(data.test_y) == 6
    assert data.classes == index.classes
    train, _ = folder.split(index, 20, 6)
    assert np.array_equal(data.train_x[3], folder.load_image(train.path(3), SIZE))
    assert data.train_y.tolist() == train.labels.tolist()
