"""Run one course experiment as a SageMaker training job, and bring its record back.

The job runs `gpu_course/sagemaker/entry.py` in AWS's framework container: MXNet 1.9.0
(Python 3.8) for the Gluon track, PyTorch for the PyTorch track. The experiment's
fields travel as hyperparameters, the dataset as the "training" channel, and the run
record comes back in the job's output.tar.gz, so it plots beside local runs:

    job = Job("ml.p3.2xlarge")                # where it runs, on what terms (see Job)
    spec = job_spec(cfg, job)                 # what would run; needs no AWS account
    request = training_request(cfg, job)      # what the SDK would send; sent nowhere
    check_request(request)                    # against botocore's model of the SageMaker API
    name = launch(cfg, job)                   # needs credentials and a role; checks first
    runs = fetch_runs(name)                   # the job's run record(s), as records.Run

Uses the SageMaker Python SDK v2 (`pip install sagemaker==2.243.2`): v3 removed the
framework estimators. The SDK is imported only when a job is built, so this module's
import and the job specification work without it.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import importlib.util
import inspect
import json
import logging
import os
import re
import shutil
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import Experiment
from ..engines import MXNET_MAX_CAPABILITY
from . import request as _request

SDK_PIN = "sagemaker==2.243.2"
PACKAGE_DIR = Path(__file__).resolve().parents[1]   # gpu_course/
ENTRY_SOURCE = Path(__file__).resolve().parent / "entry.py"
ENTRY_POINT = "sagemaker_entry.py"                 # its name at the top of the job's source_dir
CHANNEL = "training"                 # -> SM_CHANNEL_TRAINING in the container
DEFAULT_INSTANCE = "ml.p3.2xlarge"
DEFAULT_REGION = "us-east-1"         # only to name the image when no region is configured
DEFAULT_MAX_RUN_MIN = 120            # SageMaker stops (and bills no further) after this
MAX_RUN_LIMIT_MIN = 28 * 24 * 60     # SageMaker's MaxRuntimeInSeconds allows 28 days at most
DATA_PREFIX = "gpu-course/data"      # S3 key prefix of uploaded datasets


@dataclass(frozen=True)
class Track:
    """How one track runs on SageMaker."""

    estimator: str                   # SDK class, e.g. "sagemaker.mxnet.MXNet"
    framework: str                   # name in the SDK's image catalogue
    framework_version: str
    py_version: str
    distribution: dict               # the framework's option for instance_count > 1
    requirements: tuple              # pip-installed in the container before the entry runs


TRACKS = {
    # MXNet 1.9.0 is the last MXNet container (CUDA 11.2, Python 3.8, pandas 1.3, numpy<1.20).
    "gluon": Track("sagemaker.mxnet.MXNet", "mxnet", "1.9.0", "py38",
                   {"parameter_server": {"enabled": True}},
                   ("psutil", "nvidia-ml-py", "pandas",
                    "numpy<1.24  # MXNet 1.9 does not import with numpy >= 1.24")),
    # The newest PyTorch container the pinned SDK knows that also supports torchrun.
    "pytorch": Track("sagemaker.pytorch.PyTorch", "pytorch", "2.5.1", "py311",
                     {"torch_distributed": {"enabled": True}},
                     ("psutil", "nvidia-ml-py", "pandas")),
}


@dataclass(frozen=True)
class Instance:
    gpus: int
    gpu: str
    why: str


# Instance choices, with what each one is good for in this course.
INSTANCES = {
    "ml.p3.2xlarge": Instance(1, "V100 16 GB", "the talk's GPU: your numbers compare "
                              "directly with its 306 -> 17,000 samples/s ladder"),
    "ml.p3.8xlarge": Instance(4, "4x V100 16 GB", "the talk's multi-GPU runs (4 GPUs)"),
    "ml.g4dn.xlarge": Instance(1, "T4 16 GB", "the cheapest GPU; slower than a V100"),
    "ml.g5.xlarge": Instance(1, "A10G 24 GB", "cheaper than a V100 and faster in float16; "
                             "the newest GPU MXNet 1.9 runs on (sm_86)"),
    "ml.g5.12xlarge": Instance(4, "4x A10G 24 GB", "multi-GPU on a budget"),
    "ml.p4d.24xlarge": Instance(8, "8x A100 40 GB", "both tracks; large batches and scaling"),
    "ml.p5.48xlarge": Instance(8, "8x H100 80 GB", "PyTorch track only: MXNet 1.9 has no "
                               "machine code for Hopper (sm_90)"),
    "ml.m5.xlarge": Instance(0, "no GPU (4 vCPU)", "a cheap dry run of the job itself"),
}


def instance_table():
    """INSTANCES as a DataFrame: instance, GPUs, GPU, why."""
    import pandas as pd
    return pd.DataFrame([{"instance": name, "GPUs": i.gpus, "GPU": i.gpu, "why": i.why}
                         for name, i in INSTANCES.items()])


# CUDA compute capability by instance family: MXNet 1.9 runs up to sm_86.
FAMILY_CAPABILITY = {"p3": (7, 0), "g4dn": (7, 5), "g5": (8, 6), "p4d": (8, 0),
                     "p4de": (8, 0), "g6": (8, 9), "g6e": (8, 9), "p5": (9, 0),
                     "p5e": (9, 0), "p5en": (9, 0), "p6": (10, 0)}

# -- the metric line -------------------------------------------------------------------
# The entry script prints, once per epoch (epoch numbers as in epochs.csv, from 0):
#   METRIC epoch=0 samples_per_sec=663.50 epoch_time=18.59 data_wait=0.4200 gpu_util=27.0 val_acc=0.7131
# data_wait is the share (0..1) of step time spent waiting for data; a value it cannot
# measure is printed as "nan", which the regexes below skip.
METRIC_NAMES = ("epoch", "samples_per_sec", "epoch_time", "data_wait", "gpu_util", "val_acc")
_NUMBER = r"([0-9]+\.?[0-9]*)"


def metric_definitions() -> list[dict]:
    """SageMaker metric definitions for the entry script's METRIC lines (plain regexes,
    first group = the value; SageMaker charts them and keeps them with the job)."""
    defs = [{"Name": "epoch", "Regex": "METRIC epoch=" + _NUMBER}]
    defs += [{"Name": name, "Regex": f"METRIC .* {name}={_NUMBER}"}
             for name in METRIC_NAMES[1:]]
    return defs


def read_metrics(log: str):
    """The METRIC lines of a job's log as SageMaker's metric definitions read them: a
    DataFrame, one row an epoch (a value the line prints as "nan" is left out, as
    SageMaker leaves it out of its chart)."""
    import pandas as pd
    rows = [{d["Name"]: float(m.group(1)) for d in metric_definitions()
             if (m := re.search(d["Regex"], line))}
            for line in log.splitlines() if line.startswith("METRIC ")]
    return pd.DataFrame(rows)


# -- checks ----------------------------------------------------------------------------
def instance_capability(instance_type: str) -> tuple | None:
    check_instance_name(instance_type)
    return FAMILY_CAPABILITY.get(instance_type.split(".")[1])


def check_instance_name(instance_type: str) -> None:
    if not re.fullmatch(r"ml\.[a-z0-9]+\.[a-z0-9]+", str(instance_type)):
        raise ValueError(f"instance_type={instance_type!r} is not a SageMaker training "
                         f"instance type; e.g. {', '.join(INSTANCES)}")


def default_engine(instance_type: str) -> str:
    """The Gluon track where MXNet can run, PyTorch on newer GPUs (Hopper and later)."""
    cap = instance_capability(instance_type)
    return "pytorch" if cap is not None and cap > MXNET_MAX_CAPABILITY else "gluon"


def check_job(cfg: Experiment, instance_type: str, instance_count: int = 1,
              all_gpus: bool = False) -> None:
    """ValueError for a job that cannot run as asked."""
    cap = instance_capability(instance_type)
    if cfg.engine == "gluon" and cap is not None and cap > MXNET_MAX_CAPABILITY:
        allowed = sorted(f for f, c in FAMILY_CAPABILITY.items() if c <= MXNET_MAX_CAPABILITY)
        raise ValueError(f"instance_type={instance_type!r} has sm_{cap[0]}{cap[1]} GPUs, which "
                         f"MXNet 1.9 cannot use (its newest is sm_86); use engine='pytorch' "
                         f"there, or a Gluon-capable family: {', '.join(allowed)}")
    if not isinstance(instance_count, int) or instance_count < 1:
        raise ValueError(f"instance_count={instance_count!r} must be an integer >= 1")
    known = INSTANCES.get(instance_type)
    if known is not None and not all_gpus and cfg.num_gpus > max(known.gpus, 1):
        raise ValueError(f"num_gpus={cfg.num_gpus} but {instance_type} has {known.gpus} "
                         f"GPU{'s' if known.gpus != 1 else ''}; allowed: 0..{known.gpus}")


# -- hyperparameters -------------------------------------------------------------------
def hyperparameters(cfg: Experiment, all_gpus: bool = False) -> dict:
    """Every Experiment field as the string the entry script parses back with
    config.parse_value. data_dir is left out (the container reads the training channel);
    all_gpus leaves out num_gpus, so the job uses every GPU (SM_NUM_GPUS)."""
    skip = {"data_dir"} | ({"num_gpus"} if all_gpus else set())
    return {name: encode_value(name, value) for name, value in cfg.to_dict().items()
            if name not in skip}


def encode_value(field: str, value: Any) -> str:
    """One field's value as text that config.parse_value(field, text) turns back into it."""
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
    """The job's source_dir: the entry script at the top (the container runs it from
    there), the gpu_course package beside it (the container does not have it) and a
    requirements.txt the container pip-installs first."""
    track = _track(engine)
    dest = Path(dest) if dest is not None else Path(tempfile.mkdtemp(prefix="gpu-course-sm-"))
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ENTRY_SOURCE, dest / ENTRY_POINT)
    target = dest / "gpu_course"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(PACKAGE_DIR, target, ignore=_left_out)
    (dest / "requirements.txt").write_text(
        "# installed by the SageMaker training toolkit before the entry script runs\n"
        + "\n".join(track.requirements) + "\n")
    return dest


