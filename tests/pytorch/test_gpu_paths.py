"""The code paths only a CUDA GPU takes (marked `gpu`: CI has none and skips them; they
ran on an NVIDIA H200, see gpu_course/reference/pytorch-h200/README.md).

Each test trains for real on the GPU and reads what the run record says ran."""
import math
import time

import pytest
import torch

from gpu_course.measure import nvml
from gpu_course.tracks import torch as gc
from gpu_course.experiments import sweep
from gpu_course.measure.monitor import GpuMonitor
from gpu_course.measure.records import OutOfMemory

pytestmark = pytest.mark.gpu


@pytest.fixture
def gpu_cfg(small_cfg):
    """A few seconds on a GPU: ResNet-20 on 2,048 images."""
    return small_cfg.replace(model="resnet20", train_size=2048, test_size=512,
                             batch_size=128, num_gpus=1, epochs=2)


def _finished_on_cuda(run):
    assert run.status == "finished", run.meta.get("error")
    assert run.meta.get("downgrades", []) == [], run.meta["downgrades"]
    assert run.meta["ran"]["torch_device"].startswith("cuda"), run.meta["ran"]
    assert run.epochs["loss"].map(math.isfinite).all()


def test_float16_trains_with_a_grad_scaler_on_cuda(gpu_cfg):
    from gpu_course.tracks.torch.loop import Precision
    precision = Precision("float16", torch.device("cuda"))
    assert precision.scaler is not None and precision.scaler.is_enabled()
    run = gc.train(gpu_cfg.replace(dtype="float16"), progress=False, verbose=False)
    _finished_on_cuda(run)
    assert run.config["dtype"] == "float16" and not run.meta["requested"]
    assert run.epochs["loss"].iloc[-1] < run.epochs["loss"].iloc[0]


def test_cudnn_benchmark_is_on_and_recorded(gpu_cfg):
    run = gc.train(gpu_cfg.replace(epochs=1), progress=False, verbose=False)
    _finished_on_cuda(run)
    assert torch.backends.cudnn.benchmark is True
    assert run.meta["ran"]["cudnn_benchmark"] is True
    assert "tf32" in run.meta["ran"], run.meta["ran"]  # TF32 is stated on CUDA


def test_the_data_on_gpu_loader_cuts_batches_on_the_device(gpu_cfg):
    cfg = gpu_cfg.replace(data_on_gpu=True, num_workers=0, dtype="bfloat16",
                          channels_last=True)
    net, train_iter, val_iter, _ = gc.build(cfg)
    x, y = next(iter(train_iter))
    assert x.device.type == "cuda" and y.device.type == "cuda"
    assert x.shape == (cfg.batch_size, 3, 32, 32) and x.dtype == torch.bfloat16
    run = gc.train(cfg, progress=False, verbose=False)
    _finished_on_cuda(run)
    # no loader worker: the data wait is the cut on the device, a small share of a step
    assert run.summary["data_wait_share"] < 0.5, run.summary


def test_the_whole_step_runs_as_one_cuda_graph(gpu_cfg):
    cfg = gpu_cfg.replace(graph="static", data_on_gpu=True, num_workers=0,
                          dtype="bfloat16", channels_last=True, optimizer="lars",
                          optimizer_params=(("eta", 0.1),), batch_size=256,
                          lr_scheduler="onecycle", epochs=3)
    run = gc.train(cfg, progress=False, verbose=False)
    _finished_on_cuda(run)
    assert run.config["graph"] == "static"
    assert "no CUDA graphs" not in str(run.meta["ran"])
    assert run.epochs["loss"].iloc[-1] < run.epochs["loss"].iloc[0]


def test_reduce_overhead_graphs_without_the_whole_step(gpu_cfg):
    """graph='static' with a DataLoader: torch.compile(mode='reduce-overhead')."""
    run = gc.train(gpu_cfg.replace(graph="static", epochs=1), progress=False, verbose=False)
    _finished_on_cuda(run)


