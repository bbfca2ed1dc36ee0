"""Several hosts with MXNet's parameter server (kvstore='dist_sync'): each process's role
(scheduler, server, worker) comes from DMLC_* variables; servers sum the gradients and run
the optimizer. A worker runs `python -m gpu_course.tracks.gluon.dist --config cfg.json
--runs-dir runs`; `commands` starts a job on real hosts, `launch_local` on 127.0.0.1."""
from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import mxnet as mx
import numpy as np
from mxnet import gluon

from ...config import Experiment
from ...env.cores import threads_per_process
from ...measure.harness import Device, Harness, Output, Ran
from ...scale.localhosts import LocalJob, child_env, free_port, wait_all
from ...measure.records import runs_root, load_run, update_meta
from ..common import rank_epochs, read_logs
from .data import make_loader
from .io_data import load_datasets
from .devices import effective_config, gpu_count, on_gpu, try_devices
from .models import get_model, prepare
from .optim import optimizer_params
from .loop import evaluate, forward_backward, split

ROLES = ("scheduler", "server", "worker")
SCHEDULER_WAIT_S = 120.0  # a job's roles start in any order: how long a worker waits


def role_env(role: str, port: int, workers: int, servers: int, uri: str = "127.0.0.1") -> dict:
    """The environment that makes a process `role` in a job of `workers` + `servers`."""
    if role not in ROLES:
        raise ValueError(f"role={role!r} is not one of {', '.join(ROLES)}")
    return {"DMLC_ROLE": role, "DMLC_PS_ROOT_URI": uri, "DMLC_PS_ROOT_PORT": str(port),
            "DMLC_NUM_WORKER": str(workers), "DMLC_NUM_SERVER": str(servers)}


def wait_for_scheduler(env) -> None:
    """Refuse a worker whose job has no scheduler (MXNet's kvstore would wait forever)."""
    names = ("DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER", "DMLC_NUM_WORKER")
    bad = [f"{n}={env.get(n)!r}" for n in names if not (env.get(n) or "").strip()
           or (n != "DMLC_PS_ROOT_URI" and not env[n].strip().isdigit())]
    if bad:
        raise ValueError(f"{', '.join(bad)}: need a host, a port and whole numbers; start the job with "
                         "dist.launch_local, or unset DMLC_ROLE")
    host, port = env["DMLC_PS_ROOT_URI"].strip(), int(env["DMLC_PS_ROOT_PORT"])
    deadline = time.monotonic() + SCHEDULER_WAIT_S
    while True:
        try:
            with socket.create_connection((host, port), timeout=2):
                return
        except OSError as err:
            if time.monotonic() >= deadline:
                raise RuntimeError(
                    f"no parameter-server scheduler at DMLC_PS_ROOT_URI={host} DMLC_PS_ROOT_PORT={port} after "
                    f"{SCHEDULER_WAIT_S:g} s ({err.strerror or err}): start one, or unset DMLC_ROLE"
                ) from None
            time.sleep(0.5)


def train_worker(cfg: Experiment, runs_dir=None, verbose: bool = True, on_epoch=None,
                 params_file=None, timings_file=None):
    """This worker's part of a parameter-server job: train on its shard; worker 0 keeps
    the record and returns it. A "{rank}" in params_file/timings_file is its rank."""
    if os.environ.get("DMLC_ROLE") != "worker":
        raise ValueError("train_worker needs DMLC_ROLE=worker: start it with dist.launch_local")
    wait_for_scheduler(os.environ)
    devices, notice = try_devices(cfg.num_gpus)
    cfg, changed = effective_config(cfg.replace(engine="gluon"), devices)
    # joins the job; dist_device_sync first sums a host's GPUs on a GPU
    kv = mx.kv.create("dist_device_sync" if on_gpu(devices) else "dist_sync")
    rank, workers = kv.rank, kv.num_workers
    servers = int(os.environ.get("DMLC_NUM_SERVER", 0))
    random.seed(cfg.seed)
    np.random.seed(cfg.seed + rank)  # each worker shuffles its shard its own way
    mx.random.seed(cfg.seed)
    train_set, val_set = load_datasets(cfg)
    train_iter = make_loader(train_set.shard(workers, rank), cfg)  # this worker's 1/W
    val_iter = make_loader(val_set, cfg, train=False)
    steps = min(len(train_iter), cfg.max_steps or len(train_iter))
    net = get_model(cfg)
    prepare(net, cfg, devices)
    # the servers run the optimizer; worker 0's initial weights are pushed to them
    trainer = gluon.Trainer(net.collect_params(), cfg.optimizer,
                            optimizer_params(cfg, steps), kvstore=kv)
    leader, rows = rank == 0, []

    def keep(row):
        rows.append(row)
        if on_epoch is not None and leader:
            on_epoch(row)
    with Harness(cfg, Ran(engine="gluon", devices=f"{devices} on each of {workers} workers",
                          device_notice=" ".join(n for n in (notice, changed) if n) or None),
                 Device(read=lambda a: a.asscalar()),
                 Output(runs_dir=runs_dir, progress=False, verbose=verbose and leader,
                        monitor=leader, record=leader, on_epoch=keep)) as h:
        if h.record is not None:
            h.record.note(kvstore=kv.type, workers=workers, servers=servers)
        _run_epochs(h, cfg, net, trainer, train_iter, val_iter, devices, steps, workers, leader)
    if params_file:
        net.save_parameters(str(params_file).format(rank=rank))
    if timings_file:
        Path(str(timings_file).format(rank=rank)).write_text(json.dumps(
            {"rank": rank, "host": socket.gethostname(), "epochs": rank_epochs(rows)}))
    return h.run


