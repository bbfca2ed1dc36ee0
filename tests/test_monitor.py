"""GpuMonitor: schedule, faults, markers, saving and the recorder behind `gpu-course monitor`."""
import _thread
import io
import sys
import threading
import time
import warnings
from pathlib import Path

import pandas as pd
import psutil
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # for fake_pynvml, whatever pytest's import mode
from fake_pynvml import FakeGpu, FakePynvml, NVMLError_LibraryNotFound, install  # noqa: E402

from gpu_course.measure import monitor as monitor_module, records  # noqa: E402
from gpu_course.measure.monitor import GPU_COLUMNS, HOST_COLUMNS, MARKER_COLUMNS, GpuMonitor, GpuUnavailableWarning, next_tick, record_to_csv

pytestmark = pytest.mark.filterwarnings("ignore::gpu_course.measure.monitor.GpuUnavailableWarning")

# the run-record schema (spec_records.md), spelled out to catch drift
SCHEMA_GPU = ["t", "gpu", "util_gpu", "util_mem", "mem_used_mib", "mem_total_mib", "power_w",
              "power_limit_w", "temp_c", "sm_clock_mhz", "sm_clock_max_mhz",
              "clock_event_reasons", "sm_active", "tensor_active", "dram_active", "error"]
SCHEMA_HOST = ["t", "cpu_percent", "cpu_per_core", "ram_used_mib", "ram_total_mib"]
SCHEMA_MARKERS = ["t", "label"]


@pytest.fixture
def use_fake(monkeypatch):
    """Build a FakePynvml with the given arguments and make gpu_course.measure.nvml use it."""
    def use(*args, **kwargs):
        return install(monkeypatch, FakePynvml(*args, **kwargs))
    return use


@pytest.fixture
def no_driver(use_fake):
    return use_fake(1, init_error=NVMLError_LibraryNotFound)


def wait_for(monitor, ticks, timeout=10.0):
    deadline = time.monotonic() + timeout
    while monitor.ticks < ticks:
        assert time.monotonic() < deadline, f"only {monitor.ticks} ticks in {timeout} s"
        time.sleep(0.005)


def recorded(monitor, ticks, **kwargs):
    """Run a started-and-stopped monitor for at least `ticks` sampling rounds."""
    with monitor:
        wait_for(monitor, ticks, **kwargs)
    return monitor


def test_columns_match_the_run_record_schema():
    assert list(GPU_COLUMNS) == SCHEMA_GPU
    assert list(HOST_COLUMNS) == SCHEMA_HOST
    assert list(MARKER_COLUMNS) == SCHEMA_MARKERS


def test_cpu_only_records_host_rows_and_warns_once(no_driver):
    import gpu_course.measure.monitor as monitor_module
    monitor_module._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mon = recorded(GpuMonitor(interval=0.02), ticks=5)
        GpuMonitor(interval=0.02)  # a second monitor in the same process stays quiet
    notices = [w for w in caught if issubclass(w.category, GpuUnavailableWarning)]
    assert len(notices) == 1
    assert "NVML unavailable" in str(notices[0].message)
    assert mon.available_gpus == [] and "libnvidia-ml.so" in mon.notice
    gpu, host = mon.gpu_frame(), mon.host_frame()
    assert gpu.empty and list(gpu.columns) == SCHEMA_GPU
    assert len(host) >= 5
    cores = host["cpu_per_core"].iloc[-1].split(";")
    assert len(cores) == psutil.cpu_count()
    assert all(0.0 <= float(c) <= 100.0 for c in cores)
    assert host["cpu_percent"].between(0, 100).all()
    assert (host["ram_used_mib"] > 0).all() and (host["ram_total_mib"] >= host["ram_used_mib"]).all()


def test_every_gpu_gets_a_row_per_tick_with_the_same_t(use_fake):
    use_fake([FakeGpu(util_gpu=80), FakeGpu(util_gpu=40)])
    mon = recorded(GpuMonitor(interval=0.02), ticks=4)
    gpu = mon.gpu_frame()
    assert mon.available_gpus == [0, 1] and mon.notice is None
    assert len(gpu) == 2 * mon.ticks
    assert (gpu.groupby("t")["gpu"].apply(list) == pd.Series([[0, 1]] * mon.ticks,
            index=gpu["t"].unique())).all()
    assert list(gpu.loc[gpu.gpu == 0, "util_gpu"].unique()) == [80.0]
    assert gpu["error"].isna().all()


def test_interval_is_validated(use_fake):
    use_fake(2)
    with pytest.raises(ValueError, match="interval"):
        GpuMonitor(interval=0)


