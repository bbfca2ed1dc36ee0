import multiprocessing

import mxnet as mx
import numpy as np

from gpu_course import data as course_data
from gpu_course.tracks import gluon as gc
from gpu_course.tracks.gluon.data import Augment


def test_training_images_are_augmented_and_normalised(small_cfg):
    train, val = gc.load_datasets(small_cfg)
    assert (len(train), len(val)) == (256, 64)
    image, label = train[0]
    assert image.shape == (3, 32, 32) and image.dtype == np.float32
    assert 0 <= int(label) < 10
    # random crop and flip: the same image twice is (almost always) two different tensors
    draws = [train[0][0].asnumpy() for _ in range(4)]
    assert any(not np.array_equal(draws[0], d) for d in draws[1:])
    # validation: no augmentation, normalised with the CIFAR mean and std
    raw = course_data.load(small_cfg.dataset, train_size=256, test_size=64, seed=0).test_x[0]
    expected = (raw / 255.0 - np.array(course_data.CIFAR_MEAN)) / np.array(course_data.CIFAR_STD)
    np.testing.assert_allclose(val[0][0].asnumpy(), expected.transpose(2, 0, 1), atol=1e-5)


def test_no_augmentation_is_deterministic(small_cfg):
    train, _ = gc.load_datasets(small_cfg.replace(augment="none"))
    np.testing.assert_array_equal(train[3][0].asnumpy(), train[3][0].asnumpy())


def test_heavy_augmentation_runs(small_cfg):
    train, _ = gc.load_datasets(small_cfg.replace(augment="heavy"))
    assert train[0][0].shape == (3, 32, 32)


def test_loader_batches_per_device_and_drops_the_short_last_batch(small_cfg):
    cfg = small_cfg.replace(train_size=200, test_size=50, num_gpus=2, batch_size=16)
    train_iter, val_iter = gc.load_data(cfg)
    sizes = [data.shape[0] for data, _ in train_iter]
    assert sizes == [32] * 6  # 200 // 32 full batches of 16 per device for 2 devices
    assert [data.shape[0] for data, _ in val_iter] == [32, 18]  # validation keeps it all


def _draws_after_augmenting(augment, image):
    """In a freshly forked process: augment once, then draw from NumPy and MXNet."""
    with multiprocessing.get_context("fork").Pool(1) as pool:
        return pool.apply(_augment_then_draw, (augment, image))


def _augment_then_draw(augment, image):
    augment(image)
    return np.random.rand(), mx.nd.random.uniform(shape=(1,)).asscalar()


def test_each_forked_worker_draws_its_own_augmentation(small_cfg):
    """Forked loader workers start with the parent's NumPy and MXNet random state (only
    Python's `random` is reseeded at fork): without reseeding, every worker would flip
    (MXNet) and rotate (NumPy) its n-th image the same way."""
    augment = Augment(small_cfg, train=True, source_size=32)
    image = mx.nd.array(np.random.default_rng(0).integers(0, 255, (32, 32, 3)), dtype="uint8")
    draws = [_draws_after_augmenting(augment, image) for _ in range(3)]
    assert len({d[0] for d in draws}) == 3 and len({d[1] for d in draws}) == 3


def test_workers_load_the_same_batches_as_the_main_process(small_cfg):
    cfg = small_cfg.replace(augment="none")
    train, _ = gc.load_datasets(cfg)
    in_process = [d.asnumpy() for d, _ in gc.make_loader(train, cfg, train=False)]
    in_workers = [d.asnumpy() for d, _ in
                  gc.make_loader(train, cfg.replace(num_workers=2), train=False)]
    assert len(in_process) == len(in_workers) == 8
    for a, b in zip(in_process, in_workers):
        np.testing.assert_array_equal(a, b)