def _run_epochs(h, cfg, net, trainer, train_iter, val_iter, devices, steps, workers, leader):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in h.epochs():
        for data, label in h.batches(train_iter, total=steps):
            xs, ys = split(data, label, devices, cfg.dtype)
            n = sum(y.shape[0] for y in ys)
            losses, correct = forward_backward(net, loss_fn, xs, ys)
            trainer.step(n * workers)  # the servers sum all workers' gradients
            # the job's images; loss and accuracy are this shard's, scaled to them
            h.step(n * workers, loss_sum=[loss.sum() * workers for loss in losses],
                   correct=[c * workers for c in correct])
            # the step's sync point: its time holds the push, the update and the pull
            mx.nd.waitall()
        # sync point: waits for the last pull, so the epoch's time is real
        h.end_epoch(sync=mx.nd.waitall, lr=trainer.learning_rate,
                    evaluate=(lambda: evaluate(net, val_iter, devices)) if leader else None)


def commands(workers: int, servers: int, cfg_file: str = "cfg.json", runs_dir: str = "runs",
             hostfile: str = "hosts") -> str:
    """The command that starts the job on real hosts with MXNet's launcher (ssh)."""
    return (f'python $(python -c "import mxnet, os; print(os.path.dirname(mxnet.__file__))")'
            f"/tools/launch.py -n {workers} -s {servers} -H {hostfile} --launcher ssh "
            f"python -m gpu_course.tracks.gluon.dist --config {cfg_file} --runs-dir {runs_dir}")


def launch_local(cfg: Experiment, workers: int = 2, servers: int = 1,
                 threads: int | None = None, job: LocalJob = LocalJob(), work_dir=None):
    """Run cfg as a parameter-server job on 127.0.0.1; worker 0's record."""
    if workers < 1 or servers < 1:
        raise ValueError(f"workers={workers!r} and servers={servers!r} must be >= 1")
    runs_dir = runs_root(job.runs_dir).resolve()
    with tempfile.TemporaryDirectory(prefix="gpu_course_dist_") as tmp:
        (work := Path(work_dir or tmp)).mkdir(parents=True, exist_ok=True)
        (work / "config.json").write_text(cfg.to_json())
        worker_cmd = [sys.executable, "-m", "gpu_course.tracks.gluon.dist",
                      "--config", str(work / "config.json"), "--runs-dir", str(runs_dir),
                      "--result-file", str(work / "run_path"),
                      "--params-file", str(work / "worker{rank}.params"),
                      "--timings-file", str(work / "worker{rank}.json")]
        worker_cmd += [] if job.verbose else ["--quiet"]
        roles, codes, outputs = _run_roles(worker_cmd, workers, servers, free_port(), work,
                                           threads or threads_per_process(workers), job.timeout,
                                           gpus_per_worker=cfg.num_gpus)
        run_path = (work / "run_path").read_text().strip() if (work / "run_path").exists() else None
        ranks = sorted(_timings(work), key=lambda r: r["rank"])
    if job.verbose:
        print(outputs[1 + servers], end="", flush=True)
    _check(roles, codes, outputs, run_path is not None)
    update_meta(run_path, notes={"ranks": ranks, "exit_codes": dict(zip(
        [f"{role}{i}" for i, role in enumerate(roles)], codes))})
    return load_run(run_path)


def _timings(work: Path) -> list[dict]:
    """Each worker's epoch timings (worker<rank>.json); a damaged one is named and skipped."""
    found = []
    for path in sorted(work.glob("worker*.json")):
        try:
            ranked = json.loads(path.read_text())
            found.append({**ranked, "rank": int(ranked["rank"])})
        except (OSError, ValueError, KeyError, TypeError) as err:
            warnings.warn(f"skipping {path}: unreadable worker timings ({err})", stacklevel=2)
    return found


