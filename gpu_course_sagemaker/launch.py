"""Run one course experiment as a SageMaker training job (`entry.py` with gpu_course beside
it: PyTorch on SDK v3's ModelTrainer, Gluon on SDK v2's MXNet 1.9.0 estimator), and bring
its record back. Both come from `job_settings`; the SDK is imported only to build a job.

    request = check_request(training_request(cfg, Job("ml.g5.xlarge")))   # sent nowhere
    runs = fetch_runs(launch(cfg, Job("ml.g5.xlarge")))   # needs credentials and a role
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import enum
import functools
import importlib.metadata
import inspect
import json
import logging
import os
import re
import shutil
import sys
import tarfile
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import gpu_course
from gpu_course import data, engines
from gpu_course.config import Experiment
from gpu_course.page import Page

from . import request as _request

PACKAGE_DIR = Path(gpu_course.__file__).resolve().parent   # gpu_course/, copied beside the entry script
ENTRY_SCRIPT = Path(__file__).resolve().parent / "entry.py"
ENTRY_POINT = "sagemaker_entry.py"                 # its name at the top of the job's source_dir
CHANNEL = "training"                 # -> SM_CHANNEL_TRAINING in the container
DEFAULT_INSTANCE = "ml.g5.xlarge"    # A10G: both tracks, in every region that trains
DEFAULT_REGION = "us-east-1"         # only to name the image when no region is configured
DEFAULT_MAX_RUN_MIN = 120            # SageMaker stops (and bills no further) after this
MAX_RUN_LIMIT_MIN = 28 * 24 * 60     # SageMaker's MaxRuntimeInSeconds allows 28 days at most
PAGE = Page.of(__name__)


class Sdk(enum.Enum):
    """The SageMaker Python SDK that builds a track's job, as its pin."""

    V2 = "sagemaker==2.243.2"        # Estimator and its framework subclasses
    V3 = "sagemaker==3.27.0"         # ModelTrainer


@dataclass(frozen=True)
class Track:
    """How one track runs on SageMaker."""

    sdk: Sdk
    framework: str                   # name in the SDK's image catalogue
    framework_version: str
    py_version: str
    distribution: dict               # v2's option for instance_count > 1 (v3: torchrun)
    requirements: tuple              # pip-installed in the container before the entry runs


TRACKS = {
    # the last MXNet container (CUDA 11.2, Python 3.8)
    "gluon": Track(Sdk.V2, "mxnet", "1.9.0", "py38", {"parameter_server": {"enabled": True}},
                   ("psutil", "nvidia-ml-py", "pandas",
                    "numpy<1.24  # MXNet 1.9 does not import with numpy >= 1.24")),
    # the newest PyTorch training container in v3's catalogue
    "pytorch": Track(Sdk.V3, "pytorch", "2.10.0", "py313", {"torch_distributed": {"enabled": True}},
                     ("psutil", "nvidia-ml-py", "pandas")),
}

# GPUs of each instance family (engines.GPUS: their compute capability); suggested instances' GPU count
FAMILY_GPU = {"p3": "V100", "g4dn": "T4", "g5": "A10G", "p4d": "A100", "p4de": "A100",
              "g6": "L4", "g6e": "L40S", "p5": "H100", "p5e": "H200", "p5en": "H200",
              "p6": "B200"}
INSTANCES = {"ml.g4dn.xlarge": 1, "ml.g5.xlarge": 1, "ml.g5.12xlarge": 4, "ml.g6.xlarge": 1,
             "ml.g6e.xlarge": 1, "ml.p4d.24xlarge": 8, "ml.p5.48xlarge": 8, "ml.m5.xlarge": 0}


def instance_row(instance_type: str) -> dict:
    """What an instance type offers each track, from engines' table of GPUs."""
    cap = instance_capability(instance_type)
    kind = engines.gluon_gpu(cap)[0] if cap else None
    return {"instance": instance_type, "GPUs": INSTANCES.get(instance_type),
            "GPU": FAMILY_GPU.get(instance_type.split(".")[1], "none"),
            "sm": f"sm_{cap[0]}{cap[1]}" if cap else "",
            "Gluon": {None: "CPU only", engines.Gluon.RUNS: "GPU",
                      engines.Gluon.UNTESTED: "GPU, untested", engines.Gluon.NO: "no"}[kind],
            "PyTorch": "GPU" if cap else "CPU only",
            "why": engines.support_text(cap) if cap else "no GPU: a cheap dry run of the job"}