def test_unsupported_metric_is_nan_while_the_others_are_recorded(use_fake):
    fake = use_fake(1)
    fake.gpus[0].unsupported.add("power_w")
    gpu = recorded(GpuMonitor(interval=0.02), ticks=3).gpu_frame()
    assert gpu["power_w"].isna().all()
    assert (gpu["util_gpu"] == 50).all() and (gpu["temp_c"] == 60).all()
    assert gpu["error"].isna().all()


def test_gpu_lost_mid_run_is_recorded_and_sampling_goes_on(use_fake):
    fake = use_fake(2)
    fake.gpus[1].lost_after = 3
    mon = recorded(GpuMonitor(interval=0.02), ticks=8)
    gpu = mon.gpu_frame()
    lost = gpu[gpu.gpu == 1].reset_index(drop=True)
    assert lost["error"].iloc[:3].isna().all()
    assert (lost["error"].iloc[3:] == "GPU is lost").all()
    assert lost["util_gpu"].iloc[3:].isna().all() and lost["mem_used_mib"].iloc[3:].isna().all()
    healthy = gpu[gpu.gpu == 0]
    assert len(healthy) == len(lost) == mon.ticks >= 8
    assert healthy["error"].isna().all() and (healthy["util_gpu"] == 50).all()
    assert mon.last_error is None


def test_next_tick_keeps_the_grid_and_skips_missed_ticks():
    assert next_tick(0, 0.001, 0.1) == 1      # on time: the next tick
    assert next_tick(3, 0.35, 0.1) == 4       # a bit late: still the next one
    assert next_tick(3, 0.72, 0.1) == 8       # ticks 4..7 overrun: skipped, no burst


def test_the_schedule_does_not_drift_however_late_each_sample_wakes():
    """The schedule's arithmetic, with the lateness a busy machine gives (a sample that
    wakes up to most of an interval late, 1,000 times): each tick stays on its own grid
    point, so the delays never add up."""
    import random
    rng, interval, tick = random.Random(0), 0.05, 0
    for _ in range(1000):
        woke = tick * interval + rng.uniform(0, 0.9 * interval)   # late, by less than a tick
        following = next_tick(tick, woke, interval)
        assert following == tick + 1   # the next grid point, whatever the lateness
        tick = following
    assert tick * interval == pytest.approx(50.0)   # 1,000 ticks: 50 s, not 50 s + delays


def test_the_monitor_samples_on_its_grid(no_driver):
    """Real threads: each sample lands on a grid point of its own, in order, never before
    it. How late it lands is the machine's to decide (a busy one is later), so that is not
    asserted here; the arithmetic above shows it never accumulates."""
    interval = 0.05
    mon = recorded(GpuMonitor(interval=interval), ticks=12)
    t = mon.host_frame()["t"]
    grid = (t + 0.002) // interval   # the grid point each sample belongs to (clock rounding aside)
    assert grid.is_monotonic_increasing and grid.is_unique, t.tolist()
    late = t - grid * interval   # how far each sample is past its grid point
    assert (late >= -0.002).all(), late.tolist()


def test_slow_sampling_skips_ticks_instead_of_bursting(use_fake):
    fake = use_fake(1)
    query = fake.nvmlDeviceGetUtilizationRates

    def slow(handle):
        time.sleep(0.05)       # 2.5 intervals
        return query(handle)
    fake.nvmlDeviceGetUtilizationRates = slow
    mon = recorded(GpuMonitor(interval=0.02), ticks=5)
    gaps = mon.gpu_frame()["t"].diff().dropna()
    assert mon.missed_ticks > 0
    assert (gaps > 0.045).all(), gaps.tolist()   # never two samples in quick succession


def test_markers_are_on_the_monitor_clock(no_driver):
    with GpuMonitor(interval=0.02) as mon:
        wait_for(mon, 2)
        before = mon.now()
        t = mon.mark("epoch 1 start")
        after = mon.now()
        wait_for(mon, mon.ticks + 2)
    assert before <= t <= after
    assert abs(mon.t0_wall + t - time.time()) < 5.0
    markers = mon.markers_frame()
    assert list(markers.columns) == SCHEMA_MARKERS
    assert markers.values.tolist() == [[t, "epoch 1 start"]]
    host_t = mon.host_frame()["t"]
    assert host_t.min() < t < host_t.max()     # samples on either side of the marker


def test_stop_is_idempotent_and_joins_the_thread(no_driver):
    mon = GpuMonitor(interval=0.02)
    mon.stop()                                  # before start: nothing to do
    mon.start()
    thread = mon._thread
    assert thread.is_alive() and thread.daemon
    mon.stop()
    mon.stop()
    assert not thread.is_alive()
    with pytest.raises(RuntimeError, match="already started"):
        mon.start()
    with pytest.raises(RuntimeError, match="not been started"):
        GpuMonitor().now()


