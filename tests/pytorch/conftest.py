"""PyTorch-track tests: skipped in an environment without PyTorch (e.g. the Gluon one)."""
import pytest

torch = pytest.importorskip("torch")

from gpu_course.config import Experiment  # noqa: E402

# One thread: on a two-core machine that is busy with anything else (a loader worker,
# another test process) a second OpenMP thread waits for a core and slows steps ~10x.
torch.set_num_threads(1)


@pytest.fixture
def small_cfg():
    """A run of about a second on a laptop CPU: the tiny net on 256 images."""
    return Experiment(name="test", engine="pytorch", model="tiny", train_size=256,
                      test_size=64, batch_size=32, epochs=1, num_workers=0, num_gpus=0,
                      warmup_steps=1, monitor_interval=0.2)


def pytest_collection_modifyitems(config, items):
    """Tests marked `gpu` run only where PyTorch sees a CUDA GPU (CI has none)."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is false)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
