"""Image folders shaped like Caltech-256 (root/001.circle/001_0001.jpg): generate, scan, decode.
The generated photos (`synthetic`'s shapes enlarged, with grain and blotches) cost what real
photos cost to decode and resize."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import re
import shutil
import signal
import tempfile
import weakref
import zlib
from dataclasses import dataclass
import multiprocessing.pool as mp_pool
from multiprocessing import TimeoutError, get_all_start_methods, get_context
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from . import synthetic
from ..measure.guards import check_stop, naming, stop_requests
from .cifar import read_manifest
from .paths import NOT_OURS, OTHER_SETTINGS, default_root, kept_note, writing

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".ppm", ".webp")
MANIFEST = ".gpu_course.json"   # written last by generate_folder: the folder is complete


def default_folder() -> Path:
    return default_root() / "caltech256-like"


class DataError(ValueError):
    """A dataset is unusable as given (corrupt image, empty class folder, ...)."""


class MissingData(DataError, FileNotFoundError):
    """A file or folder a dataset needs is not there."""


class CorruptImage(DataError):
    """An image file could not be decoded; `.path` names it."""

    def __init__(self, path, reason: str):
        self.path, self.reason = Path(path), reason
        super().__init__(f"cannot decode image {self.path}: {reason}. "
                         "Delete or replace it, or pass skip_corrupt=True")

    def __reduce__(self):  # a loader worker sends it back pickled
        return (type(self), (self.path, self.reason))

    @classmethod
    def from_message(cls, text: str) -> "CorruptImage | None":
        """The CorruptImage named by the last line of a worker's traceback, or None."""
        last = text.strip().splitlines()[-1] if text.strip() else ""
        found = re.search(r"CorruptImage: cannot decode image (.+?): (.+)\. Delete or replace it", last)
        return cls(found.group(1), found.group(2)) if found else None


# -- reading a folder -----------------------------------------------------------------
@dataclass(frozen=True)
class FolderIndex:
    """The images of a class-per-folder dataset: paths relative to `root` and labels."""

    root: Path
    classes: tuple
    paths: tuple
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.paths)

    def path(self, i: int) -> Path:
        return self.root / self.paths[i]

    def subset(self, indices: Iterable[int]) -> "FolderIndex":
        indices = list(indices)
        return FolderIndex(self.root, self.classes, tuple(self.paths[i] for i in indices),
                           self.labels[np.asarray(indices, dtype=np.int64)])

    def fingerprint(self) -> str:
        """A short hash of the files and labels, naming a prepared copy of this set."""
        def stamp(path: str) -> str:
            try:
                st = (self.root / path).stat()
                return f"{st.st_size}:{st.st_mtime_ns}"
            except OSError:
                return "missing"
        text = "\n".join(f"{p}\t{y}\t{stamp(p)}" for p, y in zip(self.paths, self.labels.tolist()))
        return f"{zlib.crc32(text.encode()):08x}"


def scan_folder(root) -> FolderIndex:
    """Index a Caltech-256-style folder: every sub-folder a class, every image a sample."""
    root = Path(root).expanduser()
    if not root.exists():
        raise MissingData(f"image folder {root} does not exist: write one with "
                          f"`gpu-course data --kind folder --out {root}`")
    if not root.is_dir():
        raise DataError(f"{root} is a file; expected a folder with one sub-folder per class")
    class_dirs = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not class_dirs:
        raise DataError(f"image folder {root} has no class folders; expected e.g. {root}/001.name/001_0001.jpg")
    if len(class_dirs) < 2:   # one class trains to 100 % and learns nothing
        raise DataError(f"image folder {root} has one class folder ({class_dirs[0].name}); add two or more")
    paths, labels = [], []
    for label, class_dir in enumerate(class_dirs):
        files = sorted(f.name for f in class_dir.iterdir() if f.suffix.lower() in IMAGE_EXTENSIONS
                       and not f.name.startswith(".") and f.is_file())
        if not files:
            raise DataError(f"class folder {class_dir} has no images ({', '.join(IMAGE_EXTENSIONS)}): "
                            "remove it or add some")
        paths += [f"{class_dir.name}/{f}" for f in files]
        labels += [label] * len(files)
    return FolderIndex(root, tuple(d.name for d in class_dirs), tuple(paths),
                       np.asarray(labels, dtype=np.int64))


