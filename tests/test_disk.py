"""gpu_course.data.disk: read speed, cold and warm, sequential and random; read order."""
import os

import numpy as np
import pytest

from gpu_course.data import disk


@pytest.fixture
def blob(tmp_path):
    path = tmp_path / "blob.bin"
    path.write_bytes(os.urandom(1 << 20))
    return path


def test_reads_report_bytes_speed_and_whether_they_were_cold(blob):
    for pattern in ("sequential", "random"):
        speed = disk.read_bandwidth(blob, pattern, block_size=4096)
        assert speed.bytes == 1 << 20 and speed.reads == 256 and speed.mb_per_s > 0
        assert speed.evicted and pattern in str(speed) and "cold" in str(speed)
    warm = disk.read_bandwidth(blob, cold=False)
    assert warm.evicted is False and warm.bytes == 1 << 20 and "warm" in str(warm)
    assert "1 MiB" in warm.pattern


def test_files_are_read_whole_in_either_order(tmp_path):
    paths = []
    for i in range(12):
        paths.append(tmp_path / f"{i:02d}.jpg")
        paths[-1].write_bytes(os.urandom(1000 + i))
    for order in ("sequential", "random"):
        speed = disk.read_files(paths, order)
        assert speed.reads == 12 and speed.bytes == sum(1000 + i for i in range(12))
        assert order in str(speed)


def test_bad_patterns_and_blocks_are_value_errors(blob):
    with pytest.raises(ValueError, match="pattern='backwards'.*sequential, random"):
        disk.read_bandwidth(blob, "backwards")
    with pytest.raises(ValueError, match="block_size"):
        disk.read_bandwidth(blob, block_size=0)
    with pytest.raises(ValueError, match="order"):
        disk.read_files([], "backwards")


def test_evict_drops_only_the_given_file(blob):
    assert disk.evict(blob) is hasattr(os, "posix_fadvise")
    assert blob.read_bytes()[:4] == blob.read_bytes()[:4]  # still readable, unchanged


def test_block_shuffle_is_a_permutation_read_in_runs():
    order = disk.block_shuffle(103, 10, seed=4)
    assert sorted(order.tolist()) == list(range(103))
    changes = int((np.diff(order // 10) != 0).sum())
    assert changes == 10  # 11 blocks of the file, each read as one run
    assert len({int(v) // 10 for v in order[:10]}) == 1
    assert not np.array_equal(order, np.arange(103))
    assert not np.array_equal(order, disk.block_shuffle(103, 10, seed=5))
    with pytest.raises(ValueError, match="block"):
        disk.block_shuffle(10, 0)