def instance_table():
    """INSTANCES as a DataFrame: which track each runs, and why (engines.gluon_gpu)."""
    import pandas as pd
    return pd.DataFrame([instance_row(name) for name in INSTANCES])


# -- the metric line (entry.metric_line; "nan", not measured, is skipped) -------------
METRIC_NAMES = ("epoch", "samples_per_sec", "epoch_time", "data_wait", "gpu_util", "val_acc")
_NUMBER = r"([0-9]+\.?[0-9]*)"


def metric_definitions() -> list[dict]:
    """SageMaker's metric definitions for the entry script's METRIC lines (group 1: the value)."""
    return [{"Name": "epoch", "Regex": "METRIC epoch=" + _NUMBER}] + [
        {"Name": name, "Regex": f"METRIC .* {name}={_NUMBER}"} for name in METRIC_NAMES[1:]]


def read_metrics(log: str):
    """The METRIC lines of a job's log as SageMaker reads them: a DataFrame, a row an epoch."""
    import pandas as pd
    rows = [{d["Name"]: float(m.group(1)) for d in metric_definitions()
             if (m := re.search(d["Regex"], line))}
            for line in log.splitlines() if line.startswith("METRIC ")]
    return pd.DataFrame(rows)


# -- checks ----------------------------------------------------------------------------
def instance_capability(instance_type: str) -> tuple | None:
    if not re.fullmatch(r"ml\.[a-z0-9]+\.[a-z0-9]+", str(instance_type)):
        raise ValueError(f"instance_type={instance_type!r} is not a SageMaker instance type; "
                         f"e.g. {', '.join(INSTANCES)}")
    gpu = FAMILY_GPU.get(instance_type.split(".")[1])
    return engines.GPUS[gpu] if gpu else None


def check_job(cfg: Experiment, job: Job) -> None:
    """ValueError for a job that cannot run as asked."""
    instance_type, instance_count = job.instance_type, job.instance_count
    cap = instance_capability(instance_type)
    if cfg.engine == "gluon" and cap is not None and engines.gluon_gpu(cap)[0] is engines.Gluon.NO:
        allowed = [f for f, g in FAMILY_GPU.items()
                   if engines.gluon_gpu(engines.GPUS[g])[0] is not engines.Gluon.NO]
        raise ValueError(f"instance_type={instance_type!r} has sm_{cap[0]}{cap[1]} GPUs MXNet 1.9 "
                         f"cannot use; use engine='pytorch', or one of {', '.join(allowed)}")
    if not isinstance(instance_count, int) or instance_count < 1:
        raise ValueError(f"instance_count={instance_count!r} must be an integer >= 1")
    gpus = INSTANCES.get(instance_type)
    if gpus is not None and not job.all_gpus and cfg.num_gpus > max(gpus, 1):
        raise ValueError(f"num_gpus={cfg.num_gpus} is too many for {instance_type}; allowed: 0..{gpus}")


# -- hyperparameters -------------------------------------------------------------------
def hyperparameters(cfg: Experiment, all_gpus: bool = False) -> dict:
    """Every Experiment field as text for config.parse_value, less data_dir (the channel) and,
    with all_gpus, num_gpus (the job uses SM_NUM_GPUS)."""
    skip = {"data_dir"} | ({"num_gpus"} if all_gpus else set())
    return {name: encode_value(name, value) for name, value in cfg.to_dict().items()
            if name not in skip}


def encode_value(field: str, value) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if field == "optimizer_params":
        return json.dumps(dict(value), sort_keys=True)
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


