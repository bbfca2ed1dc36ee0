"""Processes on 127.0.0.1 standing in for the hosts of a multi-host job (both tracks)."""
from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PACKAGE_PARENT = Path(__file__).resolve().parents[2]  # so child processes import this gpu_course


@dataclass(frozen=True)
class LocalJob:
    """How a job of local "hosts" runs and reports (timeout in seconds, None: no limit)."""

    runs_dir: str | Path | None = None
    verbose: bool = False
    timeout: float | None = 900


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def backend(gpus: int, processes: int) -> str:
    """NCCL with a GPU for every process (it refuses two ranks on one GPU), else gloo."""
    return "nccl" if gpus >= processes >= 1 else "gloo"


def host_gpus(gpus: int, nodes: int, procs_per_node: int) -> list[str]:
    """CUDA_VISIBLE_DEVICES of each local "host": its own GPUs, one a process, when there
    is one for every process; else "" (gloo on the CPU)."""
    if backend(gpus, nodes * procs_per_node) == "gloo":
        return [""] * nodes
    return [",".join(str(i * procs_per_node + j) for j in range(procs_per_node)) for i in range(nodes)]


def child_env(**extra) -> dict:
    """This process's environment, with this gpu_course first on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_PARENT), env.get("PYTHONPATH")]))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def wait_all(procs, timeout: float | None) -> list[int]:
    """The exit codes of every process; a failure or the timeout stops the rest."""
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while any(p.poll() is None for p in procs):
            failed = any(p.poll() not in (None, 0) for p in procs)
            if failed or (deadline is not None and time.monotonic() > deadline):
                for p in procs:
                    if p.poll() is None:
                        p.terminate()  # torchrun passes SIGTERM on to its workers
                break
            time.sleep(0.2)
        codes = []
        for p in procs:
            try:
                codes.append(p.wait(timeout=30))
            except Exception:  # subprocess.TimeoutExpired: killed below
                codes.append(None)
        return codes
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def exit_now(code: int) -> None:
    """End a distributed worker right away, output flushed: finalization after a gloo
    process group can abort it (pytorch/pytorch#179291), failing a job that succeeded."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
