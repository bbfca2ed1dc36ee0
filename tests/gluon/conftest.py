"""Gluon-track tests: skipped in an environment without MXNet (e.g. the PyTorch one)."""
import os

import pytest

mx = pytest.importorskip("mxnet")

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
