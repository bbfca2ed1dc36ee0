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
    return folder.generate_folder(Path(tmp_path) / name,
                                  folder.Photos(classes, per_class, seed, min_side=40, max_side=90),
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


def check_prepare_data(io_data, cfg, cache) -> None:
    """An adapter's `io_data.prepare_data` for cfg (24 training images): the copy its
    format reads is made once and timed, found again (`reused`) with the time its making
    took read from the note left beside it (unknown once that note is gone), and read by
    the run's datasets without being made again; loose JPEGs need nothing made."""
    from gpu_course.data.packed import made_note_path
    made = io_data.prepare_data(cfg, cache_dir=cache, progress=False)
    assert not made.reused and made.images == 24 and made.seconds > 0
    assert Path(made.path).exists() and str(made).startswith(made.what + ": 24 images")
    stamp = Path(made.path).stat().st_mtime_ns
    again = io_data.prepare_data(cfg, cache_dir=cache, progress=False)
    assert again.reused and again.path == made.path
    assert again.seconds == round(made.seconds, 3) and f"made in {again.seconds:.1f} s" in str(again)
    made_note_path(made.path).unlink()  # a copy made before such notes were kept
    unknown = io_data.prepare_data(cfg, cache_dir=cache, progress=False)
    assert unknown.reused and unknown.seconds is None and "untimed" in str(unknown)
    io_data.io_datasets(cfg, cfg.data_format, cache_dir=cache, progress=False)
    assert Path(made.path).stat().st_mtime_ns == stamp
    assert io_data.prepare_data(cfg.replace(data_format="loose"), cache_dir=cache) is None
