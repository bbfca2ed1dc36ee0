"""The CreateTrainingJob request the course sends, checked against botocore's own model
of the SageMaker API (gpu_course_sagemaker/request.py), and the launcher end to end
against moto's SageMaker and S3: no AWS account, no network.

The request is the one the track's SageMaker SDK builds inside estimator.fit (v2, the
Gluon environment) or ModelTrainer.train (v3, the PyTorch environment): launch.
training_request catches it on a session that sends nothing. Each environment checks its
own track's; the dry run without the SDK runs in both.
"""
import copy
import csv
import importlib.util
import io
import json
import os
import re
import tarfile
from unittest import mock

import pytest

from fake_runs import write_run
from test_sagemaker import NO_AWS, TRACK, unquoted
from gpu_course.config import Experiment
from gpu_course_sagemaker import entry, launch
from gpu_course_sagemaker import request as rq

CFG = Experiment(name="workers", engine=TRACK or "gluon", num_workers=7, epochs=2,
                 train_size=20, test_size=10)
IMAGE = {"gluon": "mxnet-training:1.9.0-gpu-py38", "pytorch": "pytorch-training:2.10.0-gpu-py313"}
JOB = "gpu-course-workers-2026-11-26-12-00-00-000"
ROLE = "arn:aws:iam::123456789012:role/course"
REGION = "us-east-1"


