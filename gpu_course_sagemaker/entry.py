"""SageMaker's entry point: `python sagemaker_entry.py --batch_size 128 ...` (Experiment
fields) trains on SM_CHANNEL_TRAINING into SM_OUTPUT_DATA_DIR (record) and SM_MODEL_DIR
(weights), printing a METRIC line an epoch. Under torchrun (DDP) or MXNet's parameter_server
rank/worker 0 keeps the record; otherwise each host trains alone as `<name>@<host>`.
The MXNet container's Python is 3.8: this file stays 3.8-compatible.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import tempfile
from pathlib import Path

if not __package__:  # run as a file (how SageMaker starts it), not with `python -m`
    _here = Path(__file__).resolve().parent
    if sys.path and Path(sys.path[0] or ".").resolve() == _here and (_here / "__init__.py").exists():
        # started inside gpu_course_sagemaker/: use the checkout, where gpu_course/ is beside it
        sys.path[0] = str(_here.parent)

from gpu_course import config as _config  # noqa: E402

FAILURE_FILE = "failure"  # SageMaker shows $SM_OUTPUT_DIR/failure as the job's reason


def parse_hyperparameters(argv: list) -> dict:
    """`--key value` pairs (keys with - or _, each an Experiment field) -> {field: value}."""
    values, args = {}, iter(argv)
    for arg in args:
        if not arg.startswith("--") or len(arg) == 2:
            raise ValueError(f"expected --<field> <value>, got {arg!r}")
        key, eq, text = arg[2:].partition("=")
        text = text if eq else next(args, None)
        if text is None:
            raise ValueError(f"--{key} needs a value")
        field = key.replace("-", "_")
        if field not in _config.FIELDS:
            allowed = ", ".join(_config.FIELDS)
            raise ValueError(f"unknown hyperparameter {key!r}; allowed: {allowed}")
        values[field] = _config.parse_value(field, text)
    return values


def experiment_from(argv: list, env: dict) -> _config.Experiment:
    """The Experiment for these hyperparameters in this environment (SageMaker or not)."""
    values = parse_hyperparameters(argv)
    if channel := env.get("SM_CHANNEL_TRAINING"):
        values["data_dir"] = channel
    if "num_gpus" not in values:
        values["num_gpus"] = gpu_count(env)
    cfg = _config.Experiment(**values)
    if channel:
        check_channel(cfg, Path(channel))
    return cfg


def check_channel(cfg: _config.Experiment, channel: Path) -> None:
    """Refuse a channel that is not a folder, or that holds another synthetic set than cfg's."""
    if not channel.is_dir():
        state = "is a file" if channel.exists() else "does not exist"
        raise ValueError(f"SM_CHANNEL_TRAINING={channel} {state}; name a folder, or unset it")
    if cfg.dataset != "synthetic":
        return
    from gpu_course.data import synthetic
    expected = f"synthetic-v{synthetic.VERSION}-s{cfg.seed}-{cfg.train_size}-{cfg.test_size}"
    held = sorted(p.name for p in channel.iterdir() if not p.name.startswith("."))
    if held and expected not in held:
        shown = ", ".join(held[:3]) + (", ..." if len(held) > 3 else "")
        raise ValueError(f"the training channel {channel} holds {shown}, not {expected}/: set "
                         "dataset to cifar10 or folder, or match seed/train_size/test_size to the upload")


def _int_env(env: dict, name: str, low: int) -> int | None:
    text = (env.get(name) or "").strip()
    if text and not (text.isdecimal() and int(text) >= low):
        raise ValueError(f"{name}={text!r} must be an integer >= {low}")
    return int(text) if text else None


def gpu_count(env: dict) -> int:
    if (count := _int_env(env, "SM_NUM_GPUS", 0)) is not None:
        return count
    from gpu_course.measure import nvml
    return nvml.gpu_count()


def output_dirs(env: dict) -> tuple:
    """(runs_dir, model_dir or None = the run's own folder)."""
    from gpu_course.measure import records
    return (Path(env.get("SM_OUTPUT_DATA_DIR") or records.default_runs_dir()),
            Path(env["SM_MODEL_DIR"]) if env.get("SM_MODEL_DIR") else None)


def check_outputs(env: dict) -> None:
    """The output folders exist or can be made, and are writable: found before training."""
    for name, folder in zip(("SM_OUTPUT_DATA_DIR", "SM_MODEL_DIR"), output_dirs(env)):
        if folder is None:
            continue
        where = f"{name}={folder}" if env.get(name) else f"the runs folder {folder}"
        must = "it must name a folder the job can write"
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"{where} is a file: {must}")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ValueError(f"{where} cannot be made ({err.strerror or err}): {must}") from None
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ValueError(f"{where} is not writable by user id {os.getuid()}: {must}")