def test_context_manager_stops_on_exception(no_driver):
    with pytest.raises(ZeroDivisionError):
        with GpuMonitor(interval=0.02) as mon:
            1 / 0
    assert not mon._thread.is_alive()


def test_save_writes_schema_columns_atomically(use_fake, tmp_path):
    use_fake(2)
    with GpuMonitor(interval=0.02) as mon:
        wait_for(mon, 2)
        mon.mark("epoch 1 start")
        wait_for(mon, 4)
    folder = mon.save(tmp_path / "run")
    gpu = pd.read_csv(folder / "gpu.csv")
    assert list(gpu.columns) == SCHEMA_GPU and len(gpu) == 2 * mon.ticks
    assert list(pd.read_csv(folder / "host.csv").columns) == SCHEMA_HOST
    assert pd.read_csv(folder / "markers.csv")["label"].tolist() == ["epoch 1 start"]
    assert sorted(p.name for p in folder.iterdir()) == ["gpu.csv", "host.csv", "markers.csv"]


def test_failed_save_keeps_the_previous_file(use_fake, tmp_path, monkeypatch):
    use_fake(1)
    mon = recorded(GpuMonitor(interval=0.02), ticks=3)
    mon.save(tmp_path)
    before = (tmp_path / "gpu.csv").read_text()

    def disk_full(fd):   # the new file is written, but not to disk
        raise OSError("disk full")
    monkeypatch.setattr(records.os, "fsync", disk_full)
    with pytest.raises(OSError, match="disk full"):
        mon.save(tmp_path)
    assert (tmp_path / "gpu.csv").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpu.csv", "host.csv", "markers.csv"]


def test_save_while_sampling_gives_complete_files(use_fake, tmp_path):
    use_fake(2)
    with GpuMonitor(interval=0.002) as mon:
        sizes = []
        for _ in range(10):
            mon.save(tmp_path)
            frame = pd.read_csv(tmp_path / "gpu.csv")
            assert len(frame) % 2 == 0 and frame["util_gpu"].notna().all()
            sizes.append(len(frame))
    assert sizes == sorted(sizes)


def test_summary_means_per_gpu_then_over_gpus(use_fake):
    use_fake([FakeGpu(util_gpu=80, power_w=300, mem_used_mib=2048),
              FakeGpu(util_gpu=40, power_w=200, mem_used_mib=4096)])
    mon = recorded(GpuMonitor(interval=0.02), ticks=4)
    summary = mon.summary()
    assert summary["gpu_util_mean"] == 60.0
    assert summary["mem_used_max_mib"] == 4096.0
    assert summary["power_w_mean"] == 250.0
    assert summary["sm_active_mean"] is None           # no GPM on these boards
    assert 0.0 <= summary["cpu_percent_mean"] <= 100.0
    assert summary["samples"] == mon.ticks
    empty = GpuMonitor(interval=0.02).summary()   # never started: no samples
    assert empty["samples"] == 0 and empty["gpu_util_mean"] is None
    assert empty["cpu_percent_mean"] is None


def test_status_line_shows_gpus_and_cpu(use_fake):
    use_fake([FakeGpu(util_gpu=97, mem_used_mib=10444.8, memory_total_mib=81920.0,
                      power_w=312, temp_c=65)])
    mon = recorded(GpuMonitor(interval=0.02), ticks=1)
    line = mon.status_line()
    assert line.startswith("t=")
    assert "GPU0 97% 10.2/80.0 GiB 312 W 65C | CPU " in line


def test_record_to_csv_for_some_seconds(use_fake, tmp_path):
    use_fake(1)
    stream = io.StringIO()
    out = tmp_path / "sub" / "gpu.csv"
    samples = record_to_csv(out, seconds=0.3, interval=0.05, stream=stream)
    assert samples >= 3
    gpu = pd.read_csv(out)
    assert list(gpu.columns) == SCHEMA_GPU and len(gpu) == samples
    host = pd.read_csv(tmp_path / "sub" / "gpu-host.csv")
    assert list(host.columns) == SCHEMA_HOST and len(host) == samples
    text = stream.getvalue()
    assert "\rt=" in text and "GPU0 50%" in text and f"{samples} samples" in text


def test_record_to_csv_cpu_only_says_so(no_driver, tmp_path):
    stream = io.StringIO()
    samples = record_to_csv(tmp_path / "gpu.csv", seconds=0.1, interval=0.05, stream=stream)
    assert "NVML unavailable" in stream.getvalue()
    assert "no GPU to sample" in stream.getvalue()
    assert not (tmp_path / "gpu.csv").exists()  # never a header-only file
    assert len(pd.read_csv(tmp_path / "gpu-host.csv")) == samples >= 1
    with pytest.raises(ValueError, match="seconds"):
        record_to_csv(tmp_path / "x.csv", seconds=-1)


