"""Several hosts with torchrun: one launch per host (`commands`), meeting at a c10d
rendezvous on HOST0; rank 0 keeps the record, every rank's timings in its notes ("ranks").
`launch_local` runs the N launches on this machine, each a "host" on 127.0.0.1."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ...config import Experiment
from ...env.cores import threads_per_process
from ...scale.localhosts import LocalJob, child_env, free_port, host_gpus, wait_all
from ...measure.records import runs_root, load_run
from ..common import read_logs
from .ddp import _first_error
from .devices import gpu_count


def _torchrun_command(node_rank: int, nodes: int, procs_per_node: int, endpoint: str,
                      job_id: str, args: list[str], local_addr: str | None = None) -> list[str]:
    """The torchrun command line of host `node_rank` running gpu_course.tracks.torch.ddp."""
    command = [sys.executable, "-m", "torch.distributed.run", f"--nnodes={nodes}",
               f"--node-rank={node_rank}", f"--nproc-per-node={procs_per_node}",
               "--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}", f"--rdzv-id={job_id}",
               "--max-restarts=0"]
    if local_addr:  # the address this "host" gives the others (local emulation: loopback)
        command.append(f"--local-addr={local_addr}")
    return command + ["-m", "gpu_course.tracks.torch.ddp", *args]


def commands(cfg_file: str, runs_dir: str, nodes: int, procs_per_node: int,
             endpoint: str = "HOST0:29500", job_id: str = "gpu-course") -> list[str]:
    """The shell lines to type on each of `nodes` real hosts."""
    args = ["--config", cfg_file, "--runs-dir", runs_dir]
    return [" ".join(["torchrun"] + _torchrun_command(i, nodes, procs_per_node, endpoint,
                                                      job_id, args)[3:])
            for i in range(nodes)]


def launch_local(cfg: Experiment, nodes: int = 2, procs_per_node: int = 1,
                 threads: int | None = None, job: LocalJob = LocalJob(), gpus: int | None = None):
    """Run cfg as `nodes` local hosts × `procs_per_node` processes; the job's record."""
    if nodes < 1 or procs_per_node < 1:
        raise ValueError(f"nodes={nodes!r} and procs_per_node={procs_per_node!r} must be >= 1")
    runs_dir = runs_root(job.runs_dir).resolve()
    world = nodes * procs_per_node
    # every "host" shares this machine's cores: split them, or the processes thrash
    env = child_env(OMP_NUM_THREADS=str(threads or threads_per_process(world)))
    visible = host_gpus(gpu_count() if gpus is None else gpus, nodes, procs_per_node)
    endpoint, job_id = f"127.0.0.1:{free_port()}", f"gpu-course-{os.getpid()}-{time.time_ns()}"
    with tempfile.TemporaryDirectory(prefix="gpu_course_multinode_") as tmp:
        config_file, result = Path(tmp) / "config.json", Path(tmp) / "run_path"
        config_file.write_text(cfg.replace(num_gpus=world).to_json())
        args = ["--config", str(config_file), "--runs-dir", str(runs_dir),
                "--result-file", str(result)] + ([] if job.verbose else ["--quiet"])
        procs, logs = [], []
        for i in range(nodes):
            command = _torchrun_command(i, nodes, procs_per_node, endpoint, job_id, args,
                                        local_addr="127.0.0.1")
            if job.verbose:
                print(f"host {i}: $ torchrun", " ".join(command[3:]).replace(tmp, "$TMP"),
                      flush=True)
            # each "host" sees only its own GPUs; none with too few for one a process (NCCL)
            logs.append(open(Path(tmp) / f"host{i}.log", "w+"))
            procs.append(subprocess.Popen(command, env=dict(env, CUDA_VISIBLE_DEVICES=visible[i]),
                                          stdout=logs[-1], stderr=subprocess.STDOUT, text=True))
        codes = wait_all(procs, job.timeout)
        outputs = read_logs(logs)
        run_path = result.read_text().strip() if result.exists() else None
    if job.verbose:
        print(outputs[0], end="", flush=True)
    if any(codes) or run_path is None:
        failed = next((i for i, c in enumerate(codes) if c), 0)
        first = _first_error(outputs[failed].splitlines(keepends=True))
        raise RuntimeError(f"host {failed}'s torchrun exited with {codes[failed]} (all: {codes}):\n{first}")
    return load_run(run_path)