def hosts(env: dict) -> tuple:
    """(this host, all hosts) of the job; ("local", ["local"]) outside SageMaker."""
    text = env.get("SM_HOSTS") or "[]"
    try:
        all_hosts = json.loads(text)
    except ValueError:
        all_hosts = None
    if not isinstance(all_hosts, list) or not all(isinstance(h, str) and h for h in all_hosts):
        raise ValueError(f'SM_HOSTS={text!r} must be a JSON list of host names, e.g. ["algo-1"]')
    all_hosts = all_hosts or ["local"]
    return env.get("SM_CURRENT_HOST") or all_hosts[0], all_hosts


# -- the metric line -------------------------------------------------------------------
def metric_line(row: dict, gpu_util: float | None) -> str:
    """The per-epoch METRIC line (nan: not measured), of `metrics.epoch_numbers`."""
    from gpu_course.analyse import metrics

    def num(value, fmt):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "nan"
        return format(value, fmt)
    n = metrics.epoch_numbers(row)
    values = (("samples_per_sec", n["samples_per_sec"], ".2f"), ("epoch_time", n["epoch_time_s"], ".2f"),
              ("data_wait", n["data_wait_share"], ".4f"), ("gpu_util", gpu_util, ".1f"),
              ("val_acc", row.get("val_acc"), ".4f"))
    return f"METRIC epoch={row['epoch']} " + " ".join(f"{k}={num(v, fmt)}" for k, v, fmt in values)


def epoch_gpu_util(run_folder: Path, row: dict) -> float | None:
    """This epoch's GPU utilisation (%, `metrics.gpu_util`) from the record; None without samples."""
    from gpu_course.analyse import metrics
    from gpu_course.measure.records import Run
    run = Run(run_folder)
    run.epochs = run.epochs[run.epochs["epoch"] == row["epoch"]]
    util = metrics.gpu_util(run)
    return None if math.isnan(util) else util


class MetricPrinter:
    """on_epoch callback printing METRIC lines; its run is the folder new in runs_dir."""

    def __init__(self, runs_dir: Path, stream=None):
        self.runs_dir, self.stream = Path(runs_dir), stream or sys.stdout
        self.before = set(self._folders())

    def _folders(self) -> list:
        return [p for p in self.runs_dir.iterdir() if p.is_dir()] if self.runs_dir.is_dir() else []

    def run_folder(self) -> Path | None:
        new = [p for p in self._folders() if p not in self.before and (p / "run.json").exists()]
        return max(new, key=lambda p: p.stat().st_mtime) if new else None

    def __call__(self, row: dict) -> None:
        self.print_row(row, self.run_folder())

    def print_row(self, row: dict, folder: Path | None) -> None:
        util = row.get("gpu_util")  # if the harness puts it in the row
        if util is None and folder is not None:
            util = epoch_gpu_util(folder, row)
        print(metric_line(row, util), file=self.stream, flush=True)


# -- the job ---------------------------------------------------------------------------
def train(cfg: _config.Experiment, env: dict):
    """Train with the track's adapter, print METRIC lines, save the weights; -> Run."""
    from gpu_course.ladder import adapter
    gc = adapter(cfg.engine)
    runs_dir, model_dir = output_dirs(env)   # made by check_outputs
    # built here to save the weights (DDP processes build their own)
    net = gc.get_model(cfg) if cfg.engine == "gluon" or cfg.num_gpus <= 1 else None
    run = gc.train(cfg, on_epoch=MetricPrinter(runs_dir), runs_dir=runs_dir, progress=False,
                   **({"net": net} if net is not None else {}))
    this_host, all_hosts = hosts(env)
    if model_dir is not None and len(all_hosts) > 1:  # SageMaker merges every host's files
        model_dir = model_dir / this_host
    saved = save_model(net, cfg, model_dir or run.path) if net is not None else None
    finish(run, env, saved)
    return run


def train_ddp(cfg: _config.Experiment, env: dict) -> int:
    """One torchrun process of a DDP job (the PyTorch track's worker); rank 0 keeps the record."""
    from gpu_course.measure.records import load_run
    from gpu_course.tracks.torch import ddp
    runs_dir, _ = output_dirs(env)
    with tempfile.TemporaryDirectory() as tmp:
        config, result = Path(tmp) / "config.json", Path(tmp) / "run_path"
        config.write_text(cfg.to_json())
        code = ddp.main(["--config", str(config), "--runs-dir", str(runs_dir),
                         "--result-file", str(result)])
        if int(env.get("RANK") or 0) == 0 and result.exists():
            run = load_run(result.read_text().strip())
            printer = MetricPrinter(runs_dir)
            for row in run.epochs.to_dict("records"):
                printer.print_row(row, run.path)
            finish(run, env, None)
    return code


