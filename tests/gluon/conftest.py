"""Gluon-track tests: skipped in an environment without MXNet (e.g. the PyTorch one)."""
import importlib.util
import os
import sys

import pytest

mx = pytest.importorskip("mxnet")

# pytest puts tests/ on sys.path, and there tests/torch/ (the PyTorch track's tests) is
# found as a namespace package called "torch". GluonCV probes `import torch` and breaks
# on it; with no real PyTorch installed, make that probe a plain ImportError.
_torch = importlib.util.find_spec("torch")
if _torch is not None and _torch.origin in (None, "namespace") and "torch" not in sys.modules:
    sys.modules["torch"] = None

pytest.importorskip("gluoncv")

from gpu_course.config import Experiment  # noqa: E402


@pytest.fixture(scope="session")
def data_root(tmp_path_factory):
    """One folder per test session for generated data sets (not the checkout's data/),
    so each size is generated once."""
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="module", autouse=True)
def _data_in_tmp(data_root):
    old = os.environ.get("GPU_COURSE_DATA")
    os.environ["GPU_COURSE_DATA"] = str(data_root)
    yield
    if old is None:
        del os.environ["GPU_COURSE_DATA"]
    else:
        os.environ["GPU_COURSE_DATA"] = old


@pytest.fixture
def small_cfg():
    """A run that takes about a second on a laptop CPU: the tiny net on 256 images."""
    return Experiment(name="test", model="tiny", train_size=256, test_size=64, batch_size=32,
                      epochs=1, num_workers=0, warmup_steps=1, monitor_interval=0.2)
