"""gpu_course.measure.nvml against a fake pynvml (faults on demand) and the real binding."""
import os
import stat
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # for fake_pynvml, whatever pytest's import mode
from fake_pynvml import (FakeGpu, FakePynvml, NVMLError_DriverNotLoaded,  # noqa: E402
                         NVMLError_FunctionNotFound, NVMLError_LibraryNotFound,
                         NVMLError_Unknown, install)

from gpu_course.measure import nvml  # noqa: E402
from tools.monitor_vs_smi import nvidia_smi_query  # noqa: E402


@pytest.fixture
def use_fake(monkeypatch):
    """Build a FakePynvml with the given arguments and make gpu_course.measure.nvml use it."""
    def use(*args, **kwargs):
        return install(monkeypatch, FakePynvml(*args, **kwargs))
    return use


def raising(error_class):
    def fn(*args):
        raise error_class()
    return fn


# -- no NVML ----------------------------------------------------------------------------

def test_missing_binding_is_reported_not_raised(monkeypatch):
    install(monkeypatch, None)   # sys.modules["pynvml"] = None: import pynvml fails
    assert not nvml.available()
    assert "nvidia-ml-py" in nvml.init_error()
    assert nvml.gpu_count() == 0
    assert nvml.driver_version() is None and nvml.cuda_driver_version() is None
    assert nvml.gpus_info() == []


@pytest.mark.parametrize("error, words", [
    (NVMLError_LibraryNotFound, "driver library not found (libnvidia-ml.so)"),
    (NVMLError_DriverNotLoaded, "driver not loaded"),
    (NVMLError_Unknown, "Unknown Error"),
])
def test_no_driver_is_explained(use_fake, error, words):
    use_fake(2, init_error=error)
    assert not nvml.available()
    assert nvml.init_error().startswith("NVML unavailable: ")
    assert words in nvml.init_error()
    assert "sampling CPU only" in nvml.init_error()
    assert nvml.gpu_count() == 0
    with pytest.raises(ValueError, match="no GPUs"):
        nvml.sample(0)


def test_real_binding_on_this_machine(monkeypatch):
    pytest.importorskip("pynvml")
    monkeypatch.setattr(nvml, "_state", None)   # initialise afresh, restored afterwards
    if nvml.available():   # a GPU machine
        assert nvml.init_error() is None
        assert nvml.gpu_count() == len(nvml.gpus_info())
        if nvml.gpu_count():
            assert set(nvml.sample(0)) == set(nvml.SAMPLE_KEYS)
        nvml.shutdown()
        return
    assert nvml.gpu_count() == 0
    assert nvml.init_error().startswith("NVML unavailable")
    if not os.path.exists("/dev/nvidiactl"):    # no driver here: it must say so
        assert "driver" in nvml.init_error()


# -- sampling ---------------------------------------------------------------------------------

def test_sample_reads_every_metric_in_schema_units(use_fake):
    gpu = FakeGpu(util_gpu=97, util_mem=41, mem_used_mib=10240.5, memory_total_mib=81559.0,
                  power_w=312.5, power_limit_w=700.0, temp_c=65, sm_clock_mhz=1755,
                  sm_clock_max_mhz=1980, clock_event_reasons=0)
    use_fake([gpu], driver_version="550.54.15", cuda_version=12040)
    assert nvml.available() and nvml.init_error() is None and nvml.gpu_count() == 1
    assert nvml.sample(0) == {
        "util_gpu": 97, "util_mem": 41, "mem_used_mib": 10240.5, "mem_total_mib": 81559.0,
        "power_w": 312.5, "power_limit_w": 700.0, "temp_c": 65, "sm_clock_mhz": 1755,
        "sm_clock_max_mhz": 1980, "clock_event_reasons": "", "sm_active": None,
        "tensor_active": None, "dram_active": None, "error": None}
    assert nvml.driver_version() == "550.54.15"
    assert nvml.cuda_driver_version() == "12.4"
    assert nvml.gpu_info(0) == {"index": 0, "name": "NVIDIA H100 80GB HBM3", "error": None,
                                "memory_total_mib": 81559.0, "compute_capability": "9.0"}


