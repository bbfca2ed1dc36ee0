"""Data sets in the CIFAR-10 binary format: ``synthetic`` (generated) or ``cifar10``."""
from numbers import Integral
from pathlib import Path

from . import synthetic
from .paths import NOT_OURS, OTHER_SETTINGS, default_root, writing
from .cifar import (FOLDER_NAME, META_FILE, CifarData, download_cifar10, is_complete,
                    read_cifar_binary, read_manifest, write_cifar_binary)

__all__ = ["CIFAR_MEAN", "CIFAR_STD", "DATASETS", "CifarData", "default_root", "prepare",
           "load", "num_classes", "generate_to", "read_cifar_binary", "write_cifar_binary",
           "download_cifar10"]

DATASETS = ("synthetic", "cifar10")
# per-channel mean and std of real CIFAR-10 training images (RGB, 0..1), used for both sets
CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2023, 0.1994, 0.2010)
# names gpu-course itself writes into a data folder: anything else there is the user's
_OURS = ("synthetic-v", FOLDER_NAME, "cifar-10-binary.tar.gz", "prepared", "caltech256-like",
         "photos-")  # photos-: the CPU ladder's (ladder.photo_folder)


def prepare(name="synthetic", root=None, train_size=50000, test_size=10000, seed=0):
    """Make the data set ``name`` ready on disk; return its ``cifar-10-batches-bin`` folder."""
    if name not in DATASETS:
        raise ValueError(f"unknown data set {name!r}; choose one of {', '.join(DATASETS)}")
    _check_sizes(train_size, test_size, seed)
    root = Path(root).expanduser() if root is not None else default_root()
    if root.exists() and not root.is_dir():
        raise ValueError(f"data_dir={str(root)!r} is a file; it must name a folder")
    if name == "cifar10":
        return download_cifar10(root)
    name = f"synthetic-v{synthetic.VERSION}-s{seed}-{train_size}-{test_size}"
    folder = _cache_root(root) / name / FOLDER_NAME
    if not is_complete(folder):  # written atomically, so complete means done
        _write_synthetic(folder, seed, train_size, test_size)
    return folder


def _cache_root(root):
    """Where the generated set is cached: `root`, unless it holds someone else's data."""
    cache = default_root()
    foreign = sorted(p.name for p in root.iterdir() if not p.name.startswith(".")
                     and not p.name.startswith(_OURS)) if root.is_dir() else []
    if not foreign or root.resolve() == cache.resolve():  # none, or the course's own folder
        return root
    print(f"data_dir {root} holds other data ({', '.join(foreign[:3])}): caching the generated set in {cache}")
    return cache


def ours(*datasets):
    """Mark the course's datasets, so a record can tell them from a user's own."""
    for dataset in datasets:
        dataset.course_dataset = True
    return datasets


def num_classes(cfg):
    """How many classes an Experiment's data set has (the network's output size)."""
    if cfg.dataset == "folder":
        from .folder import default_folder, scan_folder
        return len(scan_folder(cfg.data_dir or default_folder()).classes)
    if cfg.dataset == "synthetic":
        return len(synthetic.CLASSES)
    meta = Path(prepare(cfg.dataset, cfg.data_dir, cfg.train_size, cfg.test_size, cfg.seed)) / META_FILE
    return len([line for line in meta.read_text().splitlines() if line.strip()])


def load(name="synthetic", root=None, train_size=50000, test_size=10000, seed=0):
    """``prepare`` then read: a ``CifarData`` with uint8 NHWC images."""
    data = read_cifar_binary(prepare(name, root, train_size, test_size, seed))
    for field, size, have in (("train_size", train_size, len(data.train_y)),
                              ("test_size", test_size, len(data.test_y))):
        if size > have:
            raise ValueError(f"{field}={size} but {name} has only {have} images")
    return CifarData(data.train_x[:train_size], data.train_y[:train_size],
                     data.test_x[:test_size], data.test_y[:test_size], data.classes)


def generate_to(out=None, seed=0, train_size=50000, test_size=10000, overwrite=False):
    """``gpu-course data``: the synthetic set in ``out/cifar-10-batches-bin``."""
    _check_sizes(train_size, test_size, seed)
    out = Path(out).expanduser() if out is not None else default_root()
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; it must name a folder")
    folder = out / FOLDER_NAME
    with writing(folder):  # a second `gpu-course data` on this folder waits
        if folder.exists():
            if (found := read_manifest(folder)) is None:
                raise ValueError(NOT_OURS.format(root=folder))
            if found == _settings(seed, train_size, test_size) and is_complete(folder):
                return folder
            if not overwrite:
                raise ValueError(OTHER_SETTINGS.format(root=folder, found=found))
        return _write_synthetic(folder, seed, train_size, test_size)


def _settings(seed, train_size, test_size):
    return {"kind": "synthetic", "version": synthetic.VERSION, "seed": seed,
            "train_size": train_size, "test_size": test_size}


def _write_synthetic(folder, seed, train_size, test_size):
    train = synthetic.generate(train_size, seed, split="train")
    test = synthetic.generate(test_size, seed, split="test")
    return write_cifar_binary(folder, CifarData(*train, *test, synthetic.CLASSES),
                              manifest=_settings(seed, train_size, test_size))


def _check_sizes(train_size, test_size, seed):
    for field, value, low in (("train_size", train_size, 1), ("test_size", test_size, 1), ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
            raise ValueError(f"{field} must be an integer >= {low}, got {value!r}")
