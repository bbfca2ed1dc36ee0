"""The CIFAR-10 binary format (``cifar-10-batches-bin``): write it, read it, download it.

A batch file is a run of 3073-byte records: a label byte, then the R, G and B planes.
"""
import hashlib
import http.client
import json
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import NamedTuple, Tuple

import numpy as np

from .paths import kept_note

CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
CIFAR10_MD5 = "c32a1d4ab5d03f1284b67883e8d87530"
ARCHIVE_NAME = CIFAR10_URL.rsplit("/", 1)[1]
FOLDER_NAME = "cifar-10-batches-bin"
TRAIN_FILES = tuple(f"data_batch_{i}.bin" for i in range(1, 6))
TEST_FILE = "test_batch.bin"
META_FILE = "batches.meta.txt"
ALL_FILES = TRAIN_FILES + (TEST_FILE, META_FILE)
MANIFEST = ".gpu_course.json"  # what gpu-course wrote here, with which settings
OWN_FILES = frozenset(ALL_FILES + (MANIFEST,))  # what it writes there
SIDE = 32
RECORD_BYTES = 1 + 3 * SIDE * SIDE  # label byte + R, G, B planes


class CifarData(NamedTuple):
    """Images are uint8 ``[n, 32, 32, 3]`` (NHWC, RGB); labels uint8 ``[n]``."""
    train_x: np.ndarray
    train_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray
    classes: Tuple[str, ...]


def is_complete(folder):
    """True when ``folder`` holds every file of a ``cifar-10-batches-bin`` folder."""
    return all((Path(folder) / name).is_file() for name in ALL_FILES)