def test_record_to_csv_writes_what_it_has_on_ctrl_c(use_fake, tmp_path):
    use_fake(1)
    timer = threading.Timer(0.3, _thread.interrupt_main)   # Ctrl-C in the main thread
    timer.start()
    try:
        samples = record_to_csv(tmp_path / "gpu.csv", interval=0.05, stream=io.StringIO())
    finally:
        timer.cancel()
    assert samples >= 3
    assert len(pd.read_csv(tmp_path / "gpu.csv")) == samples


def test_sampling_thread_survives_an_unexpected_error(no_driver, monkeypatch):
    calls = []

    def flaky(percpu):
        calls.append(1)
        if len(calls) == 3:
            raise OSError("/proc/stat unreadable")
        return real(percpu=percpu)
    real = psutil.cpu_times
    monkeypatch.setattr(monitor_module.psutil, "cpu_times", flaky)
    mon = recorded(GpuMonitor(interval=0.02), ticks=5)
    assert mon.last_error == "OSError: /proc/stat unreadable"
    assert len(mon.host_frame()) == mon.ticks


def test_monitor_vs_smi_judges_each_quantity_against_its_tolerance():
    from tools import monitor_vs_smi as bench
    ours = {"util_gpu": 97, "mem_used_mib": 2000.0, "power_w": 400.0, "sm_clock_mhz": 1980}
    theirs = {"index": 0, "utilization.gpu": 96, "memory.used": 2004, "power.draw": 470.0,
              "clocks.sm": 1980}
    rows = bench.compare(0.05, interval=0.01, ours=lambda i: dict(ours),
                         smi=lambda fields: [dict(theirs)], gpus=[0])
    assert rows and set(rows[0]) >= {"util_gpu_ours", "power_w_smi", "sm_clock_mhz_ours"}
    result = {r["quantity"]: r for r in bench.agreement(rows)}
    assert result["utilization.gpu"]["agrees"] and result["memory.used"]["agrees"]
    assert result["clocks.sm"]["agrees"]
    assert not result["power.draw"]["agrees"]  # 70 W apart: over max(15 W, 5 %)
    assert result["power.draw"]["mean_diff"] == pytest.approx(70.0)
    assert "power.draw" in bench.format_table(bench.agreement(rows))


def test_monitor_vs_smi_is_judged_by_the_median_so_one_clock_change_between_reads_passes():
    """The H200's check: going idle, one pair read 1980 MHz against 420; the other 14 agreed."""
    from tools import monitor_vs_smi as bench
    clocks = [(1980, 1980), (1980, 420)] + [(345, 345)] * 13
    rows = [{"gpu": 0, "sm_clock_mhz_ours": a, "sm_clock_mhz_smi": b, "util_gpu_ours": 0,
             "util_gpu_smi": 0, "mem_used_mib_ours": 0, "mem_used_mib_smi": 0,
             "power_w_ours": 80, "power_w_smi": 80 + 20 * (i % 3 > 0)} for i, (a, b) in enumerate(clocks)]
    result = {r["quantity"]: r for r in bench.agreement(rows)}
    assert result["clocks.sm"]["mean_diff"] == pytest.approx(104)
    assert result["clocks.sm"]["mean_diff"] > result["clocks.sm"]["tolerance"]   # the old rule failed
    assert result["clocks.sm"]["agrees"] and result["clocks.sm"]["median_diff"] == 0
    assert not result["power.draw"]["agrees"]   # two pairs in three 20 W apart: median 20 W > 15


def test_sigterm_to_the_monitor_command_keeps_what_it_sampled(tmp_path):
    """`kill` (SIGTERM) ends a recording as Ctrl-C does: the samples so far are written."""
    import signal
    import subprocess
    import sys
    import time as _time
    out = tmp_path / "m.csv"
    proc = subprocess.Popen([sys.executable, "-m", "gpu_course.cli", "monitor", "--out", str(out),
                             "--interval", "0.2"], cwd=Path(__file__).resolve().parents[1],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    host = tmp_path / "m-host.csv"
    seen, deadline = "", _time.monotonic() + 120
    while _time.monotonic() < deadline and seen.count("\r") < 5:  # 5 status lines: sampling
        seen += _status(proc)
        _time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    stdout = seen + stdout
    assert proc.returncode == 0, stderr
    assert host.exists() and len(host.read_text().splitlines()) > 3   # header and samples
    assert "written to" in stdout and "Traceback" not in stderr


def _status(proc) -> str:
    """Whatever the status line has printed so far (non-blocking)."""
    import os
    import select
    ready, _, _ = select.select([proc.stdout], [], [], 0)
    return os.read(proc.stdout.fileno(), 4096).decode(errors="replace") if ready else ""
