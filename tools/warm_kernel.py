"""Notebook kernels forked from one process that has imported the track already: `make
test`'s notebook phases run every notebook top to bottom in a kernel of its own, as before,
without each kernel spending seconds importing PyTorch or MXNet, the course and pandas.

    python -m tools.warm_kernel run TRACK -- COMMAND...   # COMMAND with the warm kernel
                                                          # (nbval: --nbval-kernel-name=KERNEL)

`run` starts the server (it imports what `from gpu_course import <track> as gc` imports,
then waits), writes a kernel spec named KERNEL into a temporary JUPYTER_PATH folder, runs
COMMAND, and stops the server. The spec starts `kernel`: a small process that asks the
server for a kernel and stands for it, as Jupyter expects of the process it started: the
signals it gets (an interrupt, a stop) go to the kernel, it ends when the kernel ends,
and the kernel ends when it is killed. The server forks the kernel in the notebook's
folder, with the environment, standard streams and a session of its own, random state
reseeded, then starts ipykernel in it. A kernel asked for without a server (it stopped,
or never started) is an ordinary one: the same command, imports and all.
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KERNEL = "gpu-course-warm"
REPO = Path(__file__).resolve().parents[1]
TRACKS = ("torch", "gluon")


# -- the server ------------------------------------------------------------------------------
def serve(path: str, track: str) -> None:
    """Import the track, then fork a kernel for each request on the Unix socket `path`."""
    kernel_path = sys.path[1:]                  # without this checkout (`-m` put it first)
    import gpu_course
    getattr(gpu_course, track)                  # the track, all it offers loaded
    import ipykernel.kernelapp  # noqa: F401
    import pandas  # noqa: F401
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path + ".new")
    os.rename(path + ".new", path)              # ready only once it accepts
    server.listen(8)
    try:
        while True:
            conn, _ = server.accept()
            with conn:
                message, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
                while chunk := conn.recv(1 << 16):   # the rest, up to the stand-in's end of it
                    message += chunk
                request = json.loads(message)
                pid = os.fork()
                if pid == 0:
                    server.close()
                    conn.close()                # the stand-in reads the answer to its end
                    _kernel_child(request, fds, kernel_path)   # never returns
                for fd in fds:
                    os.close(fd)
                conn.sendall(json.dumps({"pid": pid}).encode())
            _reap(os.WNOHANG)
    finally:
        deadline = time.monotonic() + 10        # kernels still ending, as the command did
        while _reap(os.WNOHANG) and time.monotonic() < deadline:
            time.sleep(0.1)


def _reap(options: int) -> bool:
    """Wait for ended kernels: their CPU time then counts in this process's children's, as
    a kernel Jupyter started counts in its (`make test` prints each phase's). True while
    some kernel has not ended."""
    while True:
        try:
            pid, _ = os.waitpid(-1, options)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def _kernel_child(request: dict, fds: list[int], path: list[str]) -> None:
    try:
        os.setsid()                             # a session of its own, as Jupyter's are
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        _reseed()
        _die_with(request["stand_in"])
        sys.argv = ["ipykernel_launcher", *request["args"]]
        sys.path[:] = path                      # as ipykernel_launcher's (no cwd first)
        from ipykernel.kernelapp import IPKernelApp
        IPKernelApp.launch_instance(argv=request["args"])
        code = 0
    except SystemExit as end:
        code = end.code if isinstance(end.code, int) else 1
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _reseed() -> None:
    """Each kernel's random state its own, as a fresh process's would be."""
    import random
    random.seed()
    mods = sys.modules
    if "numpy" in mods:
        mods["numpy"].random.seed()
    if "torch" in mods:
        mods["torch"].seed()


def _die_with(pid: int) -> None:
    """End this kernel when the process Jupyter started for it ends (killed, say)."""
    import threading
    fd = os.pidfd_open(pid)

    def watch():
        select.select([fd], [], [])
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=watch, daemon=True, name="stand-in watch").start()


# -- what Jupyter starts ----------------------------------------------------------------------
def kernel(path: str, args: list[str]) -> int:
    """Stand in for a kernel the server forks; without a server, become an ordinary one."""
    ordinary = [sys.executable, "-m", "ipykernel_launcher", *args]
    if not (_pidfds() and _server_ready(path)):
        os.execv(sys.executable, ordinary)
    try:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(path)
    except OSError:
        os.execv(sys.executable, ordinary)
    request = {"cwd": os.getcwd(), "env": dict(os.environ), "args": args,
               "stand_in": os.getpid()}
    with client:
        socket.send_fds(client, [json.dumps(request).encode()], [0, 1, 2])
        client.shutdown(socket.SHUT_WR)
        pid = json.loads(client.makefile().read())["pid"]
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, lambda s, _f: os.kill(pid, s))
    fd = os.pidfd_open(pid)
    while True:
        try:
            select.select([fd], [], [])
            return 0
        except InterruptedError:
            continue


def _pidfds() -> bool:
    """Whether this system can watch another process's end (Linux 5.3 and newer)."""
    try:
        os.close(os.pidfd_open(os.getpid()))
        return True
    except (AttributeError, OSError):
        return False


def _server_ready(path: str) -> bool:
    """Wait while the server is importing (its socket not there yet, its process alive)."""
    while not os.path.exists(path):
        try:
            os.kill(int(Path(path + ".pid").read_text()), 0)
        except (OSError, ValueError):
            return False                        # no server, or it ended before it was ready
        time.sleep(0.05)
    return True


# -- run a command with it --------------------------------------------------------------------
def run(track: str, command: list[str]) -> int:
    """`command` with the warm kernel spec on JUPYTER_PATH and its server running."""
    if track not in TRACKS:
        raise SystemExit(f"warm_kernel: track {track!r} is not one of {', '.join(TRACKS)}")
    if not command:
        raise SystemExit("warm_kernel: no command after --")
    with tempfile.TemporaryDirectory(prefix="warm-kernel-") as folder:
        path = str(Path(folder) / "server")
        spec = Path(folder) / "kernels" / KERNEL
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, str(Path(__file__).resolve()), "kernel", path, "-f",
                     "{connection_file}"],
            "display_name": f"Python 3 ({track}, forked warm)", "language": "python"}))
        server = subprocess.Popen([sys.executable, "-m", "tools.warm_kernel", "serve", path,
                                   track], cwd=REPO)
        Path(path + ".pid").write_text(str(server.pid))
        env = {**os.environ, "JUPYTER_PATH": os.pathsep.join(
            filter(None, [folder, os.environ.get("JUPYTER_PATH", "")]))}
        child = subprocess.Popen(command, env=env)
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda s, _f: child.send_signal(s))
        try:
            code = child.wait()
        finally:
            server.terminate()
            try:                                # its kernels get 10 s to end (serve's finally)
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()                   # reaped: its CPU time counts in the phase's
        return code


def main(argv: list[str]) -> int:
    if argv[:1] == ["serve"] and len(argv) == 3:
        serve(argv[1], argv[2])
        return 0
    if argv[:1] == ["kernel"] and len(argv) >= 2:
        return kernel(argv[1], argv[2:])
    if argv[:1] == ["run"] and len(argv) >= 3 and argv[2] == "--":
        return run(argv[1], argv[3:])
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