def split(index: FolderIndex, train_size: int | None = None, test_size: int | None = None,
          seed: int = 0) -> tuple[FolderIndex, FolderIndex]:
    """A deterministic train/validation split (a fifth), balanced in any prefix (classes interleaved)."""
    rng = np.random.default_rng(seed)
    per_class = [rng.permutation(np.flatnonzero(index.labels == k))
                 for k in range(len(index.classes))]
    longest = max((len(g) for g in per_class), default=0)   # round-robin over the classes
    order = [int(g[j]) for j in range(longest) for g in per_class if j < len(g)]
    n_val = min(max(1, int(len(order) * 0.2)), len(order) if test_size is None else test_size)
    val, rest = order[:n_val], order[n_val:]
    train = rest[:train_size] if train_size is not None else rest
    if not train:
        raise DataError(f"{index.root} has {len(index)} images: none left to train after {n_val} for validation")
    return index.subset(train), index.subset(val)


# -- decoding -------------------------------------------------------------------------
def load_image(path, size: int | None = None) -> np.ndarray:
    """Decode an image file to uint8 RGB [H, W, 3]; with `size`, its centre square resized
    to size x size (bilinear, antialiased)."""
    from PIL import Image, ImageFile, UnidentifiedImageError
    # GluonCV sets this process-wide switch on import: a cut-off JPEG would decode as grey
    lenient, ImageFile.LOAD_TRUNCATED_IMAGES = ImageFile.LOAD_TRUNCATED_IMAGES, False
    try:
        with Image.open(path) as img:
            img = img.convert("RGB")  # forces the full decode: a truncated file fails here
            if size is not None:
                w, h = img.size
                side = min(w, h)
                box = ((w - side) / 2, (h - side) / 2, (w + side) / 2, (h + side) / 2)
                img = img.resize((size, size), Image.BILINEAR, box=box)
            return np.asarray(img)
    except FileNotFoundError:
        raise MissingData(f"image file {path} does not exist") from None
    except Image.DecompressionBombError as err:  # not an OSError: named here
        raise CorruptImage(path, f"refused as a possible decompression bomb ({err})") from None
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as err:
        raise CorruptImage(path, str(err) or type(err).__name__) from None
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = lenient


# -- random access for the framework datasets -------------------------------------------
class SkipCounter:
    """Unreadable samples skipped over all loader workers (a line each in a temporary file)."""

    def __init__(self):
        fd, self.path = tempfile.mkstemp(prefix="gpu_course-skips-")
        os.close(fd)
        weakref.finalize(self, _remove_quietly, self.path, os.getpid())

    def add(self, what: str = "?") -> None:
        with open(self.path, "ab", buffering=0) as f:   # one appending write: no interleaving
            f.write((" ".join(str(what).split())[:500] + "\n").encode())

    def _lines(self) -> list:
        try:
            return Path(self.path).read_text(errors="replace").splitlines()
        except OSError:
            return []

    @property
    def count(self) -> int:
        """Skipped reads (a file skipped in each of three epochs counts three times)."""
        return len(self._lines())

    def names(self) -> list:
        """The distinct files (or records) skipped, in the order first met."""
        return list(dict.fromkeys(self._lines()))


def _remove_quietly(path: str, owner: int) -> None:
    if os.getpid() == owner:  # a forked worker inherits the finalizer, not the file
        with contextlib.suppress(OSError):
            os.unlink(path)


def fetch_or_skip(read, i: int, n: int, skip_corrupt: bool, skipped: SkipCounter):
    """read(i), or with skip_corrupt the next readable sample (each failure counted)."""
    for attempt in range(n):
        try:
            return read((i + attempt) % n)
        except DataError as err:
            if not skip_corrupt:
                raise
            skipped.add(getattr(err, "path", None) or err)
    raise DataError(f"all {n} samples are unreadable")


class FolderSource:
    """Random access to (image, label) of a FolderIndex, decoded and resized per sample."""

    def __init__(self, index: FolderIndex, size: int, skip_corrupt: bool = False):
        if len(index) == 0:
            raise DataError(f"no images to read in {index.root}")
        self.index, self.size, self.skip_corrupt = index, size, skip_corrupt
        self.skipped = SkipCounter()

    def __len__(self) -> int:
        return len(self.index)

    def fetch(self, i: int):
        return fetch_or_skip(self._read, i, len(self), self.skip_corrupt, self.skipped)

    def _read(self, i: int):
        return load_image(self.index.path(i), self.size), int(self.index.labels[i])


