"""gpu_course.data: the synthetic set, the CIFAR-10 binary format, the download."""
import functools
import hashlib
import http.server
import socket
import tarfile
import threading
import time

import numpy as np
import pytest

from gpu_course import data
from gpu_course.data import cifar, synthetic

# ---------------------------------------------------------------- synthetic


def test_generate_gives_balanced_uint8_images():
    images, labels = synthetic.generate(1000, seed=3)
    assert images.shape == (1000, 32, 32, 3) and images.dtype == np.uint8
    assert labels.shape == (1000,) and labels.dtype == np.uint8
    assert np.bincount(labels, minlength=10).tolist() == [100] * 10
    assert len(synthetic.CLASSES) == 10
    # real pictures, not flat fields: contrast inside images, range used
    assert images.reshape(1000, -1).std(axis=1).mean() > 15
    assert images.min() < 10 and images.max() > 245


def test_generate_is_deterministic_by_seed():
    a, la = synthetic.generate(300, seed=1)
    b, lb = synthetic.generate(300, seed=1)
    c, _ = synthetic.generate(300, seed=2)
    assert a.tobytes() == b.tobytes() and la.tobytes() == lb.tobytes()
    assert not np.array_equal(a, c)


def test_any_slice_can_be_generated_on_its_own():
    whole, whole_labels = synthetic.generate(1030, seed=5)
    part, part_labels = synthetic.generate(45, seed=5, start_index=985)
    assert np.array_equal(part, whole[985:])
    assert np.array_equal(part_labels, whole_labels[985:])


def test_train_and_test_share_no_image():
    train, _ = synthetic.generate(2000, seed=0, split="train")
    test, _ = synthetic.generate(1000, seed=0, split="test")
    train_hashes = {img.tobytes() for img in train}
    assert not any(img.tobytes() in train_hashes for img in test)


@pytest.mark.parametrize("kwargs, word", [
    (dict(n=-1), "n"), (dict(n=5, start_index=-2), "start_index"),
    (dict(n=5, split="valid"), "valid")])
def test_generate_rejects_bad_arguments(kwargs, word):
    with pytest.raises(ValueError, match=word):
        synthetic.generate(**kwargs)


def test_generation_is_fast():
    # 50k + 10k take ~5 s here (~0.9 s per 10k). CPU time, not wall time, and
    # a loose bound: other processes on a busy CI machine can't flake it
    start = time.process_time()
    synthetic.generate(10000, seed=0)
    assert time.process_time() - start < 5


def test_simple_features_learn_something_but_not_everything():
    """Framework-free learnability check: softmax regression on shift- and
    rotation-invariant features (power spectrum profiles) beats chance (10%)
    clearly, yet stays far from 100%. The CNN checks live in tests/torch and
    tests/gluon."""
    train_x, train_y = synthetic.generate(4000, seed=0)
    test_x, test_y = synthetic.generate(1000, seed=0, split="test")
    f_train, f_test = _spectrum_features(train_x), _spectrum_features(test_x)
    mean, std = f_train.mean(0), f_train.std(0) + 1e-6
    weights = _fit_softmax((f_train - mean) / std, train_y)
    accuracy = (_predict(weights, (f_test - mean) / std) == test_y).mean()
    assert 0.3 < accuracy < 0.8, accuracy


def _spectrum_features(images):
    """Power spectrum of each image, summed over colours, profiled two ways.

    A shift only changes the phase, so the power is shift-invariant; the
    radial profile (17 rings) is also rotation-invariant. The angular profile
    of three frequency bands rotates with the image, so keep the magnitudes
    of its Fourier coefficients, which do not.
    """
    pixels = images.astype(np.float32)
    pixels -= pixels.mean(axis=(1, 2), keepdims=True)
    power = (np.abs(np.fft.rfft2(pixels, axes=(1, 2))) ** 2).sum(axis=3)
    power = power.reshape(len(images), -1)
    fy, fx = np.fft.fftfreq(32)[:, None] * 32, np.fft.rfftfreq(32)[None, :] * 32
    radius = np.hypot(fy, fx).ravel()
    ring = np.minimum(radius.astype(int), 16)
    radial = np.log1p(power @ (np.eye(17)[ring] / np.bincount(ring, minlength=17)))
    features = [radial - radial.mean(axis=1, keepdims=True)]
    angle = np.mod(np.arctan2(fy, fx), np.pi).ravel()
    sector = np.eye(18)[np.minimum((angle / np.pi * 18).astype(int), 17)]
    for low, high in ((2, 5), (5, 9), (9, 14)):
        band = power @ (sector * ((radius >= low) & (radius < high))[:, None])
        band /= band.sum(axis=1, keepdims=True) + 1e-9
        features.append(np.abs(np.fft.rfft(band, axis=1))[:, 1:])
    return np.hstack(features)