# -- what the job runs -----------------------------------------------------------------
def stage_code(engine: str, dest: str | Path | None = None) -> Path:
    """The job's source_dir: the entry script, gpu_course beside it, a requirements.txt."""
    dest = Path(dest) if dest is not None else Path(tempfile.mkdtemp(prefix="gpu-course-sm-"))
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ENTRY_SCRIPT, dest / ENTRY_POINT)
    shutil.rmtree(dest / "gpu_course", ignore_errors=True)
    shutil.copytree(PACKAGE_DIR, dest / "gpu_course", ignore=_left_out)
    (dest / "requirements.txt").write_text("\n".join(_track(engine).requirements) + "\n")
    return dest


def _left_out(folder: str, names: list) -> set:
    """Caches, hidden files and the package's reference results (5 MB the job never reads)."""
    skip = set(shutil.ignore_patterns("__pycache__", "*.pyc", ".*")(folder, names))
    return skip | ({"reference"} & set(names) if Path(folder) == PACKAGE_DIR else set())


@dataclass(frozen=True)
class Job:
    """Where a job runs, on what terms. None means: role, this notebook instance's; data
    (s3:// URI), the local dataset uploaded; output_path, the default bucket."""

    instance_type: str = DEFAULT_INSTANCE
    instance_count: int = 1
    all_gpus: bool = False
    role: str | None = None
    data: str | None = None
    output_path: str | None = None
    max_run_min: int = DEFAULT_MAX_RUN_MIN

    def __post_init__(self):
        minutes = self.max_run_min
        if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) \
                or not 1 <= minutes <= MAX_RUN_LIMIT_MIN:
            raise ValueError(f"max_run_min={minutes!r} must be 1..{MAX_RUN_LIMIT_MIN} minutes (28 days)")


def job_settings(cfg: Experiment, job: Job = Job(),
                 source_dir: str | Path | None = None) -> dict:
    """The job as v2's estimator's keyword arguments; `build` hands them to v3 in its terms."""
    check_job(cfg, job)
    track = _track(cfg.engine)
    kwargs = {
        "entry_point": ENTRY_POINT, "source_dir": str(source_dir) if source_dir else None,
        "framework_version": track.framework_version, "py_version": track.py_version,
        "role": job.role, "instance_type": job.instance_type, "instance_count": job.instance_count,
        "hyperparameters": hyperparameters(cfg, job.all_gpus), "base_job_name": job_base_name(cfg),
        "metric_definitions": metric_definitions(), "max_run": int(job.max_run_min * 60),
        "disable_profiler": True,   # a sidecar process on the machine we measure (v3 has none)
    }
    if job.instance_count > 1:
        kwargs["distribution"] = track.distribution
    if job.output_path:
        kwargs["output_path"] = job.output_path
    return kwargs


def job_base_name(cfg: Experiment) -> str:
    """`gpu-course-<name>`; SageMaker appends a timestamp to make the job name."""
    safe = re.sub(r"[^a-zA-Z0-9-]+", "-", f"gpu-course-{cfg.name}").strip("-")
    return safe[:38].rstrip("-")  # + "-YYYY-MM-DD-HH-MM-SS-mmm" stays within 63


def build(cfg: Experiment, job: Job = Job(), session=None, source_dir: str | Path | None = None):
    """The track's SDK job from job_settings: v2's MXNet estimator or v3's ModelTrainer."""
    sdk = _track(cfg.engine).sdk
    sm, session = _sdk(sdk), session or session_for(sdk)
    job = dataclasses.replace(job, role=execution_role(session, job.role, sdk))
    kw = job_settings(cfg, job, source_dir or stage_code(cfg.engine))
    if sdk is Sdk.V2:
        return sm.mxnet.MXNet(sagemaker_session=session, **kw)
    from sagemaker.train import ModelTrainer, configs, distributed
    trainer = ModelTrainer(
        sagemaker_session=session, role=kw["role"], base_job_name=kw["base_job_name"],
        training_image=sm.core.image_uris.retrieve(  # v3's catalogue of AWS's images
            _track(cfg.engine).framework, session.boto_region_name, version=kw["framework_version"],
            py_version=kw["py_version"], instance_type=job.instance_type, image_scope="training"),
        source_code=configs.SourceCode(source_dir=kw["source_dir"], entry_script=ENTRY_POINT,
                                       requirements="requirements.txt"),
        compute=configs.Compute(instance_type=job.instance_type, instance_count=job.instance_count),
        distributed=distributed.Torchrun() if job.instance_count > 1 else None,
        stopping_condition=configs.StoppingCondition(max_runtime_in_seconds=kw["max_run"]),
        output_data_config=configs.OutputDataConfig(
            s3_output_path=kw.get("output_path") or f"s3://{session.default_bucket()}/"),
        hyperparameters=kw["hyperparameters"])
    return trainer.with_metric_definitions([configs.MetricDefinition(name=d["Name"], regex=d["Regex"])
                                            for d in kw["metric_definitions"]])


