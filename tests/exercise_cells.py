"""The exercises as the notebooks ship them, run outside Jupyter (a plain module, shared by
tests/gluon and tests/pytorch).

A lesson's .py twin holds, after its lesson, pairs of cells: one tagged "exercise" (the
attendee's lines marked `# >>>`) and the next code cell tagged "check" (`gc.check(id, ...)`).
`run(track, lesson)` runs, in one fresh interpreter of this environment (forked from one
that imported the framework and nothing else, once a session: its second and a half of
start-up is not paid again for each lesson), the notebook's
first cells (setup, imports, the parameters cell), then each exercise with its solution
from notebooks/solutions/<track>/ in its place, and after it its check cell (an exercise
graded against its own run as shipped, the capstone, runs untouched first). It returns each
check's Result (passed, message, measured) and what the runs printed. The exercise as
shipped runs in the notebook's own test (nbval), where the repository's conftest.py asserts
that its check says "not yet".

    python tests/exercise_cells.py <notebook.py> <solutions.py>    # what the test runs
"""
from __future__ import annotations

import ast
import atexit
import difflib
import importlib
import importlib.util
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tools.lesson_share import cells as twin_cells  # noqa: E402
MARK = "# >>>"
CHECK = re.compile(r"""\bgc\.check\(\s*["'](\d\d\.\d+)["']""")
RESULT = "exercise-result: "


def cells(text: str) -> list[tuple[str, str]]:
    """(header, source) of each cell of a percent-format twin."""
    return [(h, "\n".join(lines).strip("\n") + "\n") for h, lines in twin_cells(text)]


def is_code(header: str) -> bool:
    return "[markdown]" not in header


def tagged(header: str, tag: str) -> bool:
    found = re.search(r"tags=(\[[^\]]*\])", header)
    return bool(found) and tag in json.loads(found.group(1))


def prelude(all_cells) -> list[str]:
    """The code cells up to and including the parameters cell."""
    out = []
    for header, source in all_cells:
        if is_code(header):
            out.append(source)
        if tagged(header, "parameters"):
            return out
    raise ValueError("the notebook has no cell tagged parameters")


def exercises(all_cells) -> dict[str, tuple[str, str]]:
    """{exercise id: (exercise cell, check cell)}: each "exercise" cell and the check cell
    that is the next code cell."""
    code = [(h, s) for h, s in all_cells if is_code(h)]
    out = {}
    for (h, s), (h2, s2) in zip(code, code[1:]):
        if tagged(h, "exercise"):
            if not tagged(h2, "check") or not CHECK.search(s2):
                raise ValueError(f"the exercise cell\n{s}\nis not followed by a check cell "
                                 "(tagged check, calling gc.check(id, ...))")
            out[CHECK.search(s2).group(1)] = (s, s2)
    return out


def unmarked_changes(exercise: str, solution: str) -> list[str]:
    """The exercise's lines that the solution changes or drops although they are not
    marked `# >>>` (a solution changes only the attendee's lines; it may add lines beside
    them)."""
    a, b = exercise.splitlines(), solution.splitlines()
    wrong = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            wrong += [line for line in a[i1:i2] if MARK not in line]
        elif tag == "insert" and not any(MARK in line for line in a[max(0, i1 - 1):i1 + 1]):
            wrong += [f"(added away from a marked line) {line}" for line in b[j1:j2]]
    return wrong


def run(notebook: Path, solutions: Path, env: dict | None = None, timeout: int = 600) -> dict:
    """Run the notebook's exercises, solved (those graded against their run as shipped,
    untouched first), in a fresh interpreter; {id: {"solution": {"passed", "message"}, and
    "untouched" where it ran}}, and the interpreter's output under "output"."""
    with tempfile.TemporaryDirectory() as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        code = _forked(dict(argv=[str(notebook), str(solutions)], cwd=str(notebook.parent),
                            env={**os.environ, **(env or {})}, stdout=str(out), stderr=str(err)),
                       timeout)
        stdout, stderr = out.read_text(), err.read_text()
    output = stdout + stderr
    if code:
        raise AssertionError(f"the exercises of {notebook.name} stopped (exit {code}):\n"
                             f"{output[-6000:]}")
    results: dict = {"output": output}
    for line in stdout.splitlines():
        if line.startswith(RESULT):
            found = json.loads(line[len(RESULT):])
            results.setdefault(found["id"], {})[found["variant"]] = found
    return results


_warm: list = []   # the session's warm interpreter (a subprocess.Popen), once started