def _fit_softmax(features, labels, steps=300, lr=0.5):
    x = np.hstack([features, np.ones((len(features), 1))])
    onehot = np.eye(10)[labels]
    weights = np.zeros((x.shape[1], 10))
    for _ in range(steps):  # full-batch gradient descent
        logits = x @ weights
        prob = np.exp(logits - logits.max(1, keepdims=True))
        prob /= prob.sum(1, keepdims=True)
        weights -= lr * x.T @ (prob - onehot) / len(x)
    return weights


def _predict(weights, features):
    return (np.hstack([features, np.ones((len(features), 1))]) @ weights).argmax(1)


# ---------------------------------------------------------------- format


def _small_set(n_train=13, n_test=7, seed=0, classes=synthetic.CLASSES):
    train_x, train_y = synthetic.generate(n_train, seed)
    test_x, test_y = synthetic.generate(n_test, seed, split="test")
    return cifar.CifarData(train_x, train_y, test_x, test_y, tuple(classes))


def test_write_then_read_is_exact(tmp_path):
    train_x, train_y, test_x, test_y, _ = data = _small_set()
    folder = cifar.write_cifar_binary(tmp_path / "cifar-10-batches-bin", data)
    sizes = [(folder / f"data_batch_{i}.bin").stat().st_size for i in range(1, 6)]
    assert sizes == [3 * 3073] * 3 + [2 * 3073] * 2  # 13 split evenly
    assert (folder / "test_batch.bin").stat().st_size == 7 * 3073
    got = cifar.read_cifar_binary(folder)
    assert np.array_equal(got.train_x, train_x) and np.array_equal(got.train_y, train_y)
    assert np.array_equal(got.test_x, test_x) and np.array_equal(got.test_y, test_y)
    assert got.classes == synthetic.CLASSES
    # the parent folder works too, as after unpacking the official archive
    assert np.array_equal(cifar.read_cifar_binary(tmp_path).test_x, test_x)
    assert not [p for p in tmp_path.iterdir() if p.name != "cifar-10-batches-bin"]


def test_write_replaces_an_existing_folder(tmp_path):
    folder = tmp_path / "cifar-10-batches-bin"
    cifar.write_cifar_binary(folder, _small_set())
    cifar.write_cifar_binary(folder, _small_set(5, 5, seed=1, classes=["a"] * 10))
    assert len(cifar.read_cifar_binary(folder).train_y) == 5
    assert [p.name for p in tmp_path.iterdir()] == ["cifar-10-batches-bin"]


def test_write_rejects_bad_arrays(tmp_path):
    data = _small_set()
    with pytest.raises(ValueError, match="uint8"):
        cifar.write_cifar_binary(tmp_path / "f", data._replace(
            train_x=data.train_x.astype(np.float32)))
    with pytest.raises(ValueError, match="labels"):
        cifar.write_cifar_binary(tmp_path / "f", data._replace(train_y=data.train_y + 10))
    with pytest.raises(ValueError, match="classes must be 1..256"):
        cifar.write_cifar_binary(tmp_path / "f", data._replace(classes=("a", "")))
    assert not list(tmp_path.iterdir())


def _record(label, red, green, blue):
    return bytes([label]) + bytes(red) + bytes(green) + bytes(blue)


def test_reads_records_built_by_hand_in_the_official_layout(tmp_path):
    # record = label byte, then the R, G and B planes, each 32x32 row-major
    red, green, blue = [10] * 1024, [20] * 1024, [30] * 1024
    red[1 * 32 + 2] = 200      # row 1, column 2
    blue[31 * 32 + 0] = 255    # row 31, column 0
    first = _record(7, red, green, blue)
    second = _record(2, [1] * 1024, [2] * 1024, [3] * 1024)
    (tmp_path / "data_batch_1.bin").write_bytes(first + second)
    for i in range(2, 6):
        (tmp_path / f"data_batch_{i}.bin").write_bytes(b"")
    (tmp_path / "test_batch.bin").write_bytes(second)
    names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog",
             "horse", "ship", "truck"]
    (tmp_path / "batches.meta.txt").write_text("\n".join(names) + "\n\n")  # as shipped
    got = cifar.read_cifar_binary(tmp_path)
    assert got.train_y.tolist() == [7, 2] and got.test_y.tolist() == [2]
    assert got.train_x[0, 0, 0].tolist() == [10, 20, 30]
    assert got.train_x[0, 1, 2].tolist() == [200, 20, 30]
    assert got.train_x[0, 31, 0].tolist() == [10, 20, 255]
    assert got.train_x[1, 5, 5].tolist() == [1, 2, 3]
    assert got.classes == tuple(names)