def start(built, channel: str, job_name: str | None = None, wait: bool = False) -> str:
    """Start the job `build` made, its training channel at `channel` (s3://); -> its name.
    Unwrapped: the SDKs' telemetry wrappers would report the call over the network."""
    if hasattr(built, "fit"):
        inspect.unwrap(type(built).fit)(built, {CHANNEL: channel}, wait=wait,
                                         logs="All" if wait else "None", job_name=job_name)
        return built.latest_training_job.name
    from sagemaker.train import configs
    inputs = [configs.InputData(channel_name=CHANNEL, data_source=channel)]
    inspect.unwrap(type(built).train)(built, inputs, wait=wait, logs=wait)
    return built._latest_training_job.training_job_name   # v3's documented way to it


# -- the CreateTrainingJob request -----------------------------------------------------
NO_ACCOUNT = "000000000000"
NO_ROLE = f"arn:aws:iam::{NO_ACCOUNT}:role/no-aws-account-here"   # a job needs a role to be built
REQUEST_TITLE = "CreateTrainingJob request (built by the SageMaker SDK, sent nowhere)"


def training_request(cfg: Experiment, job: Job = Job(), region: str | None = None,
                     job_name: str | None = None, bucket: str | None = None) -> dict:
    """The CreateTrainingJob request `launch` sends for cfg, as the track's SDK builds it, on
    a session that sends nothing. `bucket`: the default bucket; job_name: v2's (v3 names it)."""
    sdk = _track(cfg.engine).sdk
    sm, region = _sdk(sdk), region or aws_region()
    bucket = bucket or f"sagemaker-{region}-{NO_ACCOUNT}"
    session = offline_session(sdk, region, bucket)
    output = job.output_path or f"s3://{bucket}/"
    channel = job.data or f"s3://{bucket}/{channel_layout(cfg)[0]}"   # where launch uploads it
    if not (output.startswith("s3://") and channel.startswith("s3://")):
        _request.check({  # the SDK's own refusal would not say what is allowed
            "OutputDataConfig": {"S3OutputPath": output},
            "InputDataConfig": [{"DataSource": {"S3DataSource": {"S3Uri": channel}}}]}, part=True)
    role = job.role
    if role and "/" not in role:  # a role's name: the SDK looks its ARN up in IAM
        role = f"arn:aws:iam::{NO_ACCOUNT}:role/{role}"
    job = dataclasses.replace(job, role=role or NO_ROLE, output_path=output)
    code = None
    if sdk is Sdk.V2:  # v2 takes an s3:// source_dir as uploaded: where fit() would put it
        job_name = job_name or sm.utils.name_from_base(job_base_name(cfg))
        code = f"s3://{output[5:].split('/')[0]}/{job_name}/source/sourcedir.tar.gz"
    staged = stage_code(cfg.engine) if code is None else None   # v3: the offline upload
    try:
        with _offline_build():
            start(build(cfg, job, session, source_dir=code or staged), channel, job_name)
    except Sent as sent:
        return sent.args[0]
    finally:
        if staged:
            shutil.rmtree(staged, ignore_errors=True)
    raise RuntimeError("the SDK made no CreateTrainingJob request")


def check_request(request: dict) -> dict:
    """`request`, or request.InvalidRequest naming each field SageMaker would refuse."""
    return _request.check(request, channels=(CHANNEL,))


