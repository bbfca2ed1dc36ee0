"""SageMaker: hyperparameters <-> Experiment, the metric line and its regexes, the job
without credentials, and each track's job from its environment's SDK (v2's estimator for
Gluon, v3's ModelTrainer for PyTorch).

The entry script's full training run is in tests/{gluon,torch}/test_sagemaker_entry.py
(it needs a framework); here it runs as a real subprocess up to its argument checks.
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from unittest import mock

import pytest

from fake_runs import write_run
from gpu_course_sagemaker import entry as entry
from gpu_course_sagemaker import launch as launch
from gpu_course.config import Experiment

REPO = Path(__file__).resolve().parents[1]  # (not from conftest: tests/gluon imports this file)
# no credentials anywhere boto3 looks, and no instance-metadata lookup
NO_AWS = {"AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials",
          "AWS_CONFIG_FILE": "/nonexistent/config", "AWS_EC2_METADATA_DISABLED": "true"}
CONFIGS = [
    Experiment(),
    Experiment(name="large-batch", batch_size=640, optimizer="lbsgd", lr_base_batch=128,
               warmup_epochs=1.0, optimizer_params=(("warmup_strategy", "linear"),),
               dtype="float16", graph="static", num_workers=7, max_steps=20),
    Experiment(name="sched", lr_scheduler="multifactor", lr_steps=(2, 4.5),
               epochs=6, monitor_interval=0.25, mock="loader", augment="heavy"),
    Experiment(name="torch", engine="pytorch", dtype="bfloat16", pin_memory=True,
               persistent_workers=True, channels_last=True, lr_scheduler="onecycle",
               optimizer="adamw", data_on_gpu=True, num_gpus=0, optimizer_params={"wd": 0.0}),
]


def as_argv(hps: dict) -> list:
    """What SageMaker does with hyperparameters: JSON-encode each (SDK), decode them in the
    container (training toolkit) and pass `--key value`."""
    argv = []
    for key, value in hps.items():
        argv += [f"--{key}", json.loads(json.dumps(value))]
    return argv


def run_entry_as_sagemaker(tmp_path, cfg, launcher=(), hosts=("algo-1",)):
    """Run the entry script the way SageMaker does (`entry_job`). `launcher` goes before
    it (e.g. torchrun). Used by the framework tests."""
    command, code, env = entry_job(tmp_path, cfg, hosts)
    return subprocess.run([*launcher, *command], cwd=code, env=env, capture_output=True,
                          text=True, timeout=300)


def entry_job(tmp_path, cfg, hosts=("algo-1",)):
    """(command, folder, environment) that start the entry script the way SageMaker
    does: from the staged code folder (the job's source_dir), hyperparameters as
    `--key value`, SM_* folders under tmp_path."""
    from gpu_course import data
    channel = tmp_path / "input" / "data" / "training"
    data.prepare(cfg.dataset, root=channel, train_size=cfg.train_size,
                 test_size=cfg.test_size, seed=cfg.seed)
    code = launch.stage_code(cfg.engine, tmp_path / "code")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SM_") and k not in ("PYTHONPATH", "GPU_COURSE_RUNS")}
    env.update(SM_CHANNEL_TRAINING=str(channel), SM_MODEL_DIR=str(tmp_path / "model"),
               SM_OUTPUT_DATA_DIR=str(tmp_path / "output" / "data"),
               SM_OUTPUT_DIR=str(tmp_path / "output"), SM_NUM_GPUS="0",
               SM_HOSTS=json.dumps(list(hosts)), SM_CURRENT_HOST=hosts[0],
               SM_TRAINING_ENV=json.dumps({"job_name": "gpu-course-sm-test-1"}),
               OMP_NUM_THREADS="1")  # 2 cores shared with the monitor: more threads thrash
    return ["sagemaker_entry.py", *as_argv(launch.hyperparameters(cfg))], code, env


def check_job_output(tmp_path, out, cfg, model_file=None):
    """What SageMaker would find after the job, and the METRIC lines as its metric
    definitions read them. Returns the run, fetched the way fetch_runs unpacks it."""
    from gpu_course.measure import records
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    folders = list((tmp_path / "output" / "data").iterdir())
    assert len(folders) == 1, folders
    run = records.load_run(folders[0])
    assert run.status == "finished" and len(run.epochs) == cfg.epochs
    assert run.meta["notes"]["sagemaker"]["job_name"] == "gpu-course-sm-test-1"
    assert run.config["data_dir"] == str(tmp_path / "input" / "data" / "training")
    lines = [line for line in out.stdout.splitlines() if line.startswith("METRIC ")]
    assert len(lines) == cfg.epochs
    metrics = parse_metrics(out.stdout)
    assert metrics["epoch"] == [float(e) for e in range(cfg.epochs)]
    assert metrics["samples_per_sec"] == pytest.approx(list(run.epochs.samples_per_sec), abs=0.006)
    assert metrics["epoch_time"] == pytest.approx(list(run.epochs.epoch_time_s), abs=0.006)
    assert metrics["val_acc"] == pytest.approx(list(run.epochs.val_acc), abs=6e-5)
    assert all(0 <= share <= 1 for share in metrics["data_wait"])
    if not run.meta["hardware"]["gpus"]:
        assert "gpu_util" not in metrics  # "gpu_util=nan": not measured on a CPU
    if model_file:
        assert (tmp_path / "model" / model_file).stat().st_size > 0
        saved = json.loads((tmp_path / "model" / "experiment.json").read_text())
        assert Experiment.from_dict(saved) == cfg.replace(data_dir=run.config["data_dir"])
    archive = tmp_path / "output.tar.gz"  # SageMaker packs SM_OUTPUT_DATA_DIR like this
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folders[0], arcname=folders[0].name)
    fetched, = launch.extract_runs(archive, tmp_path / "local-runs", job_name="job-1")
    assert len(fetched.epochs) == cfg.epochs
    return fetched


@pytest.fixture
def no_aws(monkeypatch):
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    for key, value in NO_AWS.items():
        monkeypatch.setenv(key, value)


def run_cli_without_aws(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return subprocess.run([sys.executable, "-m", "gpu_course_sagemaker", *args], cwd=REPO,
                          env={**env, **NO_AWS}, capture_output=True, text=True, timeout=600)


# -- hyperparameters -------------------------------------------------------------------
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.name)
def test_hyperparameters_round_trip_into_the_config(cfg, tmp_path):
    hps = launch.hyperparameters(cfg)
    assert all(isinstance(v, str) for v in hps.values())  # SageMaker stores strings
    assert "data_dir" not in hps
    channel = str(tmp_path)   # the folder SageMaker mounted the channel into
    back = entry.experiment_from(as_argv(hps), {"SM_CHANNEL_TRAINING": channel,
                                                "SM_NUM_GPUS": "4"})
    assert back == cfg.replace(data_dir=channel)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.name)
def test_v3s_container_hands_the_entry_the_hyperparameters_it_parses_back(cfg, tmp_path):
    """v3's basic_script_driver turns HyperParameters into `--key value` with its own
    (de)serialisation: the entry script gets the same Experiment back."""
    utils = pytest.importorskip("sagemaker.train.container_drivers.common.utils")
    argv = utils.hyperparameters_to_cli_args(launch.hyperparameters(cfg))
    back = entry.experiment_from(argv, {"SM_CHANNEL_TRAINING": str(tmp_path), "SM_NUM_GPUS": "4"})
    assert back == cfg.replace(data_dir=str(tmp_path))


@pytest.mark.parametrize("make", ["missing", "file"])
def test_a_channel_that_is_no_folder_is_refused_naming_it(make, tmp_path):
    channel = tmp_path / "training"
    if make == "file":
        channel.write_text("x")
    with pytest.raises(ValueError, match=f"SM_CHANNEL_TRAINING={channel} "
                                         + ("is a file" if make == "file" else "does not exist")):
        entry.experiment_from([], {"SM_CHANNEL_TRAINING": str(channel), "SM_NUM_GPUS": "0"})
    assert not channel.is_dir()   # nothing generated into it


def test_all_gpus_takes_the_count_from_sm_num_gpus():
    hps = launch.hyperparameters(Experiment(num_gpus=1), all_gpus=True)
    assert "num_gpus" not in hps
    assert entry.experiment_from(as_argv(hps), {"SM_NUM_GPUS": "8"}).num_gpus == 8
    assert entry.experiment_from(as_argv(hps), {"SM_NUM_GPUS": "0"}).num_gpus == 0


def test_hyperparameter_spellings():
    cfg = entry.experiment_from(["--batch-size", "32", "--num_workers=3", "--lr_steps", "1,2",
                                 "--lr_scheduler", "multifactor"], {"SM_NUM_GPUS": "1"})
    assert (cfg.batch_size, cfg.num_workers, cfg.lr_steps) == (32, 3, (1, 2))


@pytest.mark.parametrize("argv, message", [
    (["--batch_size", "0"], "batch_size=0 must be an integer >= 1"),
    (["--optimizer", "rmsprop"], "optimizer='rmsprop' is not allowed; allowed: sgd"),
    (["--lr", "fast"], "lr='fast' is not a valid float"),
    (["--dtype", "float8"], "dtype='float8' is not allowed; allowed: float32, float16, bfloat16"),
    (["--bogus", "1"], "unknown hyperparameter 'bogus'"),
    (["--epochs"], "--epochs needs a value"),
    (["epochs", "3"], "expected --<field> <value>, got 'epochs'"),
])
def test_bad_hyperparameters_give_the_configs_errors(argv, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        entry.experiment_from(argv, {"SM_NUM_GPUS": "1"})


def test_entry_script_stops_on_a_bad_hyperparameter(tmp_path):
    """A real subprocess, started as a file from inside the package folder (the import
    path must not let gpu_course/torch shadow torch) and the way SageMaker starts it."""
    env = {**os.environ, "SM_OUTPUT_DIR": str(tmp_path / "output"), "SM_NUM_GPUS": "0"}
    out = subprocess.run([sys.executable, str(REPO / "gpu_course_sagemaker" / "entry.py"),
                          "--batch_size", "0"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=60)
    assert out.returncode == 2, out.stderr
    assert "bad hyperparameter: batch_size=0 must be an integer >= 1" in out.stderr
    assert "batch_size=0" in (tmp_path / "output" / "failure").read_text()

    code = launch.stage_code("gluon", tmp_path / "code")  # /opt/ml/code in the container
    out = subprocess.run([sys.executable, "sagemaker_entry.py", "--optimizer", "nope"],
                         capture_output=True, text=True, cwd=code, timeout=60,
                         env={**env, "PYTHONPATH": ""})
    assert out.returncode == 2 and "optimizer='nope' is not allowed" in out.stderr


def test_stage_code_holds_entry_package_and_requirements(tmp_path):
    code = launch.stage_code("gluon", tmp_path / "code")
    assert (code / "sagemaker_entry.py").read_text() == \
        (REPO / "gpu_course_sagemaker" / "entry.py").read_text()
    assert (code / "gpu_course" / "config.py").exists()
    assert not list(code.rglob("__pycache__"))
    assert not (code / "gpu_course" / "reference").exists()   # results, not code
    assert (code / "gpu_course" / "show" / "report.py").exists()
    requirements = (code / "requirements.txt").read_text()
    assert "numpy<1.24" in requirements and "psutil" in requirements
    assert "numpy" not in (launch.stage_code("pytorch", tmp_path / "pt") /
                           "requirements.txt").read_text()


# -- the metric line -------------------------------------------------------------------
def parse_metrics(text: str) -> dict:
    """Each metric's values, as SageMaker's metric definitions read them from a log."""
    found = {}
    for line in text.splitlines():
        for definition in launch.metric_definitions():
            match = re.search(definition["Regex"], line)
            if match:
                found.setdefault(definition["Name"], []).append(float(match.group(1)))
    return found


def test_metric_line_is_read_by_the_metric_definitions():
    # 13,270 steady samples in 20 s, 8.4 s of them waiting for data
    row = {"epoch": 1, "epoch_time_s": 18.59, "samples": 13_270, "timed_samples": 13_270,
           "timed_s": 20.0, "timed_wait_s": 8.4, "data_wait_s": 8.4,
           "compute_s": 11.6, "val_acc": 0.7131, "t_start": 0.0, "t_end": 18.6}
    line = entry.metric_line(row, 27.0)
    assert line == ("METRIC epoch=1 samples_per_sec=663.50 epoch_time=18.59 data_wait=0.4200 "
                    "gpu_util=27.0 val_acc=0.7131")
    assert parse_metrics(line) == {"epoch": [1.0], "samples_per_sec": [663.5],
                                   "epoch_time": [18.59], "data_wait": [0.42],
                                   "gpu_util": [27.0], "val_acc": [0.7131]}
    # not measured (a CPU): printed as nan and skipped, the others still read
    cpu = entry.metric_line({**row, "val_acc": float("nan")}, None)
    assert "gpu_util=nan" in cpu and "val_acc=nan" in cpu
    assert set(parse_metrics(cpu)) == {"epoch", "samples_per_sec", "epoch_time", "data_wait"}
    # other log lines are not metrics
    assert parse_metrics("[Epoch 1] train=0.5 val=0.5 loss=1.2 time: 2.00s samples/s: 10.0") == {}


def test_metric_printer_reads_each_epochs_gpu_utilisation(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    printer = entry.MetricPrinter(runs, stream=open(tmp_path / "log", "w"))
    folder = write_run(runs, "naive", busy=60.0, data_wait_share=0.3)
    epochs = list(__import__("csv").DictReader(open(folder / "epochs.csv")))
    row = {k: float(v) for k, v in epochs[1].items() if v != ""}
    assert printer.run_folder() == folder
    util = entry.epoch_gpu_util(folder, row)
    assert 0 < util <= 100
    from gpu_course.analyse import metrics
    from gpu_course.measure.records import load_run
    run = load_run(folder)
    run.epochs = run.epochs[run.epochs.epoch == row["epoch"]]
    assert util == metrics.gpu_util(run)  # one definition: the steady window
    printer({**row, "epoch": int(row["epoch"])})
    printer.stream.close()
    line = (tmp_path / "log").read_text().strip()
    assert line.startswith("METRIC epoch=2 ") and f"gpu_util={util:.1f}" in line
    no_gpu = write_run(tmp_path / "cpu", "cpu", num_gpus=0, machine_gpus=0)
    assert entry.epoch_gpu_util(no_gpu, row) is None  # no GPU samples: not measured


# -- the job ---------------------------------------------------------------------------
def test_instance_checks():
    from gpu_course import engines
    assert engines.pick_engine(env={}, capabilities=[launch.instance_capability(
        "ml.p5.48xlarge")], installed=())[0] == "pytorch"
    with pytest.raises(ValueError, match="MXNet 1.9 cannot use.*engine='pytorch'"):
        launch.check_job(Experiment(engine="gluon"), launch.Job("ml.p5.48xlarge"))
    launch.check_job(Experiment(engine="gluon"), launch.Job("ml.g6.xlarge"))   # sm_89: untested
    launch.check_job(Experiment(engine="pytorch"), launch.Job("ml.p5.48xlarge"))
    with pytest.raises(ValueError, match=r"num_gpus=2 is too many for ml.g5.xlarge; allowed: 0..1"):
        launch.check_job(Experiment(num_gpus=2), launch.Job("ml.g5.xlarge"))
    launch.check_job(Experiment(num_gpus=4), launch.Job("ml.g5.12xlarge"))
    with pytest.raises(ValueError, match="not a SageMaker instance type"):
        launch.check_job(Experiment(), launch.Job("p3.2xlarge"))
    with pytest.raises(ValueError, match="instance_count=0 must be an integer >= 1"):
        launch.check_job(Experiment(), launch.Job("ml.g5.xlarge", instance_count=0))


def test_the_instance_table_comes_from_the_engines_table():
    rows = {r["instance"]: r for r in launch.instance_table().to_dict("records")}
    assert launch.DEFAULT_INSTANCE == "ml.g5.xlarge"
    assert (rows["ml.g5.xlarge"]["Gluon"], rows["ml.g5.xlarge"]["PyTorch"]) == ("GPU", "GPU")
    assert rows["ml.g6.xlarge"]["Gluon"] == "GPU, untested"
    assert "not yet run on such a card" in rows["ml.g6e.xlarge"]["why"]
    assert rows["ml.p5.48xlarge"]["Gluon"] == "no" and rows["ml.m5.xlarge"]["GPU"] == "none"
    assert not any(name.startswith("ml.p3.") for name in rows)   # a family being retired


def test_job_settings_are_one_model_for_both_sdks():
    cfg = Experiment(name="workers", num_workers=7)
    kw = launch.job_settings(cfg, launch.Job("ml.g5.12xlarge", instance_count=2))
    assert kw["distribution"] == {"parameter_server": {"enabled": True}}
    assert (kw["framework_version"], kw["py_version"]) == ("1.9.0", "py38")
    assert kw["hyperparameters"] == launch.hyperparameters(cfg)
    assert kw["metric_definitions"] == launch.metric_definitions()
    torch_kw = launch.job_settings(cfg.replace(engine="pytorch"), launch.Job("ml.g5.xlarge"))
    assert (torch_kw["framework_version"], torch_kw["py_version"]) == ("2.10.0", "py313")
    assert "distribution" not in torch_kw
    assert launch.TRACKS["gluon"].sdk is launch.Sdk.V2 and launch.TRACKS["pytorch"].sdk is launch.Sdk.V3


def test_read_metrics_reads_the_metric_lines_as_sagemaker_does():
    log = ("epoch 0 done\nMETRIC epoch=0 samples_per_sec=663.50 epoch_time=18.59 data_wait=0.4200 "
           "gpu_util=nan val_acc=0.7131\nMETRIC epoch=1 samples_per_sec=700.00 epoch_time=17.00 "
           "data_wait=0.1000 gpu_util=27.0 val_acc=0.75\n")
    frame = launch.read_metrics(log)
    assert frame["samples_per_sec"].tolist() == [663.5, 700.0]
    assert frame["gpu_util"].isna().tolist() == [True, False]   # "nan" is left out


def test_aws_credentials_from_the_environment(no_aws, monkeypatch):
    pytest.importorskip("botocore")
    assert launch.aws_credentials() is False
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    assert launch.aws_credentials() is True


def test_cli_dry_run_prints_the_request_and_exits_cleanly(tmp_path):
    out = run_cli_without_aws("--dry-run", "--instance-type", "ml.g5.xlarge",
                              "--batch-size", "128", "--num-workers", "7", "--name", "workers")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(launch.REQUEST_TITLE + "\n")
    body = out.stdout[len(launch.REQUEST_TITLE) + 1:]
    request = json.loads(body[:body.index("\n}\n") + 2])
    assert "\nvalid: the request meets botocore " in out.stdout
    assert request["ResourceConfig"]["InstanceType"] == "ml.g5.xlarge"
    assert unquoted(request["HyperParameters"])["batch_size"] == "128"
    assert unquoted(request["HyperParameters"])["num_workers"] == "7"
    assert [d["Name"] for d in request["AlgorithmSpecification"]["MetricDefinitions"]] == \
        list(launch.METRIC_NAMES)
    assert "nothing was launched" in out.stdout


def test_cli_dry_run_refuses_gluon_on_a_card_mxnet_cannot_use_and_help_lists_instances(
        no_aws, capsys):
    """In-process: the subprocess above already pays for importing the SDK."""
    assert launch.main(["--dry-run", "--engine", "gluon",
                        "--instance-type", "ml.p5.48xlarge"]) == 2
    assert "MXNet 1.9 cannot use" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        launch.main(["--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and "ml.g6.xlarge" in out and "untested" in out


def test_cli_without_credentials_launches_nothing(no_aws, capsys):
    """No --dry-run and no credentials: the same request, and nothing pretends to run.
    (In-process: the subprocess above already pays for importing the SDK.)"""
    assert launch.main(["--epochs", "1", "--instance-type", "ml.m5.xlarge",
                        "--num-gpus", "0"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith(launch.REQUEST_TITLE)
    assert "nothing was launched" in err


# -- the SDK -----------------------------------------------------------------------------
ROLE_ARN = "arn:aws:iam::123456789012:role/course"
TRACK = next(t for t, k in launch.TRACKS.items() if k.sdk is launch.installed_sdk()) \
    if launch.installed_sdk() else None


def unquoted(hps: dict) -> dict:
    """HyperParameters as sent: v2 JSON-encodes each value, v3 sends the text as it is."""
    return {k: v[1:-1] if v.startswith('"') else v for k, v in hps.items()
            if not k.startswith("sagemaker_")}


def decoded(hps: dict) -> dict:
    return {k: json.loads(v) for k, v in hps.items() if not k.startswith("sagemaker_")}


@pytest.fixture
def sm():
    if TRACK is None:
        pytest.skip("no SageMaker SDK in this environment")
    return launch._sdk(launch.TRACKS[TRACK].sdk)


def test_the_tracks_job_from_the_environments_sdk(sm, no_aws, tmp_path):
    """The Gluon environment builds v2's MXNet estimator, the PyTorch one v3's ModelTrainer,
    from the same job settings, on any machine: no credentials, no region."""
    cfg = Experiment(name="float16", engine=TRACK, dtype="float16", num_gpus=4)
    session = launch.session_for(launch.TRACKS[TRACK].sdk)
    assert session.boto_region_name == launch.DEFAULT_REGION
    assert launch.execution_role(session) == launch.NO_ROLE
    with mock.patch.dict(os.environ, {"SAGEMAKER_VALIDATE_ROLE": "false"}):  # v3 asks IAM
        built = launch.build(cfg, launch.Job("ml.g5.12xlarge", instance_count=2, role=ROLE_ARN,
                                             output_path="s3://b/out/"),
                             session=session, source_dir=launch.stage_code(TRACK, tmp_path))
    if TRACK == "gluon":
        assert isinstance(built, sm.mxnet.MXNet)
        assert built.training_image_uri() == \
            "763104351884.dkr.ecr.us-east-1.amazonaws.com/mxnet-training:1.9.0-gpu-py38"
        assert decoded(built.hyperparameters()) == launch.hyperparameters(cfg)
        assert built.hyperparameters()["sagemaker_parameter_server_enabled"] == "true"
    else:
        from sagemaker.train import ModelTrainer
        from sagemaker.train.distributed import Torchrun
        assert isinstance(built, ModelTrainer) and isinstance(built.distributed, Torchrun)
        assert built.training_image == \
            "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.10.0-gpu-py313"
        assert built.hyperparameters == launch.hyperparameters(cfg)
        assert built.source_code.entry_script == launch.ENTRY_POINT
    other = next(t for t in launch.TRACKS if t != TRACK)
    with pytest.raises(SystemExit, match=f"the {other} track needs SageMaker Python SDK "
                                         f"v.*pip install {launch.TRACKS[other].sdk.value}"):
        launch.build(cfg.replace(engine=other, num_gpus=1), launch.Job(role="r"))


def test_dataset_folder_is_where_data_prepare_writes(tmp_path):
    for cfg in (Experiment(data_dir=str(tmp_path), train_size=30, test_size=10, seed=2),):
        path = launch.dataset_folder(cfg)
        assert not path.exists()  # the dry run writes nothing
        assert launch.dataset_folder(cfg, write=True) == path and path.is_dir()
    with pytest.raises(ValueError, match="dataset='folder' cannot go to SageMaker"):
        launch.dataset_folder(Experiment(dataset="folder"))


def test_fetch_runs_unpacks_the_jobs_record(tmp_path, runs_dir):
    folder = write_run(tmp_path / "output-data", "workers@algo-1", engine="gluon")
    archive = tmp_path / "output.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:  # what SageMaker makes of SM_OUTPUT_DATA_DIR
        tar.add(folder, arcname=folder.name)
    session = mock.MagicMock()
    session.sagemaker_client.describe_training_job.return_value = {
        "TrainingJobStatus": "Completed", "OutputDataConfig": {"S3OutputPath": "s3://b/out/"}}

    def download(bucket, key, local):
        assert (bucket, key) == ("b", "out/job-1/output/output.tar.gz")
        Path(local).write_bytes(archive.read_bytes())
    session.boto_session.client.return_value.download_file.side_effect = download
    runs = launch.fetch_runs("job-1", session=session)
    assert [r.name for r in runs] == ["workers@algo-1"]
    assert runs[0].path.parent == runs_dir
    assert runs[0].meta["notes"]["sagemaker"]["job_name"] == "job-1"
    assert len(runs[0].epochs) == 3


def test_extract_runs_ignores_paths_outside_the_folder(tmp_path, monkeypatch):
    folder = write_run(tmp_path / "data", "x")
    archive = tmp_path / "out.tar.gz"
    (tmp_path / "evil.txt").write_text("outside")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)
        tar.add(tmp_path / "evil.txt", arcname="../evil.txt")
    scratch = tmp_path / "scratch" / "extract"
    scratch.mkdir(parents=True)
    monkeypatch.setattr(launch.tempfile, "TemporaryDirectory",
                        lambda: __import__("contextlib").nullcontext(str(scratch)))
    runs = launch.extract_runs(archive, tmp_path / "runs")
    assert [r.name for r in runs] == ["x"]
    assert not (tmp_path / "scratch" / "evil.txt").exists()
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "evil.txt", arcname="evil.txt")
    with pytest.raises(ValueError, match="holds no run record"):
        launch.extract_runs(archive, tmp_path / "runs2")


def test_cli_launches_waits_and_fetches_with_credentials(monkeypatch, capsys, tmp_path):
    """The verb's plumbing with AWS stubbed out: launch, then fetch the record back."""
    pytest.importorskip("boto3")
    from gpu_course.measure import records
    folder = write_run(tmp_path / "runs", "workers")
    calls = {}
    monkeypatch.setattr(launch, "aws_credentials", lambda: True)
    monkeypatch.setattr(launch, "session_for", lambda sdk, region: mock.MagicMock())

    def fake_launch(cfg, job, session, wait):
        calls.update(cfg=cfg, instance_type=job.instance_type, role=job.role, data=job.data,
                     wait=wait, max_run_min=job.max_run_min)
        return "gpu-course-workers-1"
    monkeypatch.setattr(launch, "launch", fake_launch)
    monkeypatch.setattr(launch, "fetch_runs", lambda job, session, runs_dir:
                        [records.load_run(folder)])
    assert launch.main(["--engine", "gluon", "--instance-type", "ml.g5.xlarge", "--role", "arn:r",
                        "--num-workers", "7", "--data-s3", "s3://b/d", "--region",
                        "eu-west-1"]) == 0
    assert calls["cfg"].num_workers == 7 and calls["cfg"].engine == "gluon"
    assert (calls["instance_type"], calls["role"], calls["data"]) == \
        ("ml.g5.xlarge", "arn:r", "s3://b/d")
    assert calls["wait"] is True and calls["max_run_min"] == launch.DEFAULT_MAX_RUN_MIN
    assert "workers: NUM_GPU" in capsys.readouterr().out


@pytest.mark.parametrize("minutes", [0, 28 * 24 * 60 + 1, True, "60"])
def test_a_run_time_sagemaker_would_refuse_is_refused_in_the_dry_run(minutes):
    with pytest.raises(ValueError, match=r"max_run_min=.* must be 1\.\.40320 minutes"):
        launch.Job("ml.p3.2xlarge", max_run_min=minutes)
    assert launch.job_settings(Experiment(), launch.Job(
        "ml.p3.2xlarge", max_run_min=28 * 24 * 60))["max_run"] == 28 * 24 * 3600
