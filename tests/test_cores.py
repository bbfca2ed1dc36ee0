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


def test_more_loader_workers_than_the_cores_can_carry_are_refused_by_name():
    from gpu_course.env.cores import LOADER_WORKERS_PER_CORE, check_loader_workers
    check_loader_workers(LOADER_WORKERS_PER_CORE * 2, cores=2)   # at the limit: allowed
    with pytest.raises(ValueError, match=r"num_workers=17 is more loader workers than the cores "
                                         r"carry; allowed: 0\.\.16 \(8 a core\)"):
        check_loader_workers(17, cores=2)


def test_a_run_asking_for_thousands_of_workers_stops_before_forking_one(tmp_path):
    """A real `gpu-course run` in this environment's track (MXNet aborted with signal 6)."""
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "gpu_course.cli", "run", "--num-workers",
                           "100000", "--epochs", "1", "--train-size", "64", "--test-size", "32",
                           "--model", "tiny", "--runs-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and "num_workers=100000 is more loader workers" in done.stderr
    assert not list(tmp_path.rglob("run.json"))   # nothing started


def test_a_local_multi_host_job_beyond_the_cores_is_refused_before_it_starts(tmp_path):
    """`gpu-course distributed --nodes` huge aborted with signal 6; now one line, exit 2."""
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "gpu_course.cli", "distributed", "--nodes",
                           "100000", "--quick", "--runs-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stderr
    assert "--nodes=100000 x --procs-per-node=1 starts 100000 training processes" in done.stderr
    assert not list(tmp_path.rglob("run.json"))