# -- generating a folder --------------------------------------------------------------
@dataclass(frozen=True)
class Photos:
    """What `generate_folder` writes: `classes` folders of `per_class` JPEGs."""

    classes: int = 10
    per_class: int = 300
    seed: int = 0
    min_side: int = 200
    max_side: int = 500
    quality: int = 90

    def __post_init__(self):
        if not 2 <= self.classes <= len(synthetic.CLASSES):   # one class would teach nothing
            raise ValueError(f"classes={self.classes!r} must be in 2..{len(synthetic.CLASSES)}")
        if self.per_class < 1:
            raise ValueError(f"per_class={self.per_class!r} must be >= 1")
        if not 16 <= self.min_side <= self.max_side:
            raise ValueError(f"min_side={self.min_side!r}, max_side={self.max_side!r}: need 16 <= min <= max")
        if not 1 <= self.quality <= 100:
            raise ValueError(f"quality={self.quality!r} must be in 1..100")


def generate_folder(root=None, photos: Photos = Photos(), workers: int | None = None,
                    progress: bool = True, overwrite: bool = False) -> Path:
    """Write a Caltech-256-shaped folder of `photos` (reused if complete); returns its path."""
    root = Path(root or default_folder()).expanduser()
    if root.exists() and not root.is_dir():
        raise DataError(f"{root} is a file; --out must name a folder")
    # a second `gpu-course data --kind folder` here waits; Ctrl-C or SIGTERM stops after an image
    with writing(root), stop_requests():
        return _generate(root, photos, overwrite, workers, progress)