class Sent(Exception):
    """The CreateTrainingJob request (args[0]) an offline session was asked to send."""


def offline_session(sdk: Sdk, region: str, bucket: str):
    """A session of `sdk` that sends nothing: an upload says where files would go,
    CreateTrainingJob raises Sent (before botocore checks it), any other request raises."""
    import botocore.config
    boto = _offline_boto(region)

    class Offline(_sdk_session_class(sdk)):
        def default_bucket(self):
            return bucket

        def upload_data(self, path, bucket=None, key_prefix="data", *_, **__):
            name = "" if Path(path).is_dir() else "/" + Path(path).name
            return f"s3://{bucket or self.default_bucket()}/{key_prefix}{name}"
    client = boto.client("sagemaker", config=botocore.config.Config(parameter_validation=False))
    return Offline(boto_session=boto, sagemaker_client=client)


@functools.lru_cache(maxsize=None)
def _offline_boto(region: str):
    """One boto3 session a region: it keeps the service models it read (0.3 s each)."""
    import boto3
    boto = boto3.Session(region_name=region)
    boto.events.register(f"provide-client-params.sagemaker.{_request.OPERATION}", _sent)
    boto.events.register("before-send", _refuse_to_send)
    return boto


def _sent(params, **_):
    raise Sent(copy.deepcopy(params))


def _refuse_to_send(request, **_):
    raise RuntimeError(f"the offline session sends nothing; asked: {request.method} {request.url}")


@contextlib.contextmanager
def _offline_build():
    """A quiet build that leaves the role to launch (SAGEMAKER_VALIDATE_ROLE=false)."""
    from unittest import mock
    log = logging.getLogger("sagemaker")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        with mock.patch.dict(os.environ, SAGEMAKER_VALIDATE_ROLE="false"):
            yield
    finally:
        log.setLevel(level)


# the hyperparameters that change what the job measures (the rest keep their defaults)
KEY_HYPERPARAMETERS = ("model", "dataset", "train_size", "epochs", "batch_size", "num_workers",
                       "graph", "dtype", "num_gpus")


def describe(request: dict):
    """What a job will run, read back from its request: a (setting, value) DataFrame."""
    import pandas as pd
    res, algo = request["ResourceConfig"], request["AlgorithmSpecification"]
    values = {k: v.strip('"') for k, v in request.get("HyperParameters", {}).items()}
    row = instance_row(res["InstanceType"])
    rows = [("instance", f"{res['InstanceType']} × {res['InstanceCount']} ({row['GPU']})"),
            ("image", algo["TrainingImage"]),
            ("entry point", f"{ENTRY_POINT} (beside gpu_course/ and requirements.txt)"),
            ("channels", ", ".join(c["ChannelName"] for c in request["InputDataConfig"])),
            ("role", request["RoleArn"] if request["RoleArn"] != NO_ROLE
             else "(none: no AWS account here, so nothing is launched)")]
    rows += [(name, values[name]) for name in KEY_HYPERPARAMETERS if name in values]
    rows += [("metrics charted", ", ".join(d["Name"] for d in algo.get("MetricDefinitions", ()))),
             ("stops after", f"{request['StoppingCondition']['MaxRuntimeInSeconds'] / 60:g} min")]
    return pd.DataFrame(rows, columns=["setting", "value"])


def dataset_root(cfg: Experiment) -> Path:
    """The folder the training channel mirrors (cfg.data_dir, or the course's data/)."""
    return Path(cfg.data_dir).expanduser() if cfg.data_dir else Path(data.default_root())


def dataset_folder(cfg: Experiment, write: bool = False) -> Path:
    """The cifar-10-batches-bin folder `data.prepare` uses for cfg (write=True: prepares it)."""
    if cfg.dataset not in data.DATASETS:
        raise ValueError(f"dataset={cfg.dataset!r} cannot go to SageMaker; "
                         f"allowed: {', '.join(data.DATASETS)}")
    if write:
        return Path(data.prepare(cfg.dataset, root=dataset_root(cfg), seed=cfg.seed,
                                 train_size=cfg.train_size, test_size=cfg.test_size))
    name = "" if cfg.dataset == "cifar10" else (   # the names data.prepare gives, unwritten
        f"synthetic-v{data.synthetic.VERSION}-s{cfg.seed}-{cfg.train_size}-{cfg.test_size}")
    return dataset_root(cfg) / name / data.FOLDER_NAME


