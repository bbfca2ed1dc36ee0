"""gpu_course.env: the environment report, with and without a GPU (fake NVML)."""
import json

from fake_pynvml import FakePynvml, install
from gpu_course import env, env_text, nvml
from support import run_cli


def test_env_without_a_gpu_says_so_and_still_reads_the_cpu():
    done = run_cli("env", "--json", "--no-measure", timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    if not report["gpu"]["available"]:          # this machine has no GPU
        assert report["gpu"]["reason"]
        text = env_text.gpu_lines(report)[0]
        assert text.startswith("GPU: no GPU (")
    assert report["cpu"]["usable"] >= 1 and report["workers_per_process"] >= 1
    assert report["build"]["framework"] in ("mxnet", "torch")
    assert {row["variable"] for row in report["openmp"]} >= {"KMP_BLOCKTIME", "OMP_NUM_THREADS"}


def test_env_text_on_this_machine_measures_the_cpu():
    done = run_cli("env", "--quick", timeout=600)
    assert done.returncode == 0, done.stderr
    assert "oneDNN on:" in done.stdout and "threads: 1 ->" in done.stdout
    assert "disk (" in done.stdout and "MB/s" in done.stdout


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


def test_thread_counts_and_workers():
    assert env.thread_counts(1) == [1]
    assert env.thread_counts(6) == [1, 2, 4, 6]
    assert env.workers_per_process(10_000) == 1