def read_manifest(folder):
    """The settings gpu-course wrote `folder` with, or None (not written by gpu-course)."""
    try:
        return json.loads((Path(folder) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def write_cifar_binary(folder, data: CifarData, manifest=None):
    """Write `data` as a ``cifar-10-batches-bin`` folder, atomically; returns its path."""
    class_names = tuple(str(c) for c in data.classes)
    if not 1 <= len(class_names) <= 256 or any(not c or "\n" in c for c in class_names):
        raise ValueError(f"classes must be 1..256 non-empty one-line names, got {class_names!r}")
    train = _records(data.train_x, data.train_y, len(class_names), "train")
    test = _records(data.test_x, data.test_y, len(class_names), "test")
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    try:
        for name, part in zip(TRAIN_FILES, np.array_split(train, len(TRAIN_FILES))):
            _write_bytes(tmp / name, part)
        _write_bytes(tmp / TEST_FILE, test)
        (tmp / META_FILE).write_text("".join(c + "\n" for c in class_names))
        if manifest is not None:  # marks the folder as the project's: it may be replaced
            (tmp / MANIFEST).write_text(json.dumps(manifest, sort_keys=True))
        os.chmod(tmp, 0o755)  # mkdtemp makes it private
        if manifest is not None and is_complete(folder) and read_manifest(folder) == \
                json.loads(json.dumps(manifest, sort_keys=True)):
            # another process (a DDP rank, a second "host") wrote it first and may be reading it
            shutil.rmtree(tmp, ignore_errors=True)
            return folder
        if kept := _replace_dir(tmp, folder, ours=OWN_FILES):
            print(kept_note(folder, kept))
    except BaseException as err:
        shutil.rmtree(tmp, ignore_errors=True)
        from ..measure.guards import naming
        raise naming(err, folder) from None
    return folder


def _write_bytes(path, array):  # not ndarray.tofile: its full-disk error has no errno
    with open(path, "wb") as f:
        f.write(np.ascontiguousarray(array).data)


def read_cifar_binary(folder):
    """Read a ``cifar-10-batches-bin`` folder (or a folder that contains one)."""
    folder = Path(folder)
    if not (folder / TRAIN_FILES[0]).exists() and (folder / FOLDER_NAME).is_dir():
        folder = folder / FOLDER_NAME
    _check_complete(folder)
    classes = tuple(line.strip() for line in
                    (folder / META_FILE).read_text().splitlines() if line.strip())
    train_x, train_y = _read_batches([folder / name for name in TRAIN_FILES])
    test_x, test_y = _read_batches([folder / TEST_FILE])
    for split, labels in (("train", train_y), ("test", test_y)):
        if labels.size and labels.max() >= len(classes):
            raise ValueError(f"{folder}: {split} label {labels.max()}, but {len(classes)} classes in {META_FILE}")
    return CifarData(train_x, train_y, test_x, test_y, classes)


def _check_complete(folder):
    if missing := [name for name in ALL_FILES if not (folder / name).is_file()]:
        raise FileNotFoundError(f"{folder}: incomplete CIFAR-10 folder, missing {', '.join(missing)}")


def _records(images, labels, num_classes, split):
    """[n, 32, 32, 3] uint8 + [n] labels -> [n, 3073] uint8 records."""
    images, labels = np.asarray(images), np.asarray(labels)
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[1:] != (SIDE, SIDE, 3):
        raise ValueError(f"{split} images are {images.dtype} {list(images.shape)}; need uint8 [n, 32, 32, 3]")
    if labels.shape != images.shape[:1]:
        raise ValueError(f"{split} labels have shape {list(labels.shape)}; need [{len(images)}]")
    if labels.size and not 0 <= labels.min() <= labels.max() < num_classes:
        raise ValueError(f"{split} labels span {labels.min()}..{labels.max()}; need 0..{num_classes - 1}")
    planes = images.transpose(0, 3, 1, 2).reshape(len(images), -1)  # HWC -> CHW
    return np.concatenate([labels.astype(np.uint8)[:, None], planes], axis=1)


def _read_batches(paths):
    records = []
    for path in paths:
        if (size := path.stat().st_size) % RECORD_BYTES:
            raise ValueError(f"{path} is {size} bytes, not a multiple of a {RECORD_BYTES}-byte CIFAR-10 record")
        records.append(np.fromfile(path, np.uint8).reshape(-1, RECORD_BYTES))
    records = np.concatenate(records)
    images = records[:, 1:].reshape(-1, 3, SIDE, SIDE).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), records[:, 0].copy()


def download_cifar10(root, url=CIFAR10_URL, md5=CIFAR10_MD5, timeout=10):
    """``root/cifar-10-batches-bin`` with real CIFAR-10, downloaded once if need be."""
    root, folder = Path(root), Path(root) / FOLDER_NAME
    for candidate in (root, folder):  # data_dir may name the cifar-10-batches-bin folder itself
        if is_complete(candidate):
            return candidate
    for candidate in (root, folder):  # a folder is there but not whole: never replace it
        if candidate.is_dir() and any((candidate / n).exists() for n in ALL_FILES):
            _check_complete(candidate)
    root.mkdir(parents=True, exist_ok=True)
    archive = root / ARCHIVE_NAME
    if archive.exists():
        if (got := _md5(archive)) != md5:
            raise RuntimeError(f"{archive} has md5 {got}, expected {md5}: delete it and try again")
    else:
        _download(url, archive, md5, timeout)
    _extract(archive, folder)
    return folder


def _download(url, archive, md5, timeout):
    """Fetch ``url`` to ``archive`` via a temporary file; check the md5."""
    fd, tmp = tempfile.mkstemp(prefix=f".{archive.name}.", suffix=".part", dir=archive.parent)
    digest = hashlib.md5()
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in _stream(url, timeout, archive):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != md5:
            raise RuntimeError(f"{url}: expected md5 {md5}, got {digest.hexdigest()}; the download was deleted")
        os.replace(tmp, archive)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _stream(url, timeout, archive):
    """Yield the body of ``url`` in chunks (one attempt); any trouble -> RuntimeError."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            while chunk := response.read(1 << 20):
                yield chunk
    except (urllib.error.URLError, http.client.HTTPException, OSError) as err:
        reason = (f"HTTP {err.code} {err.reason}" if isinstance(err, urllib.error.HTTPError)
                  else getattr(err, "reason", None) or err)
        raise RuntimeError(f"could not download {url} ({reason}): put {ARCHIVE_NAME} or "
                           f"{FOLDER_NAME}/ into {archive.parent} by hand") from err


def _extract(archive, folder):
    """Unpack the archive's ``cifar-10-batches-bin/`` into ``folder`` atomically."""
    tmp = Path(tempfile.mkdtemp(prefix=".extract.", dir=folder.parent))
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar.getmembers():  # refuse paths that leave the folder
                if member.name.startswith("/") or ".." in Path(member.name).parts or not (
                        member.isfile() or member.isdir()):
                    raise RuntimeError(f"{archive}: refusing to extract {member.name!r}")
            tar.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        if not is_complete(tmp / FOLDER_NAME):
            raise RuntimeError(f"{archive} does not hold a complete {FOLDER_NAME}/ folder")
        _replace_dir(tmp / FOLDER_NAME, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _md5(path):
    digest = hashlib.md5()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _replace_dir(new, target, ours=None):
    """Rename ``new`` to ``target``, moving a user's own files in; returns their names."""
    new, target = Path(new), Path(target)
    old, kept = None, []
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}-{id(new)}")
        os.rename(target, old)
    os.rename(new, target)
    if old is not None:
        for entry in sorted(old.iterdir()) if ours is not None else ():
            if entry.name not in ours and not (target / entry.name).exists():
                os.replace(entry, target / entry.name)
                kept.append(entry.name)
        shutil.rmtree(old, ignore_errors=True)
    return kept