def channel_layout(cfg: Experiment) -> tuple:
    """(S3 prefix of the channel, the dataset folder's path inside it: where data.prepare looks)."""
    inside = dataset_folder(cfg).relative_to(dataset_root(cfg)).as_posix()
    return f"gpu-course/data/{inside.split('/')[0]}", inside


# -- AWS -------------------------------------------------------------------------------
def aws_credentials(timeout_s: float = 1.0) -> bool:
    """Whether boto3 finds AWS credentials; instance metadata is asked once, for `timeout_s`."""
    try:
        import botocore.session
    except ImportError:
        return False
    session = botocore.session.get_session()
    session.set_config_variable("metadata_service_timeout", timeout_s)
    session.set_config_variable("metadata_service_num_attempts", 1)
    try:
        return session.get_credentials() is not None
    except Exception:  # a broken ~/.aws/config is "no credentials" for this purpose
        return False


def aws_region() -> str:
    """The configured region, else DEFAULT_REGION (asked only where the SDK, so botocore, is)."""
    import botocore.session
    try:
        return botocore.session.get_session().get_config_variable("region") or DEFAULT_REGION
    except Exception:  # a broken ~/.aws/config
        return DEFAULT_REGION


def _sdk(sdk: Sdk):
    """The SageMaker SDK `sdk` (its config lookups quieted), else SystemExit naming the pin."""
    logging.getLogger("sagemaker.config").setLevel(logging.WARNING)
    if installed_sdk() is not sdk:
        have = installed_sdk() and f"sagemaker {importlib.metadata.version('sagemaker')}"
        track = next(t for t, k in TRACKS.items() if k.sdk is sdk)
        raise SystemExit(f"the {track} track needs SageMaker Python SDK v{sdk.name[1:]}; this "
                         f"environment has {have or 'none'}: pip install {sdk.value}")
    try:
        import sagemaker
        if sdk is Sdk.V2:
            import sagemaker.mxnet  # noqa: F401
        else:
            import sagemaker.core.helper.session_helper  # noqa: F401
            import sagemaker.core.image_uris  # noqa: F401
    except Exception as err:  # e.g. AWS_PROFILE names a profile ~/.aws/config lacks
        raise ValueError(f"the SageMaker SDK could not start: {type(err).__name__}: {err}") from None
    return sagemaker


def installed_sdk() -> Sdk | None:
    try:
        major = importlib.metadata.version("sagemaker").split(".")[0]
    except importlib.metadata.PackageNotFoundError:
        return None
    return next((sdk for sdk in Sdk if sdk.name[1:] == major), None)


def _sdk_session_class(sdk: Sdk):
    sm = _sdk(sdk)
    return sm.Session if sdk is Sdk.V2 else sm.core.helper.session_helper.Session


def _track(engine: str) -> Track:
    return TRACKS[engines.check_engine(engine)]


def session_for(sdk: Sdk, region: str | None = None):
    """A session of `sdk` for `region` (else aws_region()); it builds a job without an account."""
    import boto3
    return _sdk_session_class(sdk)(boto_session=boto3.Session(region_name=region or aws_region()))


def execution_role(session, role: str | None = None, sdk: Sdk = Sdk.V2) -> str:
    """`role`, else this notebook instance's execution role, else (no credentials) NO_ROLE."""
    if role:
        return role
    if not aws_credentials():
        return NO_ROLE
    sm = _sdk(sdk)
    try:
        return (sm if sdk is Sdk.V2 else sm.core.helper.session_helper).get_execution_role(session)
    except Exception as err:  # outside SageMaker there is no role to find
        raise ValueError(f"no execution role found ({err}); pass "
                         "role='arn:aws:iam::<account>:role/<name>'") from None


