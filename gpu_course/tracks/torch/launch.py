"""The launcher of a DDP run: torchrun with one `ddp` process per device, its output
streamed, rank 0's record read back."""
from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from ...config import Experiment
from ...scale.localhosts import backend, child_env
from ...measure.records import OutOfMemory, runs_root, load_run, update_meta
from .ddp import OOM_MARKER
from .devices import gpu_count
from ...env.cores import check_training_processes


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
