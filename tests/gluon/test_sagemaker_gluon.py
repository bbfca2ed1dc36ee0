"""The SageMaker entry script running the Gluon track end to end, as a real subprocess
started the way the MXNet container starts it (see tests/test_sagemaker.py)."""
import json
import os
import signal
import subprocess
import sys

import mxnet as mx

from gpu_course import data
from gpu_course.measure import records
from gpu_course.tracks import gluon as gc
from gpu_course_sagemaker import launch as launch
from gpu_course.tracks.gluon import dist
from gpu_course.scale.localhosts import free_port
from test_sagemaker import as_argv, check_job_output, entry_job, run_entry_as_sagemaker


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


def test_a_stopped_job_ends_at_a_step_with_its_epochs_and_says_so(tmp_path):
    """StopTrainingJob sends SIGTERM: the run stops at the next step, keeps its finished
    epochs, records status interrupted and writes the failure file; the loader workers
    (forked while the handler was installed) end with it."""
    import psutil
    cfg = gc.Experiment(name="sm-stop", engine="gluon", model="tiny", train_size=256,
                        test_size=64, batch_size=32, epochs=500, num_workers=2,
                        num_gpus=0, warmup_steps=1, monitor_interval=0.1)
    command, code, env = entry_job(tmp_path, cfg)
    proc = subprocess.Popen([sys.executable, *command], cwd=code, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while "METRIC epoch=0" not in proc.stdout.readline():
        assert proc.poll() is None, proc.stderr.read()
    workers = psutil.Process(proc.pid).children(recursive=True)
    assert workers and all(w.status() != psutil.STATUS_ZOMBIE for w in workers)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=120)  # a hang guard, not a timing
    assert proc.returncode == 130 and "Traceback" not in err, err
    failure = (tmp_path / "output" / "failure").read_text()
    assert "stopped by SIGTERM after" in failure and "status interrupted" in failure
    run = records.load_run(next((tmp_path / "output" / "data").iterdir()))
    assert run.status == "interrupted" and "SIGTERM" in run.meta["error"]
    assert len(run.epochs) >= 1
    _, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive


def test_parameter_server_job_trains_one_model_across_hosts(tmp_path):
    """MXNet's parameter_server option, as the MXNet container runs it: a scheduler on the
    first host, a server on every host, and the entry script as each host's worker
    (DMLC_ROLE=worker, DMLC_NUM_WORKER = DMLC_NUM_SERVER = hosts)."""
    cfg = gc.Experiment(name="sm-ps", engine="gluon", model="tiny", train_size=256,
                        test_size=64, batch_size=32, epochs=1, num_workers=0, num_gpus=0,
                        warmup_steps=1, monitor_interval=0.1)
    hosts = ["algo-1", "algo-2"]
    port = free_port()
    code = launch.stage_code("gluon", tmp_path / "code")
    channel = tmp_path / "channel"
    data.prepare(cfg.dataset, root=channel, train_size=cfg.train_size,
                 test_size=cfg.test_size, seed=cfg.seed)
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("SM_", "DMLC_")) and k not in ("PYTHONPATH", "GPU_COURSE_RUNS")}
    base.update(OMP_NUM_THREADS="1", SM_HOSTS=json.dumps(hosts), SM_NUM_GPUS="0",
                SM_CHANNEL_TRAINING=str(channel),
                SM_TRAINING_ENV=json.dumps({"job_name": "gpu-course-sm-ps-1"}))
    serve = [sys.executable, "-c", "import mxnet"]
    procs = [subprocess.Popen(serve, env={**base, **dist.role_env("scheduler", port, 2, 2)})]
    procs += [subprocess.Popen(serve, env={**base, **dist.role_env("server", port, 2, 2)})
              for _ in hosts]
    workers = []
    for host in hosts:  # each host: its own SM_* folders, as on separate instances
        env = {**base, **dist.role_env("worker", port, 2, 2), "SM_CURRENT_HOST": host,
               "SM_MODEL_DIR": str(tmp_path / host / "model"),
               "SM_OUTPUT_DATA_DIR": str(tmp_path / host / "output" / "data"),
               "SM_OUTPUT_DIR": str(tmp_path / host / "output")}
        argv = as_argv(launch.hyperparameters(cfg))
        workers.append(subprocess.Popen([sys.executable, "sagemaker_entry.py", *argv],
                                        cwd=code, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True))
    try:
        outs = [w.communicate(timeout=120)[0] for w in workers]
        assert [w.returncode for w in workers] == [0, 0], "\n".join(o[-3000:] for o in outs)
        assert all(p.wait(timeout=60) == 0 for p in procs)  # scheduler and servers end too
    finally:
        for p in procs + workers:
            if p.poll() is None:
                p.kill()
    folders = [f for h in hosts for f in (tmp_path / h / "output" / "data").iterdir()
               if (f / "run.json").exists()]
    assert len(folders) == 1  # one record for the job: worker 0's
    run = records.load_run(folders[0])
    notes = run.meta["notes"]
    assert (notes["workers"], notes["servers"], notes["kvstore"]) == (2, 2, "dist_sync")
    assert run.name == "sm-ps" and run.status == "finished"
    assert list(run.epochs["samples"]) == [256]  # both workers' shards
    leader = hosts[[h in str(folders[0]) for h in hosts].index(True)]
    assert sum(line.startswith("METRIC ") for line in outs[hosts.index(leader)].splitlines()) == 1
    for host in hosts:  # every worker ends with the same trained weights
        assert (tmp_path / host / "model" / host / "model.params").stat().st_size > 0