def upload_dataset(cfg: Experiment, session) -> str:
    """Upload the dataset folder (prepared if missing); -> the training channel's s3:// URI."""
    prefix, inside = channel_layout(cfg)
    uri = session.upload_data(str(dataset_folder(cfg, write=True)), key_prefix=f"{prefix}/{inside}")
    return uri.rstrip("/")[:-len(inside) - 1]  # the channel holds the folder's path


def launch(cfg: Experiment, job: Job = Job(), session=None, wait: bool = True) -> str:
    """Check the request, upload the dataset (unless job.data), start the job and, with wait,
    stream its log; -> the job name. An invalid request uploads and starts nothing."""
    sdk = _track(cfg.engine).sdk
    sm, session = _sdk(sdk), session or session_for(sdk)
    job = dataclasses.replace(job, role=session.expand_role(execution_role(session, job.role, sdk)))
    job_name = sm.utils.name_from_base(job_base_name(cfg)) if sdk is Sdk.V2 else None
    bucket = None if job.data and job.output_path else session.default_bucket()
    check_request(training_request(cfg, job, session.boto_region_name, job_name, bucket))
    job = dataclasses.replace(job, output_path=job.output_path or f"s3://{bucket}/")
    code = stage_code(cfg.engine)
    try:  # the SDK uploads the code before it starts the job (or fails)
        built = build(cfg, job, session, source_dir=code)
        return start(built, job.data or upload_dataset(cfg, session), job_name, wait)
    finally:
        shutil.rmtree(code, ignore_errors=True)


def fetch_runs(job_name: str, session=None, runs_dir: str | Path | None = None) -> list:
    """Download a finished job's output.tar.gz and unpack its run records into runs_dir."""
    session = session or session_for(installed_sdk() or Sdk.V3)
    job = session.sagemaker_client.describe_training_job(TrainingJobName=job_name)
    if (status := job.get("TrainingJobStatus")) in ("InProgress", "Stopping"):
        raise ValueError(f"job {job_name} is {status}; fetch its runs when it has ended")
    bucket, prefix = (job["OutputDataConfig"]["S3OutputPath"][5:].rstrip("/") + "/").split("/", 1)
    with tempfile.TemporaryDirectory() as tmp:
        session.boto_session.client("s3").download_file(
            bucket, f"{prefix}{job_name}/output/output.tar.gz", f"{tmp}/output.tar.gz")
        return extract_runs(Path(tmp) / "output.tar.gz", runs_dir, job_name=job_name)


def extract_runs(archive: str | Path, runs_dir: str | Path | None = None,
                 job_name: str | None = None) -> list:
    """Unpack the run folders of a job's output.tar.gz into runs_dir; returns the runs."""
    from gpu_course.measure import records
    root = records.runs_root(runs_dir)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(archive) as tar:
        for member in tar.getmembers():  # regular files inside the folder only
            if member.isreg() and not member.name.startswith("/") and ".." not in Path(member.name).parts:
                tar.extract(member, tmp, set_attrs=False)
        runs = []
        for folder in [p.parent for p in sorted(Path(tmp).rglob("run.json"))]:
            target = root / folder.name
            if target.exists():  # fetched before: the job's copy wins
                shutil.rmtree(target)
            shutil.move(str(folder), str(target))
            if job_name:
                records.update_meta(target, notes={"sagemaker": {"job_name": job_name}})
            runs.append(records.load_run(target))
    if not runs:
        raise ValueError(f"{archive} holds no run record: see the job's log in CloudWatch")
    return runs


# -- the `gpu-course-sagemaker` command ------------------------------------------------
PROG = "gpu-course-sagemaker"
VERB = PAGE.text("verb")
AWS_CHECKS = PAGE.text("aws_checks")
NO_CREDENTIALS = PAGE.text("no_credentials")


