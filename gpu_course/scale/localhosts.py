"""Processes on 127.0.0.1 standing in for the hosts of a multi-host job: a free port for
their rendezvous, an environment that imports this gpu_course, and waiting for all of
them without hanging when one dies. Framework-free: both tracks' launchers use it."""
from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

PACKAGE_PARENT = Path(__file__).resolve().parents[2]  # so child processes import this gpu_course


@dataclass(frozen=True)
class LocalJob:
    """How a job of local "hosts" runs and reports: its one record goes under `runs_dir`
    (default: the runs folder), `verbose` prints what the hosts run and the leader's
    output, and the job may take `timeout` seconds (None: no limit)."""

    runs_dir: str | Path | None = None
    verbose: bool = False
    timeout: float | None = 900


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def backend(gpus: int, processes: int) -> str:
    """The collective backend of `processes` processes on a machine (or job) with `gpus`
    GPUs: NCCL with a GPU for every process, else gloo on the CPU. NCCL refuses two ranks
    on one GPU ("Duplicate GPU detected"), so one GPU cannot carry two processes."""
    return "nccl" if gpus >= processes >= 1 else "gloo"


def host_gpus(gpus: int, nodes: int, procs_per_node: int) -> list[str]:
    """CUDA_VISIBLE_DEVICES of each of `nodes` local "hosts" of a job of nodes ×
    procs_per_node processes that may use `gpus` GPUs of this machine: each host its own
    GPUs, one a process (NCCL), when there is one for every process; else "" for every
    host, so that its processes run on the CPU over gloo (`backend`)."""
    if backend(gpus, nodes * procs_per_node) == "gloo":
        return [""] * nodes
    return [",".join(str(i * procs_per_node + j) for j in range(procs_per_node))
            for i in range(nodes)]


def child_env(**extra) -> dict:
    """This process's environment, with this gpu_course first on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_PARENT), env.get("PYTHONPATH")]))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def wait_all(procs, timeout: float | None) -> list[int]:
    """Wait for every process; when one fails (the others would wait forever at their
    next collective) or `timeout` seconds pass, stop the rest. Returns the exit codes."""
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
    """End a worker process of a distributed job right away, its output flushed. Interpreter
    finalization after a gloo process group can abort the process (SIGABRT, "terminate
    called without an active exception": its threads may still hold work then, see
    pytorch/pytorch#179291), which torchrun reports as a failed job after it succeeded."""
    import sys
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
