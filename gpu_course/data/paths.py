"""Where the course's data sets live: one function every data module asks."""
from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[2]
# refusing to write over a folder: {root} and, for OTHER_SETTINGS, the {found} settings
NOT_OURS = "{root} holds files that gpu-course did not write: choose another folder"
OTHER_SETTINGS = ("{root} was written with other settings ({found}): "
                  "pass overwrite=True (--overwrite) or choose another folder")


def default_root():
    """Where data sets go: $GPU_COURSE_DATA, a writable checkout's data/, or ~/.cache."""
    if os.environ.get("GPU_COURSE_DATA"):
        root = Path(os.environ["GPU_COURSE_DATA"]).expanduser()
        if root.exists() and not root.is_dir():
            raise ValueError(f"GPU_COURSE_DATA={root} is a file; name a folder, or unset it (data/)")
        return root
    data_dir = _CHECKOUT / "data"
    if data_dir.is_dir() and os.access(data_dir, os.W_OK):
        return data_dir
    if (_CHECKOUT / "pyproject.toml").is_file() and os.access(_CHECKOUT, os.W_OK):
        return data_dir  # a checkout without data/ yet: it is made on first use
    return Path.home() / ".cache" / "gpu_course"


@contextlib.contextmanager
def writing(folder):
    """One gpu-course process at a time writes `folder` (a lock on its parent)."""
    parent = Path(folder).parent
    parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(parent, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another gpu-course process that is writing into {parent}",
                  file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def kept_note(root, kept: list) -> str:
    """The line naming what a rewrite of `root` kept there: files gpu-course did not write."""
    return (f"kept in {root} what gpu-course did not write there: " + ", ".join(kept[:5])
            + (f" and {len(kept) - 5} more" if len(kept) > 5 else ""))
