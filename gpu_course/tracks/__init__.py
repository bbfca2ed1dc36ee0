"""The track adapters, gluon and torch, with the same public names."""
import importlib

# course modules a notebook may reach as gc.<name>, loaded on first use (plots and
# report load matplotlib, tables pandas: only when a notebook asks for them)
LAZY = {"plots": "show.plots", "report": "show.report", "tables": "show.tables",
        "closing": "show.closing", "diagnose": "analyse.diagnose", "metrics": "analyse.metrics",
        "noise": "analyse.noise", "cpu": "env.cpu"}


def lazy(module: str, name: str):
    """The course module `name` of LAZY, for a track's module __getattr__."""
    if name in LAZY:
        return importlib.import_module(f"gpu_course.{LAZY[name]}")
    raise AttributeError(f"module {module!r} has no attribute {name!r}")
