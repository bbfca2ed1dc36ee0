"""The GPU counters' findings (throttled, memory-bound, SMs idle) and the FLOP/s line in
the diagnosis, on runs recorded by the real monitor from a fake NVML."""
import time

from fake_pynvml import FakePynvml, install
from gpu_course.analyse import diagnose, signals
from gpu_course.config import Experiment
from gpu_course.measure.harness import Harness, Output


def record(monkeypatch, runs_dir, **board):
    """A two-epoch run whose monitor samples one fake H100 set up as `board` says."""
    fake = FakePynvml(1)
    fake.gpus[0].gpm = True
    for key, value in board.items():
        setattr(fake.gpus[0], key, value)
    install(monkeypatch, fake)
    cfg = Experiment(name="fake", engine="pytorch", epochs=2, warmup_steps=0,
                     monitor_interval=0.02, train_size=640, num_workers=0)
    with Harness(cfg, output=Output(runs_dir=runs_dir, progress=False, verbose=False)) as h:
        for _ in h.epochs():
            for _ in h.batches(range(12)):  # 24 steady steps: enough to rule on
                time.sleep(0.03)   # a step the GPU is said to be busy with
                h.step(64)
            h.end_epoch()
    return h.run


def test_a_hot_gpu_is_throttled(monkeypatch, runs_dir):
    run = record(monkeypatch, runs_dir, util_gpu=98, clock_event_reasons=0x020 | 0x004,
                 sm_clock_mhz=1410, temp_c=88)
    names = [name for name, _ in signals.findings(run)]
    assert "throttled" in names
    d = diagnose.diagnose(run)
    assert "throttled" in d.findings and "(also: throttled" in str(d)
    assert "sw_power_cap, sw_thermal" in str(d) and "SM clock 1410 of 1980 MHz" in str(d)


def test_dram_bandwidth_says_memory_bound(monkeypatch, runs_dir):
    run = record(monkeypatch, runs_dir, util_gpu=97, dram_active=85.0, sm_active=75.0)
    found = dict(signals.findings(run))
    assert "memory-bound" in found and "DRAM bandwidth 85%" in found["memory-bound"]
    assert "throttled" not in found and "GPU busy but SMs idle" not in found


def test_busy_gpu_with_idle_sms(monkeypatch, runs_dir):
    run = record(monkeypatch, runs_dir, util_gpu=100, sm_active=12.0, dram_active=5.0)
    found = dict(signals.findings(run))
    assert list(found) == ["GPU busy but SMs idle"]
    assert "GPU-Util 100% but only 12% SM activity" in found["GPU busy but SMs idle"]
    d = diagnose.diagnose(run)
    assert d.verdict == "compute-bound"          # busy from the lecture's 90 %
    assert "compute-bound at " in str(d) and "% of peak" in str(d)  # H100 from the table


def test_busy_means_90_percent():
    assert diagnose.GPU_BUSY == 90.0


def test_a_gpu_without_gpm_shows_no_gpm_findings(monkeypatch, runs_dir):
    run = record(monkeypatch, runs_dir, util_gpu=99, gpm=False)
    assert signals.findings(run) == []


def test_a_run_too_short_to_rule_on_still_reports_its_gpus_counters(monkeypatch, runs_dir):
    run = record(monkeypatch, runs_dir, util_gpu=98, clock_event_reasons=0x020 | 0x004,
                 sm_clock_mhz=1410, temp_c=88)
    d = diagnose.diagnose(run, compute_ceiling=run.summary["samples_per_sec"] / 2)
    assert d.verdict == diagnose.UNRELIABLE and "throttled" in d.findings
