"""Small real image folders for the I/O tests: real JPEG bytes, Caltech-256 layout.

    root = make_folder(tmp_path)           # 3 classes x 12 JPEGs of 40-90 px, in ~0.3 s
    bad = truncate(some_jpeg)              # the first half of a real JPEG
"""
from __future__ import annotations

from pathlib import Path

from gpu_course.data import folder


def make_folder(tmp_path, classes: int = 3, per_class: int = 12, name: str = "images",
                seed: int = 0) -> Path:
    """Generate a tiny Caltech-256-shaped folder (in this process: no worker pool)."""
    return folder.generate_folder(Path(tmp_path) / name, classes=classes,
                                  per_class=per_class, seed=seed, min_side=40, max_side=90,
                                  workers=1, progress=False)


def truncate(path, keep: float = 0.5) -> Path:
    """Cut a real image file short, like an interrupted copy."""
    path = Path(path)
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep)])
    return path


def leftovers(folder_path) -> list:
    """Temporary files or folders a writer left behind (names '.<name>.tmp-<pid>')."""
    return sorted(p.name for p in Path(folder_path).rglob(".*.tmp-*"))
