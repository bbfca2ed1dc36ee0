"""Several GPUs: DistributedDataParallel, one process per device, each running this module
under torchrun (`launch` starts them for `train(cfg)` with num_gpus > 1). Each process
trains on its own shard; rank 0 alone evaluates and keeps the record, with every rank's
epoch timings in its notes ("ranks")."""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
from pathlib import Path

import torch
import torch.distributed as dist

from ...config import Experiment, check_gpus
from ...measure.provenance import Parts
from ...measure.records import OutOfMemory, update_meta
from ..common import rank_epochs
from .devices import describe, gpu_count

OOM_MARKER = "gpu_course out of memory:"  # a rank's last line when its batch did not fit


def gather_rank_timings(rows: list[dict], local_rank: int) -> list[dict]:
    """Every rank's epoch timings, in rank order (one small all_gather, once per run)."""
    mine = {"rank": dist.get_rank(), "local_rank": local_rank, "host": socket.gethostname(),
            "group_rank": int(os.environ.get("GROUP_RANK", 0)),  # the node, as torchrun counts
            "epochs": rank_epochs(rows)}
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    return everyone


def _stop(signum, frame):
    raise KeyboardInterrupt(f"stopped by signal {signum}")


TORCHRUN_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE")   # what torchrun sets a process


def main(argv: list[str] | None = None) -> int:
    """One DDP process (torchrun sets RANK, LOCAL_RANK and WORLD_SIZE)."""
    from .train import build_loaders, effective_config, fit
    from .models import get_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="Experiment as a JSON file")
    parser.add_argument("--runs-dir", required=True)
    parser.add_argument("--result-file", help="rank 0 writes its run folder here")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    cfg = Experiment.from_dict(json.loads(Path(args.config).read_text()))
    missing = [v for v in TORCHRUN_VARIABLES if not os.environ.get(v, "").strip().isdigit()]
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
        cfg, changed = effective_config(cfg.replace(num_gpus=world), device)
        torch.manual_seed(cfg.seed)  # the same initial weights on every rank
        net = get_model(cfg)
        train_iter, val_iter = build_loaders(cfg, device, rank, world)

        def started(rec):  # rank 0's record exists: say what it ran on, and where it is
            rec.note(devices=devices)
            if args.result_file:
                Path(args.result_file).write_text(str(rec.record.path))
        rows = []  # this rank's epoch timings
        parts = Parts(net, train_iter, val_iter, None, [device], cfg,
                      notice=" ".join(n for n in (notice, changed) if n) or None)
        run = fit(parts, on_start=started, runs_dir=args.runs_dir, progress=False,
                  verbose=not args.quiet, on_epoch=rows.append)
        ranks = gather_rank_timings(rows, local_rank)
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


if __name__ == "__main__":
    from ...scale.localhosts import exit_now
    exit_now(main())  # not sys.exit: see exit_now