def _run_roles(worker_cmd, workers, servers, port, work: Path, threads: int, timeout,
               gpus_per_worker: int = 0):
    """Run scheduler, servers, workers (gpus_per_worker GPUs each) here: (roles, codes, outputs)."""
    serve = [sys.executable, "-c", "import mxnet"]  # the role comes from DMLC_ROLE
    roles = ["scheduler"] + ["server"] * servers + ["worker"] * workers
    procs, logs = [], []
    for i, role in enumerate(roles):
        env = child_env(**role_env(role, port, workers, servers),
                        OMP_NUM_THREADS=threads if role == "worker" else 1)
        if role == "worker" and gpus_per_worker and gpu_count() >= workers * gpus_per_worker:
            first = (i - 1 - servers) * gpus_per_worker
            env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, range(first, first + gpus_per_worker)))
        logs.append(open(work / f"{i:02d}-{role}.log", "w+"))
        procs.append(subprocess.Popen(worker_cmd if role == "worker" else serve, env=env,
                                      stdout=logs[-1], stderr=subprocess.STDOUT, text=True))
    codes = wait_all(procs[1 + servers:], timeout)  # the workers; then the others end
    codes = wait_all(procs[:1 + servers], 60) + codes
    return roles, codes, read_logs(logs)


def _check(roles, codes, outputs, produced: bool) -> None:
    if any(c != 0 for c, role in zip(codes, roles) if role == "worker") or not produced:
        failed = next((i for i, c in enumerate(codes) if c), len(roles) - 1)
        raise RuntimeError(f"{roles[failed]} process {failed} exited with {codes[failed]} (all: {codes}):\n"
                           f"{outputs[failed][-3000:]}")


KiB, MiB = 2**10, 2**20
SIZES = tuple(4 * KiB * 4**i for i in range(7))  # 4 KiB .. 16 MiB


def bench_worker(sizes=SIZES, iters: int = 10) -> list[dict]:
    """In a worker: the median time of push + pull through the servers, each size."""
    kv = mx.kv.create("dist_sync")
    rows = []
    for key, nbytes in enumerate(sizes):
        x = mx.nd.ones((max(1, nbytes // 4),))
        out, times = mx.nd.zeros_like(x), []
        kv.init(key, x)
        for i in range(iters + 2):
            t0 = time.perf_counter()
            kv.push(key, x)
            kv.pull(key, out=out)
            out.wait_to_read()  # the round's own sync point: the pull has arrived
            if i >= 2:  # the first two set up the connections
                times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        rows.append({"bytes": x.size * 4, "workers": kv.num_workers, "rounds": iters,
                     "time_s": t, "time_min_s": min(times), "time_max_s": max(times),
                     # a worker sends its array and receives the sum: 2 x bytes per round
                     "worker_GBps": 2 * x.size * 4 / t / 1e9, "rank": kv.rank})
    return rows


def bench_local(workers: int = 2, servers: int = 1, sizes=SIZES, iters: int = 10,
                timeout: float | None = 300) -> list[dict]:
    """Push + pull time against size in a local parameter-server job (worker 0's rows)."""
    with tempfile.TemporaryDirectory(prefix="gpu_course_kvbench_") as tmp:
        out = Path(tmp) / "rows.json"
        command = [sys.executable, "-m", "gpu_course.tracks.gluon.dist", "--bench", str(out),
                   "--bench-sizes", ",".join(str(s) for s in sizes), "--bench-iters", str(iters)]
        roles, codes, outputs = _run_roles(command, workers, servers, free_port(), Path(tmp),
                                           threads_per_process(workers), timeout)
        _check(roles, codes, outputs, out.exists())
        return json.loads(out.read_text())


def main(argv=None) -> int:
    """One worker of a parameter-server job (its role and job from DMLC_* variables)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="Experiment as a JSON file")
    parser.add_argument("--runs-dir")
    parser.add_argument("--bench", help="time push + pull instead; worker 0's rows to this file")
    parser.add_argument("--bench-sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--bench-iters", type=int, default=10)
    parser.add_argument("--result-file", help="worker 0 writes its run folder here")
    parser.add_argument("--params-file", help="final weights; {rank} = this worker's rank")
    parser.add_argument("--timings-file", help="epoch timings; {rank} = this worker's rank")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if args.bench:
        rows = bench_worker([int(v) for v in args.bench_sizes.split(",")], args.bench_iters)
        if rows[0]["rank"] == 0:
            Path(args.bench).write_text(json.dumps(rows))
        return 0
    if not (args.config and args.runs_dir):
        parser.error("--config and --runs-dir are needed to train")
    cfg = Experiment.from_dict(json.loads(Path(args.config).read_text()))
    run = train_worker(cfg, runs_dir=args.runs_dir, verbose=not args.quiet,
                       params_file=args.params_file, timings_file=args.timings_file)
    if run is not None and args.result_file:
        Path(args.result_file).write_text(str(run.path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