def _left_out(folder: str, names: list) -> set:
    """What stage_code does not copy: caches, hidden files, and the package's reference
    results (5 MB of reports and traces the job never reads)."""
    skip = set(shutil.ignore_patterns("__pycache__", "*.pyc", ".*")(folder, names))
    return skip | ({"reference"} & set(names) if Path(folder) == PACKAGE_DIR else set())


@dataclass(frozen=True)
class Job:
    """Where a training job runs and on what terms: `instance_count` instances of
    `instance_type`, every GPU of each (all_gpus) or cfg.num_gpus, the execution `role`
    (None: this notebook instance's), the dataset's s3:// URI (`data`; None: the local
    one, uploaded at launch), the s3:// prefix of its output (None: the default bucket),
    and the minutes after which SageMaker stops it (and bills no further)."""

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
            raise ValueError(f"max_run_min={minutes!r} must be 1..{MAX_RUN_LIMIT_MIN} minutes "
                             "(SageMaker stops a training job after 28 days at most)")

    def replace(self, **changes) -> "Job":
        return dataclasses.replace(self, **changes)


def estimator_kwargs(cfg: Experiment, job: Job = Job(),
                     source_dir: str | Path | None = None) -> dict:
    """The keyword arguments of the track's SDK estimator (MXNet or PyTorch)."""
    check_job(cfg, job.instance_type, job.instance_count, job.all_gpus)
    track = _track(cfg.engine)
    kwargs = {
        "entry_point": ENTRY_POINT, "source_dir": str(source_dir) if source_dir else None,
        "framework_version": track.framework_version, "py_version": track.py_version,
        "role": job.role, "instance_type": job.instance_type,
        "instance_count": job.instance_count,
        "hyperparameters": hyperparameters(cfg, job.all_gpus),
        "metric_definitions": metric_definitions(),
        "base_job_name": job_base_name(cfg),
        "max_run": int(job.max_run_min * 60),
        # the course measures with its own monitor; SageMaker's profiler would add a
        # sidecar process to the very machine we measure
        "disable_profiler": True,
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


def image_uri(engine: str, instance_type: str, region: str | None = None) -> str:
    """The training image the job runs (from the SDK's catalogue; no network)."""
    track = _track(engine)
    sm = _sdk()
    return sm.image_uris.retrieve(track.framework, region or aws_region() or DEFAULT_REGION,
                                  version=track.framework_version,
                                  py_version=track.py_version, instance_type=instance_type,
                                  image_scope="training")


def job_spec(cfg: Experiment, job: Job = Job(), region: str | None = None) -> dict:
    """Everything the job would run with: image, instance, hyperparameters, channels,
    metric definitions. Needs neither AWS credentials nor (except for the image name)
    the SDK."""
    kwargs = estimator_kwargs(cfg, job)
    track = _track(cfg.engine)
    region = region or aws_region()
    try:
        image = image_uri(cfg.engine, job.instance_type, region)
    except SystemExit:  # no SDK here: the spec is still useful without the image name
        image = f"(resolved by the SageMaker SDK: pip install {SDK_PIN})"
    known = INSTANCES.get(job.instance_type)
    prefix, inside = channel_layout(cfg)
    return {
        "estimator": track.estimator,
        "image_uri": image,
        "region": region or f"{DEFAULT_REGION} (none configured)",
        "instance_type": job.instance_type,
        "instance_count": job.instance_count,
        "instance": ({"gpus": known.gpus, "gpu": known.gpu, "why": known.why}
                     if known else "not in the course's table"),
        "role": job.role or "(your SageMaker execution role: --role, or found on a "
                            "SageMaker notebook instance)",
        "framework_version": kwargs["framework_version"],
        "py_version": kwargs["py_version"],
        "entry_point": ENTRY_POINT,
        "source_dir": {"files": [ENTRY_POINT, "gpu_course/", "requirements.txt"],
                       "requirements": [r.split("#")[0].strip() for r in track.requirements]},
        "distribution": kwargs.get("distribution"),
        "hyperparameters": kwargs["hyperparameters"],
        "inputs": {CHANNEL: job.data or f"s3://<default bucket>/{prefix} (uploaded at launch "
                                        f"from {dataset_folder(cfg)} to {prefix}/{inside})"},
        "metric_definitions": kwargs["metric_definitions"],
        "output_path": job.output_path or "s3://<default bucket>/ (model.tar.gz, output.tar.gz)",
        "max_run": kwargs["max_run"],
        "base_job_name": kwargs["base_job_name"],
    }


def format_spec(spec: dict) -> str:
    return "SageMaker training job specification\n" + json.dumps(spec, indent=2)


# -- the CreateTrainingJob request -----------------------------------------------------
# Without an AWS account the default bucket (sagemaker-<region>-<account>) has no name:
# this account number stands for yours, as in NO_ROLE.
NO_ACCOUNT = "000000000000"
REQUEST_TITLE = "CreateTrainingJob request (built by the SageMaker SDK, sent nowhere)"


def training_request(cfg: Experiment, job: Job = Job(), region: str | None = None,
                     job_name: str | None = None, bucket: str | None = None) -> dict:
    """The CreateTrainingJob request `launch` sends for cfg, as the SDK's estimator.fit
    builds it, on a session that sends nothing: no AWS account, no network. `bucket` is
    the account's default bucket (None: sagemaker-<region>-000000000000)."""
    sm = _sdk()
    session = offline_session(region)
    bucket = bucket or f"sagemaker-{session.boto_region_name}-{NO_ACCOUNT}"
    output = job.output_path or f"s3://{bucket}/"
    channel = job.data or f"s3://{bucket}/{channel_layout(cfg)[0]}"   # where launch uploads it
    if not (output.startswith("s3://") and channel.startswith("s3://")):
        _request.check_part({  # the SDK would refuse them in its own words: say what is allowed
            "OutputDataConfig": {"S3OutputPath": output},
            "InputDataConfig": [{"DataSource": {"S3DataSource": {"S3Uri": channel}}}]})
    job_name = job_name or sm.utils.name_from_base(job_base_name(cfg))
    # where fit() uploads source_dir (the output path's bucket, not its prefix); given
    # as s3://, the SDK takes it as uploaded
    code = f"s3://{sm.s3.parse_s3_url(output)[0]}/{job_name}/source/sourcedir.tar.gz"
    role = job.role
    if role and "/" not in role:  # a role's name: the SDK looks its ARN up in IAM
        role = f"arn:aws:iam::{NO_ACCOUNT}:role/{role}"
    estimator = build_estimator(cfg, job.replace(role=role or NO_ROLE, output_path=output),
                                session, source_dir=code)
    return sent_request(estimator, {CHANNEL: channel}, job_name)


def check_request(request: dict) -> dict:
    """`request`, or request.InvalidRequest naming each field SageMaker would refuse,
    its value and what is allowed (botocore's model of the API, and the job's channel)."""
    return _request.check(request, channels=(CHANNEL,))


def format_request(request: dict) -> str:
    return f"{REQUEST_TITLE}\n{json.dumps(request, indent=2)}"


def offline_session(region: str | None = None):
    """A SageMaker session that sends nothing: a request that would leave this machine
    raises instead (needs no credentials), and its SageMaker client leaves the checking
    of a request to check_request, so that an invalid one is still built and shown."""
    import botocore.config
    sm = _sdk()
    boto = _offline_boto(region or aws_region() or DEFAULT_REGION)
    client = boto.client("sagemaker", config=botocore.config.Config(parameter_validation=False))
    return sm.Session(boto_session=boto, sagemaker_client=client)


@functools.lru_cache(maxsize=None)
def _offline_boto(region: str):
    """One boto3 session a region for offline_session: it keeps the service models it has
    read (a new one reads them again, 0.3 s each)."""
    import boto3
    boto = boto3.Session(region_name=region)
    boto.events.register("before-send", _refuse_to_send)
    return boto


def _refuse_to_send(request, **_):
    raise RuntimeError(f"the offline SageMaker session sends nothing, and was asked to send "
                       f"{request.method} {request.url}")


def sent_request(estimator, inputs: dict, job_name: str) -> dict:
    """The CreateTrainingJob request that estimator.fit(inputs) sends, caught as it is
    handed to the SageMaker client and answered there (botocore's Stubber): for an
    estimator on an offline_session, nothing is sent."""
    from botocore.stub import Stubber
    client = estimator.sagemaker_session.sagemaker_client
    sent = {}
    event = f"provide-client-params.sagemaker.{_request.OPERATION}"

    def keep(params, **_):
        sent.update(copy.deepcopy(params))
    client.meta.events.register(event, keep)
    # fit without the SDK's telemetry wrapper, which would report this call over the
    # network (opting out through the SDK's config costs 0.7 s a config lookup here)
    fit = inspect.unwrap(type(estimator).fit)
    try:
        with Stubber(client) as stub, _quiet("sagemaker"):
            stub.add_response("create_training_job", {"TrainingJobArn": f"arn:aws:sagemaker:"
                              f"{client.meta.region_name}:{NO_ACCOUNT}:training-job/{job_name}"})
            fit(estimator, inputs, wait=False, logs="None", job_name=job_name)
    finally:
        client.meta.events.unregister(event, keep)
    return sent


@contextlib.contextmanager
def _quiet(logger: str):
    """The SDK logs 'Creating training-job' at INFO and, once fit has imported
    sagemaker.experiments, root logging is at INFO: keep a dry run's log quiet."""
    log = logging.getLogger(logger)
    level = log.level
    log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        log.setLevel(level)


# the hyperparameters that change what the job measures (the rest keep their defaults)
KEY_HYPERPARAMETERS = ("model", "dataset", "train_size", "epochs", "batch_size", "num_workers",
                       "graph", "dtype", "num_gpus")


def describe(estimator, hyperparameters=KEY_HYPERPARAMETERS):
    """What an SDK estimator will run, read back from the estimator itself, as a
    (setting, value) DataFrame: the instance, the image and framework, the entry point, a
    few hyperparameters (the estimator holds every field) and the metrics it charts."""
    import pandas as pd
    known = INSTANCES.get(estimator.instance_type)
    values = {k: json.loads(v) for k, v in estimator.hyperparameters().items()
              if not k.startswith("sagemaker_")}
    kind = type(estimator)
    rows = [("instance", f"{estimator.instance_type} × {estimator.instance_count}"
                         + (f" ({known.gpu})" if known else "")),
            ("image", estimator.training_image_uri()),
            ("framework", f"{kind.__module__.split('.estimator')[0]}.{kind.__name__} "
                          f"{estimator.framework_version} ({estimator.py_version})"),
            ("entry point", f"{estimator.entry_point} (beside gpu_course/ and requirements.txt)"),
            ("role", estimator.role if estimator.role != NO_ROLE
             else "(none: no AWS account here, so nothing is launched)")]
    rows += [(name, values[name]) for name in hyperparameters if name in values]
    rows += [("metrics charted", ", ".join(d["Name"] for d in estimator.metric_definitions or ())),
             ("stops after", f"{estimator.max_run / 60:g} min")]
    return pd.DataFrame(rows, columns=["setting", "value"])


def dataset_root(cfg: Experiment) -> Path:
    """The folder the job's training channel mirrors (cfg.data_dir, or the course's data/)."""
    from .. import data
    return Path(cfg.data_dir).expanduser() if cfg.data_dir else Path(data.default_root())


def dataset_folder(cfg: Experiment, write: bool = False) -> Path:
    """The cifar-10-batches-bin folder cfg trains on, under dataset_root(cfg): the path
    `data.prepare` uses (write=True: prepare it, i.e. generate or download if missing)."""
    from .. import data
    if cfg.dataset not in data.DATASETS:
        raise ValueError(f"dataset={cfg.dataset!r} cannot go to SageMaker as a training "
                         f"channel; allowed: {', '.join(data.DATASETS)}")
    if write:
        return Path(data.prepare(cfg.dataset, root=dataset_root(cfg), seed=cfg.seed,
                                 train_size=cfg.train_size, test_size=cfg.test_size))
    if cfg.dataset == "cifar10":  # the names data.prepare gives, without writing anything
        return dataset_root(cfg) / data.FOLDER_NAME
    return (dataset_root(cfg) / f"synthetic-v{data.synthetic.VERSION}-s{cfg.seed}-"
            f"{cfg.train_size}-{cfg.test_size}" / data.FOLDER_NAME)


def channel_layout(cfg: Experiment) -> tuple:
    """(S3 prefix of the channel, the dataset folder's path inside it). In the container
    the channel is data_dir, so data.prepare finds the folder where it looks locally."""
    inside = dataset_folder(cfg).relative_to(dataset_root(cfg)).as_posix()
    return f"{DATA_PREFIX}/{inside.split('/')[0]}", inside


# -- AWS -------------------------------------------------------------------------------
def aws_credentials(timeout_s: float = 1.0) -> bool:
    """Whether boto3 finds AWS credentials (environment, ~/.aws, container or instance
    role). The instance-metadata lookup is cut to one attempt of `timeout_s`, so a laptop
    or CI machine never hangs here; AWS_EC2_METADATA_DISABLED=true skips it."""
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


def aws_region() -> str | None:
    try:
        import botocore.session
    except ImportError:
        return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    try:
        return botocore.session.get_session().get_config_variable("region")
    except Exception:
        return None


def _sdk():
    """The SageMaker SDK, quietly (it logs config-file lookups to stdout at import)."""
    logging.getLogger("sagemaker.config").setLevel(logging.WARNING)
    try:
        with _unshadowed("sagemaker"):
            import sagemaker
            import sagemaker.mxnet  # noqa: F401
            import sagemaker.pytorch  # noqa: F401
    except ImportError:
        raise SystemExit(f"the SageMaker Python SDK is not installed in this environment: "
                         f"pip install {SDK_PIN}") from None
    except Exception as err:  # e.g. AWS_PROFILE names a profile ~/.aws/config lacks
        raise ValueError(f"the SageMaker SDK could not start: {type(err).__name__}: "
                         f"{err}") from None
    return sagemaker


@contextlib.contextmanager
def _unshadowed(package: str):
    """Import `package` even where a plain module of that name comes first on sys.path:
    notebooks/sagemaker.py (this course's notebook, as jupytext text) would otherwise be
    imported as the SDK by a kernel running in notebooks/."""
    saved = sys.path[:]
    module = sys.modules.get(package)
    if module is not None and not hasattr(module, "__path__"):
        del sys.modules[package]  # a shadowing module imported earlier
    spec = importlib.util.find_spec(package) if package not in sys.modules else None
    if spec is not None and spec.submodule_search_locations is None and spec.origin:
        shadow = Path(spec.origin).resolve().parent
        sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != shadow]
    try:
        yield
    finally:
        sys.path[:] = saved