def _generate(root: Path, photos: Photos, overwrite: bool, workers, progress) -> Path:
    """generate_folder's work, while it holds the lock on `root`'s parent."""
    settings, classes = {**dataclasses.asdict(photos), "version": 1}, photos.classes
    found = read_manifest(root) if root.exists() else None
    if root.exists() and found is None and any(root.iterdir()):
        raise DataError(NOT_OURS.format(root=root))
    if found is not None and not overwrite:
        if found == settings:
            return root
        raise DataError(OTHER_SETTINGS.format(root=root, found=found))
    # one small picture per image: 10 consecutive ones hold each shape once, so classes balance
    small, labels = synthetic.generate(10 * photos.per_class, photos.seed)
    keep = np.flatnonzero(labels < classes)
    tmp = root.with_name(f".{root.name}.tmp-{os.getpid()}")
    for stale in root.parent.glob(f".{root.name}.tmp-*"):   # a killed writer's: we hold the lock
        shutil.rmtree(stale, ignore_errors=True)
    counts, tasks = np.zeros(classes, int), []
    for i in keep:
        k = int(labels[i])
        counts[k] += 1
        name = f"{k + 1:03d}.{synthetic.CLASSES[k]}/{k + 1:03d}_{counts[k]:04d}.jpg"
        tasks.append((small[i], str(tmp / name), (photos.seed, int(i)), photos))
    for k in range(classes):
        (tmp / f"{k + 1:03d}.{synthetic.CLASSES[k]}").mkdir(parents=True)
    try:
        list(parallel_map(_write_photo, tasks, workers=workers, progress=progress,
                          desc=f"writing {len(tasks):,} JPEGs"))
        (tmp / MANIFEST).write_text(json.dumps(settings, sort_keys=True))
        if root.exists():
            _replace_own_files(root, tmp, found)
        else:
            os.replace(tmp, root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def _replace_own_files(root: Path, new: Path, old_settings: dict | None) -> None:
    """Put `new`'s class folders into `root`, deleting only what gpu-course wrote there."""
    (root / MANIFEST).unlink(missing_ok=True)  # first: a half-replaced folder is not ours
    old = old_settings or {}
    for k in range(old.get("classes", 0)):
        folder = root / f"{k + 1:03d}.{synthetic.CLASSES[k]}"
        for n in range(1, int(old.get("per_class", 0)) + 1):
            (folder / f"{k + 1:03d}_{n:04d}.jpg").unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            folder.rmdir()   # only when nothing else is left in it
    kept = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    for entry in sorted(new.iterdir(), key=lambda p: p.name == MANIFEST):  # manifest last
        target = root / entry.name
        if entry.is_dir() and target.is_dir():   # a class folder that holds a user's files
            for image in entry.iterdir():
                os.replace(image, target / image.name)
        else:
            os.replace(entry, target)
    if kept:
        print(kept_note(root, kept))


def _write_photo(task) -> int:
    """Enlarge a 32x32 picture to a random size, add blotches and grain, save a JPEG."""
    from PIL import Image
    small, path, key, photos = task
    rng = np.random.default_rng(key)
    w, h = (int(v) for v in rng.integers(photos.min_side, photos.max_side + 1, size=2))
    picture = Image.fromarray(small).resize((w, h), Image.BICUBIC)
    cw, ch = w // 3 + 1, h // 3 + 1  # colour blotches a few pixels wide
    blotches = Image.frombytes("RGB", (cw, ch), rng.bytes(cw * ch * 3)).resize(
        (w, h), Image.BILINEAR)
    grain = Image.frombytes("L", (w, h), rng.bytes(w * h)).convert("RGB")
    picture = Image.blend(Image.blend(picture, blotches, 0.10), grain, 0.05)
    encoded = io.BytesIO()   # Pillow writing the file itself ignores a short write (a full disk)
    picture.save(encoded, "JPEG", quality=photos.quality)
    try:
        with open(path, "wb") as out:
            out.write(encoded.getbuffer())
    except OSError as err:
        raise naming(err, path) from None
    return encoded.getbuffer().nbytes


# -- a parallel map with a progress bar -----------------------------------------------
def parallel_map(fn, tasks: Sequence, workers: int | None = None, progress: bool = True, desc: str = ""):
    """fn(task) for each task, in order, in `workers` processes, with a progress bar."""
    from ..measure.progress import bar as progress_bar
    workers = os.cpu_count() or 1 if workers is None else workers
    bar = progress_bar(len(tasks), desc=desc, unit="img") if progress else None
    pool, done = None, False
    try:
        if workers <= 1 or len(tasks) < 2:
            results = map(fn, tasks)
        else:
            # fork: workers start in milliseconds and share the parent's imports
            ctx = get_context("fork" if "fork" in get_all_start_methods() else None)
            pool = ctx.Pool(min(workers, len(tasks)), initializer=_worker_signals)
            chunk = max(1, min(64, len(tasks) // (workers * 8)))
            chunks = [(fn, tasks[i:i + chunk]) for i in range(0, len(tasks), chunk)]
            results = _waiting(pool.imap(_run_chunk, chunks), list(pool._pool))  # chunksize 1: .next(timeout)
        for result in results:
            check_stop()  # Ctrl-C or SIGTERM: stop here (the caller removes what is half-written)
            if bar is not None:
                bar.update(1)
            yield result
        done = True
    finally:
        if bar is not None:
            bar.close()
        if pool is not None:   # all done: the workers leave; else (stopped, left early) killed
            end_pool(pool, stopped=not done)


def _worker_signals() -> None:
    """A worker leaves Ctrl-C to the parent and dies of SIGTERM (not the inherited handler)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _run_chunk(work) -> list:
    fn, tasks = work
    return [fn(task) for task in tasks]


class WorkerDied(RuntimeError):
    """A worker process of a parallel map ended before its work was done (killed, out of memory)."""


def _waiting(results, workers: list):
    """An imap's results in short waits: Ctrl-C or SIGTERM obeyed, a dead worker an error."""
    while True:
        try:
            yield from results.next(timeout=0.2)
        except TimeoutError:
            check_stop()
            dead = next((w for w in workers if w.exitcode is not None), None)
            if dead is not None:
                code = dead.exitcode
                how = f"signal {-code}" if code < 0 else f"exit status {code}"
                raise WorkerDied(f"worker process {dead.pid} ended ({how}: killed, or out of memory); "
                                 "nothing was kept: run the command again") from None
        except StopIteration:
            return


def end_pool(pool, stopped: bool = False) -> None:
    """Stop a pool's workers: close and join when all is done, else kill them (terminate()
    can wait forever for a signal swallowed or a lock a dead worker held)."""
    if not stopped:
        pool.close()
        pool.join()
        return
    pool._worker_handler._state = mp_pool.TERMINATE  # no replacements any more
    pool._state = mp_pool.TERMINATE
    for worker in list(pool._pool):
        if worker.exitcode is None:
            worker.kill()
        worker.join(5)
    pool._terminate.cancel()  # what terminate() or exit would have run and waited in


def folder_split(cfg, root=None):
    """(train index, validation index) of an experiment's image folder."""
    index = scan_folder(root or cfg.data_dir or default_folder())
    return split(index, cfg.train_size, cfg.test_size, seed=cfg.seed)