def train_ps(cfg: _config.Experiment, env: dict):
    """One parameter-server worker of a Gluon job (DMLC_* set); worker 0 keeps the record."""
    from gpu_course.tracks.gluon import dist
    runs_dir, model_dir = output_dirs(env)
    this_host, _ = hosts(env)
    folder = (model_dir / this_host) if model_dir is not None else runs_dir / f"model@{this_host}"
    folder.mkdir(parents=True, exist_ok=True)  # SageMaker merges every host's model folder
    (folder / "experiment.json").write_text(cfg.to_json())
    saved = folder / "model.params"
    run = dist.train_worker(cfg, runs_dir=runs_dir, verbose=True, params_file=saved,
                            on_epoch=MetricPrinter(runs_dir))
    if run is None:
        print(f"{this_host}: worker done, weights in {saved}; worker 0 keeps the record", flush=True)
        return None
    finish(run, env, saved)
    return run


def finish(run, env: dict, saved: Path | None) -> None:
    """Note where the run ran, and say where its record and weights are."""
    from gpu_course.measure.records import update_meta
    this_host, all_hosts = hosts(env)
    try:
        training = json.loads(env.get("SM_TRAINING_ENV") or "{}")
    except ValueError:
        training = {}
    update_meta(run.path, notes={"sagemaker": {
        "job_name": training.get("job_name"), "host": this_host, "hosts": all_hosts,
        "instance_type": env.get("SM_CURRENT_INSTANCE_TYPE") or training.get("current_instance_type"),
        "model": str(saved) if saved else None}})
    print(f"run record: {run.path}", flush=True)
    print(f"model: {saved}" if saved else "model: not saved (DDP processes hold it)", flush=True)


def save_model(net, cfg: _config.Experiment, folder: Path) -> Path:
    """The weights (model.params or model.pt) and experiment.json, for `get_model(cfg)`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "experiment.json").write_text(cfg.to_json())
    if cfg.engine == "gluon":
        path = folder / "model.params"
        net.save_parameters(str(path))
    else:
        import torch  # the PyTorch track's container: torch is there
        path = folder / "model.pt"
        module = getattr(net, "module", net)  # unwrap DataParallel
        torch.save(getattr(module, "_orig_mod", module).state_dict(), path)  # and compile
    return path


def fail(message: str, env: dict) -> None:
    """Say why the job stops: on stderr (the log) and in SageMaker's failure file."""
    print(f"sagemaker_entry: error: {message}", file=sys.stderr, flush=True)
    if out := env.get("SM_OUTPUT_DIR"):
        with contextlib.suppress(OSError):
            Path(out).mkdir(parents=True, exist_ok=True)
            (Path(out) / FAILURE_FILE).write_text(message[:1000] + "\n")


def main(argv: list | None = None, env: dict | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    env = dict(os.environ) if env is None else env
    try:
        this_host, all_hosts = hosts(env)
        distributed = (_int_env(env, "WORLD_SIZE", 1) or 1) > 1  # started by torchrun
        _int_env(env, "SM_NUM_GPUS", 0)
        check_outputs(env)
    except ValueError as err:
        fail(f"bad environment: {err}", env)
        return 2
    try:
        cfg = experiment_from(argv, env)
    except ValueError as err:
        fail(f"bad hyperparameter: {err}", env)
        return 2
    parameter_server = env.get("DMLC_ROLE") == "worker"  # MXNet's parameter_server option
    for started, engine, what in ((distributed, "pytorch", "run under torchrun"),
                                  (parameter_server, "gluon", "be a parameter-server worker")):
        if started and cfg.engine != engine:
            fail(f"engine={cfg.engine!r} cannot {what}; allowed: engine={engine!r}", env)
            return 2
    if len(all_hosts) > 1 and not (distributed or parameter_server):
        print(f"{this_host}: no distribution option: it trains alone, into its own record", flush=True)
        cfg = cfg.replace(name=f"{cfg.name}@{this_host}")
    print(f"experiment: {cfg.to_json()}", flush=True)
    try:
        if distributed:
            return train_ddp(cfg, env)
        if parameter_server:
            run = train_ps(cfg, env)
            return 0 if run is None or run.status == "finished" else 1
        run = train(cfg, env)
    except KeyboardInterrupt as err:  # SIGTERM (StopTrainingJob) or Ctrl-C: no traceback
        fail(stopped(err), env)
        return 130
    except BaseException as err:
        fail(f"{type(err).__name__}: {err}", env)
        raise
    return 0 if run.status == "finished" else 1


def stopped(err: KeyboardInterrupt) -> str:
    """Why the job stopped, from its run record where one was written (`run_path`)."""
    path = getattr(err, "run_path", None)
    if path is None:
        return f"{err or 'interrupted'} before the run record was started"
    from gpu_course.measure.records import load_run
    run = load_run(path)
    return f"{run.meta.get('error') or err}; the record (status {run.status}) is in {path}"


if __name__ == "__main__":
    sys.exit(main())
