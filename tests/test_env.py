"""gpu_course.env.report: the environment report, with and without a GPU (fake NVML)."""
import json

from fake_pynvml import FakePynvml, install
from gpu_course.env import report as env, text as env_text
from gpu_course.measure import nvml
from support import run_cli


def test_env_without_a_gpu_says_so_and_still_reads_the_cpu():
    done = run_cli("env", "--json", "--no-measure", timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    if not report["gpu"]["available"]:          # this machine has no GPU
        assert report["gpu"]["reason"]
        text = env_text.gpu_lines(report)[0]
        assert text.startswith("GPU: none (")
    assert report["cpu"]["usable"] >= 1 and report["workers_per_process"] >= 1
    assert report["build"]["framework"] in ("mxnet", "torch")
    assert {row["variable"] for row in report["openmp"]} >= {"KMP_BLOCKTIME", "OMP_NUM_THREADS"}


def test_gpu_side_with_a_fake_gpu(monkeypatch):
    fake = FakePynvml(1)
    fake.gpus[0].clock_event_reasons = 0x004 | 0x020   # power cap and thermal slowdown
    fake.gpus[0].pcie_gen, fake.gpus[0].pcie_width = 4, 8
    install(monkeypatch, fake)
    facts = env.gpu_facts()
    gpu = facts["gpus"][0]
    assert facts["available"] and gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["clock_event_reasons"] == "sw_power_cap|sw_thermal"
    assert gpu["pcie_gbps"] == nvml.PCIE_LANE_GBPS[4] * 8
    text = "\n".join(env_text.gpu_lines({"gpu": facts, "copy": None}))
    assert "PCIe gen 4 x8" in text and "SM clock 1755 of 1980 MHz" in text


def test_openmp_settings_say_which_runtime_reads_them(monkeypatch):
    monkeypatch.setenv("KMP_BLOCKTIME", "0")
    rows = {r["variable"]: r for r in env.openmp_settings(["libgomp.so.1.0.0"])}
    assert rows["KMP_BLOCKTIME"]["value"] == "0" and rows["KMP_BLOCKTIME"]["honoured_here"] is False
    assert rows["GOMP_SPINCOUNT"]["honoured_here"] is True
    rows = {r["variable"]: r for r in env.openmp_settings(["libiomp5.so"])}
    assert rows["KMP_AFFINITY"]["honoured_here"] is True


def test_thread_counts():
    assert env.thread_counts(1) == [1]
    assert env.thread_counts(6) == [1, 2, 4, 6]


def test_the_pinned_copy_is_judged_against_the_spread_of_its_copies():
    """PyTorch lesson 11: pageable against pinned is a ratio of medians with the spread of
    the interleaved copies, called faster only outside it."""
    copy = {"available": True, "mib": 256, "pageable_gb_s": 12.0, "pinned_gb_s": 24.0,
            "pageable_all": [11.5, 12.0, 12.4], "pinned_all": [23.0, 24.0, 25.0]}
    assert env_text.copy_sentence(copy) == (
        "host -> device copy of 256 MiB: pageable 12.0 GB/s, pinned 24.0 GB/s (medians of 3 "
        "interleaved pairs): pinned ×2.00, faster (×1.85–×2.17 over 3 copies each)")
    close = {**copy, "pinned_gb_s": 12.2, "pinned_all": [11.0, 12.2, 13.0]}
    assert "pinned ×1.02, within noise (×0.89–×1.13" in env_text.copy_sentence(close)
    lines = env_text.gpu_lines({"gpu": {"available": True, "gpus": [], "driver": "1",
                                        "cuda": "12"}, "copy": copy})
    assert lines[-1] == "  " + env_text.copy_sentence(copy)