def _track(engine: str) -> Track:
    if engine not in TRACKS:
        raise ValueError(f"engine={engine!r} is not allowed; allowed: {', '.join(TRACKS)}")
    return TRACKS[engine]


# An estimator needs a role to be built; without an AWS account it is never launched, and
# this stand-in says so wherever it is shown.
NO_ROLE = "arn:aws:iam::000000000000:role/no-aws-account-here"


def session(region: str | None = None):
    """A SageMaker session for `region` (else the configured one, else us-east-1). Building
    an estimator and naming its image need no AWS account; uploading and fit() do."""
    import boto3
    sm = _sdk()
    return sm.Session(boto_session=boto3.Session(
        region_name=region or aws_region() or DEFAULT_REGION))


def execution_role(session, role: str | None = None) -> str:
    """`role`, else this SageMaker notebook instance's execution role, else (no AWS
    credentials here) NO_ROLE. With credentials but no role to find: ValueError."""
    if role:
        return role
    if not aws_credentials():
        return NO_ROLE
    try:
        return _sdk().get_execution_role(session)
    except Exception as err:  # outside SageMaker there is no role to find
        raise ValueError(f"no SageMaker execution role given and none found ({err}); "
                         "pass role='arn:aws:iam::<account>:role/<name>'") from None


def estimator_class(engine: str):
    """The SDK's estimator for a track: sagemaker.mxnet.MXNet or sagemaker.pytorch.PyTorch."""
    module, name = _track(engine).estimator.rsplit(".", 1)
    _sdk()
    return getattr(sys.modules[module], name)