def test_an_absurd_batch_is_a_clear_oom_and_the_sweep_goes_on(gpu_cfg, capsys):
    # ResNet-20 keeps ~2 MB of activations per 32x32 image: 131,072 of them want ~270 GB
    absurd = 131_072
    cfg = gpu_cfg.replace(data_on_gpu=True, num_workers=0, train_size=absurd, test_size=512,
                          epochs=1)
    runs = sweep(lambda c, **kw: gc.train(c, progress=False, verbose=False), cfg,
                 "batch_size", [256, absurd, 512])
    assert [r.status for r in runs] == ["finished", "oom", "finished"]
    out = capsys.readouterr().out
    assert f"batch_size={absurd}: out of memory, going on" in out
    error = runs[1].meta["error"]
    assert f"batch_size={absurd} per device does not fit on cuda" in error
    assert "MiB were free" in error
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    assert free > 0.5 * total  # the failed run's tensors were freed


def test_an_oom_after_finished_epochs_keeps_them(gpu_cfg):
    """Another program takes the GPU's memory after the first epoch (a real allocation):
    the run ends 'oom' with its first epoch kept."""
    hog = []

    def take_the_memory(row):
        if row["epoch"] == 0:
            torch.cuda.empty_cache()  # the run's cached blocks go back to the driver
            free, _ = torch.cuda.mem_get_info()
            hog.append(torch.empty(free - 64 * 2**20, dtype=torch.uint8, device="cuda"))

    with pytest.raises(OutOfMemory) as caught:
        gc.train(gpu_cfg.replace(epochs=3, batch_size=512), progress=False, verbose=False,
                 on_epoch=take_the_memory)
    hog.clear()
    torch.cuda.empty_cache()
    run = gc.load_run(caught.value.run_path)
    assert run.status == "oom" and list(run.epochs["epoch"]) == [0]
    assert "does not fit on cuda" in run.meta["error"]


def test_ddp_with_nccl_at_world_size_one(gpu_cfg, tmp_path):
    from gpu_course.tracks.torch import ddp
    cfg_file = tmp_path / "config.json"
    cfg_file.write_text(gpu_cfg.replace(epochs=1).to_json())
    result = tmp_path / "run_path"
    import os
    import subprocess
    import sys
    env = {**os.environ, "PYTHONPATH": str(ddp.__file__).rsplit("/gpu_course/", 1)[0]}
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1",
         "-m", "gpu_course.tracks.torch.ddp", "--config", str(cfg_file), "--runs-dir",
         str(tmp_path / "runs"), "--result-file", str(result), "--quiet"],
        env=env, capture_output=True, text=True, timeout=300)
    said = done.stdout + done.stderr
    first_error = [line for line in said.splitlines() if "Error" in line or "error" in line]
    assert done.returncode == 0, "\n".join(first_error[:20]) + said[-1500:]
    run = gc.load_run(result.read_text().strip())
    assert run.status == "finished"
    assert run.meta["notes"]["backend"] == "nccl", run.meta["notes"]


def test_the_monitor_reads_a_real_driver():
    assert nvml.available(), nvml.init_error()
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    with GpuMonitor(interval=0.2) as mon:
        t_end = time.monotonic() + 3.0
        while time.monotonic() < t_end:
            for _ in range(20):
                a @ a
            torch.cuda.synchronize()
    gpu = mon.gpu_frame()
    busy = gpu[gpu["t"] > 1.0]
    assert len(busy) >= 5 and busy["error"].isna().all(), gpu.tail()
    assert busy["util_gpu"].median() >= 90, busy["util_gpu"].tolist()
    assert busy["mem_used_mib"].min() > 128  # the 8192^2 operands and cuBLAS's workspace
    assert busy["power_w"].median() > 100 and busy["sm_clock_mhz"].median() > 500
    if torch.cuda.get_device_capability(0)[0] >= 9:  # Hopper: SM and tensor-core activity from GPM
        assert busy["sm_active"].dropna().median() > 50
        assert busy["tensor_active"].dropna().median() > 10


def test_the_capstone_s_reference_solution_is_steady_on_the_gpu(tmp_path, record_property):
    """Lesson 16 at the GPU check's size: the job as given is "not yet", the reference
    solution passes all three criteria; the check's sentences go into the JUnit report."""
    from exercise_cells import check_track
    results = check_track("pytorch", "16", tmp_path, size="check")
    solved = results["16.1"]["solution"]
    assert solved["passed"], solved["message"]   # a GPU of its own: nothing else moves its speed
    for variant in ("untouched", "solution"):
        record_property(f"capstone {variant}", results["16.1"][variant]["message"])
