"""The loader-worker rule: usable cores ÷ training processes on the host."""
import pytest

from gpu_course.env import cores


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


def test_mxnets_threads_follow_its_rule(monkeypatch):
    """src/engine/openmp.cc: OMP_NUM_THREADS, else MXNET_OMP_MAX_THREADS, else half the
    cores on x86 (two hyper-threads a core assumed), every core elsewhere."""
    monkeypatch.setattr(cores.platform, "machine", lambda: "x86_64")
    assert cores.mxnet_threads(4, {"OMP_NUM_THREADS": "3"}) == (3, "OMP_NUM_THREADS")
    assert cores.mxnet_threads(4, {"MXNET_OMP_MAX_THREADS": "5"})[0] == 5
    assert cores.mxnet_threads(4, {}) == (2, "MXNet's default on x86: half the cores")
    assert cores.mxnet_threads(1, {})[0] == 1
    monkeypatch.setattr(cores.platform, "machine", lambda: "aarch64")
    assert cores.mxnet_threads(4, {}) == (4, "MXNet's default: one a core")