def _forked(request: dict, timeout: float) -> int:
    """Have the warm interpreter fork a child that runs `_main(*request["argv"])` in
    request's cwd and environment, its output in request's files; the child's exit
    status (it is killed after `timeout` seconds)."""
    if not _warm or _warm[0].poll() is not None:
        _warm[:] = [subprocess.Popen([sys.executable, __file__, "--warm"], cwd=REPO, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)]
        atexit.register(_warm[0].communicate)   # closing its input ends it
    server = _warm[0]
    server.stdin.write(json.dumps(request) + "\n")
    server.stdin.flush()
    pid = json.loads(server.stdout.readline())["pid"]
    if not select.select([server.stdout], [], [], timeout)[0]:
        os.kill(pid, signal.SIGKILL)
        server.stdout.readline()
        raise subprocess.TimeoutExpired(request["argv"], timeout)
    return json.loads(server.stdout.readline())["returncode"]


def _serve() -> None:
    """The warm interpreter: import the framework, then for each request line on stdin
    fork a child that runs it; print {"pid"} when it starts and {"returncode"} when it
    ends."""
    for framework in ("torch", "mxnet"):
        if importlib.util.find_spec(framework):
            importlib.import_module(framework)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
                    os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
                os.chdir(request["cwd"])
                os.environ.clear()
                os.environ.update(request["env"])
                _main(*request["argv"])
                code = 0
            except BaseException:   # noqa: BLE001  (what stopped the run goes to its output)
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), flush=True)


def solved_cells(section: str, check: str) -> tuple[str, str]:
    """A solutions section as (exercise cell, check cell): the part after a line
    `# %% check` replaces the check cell; without one the shipped check cell stays."""
    parts = re.split(r"^# %% check\s*$", section, maxsplit=1, flags=re.M)
    if len(parts) == 1:
        return section, check
    return parts[0].strip("\n") + "\n", parts[1].strip("\n") + "\n"


def _run_check(source: str, namespace: dict):
    """Execute a check cell; the value of its last expression (the Result)."""
    tree = ast.parse(source)
    last = tree.body.pop()
    if not isinstance(last, ast.Expr):
        raise ValueError(f"a check cell ends with the check's expression:\n{source}")
    exec(compile(tree, "<check>", "exec"), namespace)
    return eval(compile(ast.Expression(last.value), "<check>", "eval"), namespace)


def _main(notebook: str, solutions: str) -> None:
    sys.path.insert(0, str(REPO))
    from gpu_course.lessons.exercises import find, solution_sections
    all_cells = cells(Path(notebook).read_text())
    solved = solution_sections(Path(solutions).read_text())
    namespace = {"__name__": "__main__", "display": print}
    for source in prelude(all_cells):
        exec(compile(source, notebook, "exec"), namespace)
    for id, (exercise, check) in exercises(all_cells).items():
        variants = [("solution", solved_cells(solved[id], check))]
        if find(id).shipped_first:   # graded against its own run as shipped: that runs first
            variants.insert(0, ("untouched", (exercise, check)))
        for variant, (source, checking) in variants:
            exec(compile(source, f"{notebook} exercise {id} ({variant})", "exec"), namespace)
            result = _run_check(checking, namespace)
            print(RESULT + json.dumps({"id": id, "variant": variant, "passed": bool(result.passed),
                                       "measured": bool(result.measured),
                                       "message": result.message}), flush=True)


if __name__ == "__main__":
    _serve() if sys.argv[1:] == ["--warm"] else _main(*sys.argv[1:3])


def check_track(track: str, lesson: str, runs_dir: Path, size: str = "smoke") -> dict:
    """Run lesson `lesson`'s exercises of `track` at `size` (smoke; "check" on a GPU),
    solved, and assert that each does what was asked: it passes, or the one thing that
    refuses it is what this machine measured (a speed, a share, a verdict from timings:
    Result.measured), which a machine that other programs load can turn either way and
    the checks' tests on fake runs cover; such a refusal is reported as a warning. An
    exercise graded against its job as shipped runs untouched first, and must say "not
    yet". Returns the results."""
    notebook = next((REPO / "notebooks" / track).glob(f"{lesson}_*.py"))
    solutions = next((REPO / "notebooks" / "solutions" / track).glob(f"{lesson}_*.py"))
    smoke = size == "smoke"
    env = {"GPU_COURSE_SMOKE": "1" if smoke else "", "GPU_COURSE_SIZE": "" if smoke else size,
           "GPU_COURSE_RUNS": str(runs_dir),
           "MPLBACKEND": "Agg", "PYTHONPATH": os.pathsep.join(
               p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)}
    results = run(notebook, solutions, env=env)
    ids = sorted(exercises(cells(notebook.read_text())))
    assert ids, f"{notebook.name} has no exercise"
    for id in ids:
        untouched, solved = results[id].get("untouched"), results[id]["solution"]
        if untouched is not None:
            assert not untouched["passed"], f"{id} passes untouched: {untouched['message']}"
            assert untouched["message"], f"{id}: an untouched exercise is told what is wrong"
        assert solved["message"], f"{id}: a check says why it passes or not"
        assert solved["passed"] or solved["measured"], \
            f"{id} fails with its solution, not for what the machine measured: {solved['message']}"
        if not solved["passed"]:
            warnings.warn(f"{id}'s solution was refused by what this machine measured: "
                          f"{solved['message']}")
    return results