def test_unsupported_metric_is_none_and_not_an_error(use_fake):
    fake = use_fake(1)
    fake.gpus[0].unsupported.update({"power_w", "power_limit_w", "temp_c"})
    row = nvml.sample(0)
    assert row["power_w"] is None and row["power_limit_w"] is None and row["temp_c"] is None
    assert row["util_gpu"] == 50 and row["mem_used_mib"] == 1024.0
    assert row["error"] is None


def test_failing_metric_sets_error_and_keeps_the_others(use_fake):
    fake = use_fake(1)
    fake.gpus[0].failing["power_w"] = NVMLError_Unknown
    row = nvml.sample(0)
    assert row["power_w"] is None
    assert row["error"] == "power_w: Unknown Error"
    assert row["util_gpu"] == 50 and row["temp_c"] == 60


def test_lost_gpu_reports_error_and_is_not_queried_again(use_fake):
    fake = use_fake(2)
    fake.gpus[1].lost_after = 2
    rows = [nvml.sample(1) for _ in range(4)]
    assert [row["error"] for row in rows] == [None, None, "GPU is lost", "GPU is lost"]
    assert all(value is None for row in rows[2:] for key, value in row.items() if key != "error")
    queries = fake.calls["nvmlDeviceGetUtilizationRates"]
    nvml.sample(1)
    assert fake.calls["nvmlDeviceGetUtilizationRates"] == queries   # a lost GPU can hang calls
    assert nvml.sample(0)["error"] is None and nvml.sample(0)["util_gpu"] == 50


def test_handle_is_cached_and_a_failed_lookup_recorded_then_retried(use_fake):
    fake = use_fake(1)
    fake.nvmlDeviceGetHandleByIndex = raising(NVMLError_Unknown)
    row = nvml.sample(0)
    assert row["error"] == "handle: Unknown Error" and row["util_gpu"] is None
    del fake.nvmlDeviceGetHandleByIndex          # the lookup works again
    for _ in range(3):
        assert nvml.sample(0)["util_gpu"] == 50
    assert fake.calls["nvmlDeviceGetHandleByIndex"] == 2


def test_bad_index_is_a_value_error(use_fake):
    use_fake(2)
    for bad in (2, -1, "0"):
        with pytest.raises(ValueError, match=r"allowed 0\.\.1"):
            nvml.sample(bad)


def test_shutdown_forgets_state_and_next_call_initialises_again(use_fake):
    fake = use_fake(1)
    assert nvml.gpu_count() == 1 and fake.initialised == 1
    nvml.shutdown()
    assert fake.initialised == 0
    nvml.shutdown()                               # twice is harmless
    assert nvml.sample(0)["error"] is None and fake.initialised == 1


# -- clock event reasons ------------------------------------------------------------------------

@pytest.mark.parametrize("mask, words", [(0, ""), (0x4 | 0x8, "sw_power_cap|hw_slowdown"),
                                         (0x1000, "0x1000")])
def test_clock_event_reasons_are_named_bits(use_fake, mask, words):
    use_fake([FakeGpu(clock_event_reasons=mask)])
    assert nvml.sample(0)["clock_event_reasons"] == words
    named = set(nvml.CLOCK_EVENT_REASONS.values())
    assert {"gpu_idle", "sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal",
            "hw_power_brake", "applications_clocks", "sync_boost", "display_clocks"} <= named


def test_clock_reasons_from_old_binding_use_throttle_reasons(use_fake):
    fake = use_fake([FakeGpu(clock_event_reasons=0x1 | 0x40)], old_binding=True)
    assert nvml.sample(0)["clock_event_reasons"] == "gpu_idle|hw_thermal"
    assert "nvmlDeviceGetCurrentClocksEventReasons" not in fake.calls
    assert fake.calls["nvmlDeviceGetCurrentClocksThrottleReasons"] == 1


