"""Pre-processing out of band: a pre-resized folder, or one packed array file.

The `.pack` file: a preamble, the uint8 images [N, H, W, 3] from offset 4096 (so it
memory-maps), int64 labels, uint32 CRC-32s of each image and a JSON footer.
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import time
import zlib
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..measure.records import write_atomic
from ..page import Page
from .cifar import CifarData
from .folder import (CorruptImage, DataError, FolderIndex, MissingData, SkipCounter, default_folder,
                     fetch_or_skip, folder_split, load_image, parallel_map, scan_folder, split)
from .paths import default_root

MAGIC = b"GPUCPAK1"
PREAMBLE = struct.Struct("<8sIQIIIQQQQ")  # magic, version, count, h, w, c, 4 offsets
VERSION = 1
ALIGN = 4096  # images start on a page boundary so they can be memory-mapped
MB = 1e6
QUALITY = 95  # JPEG quality of a pre-resized or re-encoded image
PAGE = Page.of(__name__)   # what a prepared copy's lines say: text/packed.md
WROTE, PREPARED, COPIES = (PAGE.means(name, str) for name in ("wrote", "prepared", "copies"))


# -- pre-resized folder ---------------------------------------------------------------
@dataclass
class PrepResult:
    """What a pre-processing step wrote: where, how many images, which were left out."""

    path: Path
    count: int
    skipped: list = field(default_factory=list)   # [(relative path, error)]
    seconds: float = 0.0
    bytes: int = 0

    def __str__(self) -> str:
        text = WROTE["images"].format(count=self.count, path=self.path, mb=self.bytes / MB,
                                      seconds=self.seconds)
        if self.skipped:
            text += WROTE["skipped"].format(skipped=len(self.skipped), first=self.skipped[0][0])
        return text


def preresize_folder(index: FolderIndex, out, size: int, workers: int | None = None,
                     progress: bool = True, skip_corrupt: bool = False) -> PrepResult:
    """Resize every image of `index` once to size x size, as JPEGs under `out`."""
    _check_size(size)
    out = Path(out)
    tmp = tmp_name(out)
    shutil.rmtree(tmp, ignore_errors=True)
    for name in index.classes:
        (tmp / name).mkdir(parents=True)
    start = time.perf_counter()
    tasks = [(str(index.path(i)), str(tmp / _jpeg_name(index.paths[i])), size, QUALITY)
             for i in range(len(index))]
    skipped, total = [], 0
    try:
        for _, written in decoded(index, _resize_task, tasks, skip_corrupt, skipped, workers=workers,
                               progress=progress, desc=f"resizing to {size} px"):
            total += written
        (tmp / ".gpu_course.json").write_text(json.dumps(
            {"size": size, "quality": QUALITY, "source": str(index.root), "skipped": skipped}))
        try:
            os.rename(tmp, out)
        except OSError:   # a folder there: another writer's finished copy is kept, else replaced
            if not (out / ".gpu_course.json").exists():
                shutil.rmtree(out, ignore_errors=True)
                os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return PrepResult(out, len(index) - len(skipped), skipped,
                      time.perf_counter() - start, total)


def preresized_index(index: FolderIndex, root) -> FolderIndex:
    """The same samples as `index` (less those left out), read from a pre-resized copy."""
    root = Path(root)
    if not root.is_dir():
        raise MissingData(f"no pre-resized folder {root}: make it with packed.preresize_folder")
    keep = [i for i, p in enumerate(index.paths) if (root / _jpeg_name(p)).exists()]
    sub = index.subset(keep)
    return FolderIndex(root, sub.classes, tuple(_jpeg_name(p) for p in sub.paths), sub.labels)


def decoded(index: FolderIndex, fn, tasks: list, skip_corrupt: bool, skipped: list, **map_args):
    """(i, result) of fn's (result, error) over tasks (of index's images); an error is
    CorruptImage, or with skip_corrupt a (path, error) in `skipped`."""
    for i, (result, error) in enumerate(parallel_map(fn, tasks, **map_args)):
        if error is None:
            yield i, result
        elif skip_corrupt:
            skipped.append((index.paths[i], error))
        else:
            raise CorruptImage(index.path(i), error)


def _jpeg_name(relative: str) -> str:
    return str(Path(relative).with_suffix(".jpg"))


def _resize_task(task):
    from PIL import Image
    source, target, size, quality = task
    try:
        image = load_image(source, size)
    except DataError as err:
        return 0, str(err)
    Image.fromarray(image).save(target, "JPEG", quality=quality)
    return os.path.getsize(target), None


# -- the packed array file ------------------------------------------------------------
def pack_images(index: FolderIndex, out, size: int, workers: int | None = None,
                progress: bool = True, skip_corrupt: bool = False) -> PrepResult:
    """Decode every image of `index`, resized to size x size, into one packed file."""
    _check_size(size)
    if len(index) == 0:
        raise DataError(f"nothing to pack: the index of {index.root} is empty")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp, start = tmp_name(out), time.perf_counter()
    labels, crcs, sources, skipped = [], [], [], []
    try:
        with open(tmp, "wb") as f:
            f.write(b"\0" * ALIGN)  # the preamble is filled in at the end
            tasks = [(str(index.path(i)), size) for i in range(len(index))]
            for i, image in decoded(index, _load_task, tasks, skip_corrupt, skipped, workers=workers,
                                     progress=progress, desc=f"packing {out.name}"):
                data = image.tobytes()   # sequential write: the file grows record by record
                f.write(data)
                crcs.append(zlib.crc32(data))
                labels.append(int(index.labels[i]))
                sources.append(index.paths[i])
            if not labels:
                raise DataError(f"no image of {index.root} could be decoded; nothing packed")
            labels_at = f.tell()
            f.write(np.asarray(labels, dtype="<i8").tobytes())
            crcs_at = f.tell()
            f.write(np.asarray(crcs, dtype="<u4").tobytes())
            meta_at = f.tell()
            meta = {"classes": list(index.classes), "sources": sources, "size": size,
                    "source_root": str(index.root), "skipped": skipped}
            f.write(json.dumps(meta).encode())
            f.seek(0)
            f.write(PREAMBLE.pack(MAGIC, VERSION, len(labels), size, size, 3, ALIGN,
                                  labels_at, crcs_at, meta_at))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return PrepResult(out, len(labels), skipped, time.perf_counter() - start,
                      out.stat().st_size)


def _load_task(task):
    path, size = task
    try:
        return load_image(path, size), None
    except DataError as err:
        return None, str(err)


class PackedArray:
    """A packed image file, memory-mapped; verify=True checks every record's CRC-32."""

    def __init__(self, path, verify: bool = False, skip_corrupt: bool = False):
        self.path = Path(path)
        if not self.path.exists():
            raise MissingData(f"no packed file {self.path}: make it with packed.pack_images")
        size = self.path.stat().st_size
        with open(self.path, "rb") as f:
            head = f.read(PREAMBLE.size)
            if len(head) < PREAMBLE.size or head[:8] != MAGIC:
                raise DataError(f"{self.path} is not a packed image file: make one with packed.pack_images")
            _, version, n, h, w, c, images_at, labels_at, crcs_at, meta_at = PREAMBLE.unpack(head)
            if version != VERSION:
                raise DataError(f"{self.path}: format version {version}, not {VERSION}: pack the images again")
            record = h * w * c
            if size <= meta_at or labels_at != images_at + n * record:
                complete = max(0, min(n, (size - images_at) // record)) if record else 0
                raise DataError(f"{self.path} is truncated ({complete:,} of {n:,} records): pack again")
            f.seek(labels_at)
            self.labels = np.frombuffer(f.read(n * 8), dtype="<i8").astype(np.int64)
            self.crcs = np.frombuffer(f.read(n * 4), dtype="<u4")
            f.seek(meta_at)
            try:
                meta = json.loads(f.read().decode())
            except ValueError:
                raise DataError(f"{self.path}: the footer is damaged; pack the images again") from None
        try:
            self.classes = tuple(meta["classes"])
            self.sources = tuple(meta["sources"])
            self.skipped = [tuple(s) for s in meta.get("skipped", [])]
        except (KeyError, TypeError, AttributeError):
            raise DataError(f"{self.path}: the footer lacks its classes or sources; pack again") from None
        self.size = int(meta["size"])
        self.images = np.memmap(self.path, dtype=np.uint8, mode="r", offset=images_at,
                                shape=(n, h, w, c))
        self.corrupt = self.verify() if verify else []
        if self.corrupt and not skip_corrupt:
            raise DataError(f"{self.path}: record {self.corrupt[0]} fails its CRC check ({len(self.corrupt)} "
                            "in all); pack again or open with skip_corrupt=True")

    def __len__(self) -> int:
        return len(self.labels)

    def verify(self) -> list[int]:
        """Indices of records whose bytes do not match their CRC-32 (one sequential pass)."""
        return [i for i in range(len(self)) if zlib.crc32(self.images[i]) != self.crcs[i]]

    def load(self) -> np.ndarray:
        """Every image, read into memory in one sequential pass (the "in memory" rung)."""
        return np.array(self.images)


class PackedSource:
    """Random access to (image, label) of a packed file; each loader worker maps it itself."""

    def __init__(self, path, verify: bool = False, skip_corrupt: bool = False):
        self.path, self.skip_corrupt = Path(path), skip_corrupt
        packed = PackedArray(self.path, verify=verify, skip_corrupt=skip_corrupt)
        self.labels, self.classes = packed.labels, packed.classes
        self._bad, self.skipped = set(packed.corrupt), SkipCounter()
        self._packed, self._pid = packed, os.getpid()

    def __len__(self) -> int:
        return len(self.labels)

    def __getstate__(self):
        return {**self.__dict__, "_packed": None}   # reopened (memory-mapped) in the worker

    def fetch(self, i: int):
        if self._packed is None or self._pid != os.getpid():
            self._packed, self._pid = PackedArray(self.path), os.getpid()
        return fetch_or_skip(self._read, i, len(self), self.skip_corrupt, self.skipped)

    def _read(self, i: int):
        if i in self._bad:
            raise DataError(f"{self.path}: record {i} fails its CRC check")
        # np.array: a private copy, so the sample does not keep the file mapped
        return np.array(self._packed.images[i]), int(self.labels[i])


def check_roundtrip(packed: PackedArray | str | Path, index: FolderIndex,
                    workers: int | None = None, progress: bool = True) -> int:
    """Check every record of a packed file against its source image; returns the count."""
    packed = packed if isinstance(packed, PackedArray) else PackedArray(packed)
    position = {p: i for i, p in enumerate(index.paths)}
    left_out = {s for s, _ in packed.skipped}
    expected = [p for p in index.paths if p not in left_out]
    if list(packed.sources) != expected:
        missing = sorted(set(expected) - set(packed.sources))[:3]
        raise DataError(f"{packed.path}: {len(packed.sources):,} records, {len(expected):,} expected "
                        f"(missing: {', '.join(missing) or 'none'})")
    tasks = [(str(index.root / s), packed.size) for s in packed.sources]
    for i, (image, error) in enumerate(parallel_map(_load_task, tasks, workers=workers,
                                                    progress=progress, desc="checking")):
        source = packed.sources[i]
        if error is not None:
            raise DataError(f"record {i}: its source {source} no longer decodes: {error}")
        if packed.labels[i] != (label := index.labels[position[source]]):
            raise DataError(f"record {i} ({source}): label {packed.labels[i]}, not {label}")
        if zlib.crc32(packed.images[i]) != packed.crcs[i]:
            raise DataError(f"record {i} ({source}): CRC mismatch (the file is damaged)")
        if not np.array_equal(packed.images[i], image):
            raise DataError(f"record {i} ({source}): pixels differ from the source image")
    return len(packed)


# -- where prepared copies live ---------------------------------------------------------
def prepared_dir(root, cache_dir=None) -> Path:
    """Folder for the pre-processed copies of the dataset at `root`, never beside it."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    root = Path(root).expanduser().resolve()
    tag = f"{root.name}-{zlib.crc32(str(root).encode()):08x}"  # two folders, two caches
    if os.environ.get("GPU_COURSE_CACHE"):
        return Path(os.environ["GPU_COURSE_CACHE"]).expanduser() / tag
    return default_root() / "prepared" / tag


def preresized_path(index: FolderIndex, size: int, cache_dir=None) -> Path:
    return prepared_dir(index.root, cache_dir) / f"resized-{size}px-{index.fingerprint()}"


def packed_path(index: FolderIndex, size: int, cache_dir=None) -> Path:
    return prepared_dir(index.root, cache_dir) / f"{size}px-{index.fingerprint()}.pack"


def ensure_preresized(index: FolderIndex, size: int, cache_dir=None, **kwargs) -> Path:
    """The pre-resized copy of `index` (made once, then reused)."""
    target = preresized_path(index, size, cache_dir)
    if not (target / ".gpu_course.json").exists():
        print(preresize_folder(index, target, size, **kwargs))  # says where the copy went
    return target


def ensure_packed(index: FolderIndex, size: int, cache_dir=None, **kwargs) -> Path:
    """The packed file of `index` at `size` (made once, then reused)."""
    target = packed_path(index, size, cache_dir)
    if not target.exists():
        print(pack_images(index, target, size, **kwargs))
    return target


@dataclass(frozen=True)
class Prepared:
    """A training set's copy made before training, as a run record keeps it."""

    what: str
    path: str
    images: int
    seconds: float | None
    reused: bool

    def note(self) -> dict:
        seconds = None if self.seconds is None else round(self.seconds, 3)
        return {**dataclasses.asdict(self), "seconds": seconds}

    def __str__(self) -> str:
        said = "made" if not self.reused else "untimed" if self.seconds is None else "reused"
        return PREPARED[said].format(**dataclasses.asdict(self))


def prepare_copy(cfg, root=None, cache_dir=None, progress: bool = True,
                 record_file=None) -> Prepared | None:
    """The adapters' `prepare_data`: make, once, the copy that cfg.data_format reads, and
    time it; record_file gives a framework's own packed format (Gluon: RecordIO)."""
    if cfg.dataset != "folder" or cfg.data_format == "loose":
        return None
    index, _ = folder_split(cfg, root)
    size, kind = cfg.image_size, cfg.data_format
    common = dict(cache_dir=cache_dir, progress=progress)
    if kind == "preresized":
        target = preresized_path(index, size, cache_dir)
        what, complete = COPIES["preresized"].format(size=size), target / ".gpu_course.json"
        make = lambda: ensure_preresized(index, size, **common)  # noqa: E731
    elif kind == "packed" and record_file is not None:
        what, target, complete, make = record_file(index, size, common)
    else:
        target = complete = packed_path(index, size, cache_dir)
        what = COPIES["packed"].format(size=size)
        make = lambda: ensure_packed(index, size, **common)  # noqa: E731
    note_path = made_note_path(target)
    if Path(complete).exists():
        return Prepared(what, str(target), len(index), _made_seconds(note_path), True)
    start = time.perf_counter()
    make()
    seconds = time.perf_counter() - start
    write_atomic(note_path, json.dumps({"what": what, "images": len(index),
                                        "seconds": round(seconds, 3),
                                        "made": time.strftime("%Y-%m-%dT%H:%M:%S%z")}))
    return Prepared(what, str(target), len(index), seconds, False)


def made_note_path(copy) -> Path:
    """The note beside a prepared copy that says how long making it took."""
    return Path(copy).with_name(f".{Path(copy).name}.made.json")


def _made_seconds(note_path: Path) -> float | None:
    try:
        return float(json.loads(note_path.read_text())["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # no note, or an unreadable one: the cost is unknown


def load_folder(root=None, image_size: int = 32, train_size: int | None = None,
                test_size: int | None = None, seed: int = 0, cache_dir=None):
    """An image folder as in-memory CifarData, read from packed copies made on first use."""
    index = scan_folder(root or default_folder())
    train, val = split(index, train_size, test_size, seed=seed)
    arrays = []
    for part in (train, val):
        pack = PackedArray(ensure_packed(part, image_size, cache_dir))
        arrays += [pack.load(), pack.labels.astype(np.uint8 if len(index.classes) <= 256
                                                   else np.int64)]
    return CifarData(*arrays, tuple(index.classes))


def tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def _check_size(size: int) -> None:
    if not isinstance(size, int) or isinstance(size, bool) or size < 8:
        raise ValueError(f"size={size!r} must be an integer >= 8 pixels")