def build_estimator(cfg: Experiment, job: Job = Job(), session=None,
                    source_dir: str | Path | None = None):
    """The SDK estimator for cfg's track (sagemaker.mxnet.MXNet or sagemaker.pytorch.PyTorch).
    job.role defaults to the notebook instance's execution role; source_dir defaults to a
    fresh stage_code() folder."""
    check_job(cfg, job.instance_type, job.instance_count, job.all_gpus)
    sm = _sdk()
    session = session or sm.Session()
    job = job.replace(role=execution_role(session, job.role))
    source_dir = source_dir or stage_code(cfg.engine)
    kwargs = estimator_kwargs(cfg, job, source_dir)
    return estimator_class(cfg.engine)(sagemaker_session=session, **kwargs)


def upload_dataset(cfg: Experiment, session) -> str:
    """Upload the dataset folder (prepared first if missing); returns the training
    channel's s3:// URI."""
    folder = dataset_folder(cfg, write=True)
    prefix, inside = channel_layout(cfg)
    uri = session.upload_data(str(folder), key_prefix=f"{prefix}/{inside}")
    return uri.rstrip("/")[:-len(inside) - 1]  # the channel holds the folder's path


def launch(cfg: Experiment, job: Job = Job(), session=None, wait: bool = True) -> str:
    """Start the training job (uploading the dataset unless job.data is an s3:// URI) and,
    with wait=True, stream its log until it ends. Returns the job name. Its request is
    checked first (check_request): an invalid one uploads and starts nothing."""
    sm = _sdk()
    session = session or sm.Session()
    # a role's name becomes its ARN
    job = job.replace(role=session.expand_role(execution_role(session, job.role)))
    job_name = sm.utils.name_from_base(job_base_name(cfg))
    bucket = None if job.data and job.output_path else session.default_bucket()
    check_request(training_request(cfg, job, session.boto_region_name, job_name, bucket))
    code = stage_code(cfg.engine)
    try:
        estimator = build_estimator(cfg, job, session, source_dir=code)
        inputs = {CHANNEL: job.data or upload_dataset(cfg, session)}
        estimator.fit(inputs, wait=wait, logs="All" if wait else "None", job_name=job_name)
    finally:  # fit() has uploaded the code by the time it returns (or fails)
        shutil.rmtree(code, ignore_errors=True)
    return estimator.latest_training_job.name