def test_truncated_batch_names_the_file(tmp_path):
    folder = cifar.write_cifar_binary(tmp_path / "b", _small_set())
    path = folder / "data_batch_3.bin"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(ValueError, match=r"data_batch_3\.bin is 9119 bytes"):
        cifar.read_cifar_binary(folder)


def test_missing_batch_is_named(tmp_path):
    folder = cifar.write_cifar_binary(tmp_path / "b", _small_set())
    (folder / "test_batch.bin").unlink()
    with pytest.raises(FileNotFoundError, match="missing test_batch.bin"):
        cifar.read_cifar_binary(folder)


# ---------------------------------------------------------------- download


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """A local web server for tmp_path/www, in a thread."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(www))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield www, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def archive(tmp_path):
    """A tiny cifar-10-binary.tar.gz in the official layout, and its md5."""
    staging = tmp_path / "staging"
    arrays = _small_set(10, 4)
    cifar.write_cifar_binary(staging / "cifar-10-batches-bin", arrays)
    path = tmp_path / "cifar-10-binary.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.add(staging / "cifar-10-batches-bin", arcname="cifar-10-batches-bin")
    return path, hashlib.md5(path.read_bytes()).hexdigest(), arrays


def _closed_port_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/cifar-10-binary.tar.gz"


def test_download_checks_md5_and_extracts(server, archive, tmp_path):
    www, base = server
    path, md5, arrays = archive
    (www / path.name).write_bytes(path.read_bytes())
    root = tmp_path / "root"
    folder = cifar.download_cifar10(root, url=f"{base}/{path.name}", md5=md5)
    assert folder == root / "cifar-10-batches-bin"
    got = cifar.read_cifar_binary(folder)
    assert np.array_equal(got.train_x, arrays.train_x) and np.array_equal(got.test_y, arrays.test_y)
    assert sorted(p.name for p in root.iterdir()) == [
        "cifar-10-batches-bin", "cifar-10-binary.tar.gz"]
    # done once: a second call needs no network
    assert cifar.download_cifar10(root, url=_closed_port_url(), md5=md5) == folder


def test_download_with_wrong_md5_leaves_nothing(server, archive, tmp_path):
    www, base = server
    path, md5, _ = archive
    (www / path.name).write_bytes(path.read_bytes())
    root = tmp_path / "root"
    with pytest.raises(RuntimeError, match=f"expected md5 {'0' * 32}, got {md5}"):
        cifar.download_cifar10(root, url=f"{base}/{path.name}", md5="0" * 32)
    assert not list(root.iterdir())


def test_download_missing_file_on_server_fails_clearly(server, tmp_path):
    _, base = server
    with pytest.raises(RuntimeError, match="404"):
        cifar.download_cifar10(tmp_path / "root", url=f"{base}/nothing.tar.gz")
    assert not list((tmp_path / "root").iterdir())


def test_offline_download_fails_at_once_and_says_where_to_put_files(tmp_path):
    url = _closed_port_url()
    start = time.perf_counter()
    with pytest.raises(RuntimeError) as err:
        cifar.download_cifar10(tmp_path, url=url)
    assert time.perf_counter() - start < 3
    message = str(err.value)
    assert url in message and str(tmp_path) in message
    assert "cifar-10-binary.tar.gz" in message and "cifar-10-batches-bin/" in message
    assert not list(tmp_path.iterdir())


def test_archive_already_in_root_is_used_without_network(archive, tmp_path):
    path, md5, arrays = archive
    root = tmp_path / "root"
    root.mkdir()
    (root / path.name).write_bytes(path.read_bytes())
    folder = cifar.download_cifar10(root, url=_closed_port_url(), md5=md5)
    assert np.array_equal(cifar.read_cifar_binary(folder).test_x, arrays.test_x)


def test_damaged_archive_in_root_is_reported(archive, tmp_path):
    path, md5, _ = archive
    root = tmp_path / "root"
    root.mkdir()
    (root / path.name).write_bytes(path.read_bytes()[:-10])
    with pytest.raises(RuntimeError, match=f"expected {md5}"):
        cifar.download_cifar10(root, url=_closed_port_url(), md5=md5)


# ---------------------------------------------------------------- prepare / load


def test_prepare_generates_once_and_load_reads_it(tmp_path):
    folder = data.prepare("synthetic", root=tmp_path, train_size=50, test_size=20, seed=4)
    assert folder.name == "cifar-10-batches-bin"
    assert folder.parent.parent == tmp_path and "s4-50-20" in folder.parent.name
    stamp = (folder / "data_batch_1.bin").stat().st_mtime_ns
    again = data.load("synthetic", root=tmp_path, train_size=50, test_size=20, seed=4)
    assert (folder / "data_batch_1.bin").stat().st_mtime_ns == stamp  # cached
    assert again.train_x.shape == (50, 32, 32, 3) and len(again.test_y) == 20
    assert again.classes == synthetic.CLASSES
    assert np.array_equal(again.train_x, synthetic.generate(50, 4)[0])


def test_prepare_cifar10_uses_files_put_in_root(tmp_path):
    cifar.write_cifar_binary(tmp_path / "cifar-10-batches-bin",
                             _small_set(20, 10, classes=["c%d" % i for i in range(10)]))
    assert data.prepare("cifar10", root=tmp_path) == tmp_path / "cifar-10-batches-bin"
    subset = data.load("cifar10", root=tmp_path, train_size=5, test_size=10)
    assert len(subset.train_y) == 5 and len(subset.test_y) == 10
    with pytest.raises(ValueError, match="train_size=50000"):
        data.load("cifar10", root=tmp_path)


def test_generate_to_writes_the_folder_and_prints_nothing(tmp_path, capsys):
    folder = data.generate_to(tmp_path / "out", seed=2, train_size=30, test_size=10)
    assert folder == tmp_path / "out" / "cifar-10-batches-bin"
    assert len(cifar.read_cifar_binary(folder).train_y) == 30
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("kwargs, word", [
    (dict(name="imagenet"), "imagenet"), (dict(train_size=0), "train_size"),
    (dict(test_size=0), "test_size"), (dict(seed=-1), "seed")])
def test_prepare_rejects_bad_input(kwargs, word, tmp_path):
    with pytest.raises(ValueError, match=word):
        data.prepare(root=tmp_path, **kwargs)
    with pytest.raises(ValueError, match="synthetic, cifar10"):
        data.prepare("imagenet", root=tmp_path)


def test_default_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_COURSE_DATA", str(tmp_path))
    assert data.default_root() == tmp_path
    monkeypatch.delenv("GPU_COURSE_DATA")
    assert data.default_root().name in ("data", "gpu_course")


def test_normalisation_constants():
    assert data.CIFAR_MEAN == (0.4914, 0.4822, 0.4465)
    assert data.CIFAR_STD == (0.2023, 0.1994, 0.2010)


def test_the_same_data_written_twice_leaves_the_first_folder_for_its_readers(tmp_path):
    """Two processes (DDP ranks, two local "hosts") generating the same set at once: the
    second must not replace the first's folder while a reader is in it (a reader once
    found data_batch_4.bin gone, in test_multinode)."""
    folder = tmp_path / "cifar-10-batches-bin"
    manifest = {"kind": "synthetic", "seed": 0, "train": 20}
    cifar.write_cifar_binary(folder, _small_set(), manifest=manifest)
    inode = (folder / "data_batch_4.bin").stat().st_ino
    with open(folder / "data_batch_4.bin", "rb") as reader:  # a rank reading it
        cifar.write_cifar_binary(folder, _small_set(), manifest=manifest)
        assert (folder / "data_batch_4.bin").stat().st_ino == inode  # not replaced
        assert reader.read(1)
    assert not [p for p in tmp_path.iterdir() if p.name != folder.name]  # no temp left
    cifar.write_cifar_binary(folder, _small_set(),
                             manifest={**manifest, "seed": 1})  # other data: replaced
    assert (folder / "data_batch_4.bin").stat().st_ino != inode


def test_more_generated_images_than_memory_holds_are_refused_before_allocating():
    from gpu_course.data import synthetic
    with pytest.raises(ValueError, match=r"100,000,000,000,000 generated images need .* GiB, "
                                         r"more than this machine's"):
        synthetic.generate(10**14)