@pytest.fixture(scope="module")
def no_aws():
    """No credentials anywhere boto3 looks, and no instance-metadata lookup."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    with mock.patch.dict(os.environ, {**env, **NO_AWS}, clear=True):
        yield


@pytest.fixture(scope="module")
def sm(no_aws):
    if TRACK is None:
        pytest.skip("no SageMaker SDK in this environment")
    return launch._sdk(launch.TRACKS[TRACK].sdk)


@pytest.fixture(scope="module")
def valid(sm):
    """The request `launch` would send for CFG, built once (the SDK takes a second)."""
    return launch.training_request(CFG, launch.Job("ml.g5.xlarge", role=ROLE), region=REGION,
                                   job_name=JOB)


def test_the_courses_request_is_valid_and_is_the_job(valid):
    assert launch.check_request(valid) is valid
    name = valid["TrainingJobName"]
    assert name == JOB if TRACK == "gluon" else name.startswith("gpu-course-workers-")
    assert valid["RoleArn"] == ROLE
    algorithm = valid["AlgorithmSpecification"]
    assert algorithm["TrainingImage"] == f"763104351884.dkr.ecr.{REGION}.amazonaws.com/{IMAGE[TRACK]}"
    assert algorithm["MetricDefinitions"] == launch.metric_definitions()
    assert valid["ResourceConfig"] == {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1,
                                       "VolumeSizeInGB": 30}
    assert valid["StoppingCondition"] == {"MaxRuntimeInSeconds": launch.DEFAULT_MAX_RUN_MIN * 60}
    bucket = f"s3://sagemaker-{REGION}-{launch.NO_ACCOUNT}"   # the default bucket, offline
    channels = {c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3Uri"]
                for c in valid["InputDataConfig"]}
    assert channels.pop("training") == f"{bucket}/{launch.channel_layout(CFG)[0]}"
    assert valid["OutputDataConfig"]["S3OutputPath"] == f"{bucket}/"   # (v3 adds GZIP)
    assert unquoted(valid["HyperParameters"]) == launch.hyperparameters(CFG)
    if TRACK == "gluon":  # v2: the code as a tarball, named in hyperparameters
        assert channels == {}
        assert json.loads(valid["HyperParameters"]["sagemaker_submit_directory"]) == \
            f"{bucket}/{JOB}/source/sourcedir.tar.gz"          # where fit() uploads the code
        assert json.loads(valid["HyperParameters"]["sagemaker_program"]) == launch.ENTRY_POINT
    else:  # v3: the code and the SDK's drivers as channels; sm_train.sh runs the entry
        assert channels == {c: f"{bucket}/gpu-course-workers/{name}/input/{c}"
                            for c in ("code", "sm_drivers")}
        assert algorithm["ContainerEntrypoint"][0] == "/bin/bash"


def test_describe_reads_what_the_job_runs_from_its_request(valid):
    rows = dict(launch.describe(valid).itertuples(index=False))
    assert rows["instance"] == "ml.g5.xlarge × 1 (A10G)"
    assert rows["image"].endswith(IMAGE[TRACK])
    assert rows["entry point"].startswith("sagemaker_entry.py")
    assert (rows["model"], rows["epochs"], rows["num_workers"]) == ("resnet20", "2", "7")
    assert rows["role"] == ROLE and rows["stops after"] == "120 min"
    assert "lr" not in rows and "samples_per_sec" in rows["metrics charted"]


def test_every_instance_the_course_offers_is_a_training_instance_type():
    pytest.importorskip("botocore")
    allowed = rq.service_model().shape_for("TrainingInstanceType").enum
    assert set(launch.INSTANCES) <= set(allowed)


def bad(request, path, value):
    """request with the field at `path` (keys and list indexes) set to value, or removed
    (value=DELETE)."""
    changed = copy.deepcopy(request)
    *parents, last = path
    target = changed
    for key in parents:
        target = target[key]
    if value is DELETE:
        del target[last]
    else:
        target[last] = value
    return changed


DELETE = object()
S3URI = ("InputDataConfig", 0, "DataSource", "S3DataSource", "S3Uri")
SEEN = ", channels given: "


@pytest.mark.parametrize("path, value, expected", [
    # the model's patterns, lengths and enumerations (botocore leaves them to the service)
    (("TrainingJobName",), "gpu_course-1", "Invalid value for parameter TrainingJobName, "
     "value: 'gpu_course-1', valid pattern: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"),
    (("TrainingJobName",), "j" * 64, f"Invalid length for parameter TrainingJobName, value: "
     f"'{'j' * 64}', length: 64, valid max length: 63"),
    (("ResourceConfig", "InstanceType"), "ml.p3.2xlarg", "Invalid value for parameter "
     "ResourceConfig.InstanceType, value: 'ml.p3.2xlarg', valid values: one of 225 "
     "TrainingInstanceType values, the closest: ml.p3.2xlarge, ml.t3.2xlarge, ml.p3.8xlarge"),
    (("AlgorithmSpecification", "TrainingInputMode"), "file", "Invalid value for parameter "
     "AlgorithmSpecification.TrainingInputMode, value: 'file', valid values: Pipe, File, "
     "FastFile"),
    (("RoleArn",), "arn:aws:iam::1:role/course", "Invalid value for parameter RoleArn, value: "
     "'arn:aws:iam::1:role/course', valid pattern: "
     r"arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+"),
    # SageMaker's own limit, not in the model
    (("StoppingCondition", "MaxRuntimeInSeconds"), 28 * 24 * 3600 + 1, "Invalid value for "
     "parameter StoppingCondition.MaxRuntimeInSeconds, value: 2419201, valid max value: "
     "2419200 (28 days: SageMaker's limit, not in the model)"),
    # the channel the entry script reads
    (("InputDataConfig",), DELETE, 'Missing channel in InputDataConfig: "training", '
     'channels given: none'),
    (("InputDataConfig", 0, "ChannelName"), "train", 'Missing channel in InputDataConfig: '
     '"training", channels given: train{more}'),
    # S3 URIs: the model's pattern, and S3's rule for bucket names
    (S3URI, "course-bucket/data", "Invalid value for parameter InputDataConfig[0].DataSource."
     "S3DataSource.S3Uri, value: 'course-bucket/data', valid pattern: (https|s3)://([^/]+)/?(.*)"),
    (S3URI, "s3://Course_Bucket/data", "Invalid value for parameter InputDataConfig[0]."
     "DataSource.S3DataSource.S3Uri, value: 's3://Course_Bucket/data', valid bucket name: 3 "
     "to 63 lowercase letters, digits, dots or hyphens, beginning and ending with a letter or "
     "digit (S3's rule, not in the model)"),
    # what botocore's ParamValidator checks, in its words
    (("HyperParameters", "epochs"), 2, "Invalid type for parameter HyperParameters.epochs, "
     "value: 2, type: <class 'int'>, valid types: <class 'str'>"),
    (("HyperParameters",), {f"h{i}": "1" for i in range(101)}, "Invalid length for parameter "
     "HyperParameters, value: 101 entries, valid max length: 100"),
    (("RoleArn",), DELETE, 'Missing required parameter in input: "RoleArn"'),
    (("ResourceConfig", "InstanceCount"), -1, "Invalid value for parameter ResourceConfig."
     "InstanceCount, value: -1, valid min value: 0"),
])
def test_each_bad_value_is_refused_naming_field_value_and_what_is_allowed(valid, path, value,
                                                                          expected):
    more = "".join(f", {c['ChannelName']}" for c in valid["InputDataConfig"][1:])
    with pytest.raises(rq.InvalidRequest) as err:
        launch.check_request(bad(valid, path, value))
    assert err.value.problems == [expected.replace("{more}", more)]


def test_every_problem_is_listed_and_an_unknown_field_named():
    pytest.importorskip("botocore")
    found = rq.problems({"TrainingJobName": "a b", "Bogus": 1}, channels=("training",))
    assert found == [
        'Missing required parameter in input: "RoleArn"',
        'Missing required parameter in input: "OutputDataConfig"',
        'Unknown parameter in input: "Bogus", must be one of: ' + ", ".join(
            rq.service_model().operation_model(rq.OPERATION).input_shape.members),
        "Invalid value for parameter TrainingJobName, value: 'a b', valid pattern: "
        "[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}",
        'Missing channel in InputDataConfig: "training", channels given: none']


def test_a_tag_is_checked_with_the_models_java_pattern():
    pytest.importorskip("botocore")
    assert rq.problems({"Tags": [{"Key": "course", "Value": "gpu course"}]}) == \
        rq.problems({})                                 # \p{L}, \p{Z}: letters, spaces
    assert rq.problems({"Tags": [{"Key": "course", "Value": "a|b"}]})[-1] == \
        ("Invalid value for parameter Tags[0].Value, value: 'a|b', valid pattern: "
         r"([\p{L}\p{Z}\p{N}_.:/=+\-@]*)")


# -- the CLI ---------------------------------------------------------------------------
def test_dry_run_refuses_an_invalid_request_one_line_a_problem(sm, capsys):
    """In-process: the dry run test in test_sagemaker.py pays for a subprocess."""
    assert launch.main(["--dry-run", "--instance-type", "ml.p3.2xlarg",
                        "--data-s3", "s3://Course_Bucket/data", "--role", "course",
                        "--max-run", "60"]) == 2
    out, err = capsys.readouterr()
    assert launch.REQUEST_TITLE in out and "dry run: nothing was launched" not in out
    assert err.splitlines() == [
        "gpu-course-sagemaker: invalid request: Invalid value for parameter InputDataConfig[0]"
        ".DataSource.S3DataSource.S3Uri, value: 's3://Course_Bucket/data', valid bucket name: "
        "3 to 63 lowercase letters, digits, dots or hyphens, beginning and ending with a "
        "letter or digit (S3's rule, not in the model)",
        "gpu-course-sagemaker: invalid request: Invalid value for parameter ResourceConfig."
        "InstanceType, value: 'ml.p3.2xlarg', valid values: one of 225 TrainingInstanceType "
        "values, the closest: ml.p3.2xlarge, ml.t3.2xlarge, ml.p3.8xlarge"]
    # a URI the SDK itself would refuse is refused in the same words, before it sees it
    assert launch.main(["--dry-run", "--output-path", "out-bucket/runs"]) == 2
    assert capsys.readouterr().err == (
        "gpu-course-sagemaker: invalid request: Invalid value for parameter OutputDataConfig."
        "S3OutputPath, value: 'out-bucket/runs', valid pattern: (https|s3)://([^/]+)/?(.*)\n")


def test_dry_run_without_the_sdk_says_the_request_is_not_checked(no_aws, monkeypatch, capsys):
    monkeypatch.setattr(launch, "installed_sdk", lambda: None)
    assert launch.main(["--dry-run", "--engine", "pytorch"]) == 0
    out = capsys.readouterr().out
    assert ("CreateTrainingJob request: not built here, so not checked (the pytorch track "
            "needs SageMaker Python SDK v3; this environment has none: pip install "
            "sagemaker==3.27.0)") in out
    assert out.rstrip().endswith("dry run: nothing was launched")


# -- end to end, against moto's SageMaker and S3 -----------------------------------------
@pytest.fixture(scope="module")
def aws(sm):
    """moto's SageMaker, S3, STS and IAM in this process: it sets fake keys of its own
    while it runs, and answers every AWS call here (nothing leaves the machine)."""
    moto = pytest.importorskip("moto")
    # v3 checks the role with IAM's policy simulator, which moto has not got
    with moto.mock_aws(), mock.patch.dict(os.environ, {"SAGEMAKER_VALIDATE_ROLE": "false"}):
        import boto3
        boto = boto3.Session(region_name=REGION)
        sent = []   # on the boto session before any client: v3 makes its own
        boto.events.register(f"provide-client-params.sagemaker.{rq.OPERATION}",
                             lambda params, **_: sent.append(copy.deepcopy(params)))
        yield launch._sdk_session_class(launch.TRACKS[TRACK].sdk)(boto_session=boto), sent


def s3_keys(session, bucket, prefix=""):
    listing = session.boto_session.client("s3").list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for o in listing.get("Contents", ()))


def test_launch_uploads_creates_and_describes_and_its_run_comes_back(aws, tmp_path, runs_dir):
    session, sent = aws
    cfg = CFG.replace(data_dir=str(tmp_path / "data"))
    bucket = session.default_bucket()                  # sagemaker-us-east-1-<moto's account>
    output = f"s3://{bucket}/course-runs/"
    job = launch.launch(cfg, launch.Job("ml.g5.xlarge", role=ROLE, output_path=output),
                        session=session, wait=False)
    assert job.startswith("gpu-course-workers-")
    request, = sent
    # the request checked before anything was uploaded is the one sent
    offline = launch.training_request(cfg, launch.Job("ml.g5.xlarge", role=ROLE,
                                                      output_path=output),
                                      region=REGION, job_name=job, bucket=bucket)
    if TRACK == "pytorch":  # v3 names each job itself: the names differ, nothing else
        offline = json.loads(json.dumps(offline).replace(offline["TrainingJobName"], job))
    assert request == offline
    described = session.sagemaker_client.describe_training_job(TrainingJobName=job)
    assert described["TrainingJobStatus"] == "Completed"
    for field in ("HyperParameters", "InputDataConfig", "OutputDataConfig", "ResourceConfig",
                  "StoppingCondition", "RoleArn"):
        assert described[field] == request[field], field
    # the data set, where the channel points, at the path data.prepare looks for
    prefix, inside = launch.channel_layout(cfg)
    uri = request["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"]
    assert uri == f"s3://{bucket}/{prefix}"
    folder = launch.dataset_folder(cfg)
    assert s3_keys(session, bucket, f"{prefix}/") == \
        sorted(f"{prefix}/{inside}/{p.name}" for p in folder.iterdir())
    # the code: the entry script at the top, the package beside it, the requirements
    if TRACK == "gluon":  # v2: a tarball
        code = json.loads(request["HyperParameters"]["sagemaker_submit_directory"])
        assert code == f"s3://{bucket}/{job}/source/sourcedir.tar.gz"
        body = session.boto_session.client("s3").get_object(
            Bucket=bucket, Key=code.split("/", 3)[3])["Body"]
        with tarfile.open(fileobj=io.BytesIO(body.read())) as tar:
            names = set(tar.getnames())
    else:  # v3: the folder, as the "code" channel
        code = f"gpu-course-workers/{job}/input/code"
        assert request["InputDataConfig"][1]["DataSource"]["S3DataSource"]["S3Uri"] == \
            f"s3://{bucket}/{code}"
        names = {key[len(code) + 1:] for key in s3_keys(session, bucket, code + "/")}
    assert {"sagemaker_entry.py", "requirements.txt", "gpu_course/measure/records.py",
            "gpu_course/config.py"} <= names

    # the job's log: the entry script's METRIC lines, read by the definitions it was sent
    record = write_run(tmp_path / "job-output", "workers@algo-1", engine="gluon")
    log = io.StringIO()
    printer = entry.MetricPrinter(tmp_path / "job-output", stream=log)
    with open(record / "epochs.csv") as f:
        rows = [{k: float(v) for k, v in row.items() if v != ""} for row in csv.DictReader(f)]
    for row in rows:
        printer.print_row({**row, "epoch": int(row["epoch"])}, record)
    charted = {}
    for d in request["AlgorithmSpecification"]["MetricDefinitions"]:
        for line in log.getvalue().splitlines():
            match = re.search(d["Regex"], line)
            if match:
                charted.setdefault(d["Name"], []).append(float(match.group(1)))
    assert charted["epoch"] == [row["epoch"] for row in rows]
    assert charted["val_acc"] == pytest.approx([row["val_acc"] for row in rows], abs=6e-5)
    utils = [entry.epoch_gpu_util(record, row) for row in rows]
    assert charted["gpu_util"] == [round(u, 1) for u in utils if u is not None] != []
    steady = [row for row in rows if row.get("timed_samples")]   # warm-up prints nan: left out
    assert charted["samples_per_sec"] == pytest.approx(
        [row["timed_samples"] / row["timed_s"] for row in steady], abs=0.006)

    # the job's output, fetched back as a run beside the local ones
    archive = tmp_path / "output.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:  # what SageMaker makes of SM_OUTPUT_DATA_DIR
        tar.add(record, arcname=record.name)
    session.boto_session.client("s3").upload_file(str(archive), bucket,
                                                  f"course-runs/{job}/output/output.tar.gz")
    run, = launch.fetch_runs(job, session)
    assert run.path.parent == runs_dir and run.meta["notes"]["sagemaker"]["job_name"] == job
    assert list(run.epochs.val_acc) == pytest.approx(charted["val_acc"], abs=6e-5)


def test_an_invalid_launch_uploads_and_creates_nothing(aws, capsys, tmp_path):
    """The CLI with credentials (moto's): refused before any upload, one line a problem."""
    session, sent = aws
    before = len(sent)
    bucket = session.default_bucket()
    code = launch.main(["--region", REGION, "--role", ROLE, "--instance-type",
                        "ml.g5.xlarge", "--data-dir", str(tmp_path / "data"),
                        "--max-run", "60", "--data-s3", "s3://Course_Bucket/data",
                        "--output-path", f"s3://{bucket}/invalid/", "--no-wait"])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        "gpu-course-sagemaker: invalid request: Invalid value for parameter InputDataConfig[0]"
        ".DataSource.S3DataSource.S3Uri, value: 's3://Course_Bucket/data', valid bucket name: "
        "3 to 63 lowercase letters, digits, dots or hyphens, beginning and ending with a "
        "letter or digit (S3's rule, not in the model)"]
    assert len(sent) == before                     # no CreateTrainingJob
    assert s3_keys(session, bucket, "invalid/") == []
    assert not (tmp_path / "data").exists()        # not even prepared for an upload
