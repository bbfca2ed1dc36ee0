"""Put on PYTHONPATH by `gpu-course watch`: times every pass over a DataLoader (PyTorch's
or Gluon's) of an unchanged script from inside its process, one line a step into
$GPU_COURSE_WATCH_STEPS: framework, loader, pass, step, samples, wall time it began,
data wait (blocked in next()) and the rest of the step. Standard library only; a sitecustomize
found further along the path still runs."""
import importlib
import importlib.machinery
import os
import sys
import time

OUT = os.environ.get("GPU_COURSE_WATCH_STEPS")
TARGETS = {"torch.utils.data.dataloader": "torch", "mxnet.gluon.data.dataloader": "mxnet"}
_loaders: dict = {}
_passes = [0]
_file = []


class Timed:
    """The loader's own iterator, its next() timed; anything else is the iterator's."""

    def __init__(self, iterator, framework, loader):
        self._it, self._where, self._step, self._began, self._got = iterator, framework, 0, None, None
        self._loader, self._pass = loader, _passes[0]
        _passes[0] += 1

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._it)

    def __getattr__(self, name):
        return getattr(self._it, name)

    def __next__(self):
        asked = time.time()
        if self._got is not None:  # the step before ends here: write it
            _write(self, asked - self._got)
        try:
            item = next(self._it)
        except StopIteration:
            self._got = None
            raise
        self._began, self._got, self._samples = asked, time.time(), samples(item)
        return item


def samples(batch) -> int:
    """Examples in a batch: the length of its first part (a tensor's first dimension)."""
    first = next(iter(batch.values()), None) if isinstance(batch, dict) else \
        batch[0] if isinstance(batch, (tuple, list)) and batch else batch
    try:
        return len(first)
    except TypeError:
        return 1


def _write(timed, compute_s):
    if not _file:
        _file.append(open(OUT, "a", buffering=1))
    _file[0].write(f"{timed._where},{timed._loader},{timed._pass},{timed._step},"
                   f"{timed._samples},{timed._began:.6f},{timed._got - timed._began:.6f},{compute_s:.6f}\n")
    timed._step += 1


def _patch(cls, framework):
    iterate = cls.__iter__

    def __iter__(self):
        return Timed(iterate(self), framework, _loaders.setdefault(_key(self), len(_loaders)))
    cls.__iter__ = __iter__


def _key(loader):
    """One loader whatever object holds it (a script may make one each epoch): its
    dataset's class and its length in batches."""
    dataset = getattr(loader, "dataset", getattr(loader, "_dataset", None))
    try:
        return type(dataset).__name__, len(loader)
    except TypeError:
        return type(dataset).__name__, id(loader)


class Finder:
    """Patches DataLoader.__iter__ as its module is first imported."""

    def find_spec(self, name, path, target=None):
        if name not in TARGETS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _patch(module.DataLoader, TARGETS[name])
        spec.loader.exec_module = exec_module
        return spec


if OUT:
    sys.meta_path.insert(0, Finder())
_here = os.path.dirname(os.path.abspath(__file__))
_path = sys.path[:]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_self = sys.modules.pop("sitecustomize")
try:  # the sitecustomize this one stands in front of, if there is one
    importlib.import_module("sitecustomize")
except ImportError:
    pass
finally:
    sys.path[:] = _path
    sys.modules.setdefault("sitecustomize", _self)   # the import machinery reads it back
