"""The track adapters, gluon and torch, with the same public names, each loaded on first
use (`Names`): a DDP worker imports what it needs, not the lessons, pandas or the compiler."""
import importlib
import sys
import types

# course modules a notebook may reach as gc.<name> (plots and report load matplotlib,
# tables pandas: only when a notebook asks for them)
COURSE = {"plots": "show.plots", "report": "show.report", "tables": "show.tables",
          "closing": "show.closing", "diagnose": "analyse.diagnose", "metrics": "analyse.metrics",
          "noise": "analyse.noise", "cpu": "env.cpu"}
# what both tracks offer alike: {name: "module:attribute"}, modules from gpu_course
SHARED = {"sizes": "lessons:sizes", "show": "lessons:show", "conclude": "lessons:conclude",
          "workers": "lessons:workers", "check": "lessons.exercises:check",
          "memory_of": "analyse.memory:memory_of", "load_run": "measure.records:load_run",
          "load_runs": "measure.records:load_runs", "Workload": "measure.timing:Workload"}
# each track's own modules: {name: "module:attribute"}, modules of the track's package
TRACK = {"make_loader": "data", "load_data": "io_data", "load_datasets": "io_data",
         "prepare_data": "io_data", "gpu_count": "devices", "try_devices": "devices",
         "inference_net": "inference", "time_inference": "inference", "get_model": "models",
         "profile_steps": "profile", "lr_scheduler": "optim", "evaluate": "loop",
         "MemoryMeter": "memory", "memory_run": "memory", "record": "record", "watch": "record",
         "build": "train", "train": "train"}


class Names:
    """A track's public names, each imported from its module on first use."""

    def __init__(self, package: str, engine: str, own: dict):
        self.package, self.engine = package, engine
        self.where = {**{k: f"gpu_course.{v}" for k, v in SHARED.items()},
                      **{k: f"{package}.{m}:{k}" for k, m in TRACK.items()},
                      **{k: f"{package}.{v}" for k, v in own.items()}}
        self.public = frozenset(self.names()) - {"Experiment"}   # Experiment: the package's own

    def names(self) -> list[str]:
        return ["Experiment", "solution", "sweep", "repeat", *self.where, *COURSE]

    def load_all(self) -> None:
        """Import every module the names come from now, so that no Ctrl-C cuts an import
        short later (a half-imported PyTorch fails every run after it)."""
        for place in self.where.values():
            importlib.import_module(place.split(":")[0])

    def get(self, name: str):
        if name in self.where:
            module, attribute = self.where[name].split(":")
            return getattr(importlib.import_module(module), attribute)
        if name in ("solution", "sweep", "repeat"):
            return adapter_functions(self.engine, self.get("train"))[name]
        if name in COURSE:
            return importlib.import_module(f"gpu_course.{COURSE[name]}")
        raise AttributeError(f"module {self.package!r} has no attribute {name!r}")


class Track(types.ModuleType):
    """A track's package: a public name is what `NAMES` says it is, loaded once, even where
    a module of the same name (`train`, `record`) was imported and set on the package."""

    def __getattribute__(self, name: str):
        own = types.ModuleType.__getattribute__(self, "__dict__")
        names = own.get("NAMES")
        if names is None or name not in names.public:
            return types.ModuleType.__getattribute__(self, name)
        value = own.get(name)
        if value is None or getattr(value, "__name__", None) == f"{names.package}.{name}":
            value = own[name] = names.get(name)   # loaded once; a test may set it
        return value

    def __dir__(self):
        return sorted(set(types.ModuleType.__dir__(self)) | set(self.NAMES.names()))


def track(package: str, engine: str, own: dict) -> Names:
    """Make `package` (a track's __init__, as it runs) a `Track` with these names."""
    names = Names(package, engine, own)
    module = sys.modules[package]
    module.NAMES, module.__all__ = names, names.names()
    module.__class__ = Track
    return names


def adapter_functions(engine: str, train):
    """{solution, sweep, repeat}: what both adapters define alike, for `engine`'s `train`."""
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
    return {"solution": solution, "sweep": sweep, "repeat": repeat}
