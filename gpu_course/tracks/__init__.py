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


def adapter_functions(engine: str, train):
    """(solution, sweep, repeat): what both adapters define alike, for `engine`'s `train`."""
    from ..experiments import interleave, sweep as run_sweep
    from ..lessons.exercises import solution as print_solution

    def solution(exercise: str) -> None:
        """Print exercise `exercise`'s solution in this track, to compare with your own."""
        print_solution(exercise, engine)

    def sweep(cfg, field: str, values, repeats: int = 1, **train_kwargs):
        """train(cfg with `field` set to each value) (`experiments.sweep`)."""
        return run_sweep(train, cfg, field, values, repeats, **train_kwargs)

    def repeat(cfgs, repeats: int = 3, **train_kwargs):
        """Each config trained `repeats` times, interleaved; {name: [runs]} for `noise.compare`."""
        return interleave(train, list(cfgs), repeats, **train_kwargs)
    return solution, sweep, repeat