def fetch_runs(job_name: str, session=None, runs_dir: str | Path | None = None) -> list:
    """Download a finished job's output.tar.gz and unpack its run records into runs_dir
    (default: the local runs folder); returns them as records.Run."""
    sm = _sdk()
    session = session or sm.Session()
    job = session.sagemaker_client.describe_training_job(TrainingJobName=job_name)
    status = job.get("TrainingJobStatus")
    if status in ("InProgress", "Stopping"):
        raise ValueError(f"job {job_name} is {status}; fetch its runs when it has ended")
    prefix = job["OutputDataConfig"]["S3OutputPath"].rstrip("/")
    with tempfile.TemporaryDirectory() as tmp:
        sm.s3.S3Downloader.download(f"{prefix}/{job_name}/output/output.tar.gz", tmp,
                                    sagemaker_session=session)
        return extract_runs(Path(tmp) / "output.tar.gz", runs_dir, job_name=job_name)


def extract_runs(archive: str | Path, runs_dir: str | Path | None = None,
                 job_name: str | None = None) -> list:
    """Unpack the run folders of a job's output.tar.gz into runs_dir; returns the runs."""
    from ..measure import records
    root = records.runs_root(runs_dir)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(archive) as tar:
        for member in tar.getmembers():  # regular files inside the folder only
            parts = Path(member.name).parts
            if not member.isreg() or member.name.startswith("/") or ".." in parts:
                continue
            tar.extract(member, tmp, set_attrs=False)
        found = [p.parent for p in sorted(Path(tmp).rglob("run.json"))]
        runs = []
        for folder in found:
            target = root / folder.name
            if target.exists():  # fetched before: the job's copy wins
                shutil.rmtree(target)
            shutil.move(str(folder), str(target))
            if job_name:
                _note_job(target, job_name)
            runs.append(records.load_run(target))
    if not runs:
        raise ValueError(f"{archive} holds no run record (no run.json); did the job fail "
                         "before its first epoch? See its log in CloudWatch")
    return runs


