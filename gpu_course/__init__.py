"""gpu_course: measure and remove what keeps a GPU from being busy while a model trains.

The core imports no deep-learning framework; `from gpu_course import gluon as gc` (or
`torch`) gives a track's adapter, the same public names in each.
"""
__version__ = "0.1.0"

from .config import Experiment  # noqa: E402,F401  (cheap: standard library only)


def __getattr__(name: str):
    """`from gpu_course import gluon` / `torch`: a track adapter with all it offers loaded."""
    if name in ("gluon", "torch"):
        import importlib
        track = importlib.import_module(f"gpu_course.tracks.{name}")
        track.NAMES.load_all()
        return track
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
