"""The SageMaker entry script running the Gluon track end to end, as a real subprocess
started the way the MXNet container starts it (see tests/test_sagemaker.py)."""
import sys

import mxnet as mx

from gpu_course import gluon as gc
from test_sagemaker import check_job_output, run_entry_as_sagemaker


def test_entry_script_trains_and_leaves_what_sagemaker_collects(tmp_path):
    cfg = gc.Experiment(name="sm-test", engine="gluon", model="tiny", train_size=256,
                        test_size=128, batch_size=64, epochs=2, num_workers=0, num_gpus=0,
                        warmup_steps=1, monitor_interval=0.1)
    out = run_entry_as_sagemaker(tmp_path, cfg, launcher=[sys.executable])
    run = check_job_output(tmp_path, out, cfg, model_file="model.params")
    assert run.meta["engine"] == "gluon"
    net = gc.get_model(cfg)  # the saved weights load into the network the config names
    net.load_parameters(str(tmp_path / "model" / "model.params"), ctx=mx.cpu())
    assert net(mx.nd.zeros((1, 3, 32, 32))).shape == (1, 10)


def test_each_host_of_a_parameter_server_job_keeps_its_own_record(tmp_path):
    cfg = gc.Experiment(name="sm-test", engine="gluon", model="tiny", train_size=128,
                        test_size=64, batch_size=64, epochs=1, num_workers=0, num_gpus=0,
                        warmup_steps=1, monitor_interval=0.1)
    out = run_entry_as_sagemaker(tmp_path, cfg, launcher=[sys.executable],
                                 hosts=("algo-2", "algo-1"))
    assert "one of 2 hosts" in out.stdout
    run = check_job_output(tmp_path, out, cfg.replace(name="sm-test@algo-2"))
    assert run.name == "sm-test@algo-2"
    # SageMaker merges the hosts' model folders: each host writes into its own
    assert (tmp_path / "model" / "algo-2" / "model.params").exists()
