"""The loader-worker rule: usable cores ÷ training processes on the host."""
import pytest

from gpu_course import cores


@pytest.mark.parametrize("procs, n_cores, expected", [
    (8, 64, 8),     # 8 GPUs on a 64-vCPU host: 8 workers each, not 61
    (1, 64, 64), (2, 2, 1), (4, 2, 1), (3, 16, 5)])
def test_workers_per_process_share_the_hosts_cores(procs, n_cores, expected):
    assert cores.loader_workers(procs, cores=n_cores) == expected


def test_usable_cores_and_bad_counts():
    assert 1 <= cores.usable_cores()
    assert cores.loader_workers(1) == cores.usable_cores()
    with pytest.raises(ValueError, match="procs_on_host"):
        cores.loader_workers(0, cores=8)