def _note_job(folder: Path, job_name: str) -> None:
    from ..measure.records import update_meta
    update_meta(folder, notes={"sagemaker": {"job_name": job_name}})


# -- the `gpu-course sagemaker` verb ---------------------------------------------------
def add_parser(subparsers) -> None:
    """Register `gpu-course sagemaker` (called by gpu_course.cli)."""
    import argparse

    from ..flags import add_config_flags as _add_config_flags
    table = "\n".join(f"  {name:17} {i.gpu:16} {i.why}" for name, i in INSTANCES.items())
    p = subparsers.add_parser(
        "sagemaker", help="run one experiment as a SageMaker training job",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Build the SageMaker training job for an experiment (AWS's MXNet 1.9.0\n"
        "container for --engine gluon, PyTorch for --engine pytorch; default: what the\n"
        "instance can run), run it, and fetch its run record into the local runs folder.\n"
        "Without AWS credentials, or with --dry-run, print the job specification and\n"
        "launch nothing.",
        epilog=f"instance types:\n{table}")
    p.add_argument("--instance-type", default=DEFAULT_INSTANCE, help=f"default: "
                   f"{DEFAULT_INSTANCE} (the talk's V100)")
    p.add_argument("--instance-count", type=int, default=1,
                   help="hosts; > 1 uses the framework's distribution option")
    p.add_argument("--all-gpus", action="store_true",
                   help="train on every GPU of the instance (SM_NUM_GPUS) instead of --num-gpus")
    p.add_argument("--role", default=None, help="SageMaker execution role ARN")
    p.add_argument("--region", default=None)
    p.add_argument("--data-s3", default=None,
                   help="s3:// URI of an uploaded dataset (default: upload the local one)")
    p.add_argument("--output-path", default=None, help="s3:// prefix for the job's output")
    p.add_argument("--max-run", type=int, default=DEFAULT_MAX_RUN_MIN, metavar="MINUTES")
    p.add_argument("--dry-run", action="store_true", help="print the job, launch nothing")
    p.add_argument("--no-wait", action="store_true", help="start the job and return")
    p.add_argument("--runs-dir", type=Path, default=None, help="where fetched runs go")
    _add_config_flags(p)
    p.set_defaults(func=run_command)


def show_request(cfg: Experiment, job: Job, region: str | None) -> None:
    """Print the request a launch would send (training_request) and that SageMaker would
    accept it; raise request.InvalidRequest (after printing it) if not. Without the SDK,
    say that nothing was built or checked."""
    try:
        request = training_request(cfg, job, region)
    except SystemExit as err:  # no SDK here
        print(f"\n{_request.OPERATION} request: not built here, so not checked ({err})")
        return
    print("\n" + format_request(request))
    check_request(request)
    print(f"\nvalid: the request meets {_request.model_version()} in fields, types, "
          f"lengths, patterns and instance types, SageMaker's 28-day limit and the job's "
          f"'{CHANNEL}' channel;\nwhat only AWS knows (the role's permissions, the buckets, "
          "your quotas) is checked at launch")
    if NO_ACCOUNT in json.dumps(request):
        print(f"account {NO_ACCOUNT} (in the role and the bucket "
              f"sagemaker-<region>-{NO_ACCOUNT}) stands for yours")


def run_command(args) -> int:
    from ..flags import config_from_args
    if not 1 <= args.max_run <= MAX_RUN_LIMIT_MIN:
        raise ValueError(f"--max-run={args.max_run} must be 1..{MAX_RUN_LIMIT_MIN} minutes "
                         "(SageMaker stops a training job after 28 days at most)")
    engine = args.cfg_engine or default_engine(args.instance_type)
    cfg = config_from_args(args, engine=engine)
    job = Job(args.instance_type, args.instance_count, args.all_gpus, args.role, args.data_s3,
              args.output_path, args.max_run)
    spec = job_spec(cfg, job, args.region)
    try:
        if args.dry_run or not aws_credentials():
            print(format_spec(spec))
            show_request(cfg, job, args.region)
            if args.dry_run:
                print("\ndry run: nothing was launched")
                return 0
            print("\nNo AWS credentials found (environment, ~/.aws or an instance role): "
                  "nothing was launched. Use --dry-run to only print the job.", file=sys.stderr)
            return 1
        sm = _sdk()
        import boto3
        session = sm.Session(boto_session=boto3.Session(region_name=args.region))
        name = launch(cfg, job, session, wait=not args.no_wait)
    except _request.InvalidRequest as err:
        for problem in err.problems:
            print(f"gpu-course sagemaker: invalid request: {problem}", file=sys.stderr)
        return 2
    if args.no_wait:
        print(f"started {name}; fetch its run later with gpu_course.sagemaker.launch."
              f"fetch_runs({name!r})")
        return 0
    for run in fetch_runs(name, session, args.runs_dir):
        print(f"{run.name}: {run.summary.get('summary_line')}  (record: {run.path})")
    return 0
