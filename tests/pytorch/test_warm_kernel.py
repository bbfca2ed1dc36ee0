"""tools/warm_kernel.py: notebook kernels forked from a server that imported the track, each
still a kernel of its own; real kernels, real signals, real notebooks under nbval."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from support import REPO

WARM = [sys.executable, "-m", "tools.warm_kernel"]

FACTS = """import json, os, random, sys
with open({out!r}, "a") as f:
    f.write(json.dumps({{"pid": os.getpid(), "torch": "torch" in sys.modules,
                        "cwd": os.getcwd(), "mark": os.environ.get("WARM_MARK"),
                        "random": random.random(), "first": sys.path[0]}}) + "\\n")"""
# half a second of CPU: inside the 15 s cell timeout below even at a load of 20 on 2 cores
BURN = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass"
INTERRUPTED = """import time
try:
    time.sleep(600)
except KeyboardInterrupt:
    open({out!r}, "a").write("interrupted\\n")"""


def notebook(path: Path, *cells: str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def nbval(*notebooks, timeout=120):
    """`python -m tools.warm_kernel run torch -- pytest --nbval-lax ...`, with the CPU time of
    its children (the server and its kernels among them) measured around it."""
    code = ("import resource, subprocess, sys\n"
            "done = subprocess.run(sys.argv[1:])\n"
            "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print('CHILDREN_CPU', usage.ru_utime + usage.ru_stime)\n"
            "sys.exit(done.returncode)")
    return subprocess.run(
        [sys.executable, "-c", code, *WARM, "run", "torch", "--", sys.executable, "-m", "pytest",
         "-q", "-p", "no:cacheprovider", "--nbval-lax", "--nbval-kernel-name=gpu-course-warm",
         "--nbval-cell-timeout=15", *map(str, notebooks)],
        cwd=REPO, env={**os.environ, "WARM_MARK": "from the phase"}, capture_output=True,
        text=True, timeout=timeout)


def test_each_notebook_gets_a_forked_kernel_of_its_own_that_counts_in_the_phase_cpu(tmp_path):
    out = tmp_path / "facts.jsonl"
    first = notebook(tmp_path / "a" / "one.ipynb", FACTS.format(out=str(out)), BURN,
                     INTERRUPTED.format(out=str(out)))
    second = notebook(tmp_path / "b" / "two.ipynb", FACTS.format(out=str(out)))
    done = nbval(first, second)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = out.read_text().splitlines()
    facts = [json.loads(line) for line in lines if line.startswith("{")]
    assert [f["cwd"] for f in facts] == [str(first.parent), str(second.parent)]
    assert all(f["torch"] for f in facts), "the kernels were not forked from the warm server"
    assert facts[0]["pid"] != facts[1]["pid"] and facts[0]["random"] != facts[1]["random"]
    assert all(f["mark"] == "from the phase" and f["first"] != "" for f in facts)
    assert "interrupted" in lines   # nbval's timeout interrupts the cell: SIGINT reached it
    cpu = float(done.stdout.split("CHILDREN_CPU")[1].split()[0])
    assert cpu >= 0.5, f"the kernels' CPU time is missing from the phase's: {cpu:.2f} s"


def spec(folder: Path, server: str) -> dict:
    """A kernel spec for the stand-in, on a JUPYTER_PATH of its own."""
    kernel = folder / "kernels" / "warm-test"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, str(REPO / "tools" / "warm_kernel.py"), "kernel", server,
                 "-f", "{connection_file}"], "display_name": "warm test", "language": "python"}))
    return {**os.environ, "JUPYTER_PATH": str(folder)}


def started(env: dict, cwd: Path):
    from jupyter_client import KernelManager
    old = os.environ.copy()
    os.environ.update(env)
    try:
        km = KernelManager(kernel_name="warm-test")
        km.start_kernel(cwd=str(cwd))
    finally:
        os.environ.clear()
        os.environ.update(old)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc


def ask(kc, code: str) -> str:
    """What `code` prints in the kernel."""
    said = []
    reply = kc.execute_interactive(code, timeout=60, output_hook=said.append)
    assert reply["content"]["status"] == "ok", reply
    return "".join(m["content"].get("text", "") for m in said if m["msg_type"] == "stream")


def alive(pid: int) -> bool:
    """Running (an ended kernel the server has not waited for yet is a zombie: ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_without_a_server_the_kernel_is_an_ordinary_one(tmp_path):
    km, kc = started(spec(tmp_path / "jupyter", str(tmp_path / "no-server")), tmp_path)
    try:
        text = ask(kc, "import os, sys; print('torch' in sys.modules, os.getppid())")
        loaded, parent = text.split()
        assert loaded == "False" and int(parent) == os.getpid()   # Jupyter's own child
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_a_killed_stand_in_takes_its_kernel_with_it(tmp_path):
    socket_path = str(tmp_path / "server")
    server = subprocess.Popen([*WARM, "serve", socket_path, "torch"], cwd=REPO)
    (tmp_path / "server.pid").write_text(str(server.pid))
    try:
        km, kc = started(spec(tmp_path / "jupyter", socket_path), tmp_path)
        pid = int(ask(kc, "import os; print(os.getpid())"))
        assert pid != km.provisioner.process.pid   # forked by the server, not Jupyter's child
        kc.stop_channels()
        os.killpg(km.provisioner.pgid, signal.SIGKILL)   # as Jupyter kills a kernel
        deadline = time.monotonic() + 15
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(pid):
            pytest.fail(f"kernel {pid} outlived its stand-in")
    finally:
        server.terminate()
        server.wait(30)


def test_run_refuses_an_unknown_track_and_a_missing_command():
    for args, message in ((["run", "tensorflow", "--", "true"], "'tensorflow' is not one of"),
                          (["run", "torch", "--"], "no command after --")):
        done = subprocess.run([*WARM, *args], cwd=REPO, capture_output=True, text=True)
        assert done.returncode != 0 and message in done.stderr
