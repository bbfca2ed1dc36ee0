"""The GPU-resident loader, on the CPU device (same code path; only the device differs)."""
import numpy as np
import pytest
import torch

from gpu_course import data as course_data
from gpu_course.tracks.torch import Batches, GpuLoader

N = 100


@pytest.fixture
def arrays():
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (N, 32, 32, 3), dtype=np.uint8)
    return images, np.arange(N)  # label = index: each batch says which images it holds


def to_uint8(batch: torch.Tensor) -> np.ndarray:
    mean = torch.tensor(course_data.CIFAR_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(course_data.CIFAR_STD).view(1, 3, 1, 1)
    return torch.round((batch.float() * std + mean) * 255).to(torch.uint8).numpy()


def test_batches_have_the_asked_shape_dtype_and_layout(arrays):
    loader = GpuLoader(*arrays, Batches(32, dtype=torch.bfloat16, channels_last=True))
    batches = list(loader)
    assert len(loader) == len(batches) == 3  # 100 // 32: the short batch dropped
    x, y = batches[0]
    assert x.shape == (32, 3, 32, 32) and x.dtype == torch.bfloat16
    assert x.is_contiguous(memory_format=torch.channels_last)
    assert y.dtype == torch.int64 and x.device.type == "cpu"


def test_every_sample_once_per_epoch_in_a_new_order(arrays):
    loader = GpuLoader(*arrays, Batches(10))
    first = torch.cat([y for _, y in loader])
    second = torch.cat([y for _, y in loader])
    assert sorted(first.tolist()) == sorted(second.tolist()) == list(range(N))
    assert not torch.equal(first, second)


def test_unaugmented_batches_are_exactly_normalised(arrays):
    images, labels = arrays
    loader = GpuLoader(images, labels, Batches(25, train=False))
    x, y = next(iter(loader))
    assert y.tolist() == list(range(25))  # validation: in order
    mean, std = np.array(course_data.CIFAR_MEAN), np.array(course_data.CIFAR_STD)
    expected = ((images[:25] / 255.0 - mean) / std).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(x.numpy(), expected, atol=1e-5)
    assert len(GpuLoader(images, labels, Batches(30, train=False))) == 4  # keeps the short one


def test_each_image_is_a_crop_of_the_padded_image_flipped_half_the_time(arrays):
    images, labels = arrays
    padded = np.pad(images, ((0, 0), (4, 4), (4, 4), (0, 0))).transpose(0, 3, 1, 2)
    flips = offsets = 0
    for x, y in GpuLoader(images, labels, Batches(50, seed=3)):
        for crop, i in zip(to_uint8(x), y.tolist()):
            found = [(dy, dx, flip) for dy in range(9) for dx in range(9) for flip in (0, 1)
                     if np.array_equal(crop, padded[i, :, dy:dy + 32, dx:dx + 32][..., ::-1]
                                       if flip else padded[i, :, dy:dy + 32, dx:dx + 32])]
            assert found, f"sample {i} is not a crop of its padded image"
            flips += found[0][2]
            offsets += (found[0][0], found[0][1]) != (4, 4)
    assert 30 <= flips <= 70  # of 100 samples, about half flipped
    assert offsets > 80       # most crops are shifted


def test_ranks_share_out_each_epoch(arrays):
    shards = [torch.cat([y for _, y in GpuLoader(*arrays, Batches(10, rank=r, world_size=2))])
              for r in (0, 1)]
    assert len(shards[0]) == len(shards[1]) == 50
    assert sorted(torch.cat(shards).tolist()) == list(range(N))


def test_set_epoch_repeats_an_epoch(arrays):
    loader = GpuLoader(*arrays, Batches(10))
    loader.set_epoch(5)
    a = torch.cat([x for x, _ in loader])
    loader.set_epoch(5)
    assert torch.equal(a, torch.cat([x for x, _ in loader]))


def test_a_channels_last_batch_costs_no_extra_copy(arrays):
    from tools.op_count import count_ops
    loader = GpuLoader(*arrays, Batches(32, dtype=torch.bfloat16, channels_last=True))
    plan = loader.device_plan(0)
    counts = count_ops(loader.cut, plan[:, :32])
    # row and column indices (3), the gather (1), normalisation (1), cast (1)
    assert counts.launching <= 6 and counts.syncs == 0, counts.by_name
    assert "clone" not in counts.by_name and "contiguous" not in counts.by_name


def test_batches_a_loader_cannot_cut_are_refused_by_name():
    with pytest.raises(ValueError, match="augment='mixup' is not allowed; allowed: none"):
        Batches(32, augment="mixup")
    with pytest.raises(ValueError, match="batch_size=0 must be >= 1"):
        Batches(0)
