import numpy as np
import pytest
import torch

from gpu_course import data as course_data
from gpu_course.tracks import torch as gc
from gpu_course.tracks.torch.data import ImageDataset

MEAN = np.array(course_data.CIFAR_MEAN, np.float32)
STD = np.array(course_data.CIFAR_STD, np.float32)


def unnormalise(x: torch.Tensor) -> np.ndarray:
    """A normalised CHW tensor back to uint8 HWC."""
    return np.rint((x.numpy().transpose(1, 2, 0) * STD + MEAN) * 255).astype(np.uint8)


def crops_of(image: np.ndarray, pad: int = 4) -> list[np.ndarray]:
    """Every pad-4 crop of the image, flipped and not."""
    h, w, _ = image.shape
    padded = np.pad(image, ((pad, pad), (pad, pad), (0, 0)))
    offsets = range(2 * pad + 1)
    windows = [padded[dy:dy + h, dx:dx + w] for dy in offsets for dx in offsets]
    return windows + [win[:, ::-1] for win in windows]


def random_images(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8), np.arange(n) % 10


def test_validation_images_are_only_normalised():
    images, labels = random_images()
    x, y = ImageDataset(images, labels, "none")[3]
    assert x.shape == (3, 32, 32) and x.dtype == torch.float32 and y == 3
    expected = (images[3] / 255.0 - MEAN) / STD
    np.testing.assert_allclose(x.numpy(), expected.transpose(2, 0, 1), atol=1e-5)


def test_training_images_are_random_crops_and_flips():
    images, labels = random_images()
    data = ImageDataset(images, labels, "standard")
    draws = [unnormalise(data[5][0]) for _ in range(12)]
    candidates = crops_of(images[5])
    assert all(any(np.array_equal(d, c) for c in candidates) for d in draws)
    assert len({d.tobytes() for d in draws}) > 1


def test_heavy_augmentation_costs_more_and_keeps_shapes():
    images, labels = random_images()
    x, _ = ImageDataset(images, labels, "heavy")[0]
    assert x.shape == (3, 32, 32) and torch.isfinite(x).all()


def test_each_loader_worker_draws_its_own_augmentation(small_cfg):
    image, _ = random_images(1)
    data = ImageDataset(np.repeat(image, 8, axis=0), np.zeros(8), "standard")
    loader = gc.make_loader(data, small_cfg.replace(num_workers=2, batch_size=1), train=False)
    batches = [x for x, _ in loader]  # workers 0 and 1 take turns
    assert not torch.equal(batches[0], batches[1]) or not torch.equal(batches[2], batches[3])


def test_make_loader_passes_the_lesson_knobs(small_cfg):
    images, labels = random_images(100)
    data = ImageDataset(images, labels, "none")
    cfg = small_cfg.replace(num_workers=2, pin_memory=True, persistent_workers=True,
                            prefetch_factor=3, batch_size=16)
    loader = gc.make_loader(data, cfg)
    assert (loader.num_workers, loader.persistent_workers, loader.prefetch_factor,
            loader.batch_size, loader.drop_last) == (2, True, 3, 16, True)
    assert loader.pin_memory == torch.cuda.is_available()  # only a GPU gains from pinning
    assert len(loader) == 6  # 100 // 16 full batches: the short one dropped
    val = gc.make_loader(data, cfg.replace(num_workers=0), train=False)  # no workers: no prefetch
    assert (val.num_workers, val.drop_last, len(val)) == (0, False, 7)
    x, y = next(iter(val))
    assert x.shape == (16, 3, 32, 32) and y.dtype == torch.int64


def test_load_data_builds_both_loaders(small_cfg):
    train_iter, val_iter = gc.load_data(small_cfg)
    assert isinstance(train_iter, torch.utils.data.DataLoader)
    assert (len(train_iter), len(val_iter)) == (256 // 32, 64 // 32)
    gpu_train, gpu_val = gc.load_data(small_cfg.replace(data_on_gpu=True), device="cpu")
    assert isinstance(gpu_train, gc.GpuLoader) and len(gpu_train) == 8


def test_bad_arrays_are_refused():
    with pytest.raises(ValueError, match="uint8"):
        ImageDataset(np.zeros((2, 3, 32, 32), np.float32), [0, 1])
    with pytest.raises(ValueError, match="augment"):
        ImageDataset(*random_images(), augment="strong")


def test_a_forked_worker_never_collects_what_it_inherited(tmp_path):
    """A loader worker must not free the parent's uncollected CUDA tensors (a CUDA call
    in a forked child aborts it): inherited garbage is frozen in the child."""
    import gc as python_gc
    import os

    import gpu_course.tracks.torch.data  # noqa: F401  (registers the fork hook)
    said = tmp_path / "freed"

    class Held:
        def __del__(self):  # a CUDA tensor's free would call the driver here
            said.write_text(str(os.getpid()))
    python_gc.disable()
    try:
        cycle = [Held()]
        cycle.append(cycle)
        del cycle  # garbage, not yet collected
        pid = os.fork()
        if pid == 0:
            python_gc.collect()
            os._exit(0)
        os.waitpid(pid, 0)
        assert not said.exists()  # the child left it alone
        python_gc.collect()       # the parent frees it as usual
        assert said.read_text() == str(os.getpid())
    finally:
        python_gc.enable()
