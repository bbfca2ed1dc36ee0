"""Several GPUs: DistributedDataParallel, one process per device, each running this module
(`main`) under torchrun, which `launch` starts for `train(cfg)` with num_gpus > 1. Each
process trains on its own shard; rank 0 alone evaluates and keeps the record, with every
rank's epoch timings in its notes ("ranks")."""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import torch.distributed as dist

from ...config import Experiment, check_gpus
from ...env.cores import check_training_processes
from ...measure.provenance import Parts, notice as provenance_notice
from ...measure.records import OutOfMemory, load_run, runs_root, update_meta
from ...scale.localhosts import backend, child_env
from ..common import rank_epochs
from .devices import describe, gpu_count

OOM_MARKER = "gpu_course out of memory:"  # a rank's last line when its batch did not fit


def _stop(signum, frame):
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def main(argv: list[str] | None = None) -> int:
    """One DDP process (torchrun sets RANK, LOCAL_RANK and WORLD_SIZE)."""
    from .train import build_loaders, cpu_changes, fit
    from .models import get_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="Experiment as a JSON file")
    parser.add_argument("--runs-dir", required=True)
    parser.add_argument("--result-file", help="rank 0 writes its run folder here")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    cfg = Experiment.from_dict(json.loads(Path(args.config).read_text()))
    missing = [v for v in ("RANK", "LOCAL_RANK", "WORLD_SIZE")
               if not os.environ.get(v, "").strip().isdigit()]
    if missing:
        said = ", ".join(f"{v}={os.environ.get(v)!r}" for v in missing)
        raise ValueError(f"{said}: need whole numbers; start it with torchrun (`gpu-course distributed`)")
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    world = int(os.environ["WORLD_SIZE"])  # processes on all hosts
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))  # on this host
    signal.signal(signal.SIGTERM, _stop)  # torchrun stops the others with SIGTERM
    on_gpu = gpu_count() >= local_world
    device = torch.device("cuda", local_rank) if on_gpu else torch.device("cpu")
    if on_gpu:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if on_gpu else "gloo")
    try:
        _, _, notice = check_gpus(local_world, gpu_count())
        devices = describe([device] * local_world if not on_gpu
                           else [torch.device("cuda", i) for i in range(local_world)])
        if world > local_world:
            devices += f" on each of {world // local_world} hosts"
        cfg, changed = cpu_changes(cfg.replace(num_gpus=world), device)
        torch.manual_seed(cfg.seed)  # the same initial weights on every rank
        net = get_model(cfg)
        train_iter, val_iter = build_loaders(cfg, device, rank, world)

        def started(rec):  # rank 0's record exists: say what it ran on, and where it is
            rec.note(devices=devices)
            if args.result_file:
                Path(args.result_file).write_text(str(rec.record.path))
        rows = []  # this rank's epoch timings
        parts = Parts(net, train_iter, val_iter, None, [device], cfg,
                      notice=provenance_notice(notice, *(c["why"] for c in changed)))
        run = fit(parts, on_start=started, runs_dir=args.runs_dir, progress=False,
                  verbose=not args.quiet, on_epoch=rows.append)
        ranks = [None] * world   # every rank's epoch timings, in rank order: one all_gather
        dist.all_gather_object(ranks, {
            "rank": rank, "local_rank": local_rank, "host": socket.gethostname(),
            "group_rank": int(os.environ.get("GROUP_RANK", 0)),  # the node, as torchrun counts
            "epochs": rank_epochs(rows)})
        if run is not None:  # rank 0: one record for the job, with every rank's timings
            update_meta(run.path, notes=dict(ranks=ranks, nodes=world // local_world,
                                             procs_per_node=local_world, backend=dist.get_backend()))
        dist.barrier()  # no rank tears the group down while another still uses it
    except OutOfMemory as err:
        print(f"{OOM_MARKER} rank {rank}: {err}", flush=True)
        return 3
    finally:
        dist.destroy_process_group()
    return 0


def launch(cfg: Experiment, runs_dir=None, verbose: bool = True):
    """Run `cfg` under torchrun, a process a device; returns rank 0's record."""
    world = cfg.num_gpus
    if world < 2:
        raise ValueError(f"num_gpus={world} needs no launcher; DDP wants num_gpus >= 2")
    runs_dir = runs_root(runs_dir).resolve()
    env = child_env()
    if backend(gpu_count(), world) == "gloo":  # CPU processes: fewer GPUs than processes
        check_training_processes(world, f"num_gpus={world} on the CPU")   # each for a GPU
        if gpu_count():  # NCCL refuses two ranks on one GPU: the processes see none
            env["CUDA_VISIBLE_DEVICES"] = ""
        # they share the cores (torchrun would give each one)
        env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // world)))
    with tempfile.TemporaryDirectory(prefix="gpu_course_ddp_") as tmp:
        config_file, result_file = Path(tmp) / "config.json", Path(tmp) / "run_path"
        config_file.write_text(cfg.to_json())
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   f"--nproc_per_node={world}", "-m", "gpu_course.tracks.torch.ddp",
                   "--config", str(config_file), "--runs-dir", str(runs_dir),
                   "--result-file", str(result_file)] + ([] if verbose else ["--quiet"])
        tail, returncode, interrupted = _stream(command, env)
        run_path = result_file.read_text().strip() if result_file.exists() else None
    oom = next((line for line in tail if OOM_MARKER in line), None)
    if oom is not None:
        message = oom.split(OOM_MARKER, 1)[1].strip()
        if run_path:
            _mark_oom(Path(run_path), message)
        err = OutOfMemory(message)
        err.run_path = run_path
        raise err
    if interrupted:
        raise KeyboardInterrupt("DDP run interrupted" + (f"; finished epochs kept in {run_path}"
                                                         if run_path else ""))
    if returncode != 0 or run_path is None:
        err = RuntimeError(f"torchrun exited with status {returncode}:\n{_first_error(tail)}")
        err.run_path = run_path
        raise err
    return load_run(run_path)


def _stream(command: list[str], env: dict) -> tuple[list[str], int, bool]:
    """Run the command, output streamed: (last 200 lines, exit status, interrupted)."""
    tail, interrupted = collections.deque(maxlen=200), False
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1)
    try:
        while True:
            try:
                for line in proc.stdout:
                    print(line, end="", flush=True)
                    tail.append(line)
                break
            except KeyboardInterrupt:  # pass Ctrl-C on; torchrun stops the workers
                interrupted = True
                proc.send_signal(signal.SIGINT)
        returncode = proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return list(tail), returncode, interrupted


def _first_error(lines: list[str]) -> str:
    """The first worker's traceback in the output, else the last lines."""
    for i, line in enumerate(lines):
        match = re.match(r"(\[rank\d+\]: )Traceback", line)
        if match:
            prefix = match.group(1)
            block = [l[len(prefix):] for l in lines[i:] if l.startswith(prefix)]
            end = next((j for j, l in enumerate(block[1:], 1) if not l.startswith(" ")),
                       len(block) - 1)
            return "".join(block[:end + 1])
    return "".join(lines[-20:])


def _mark_oom(run_path: Path, message: str) -> None:
    """A rank other than 0 ran out of memory and rank 0 was stopped: say so in the record."""
    try:
        if json.loads((run_path / "run.json").read_text()).get("status") != "oom":
            update_meta(run_path, status="oom", error=message)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    from ...scale.localhosts import exit_now
    exit_now(main())  # not sys.exit: see exit_now