def test_old_driver_functions_fall_back(use_fake):
    fake = use_fake([FakeGpu(clock_event_reasons=0x4, temp_c=71)])
    fake.nvmlDeviceGetCurrentClocksEventReasons = raising(NVMLError_FunctionNotFound)
    fake.nvmlDeviceGetTemperature = raising(NVMLError_FunctionNotFound)
    fake.nvmlDeviceGetTemperatureV = lambda handle, sensor: 71
    row = nvml.sample(0)
    assert row["clock_event_reasons"] == "sw_power_cap"
    assert row["temp_c"] == 71
    assert row["error"] is None


# -- GPM ----------------------------------------------------------------------------------------

def test_gpm_unsupported_gives_none(use_fake):
    use_fake(1)
    assert [nvml.sample(0)["sm_active"] for _ in range(3)] == [None, None, None]


def test_gpm_missing_from_old_binding_gives_none(use_fake):
    use_fake([FakeGpu(gpm=True)], old_binding=True)
    assert nvml.sample(0)["tensor_active"] is None and nvml.sample(0)["error"] is None


def test_gpm_metrics_span_the_previous_and_the_current_sample(use_fake):
    fake = use_fake([FakeGpu(gpm=True), FakeGpu(gpm=False)])
    board = fake.gpus[0]
    seen = []
    for sm, tensor in ((10, 0), (30, 40), (50, 40)):
        board.sm_active, board.tensor_active = sm, tensor
        row = nvml.sample(0)
        seen.append((row["sm_active"], row["tensor_active"]))
    # the fake reports the mean of the two samples' values: (10+30)/2, then (30+50)/2
    assert seen == [(None, None), (20.0, 20.0), (40.0, 40.0)]
    assert nvml.sample(1)["sm_active"] is None
    nvml.shutdown()
    assert fake.freed_gpm_samples == 2


# -- nvidia-smi ---------------------------------------------------------------------------------

def fake_nvidia_smi(folder, output, returncode=0):
    script = folder / "nvidia-smi"
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{output}EOF\nexit {returncode}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


def test_nvidia_smi_query_parses_rows(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path, "0, 97, 10240, [N/A], NVIDIA H100\n1, 3, 512.5, 250.1, NVIDIA H100\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")  # ours first
    rows = nvidia_smi_query(["index", "utilization.gpu", "memory.used", "power.draw", "name"])
    assert rows == [
        {"index": 0, "utilization.gpu": 97, "memory.used": 10240, "power.draw": None,
         "name": "NVIDIA H100"},
        {"index": 1, "utilization.gpu": 3, "memory.used": 512.5, "power.draw": 250.1,
         "name": "NVIDIA H100"}]


def test_nvidia_smi_query_without_nvidia_smi_or_failing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert nvidia_smi_query("index,utilization.gpu") is None
    fake_nvidia_smi(tmp_path, "NVIDIA-SMI has failed\n", returncode=9)
    assert nvidia_smi_query("index,utilization.gpu") is None


def test_nvidia_smi_query_rejects_bad_fields():
    with pytest.raises(ValueError, match="nvidia-smi fields"):
        nvidia_smi_query(["index", "name; rm -rf /"])
    with pytest.raises(ValueError):
        nvidia_smi_query([])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_initialises_nvml_afresh(use_fake):
    fake = use_fake(1)
    assert nvml.sample(0)["error"] is None and fake.initialised == 1
    pid = os.fork()
    if pid == 0:   # child: a DataLoader worker, say; it must not reuse the parent's handles
        fine = nvml.sample(0)["error"] is None and fake.initialised == 2
        os._exit(0 if fine else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_memory_used_leaves_out_the_drivers_reserve_as_nvidia_smi_does(use_fake, monkeypatch):
    """NVML's v1 memory query counts the driver's reserve as used (615 MiB more than
    nvidia-smi's memory.used on an H200); the monitor asks v2, and falls back to v1."""
    fake = use_fake([FakeGpu(mem_used_mib=1637.0, reserved_mib=615.0)])
    assert nvml.sample(0)["mem_used_mib"] == 1637.0
    monkeypatch.delattr(type(fake), "nvmlMemory_v2")  # an older binding: v1 only
    nvml.shutdown()
    assert nvml.sample(0)["mem_used_mib"] == 2252.0
