"""The SageMaker entry script running the PyTorch track end to end, as a real subprocess
started the way SDK v3's drivers start it in the PyTorch container: plainly, and under
torchrun as its Torchrun driver does for a multi-instance job (see tests/test_sagemaker.py)."""
import sys

import torch

from gpu_course.tracks import torch as gc
from test_sagemaker import check_job_output, run_entry_as_sagemaker

SMALL = dict(name="sm-test", engine="pytorch", model="tiny", train_size=256, test_size=128,
             batch_size=64, num_workers=0, num_gpus=0, warmup_steps=1, monitor_interval=0.1)


def test_entry_script_trains_and_leaves_what_sagemaker_collects(tmp_path):
    cfg = gc.Experiment(**SMALL, epochs=2)
    out = run_entry_as_sagemaker(tmp_path, cfg, launcher=[sys.executable])
    run = check_job_output(tmp_path, out, cfg, model_file="model.pt")
    assert run.meta["engine"] == "pytorch"
    net = gc.get_model(cfg)  # the saved weights load into the network the config names
    net.load_state_dict(torch.load(tmp_path / "model" / "model.pt"))
    assert net(torch.zeros(1, 3, 32, 32)).shape == (1, 10)


def test_entry_script_under_torchrun_trains_one_ddp_job(tmp_path):
    """Torchrun: torchrun starts one entry process per device; together they
    are one DistributedDataParallel run, recorded once by rank 0."""
    cfg = gc.Experiment(**SMALL, epochs=1)
    out = run_entry_as_sagemaker(tmp_path, cfg, launcher=[
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"])
    run = check_job_output(tmp_path, out, cfg.replace(num_gpus=2))
    assert run.meta["ran"]["world_size"] == 2
    assert "model: not saved" in out.stdout