def build_parser() -> argparse.ArgumentParser:
    """`gpu-course-sagemaker` (`python -m gpu_course_sagemaker`): its flags."""
    from gpu_course.flags import add_config_flags
    table = "\n".join("  {instance:17} {GPU:5} Gluon: {Gluon:14} PyTorch: {PyTorch}".format(
        **instance_row(name)) for name in INSTANCES)
    p = argparse.ArgumentParser(
        prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,   # the epilog's table
        description=textwrap.fill(VERB, 88), epilog=f"instance types:\n{table}")
    p.add_argument("--instance-type", default=DEFAULT_INSTANCE,
                   help=f"default: {DEFAULT_INSTANCE} (an A10G: both tracks)")
    p.add_argument("--instance-count", type=int, default=1,
                   help="hosts; > 1 uses the framework's distribution option")
    p.add_argument("--all-gpus", action="store_true",
                   help="every GPU of the instance (SM_NUM_GPUS), not --num-gpus")
    p.add_argument("--role", help="SageMaker execution role ARN")
    p.add_argument("--region")
    p.add_argument("--data-s3", help="s3:// URI of the dataset (default: upload the local one)")
    p.add_argument("--output-path", help="s3:// prefix for the job's output")
    p.add_argument("--max-run", type=int, default=DEFAULT_MAX_RUN_MIN, metavar="MINUTES")
    p.add_argument("--dry-run", action="store_true", help="print the job, launch nothing")
    p.add_argument("--no-wait", action="store_true", help="start the job and return")
    p.add_argument("--runs-dir", type=Path, help="where fetched runs go")
    add_config_flags(p)
    return p


def main(argv: list | None = None) -> int:
    """The command; what the user typed wrong is one line and exit 2, as in `gpu-course`."""
    from gpu_course.cli import _os_error
    try:
        return run_command(build_parser().parse_args(argv))
    except ValueError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    except RuntimeError as err:
        if os.environ.get("GPU_COURSE_DEBUG"):
            raise
        print(f"{PROG}: {type(err).__name__}: {err}\n(GPU_COURSE_DEBUG=1 shows where it was raised)",
              file=sys.stderr)
        return 1
    except OSError as err:
        print(f"{PROG}: error: {_os_error(err)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


def show_request(cfg: Experiment, job: Job, region: str | None) -> None:
    """Print the request a launch would send, what it runs, and that it is valid (else
    request.InvalidRequest; without the track's SDK, say it is not checked)."""
    try:
        request = training_request(cfg, job, region)
    except SystemExit as err:  # not this track's SDK here
        print(f"{_request.OPERATION} request: not built here, so not checked ({err})")
        return
    print(f"{REQUEST_TITLE}\n{json.dumps(request, indent=2)}")
    check_request(request)
    print("\n" + describe(request).to_string(index=False))
    print(f"\nvalid: the request meets {_request.model_version()} and SageMaker's limits.\n" + AWS_CHECKS)
    if NO_ACCOUNT in json.dumps(request):
        print(f"account {NO_ACCOUNT} (in the role and the bucket) stands for yours")


def run_command(args) -> int:
    from gpu_course.flags import config_from_args
    cap = instance_capability(args.instance_type)   # default: this environment's track
    engine = args.cfg_engine or engines.pick_engine(capabilities=[cap] if cap else [])[0]
    cfg = config_from_args(args, engine=engine)
    job = Job(args.instance_type, args.instance_count, args.all_gpus, args.role, args.data_s3,
              args.output_path, args.max_run)
    check_job(cfg, job)
    try:
        if args.dry_run or not aws_credentials():
            show_request(cfg, job, args.region)
            if args.dry_run:
                print("\ndry run: nothing was launched")
                return 0
            print("\n" + NO_CREDENTIALS, file=sys.stderr)
            return 1
        session = session_for(_track(cfg.engine).sdk, args.region)
        name = launch(cfg, job, session, wait=not args.no_wait)
    except _request.InvalidRequest as err:
        for problem in err.problems:
            print(f"{PROG}: invalid request: {problem}", file=sys.stderr)
        return 2
    if args.no_wait:
        print(f"started {name}; fetch its run later with launch.fetch_runs({name!r})")
        return 0
    for run in fetch_runs(name, session, args.runs_dir):
        print(f"{run.name}: {run.summary.get('summary_line')}  (record: {run.path})")
    return 0
