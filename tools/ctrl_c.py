"""Ctrl-C at a random moment of a course run, many times over. Each run must end within
seconds, its record closed as interrupted (never left "running"), its loader workers
ended, the SIGINT handler it found back in place, no traceback printed, and the command
must exit with 130.

    python -m tools.ctrl_c --engine pytorch --trials 50
    python -m tools.ctrl_c --engine gluon --trials 50

A process trains run after run of the tiny model on the synthetic set with two loader
workers; this one presses Ctrl-C in each (SIGINT to the whole process group, as a
terminal and Jupyter send it, workers included) a random time after the run began: before
its handler is in place (Python's own Ctrl-C), while it is set up, while the loaders and
their workers start, mid-epoch or at an epoch's end (validation). Trials alternate
between the command line (`gpu-course run`'s main, which must return 130) and `gc.train`
as a notebook calls it (which must raise KeyboardInterrupt); the last trial of each
process is its real exit status. It prints a line a trial and a summary, and exits 1 if
any trial failed.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENDS_WITHIN_S = 5.0   # from Ctrl-C to the run's end: a step, the workers, the record
RUN = dict(model="tiny", train_size=256, test_size=256, batch_size=32, epochs=500,
           num_workers=2, warmup_steps=0)   # the run never finishes before Ctrl-C
MARK = "@ctrl-c "   # the child's lines to this process (the runs print theirs too)


@dataclass
class Trial:
    """One Ctrl-C: when it was pressed (s after the run began), where it landed, how
    long the run took to end after it, and what was wrong (empty: nothing)."""

    delay_s: float
    landed: str = "?"
    ended_s: float = float("nan")
    epochs: int | None = None
    problems: tuple = ()

    def line(self, i: int) -> str:
        verdict = "ok" if not self.problems else "FAILED: " + "; ".join(self.problems)
        return (f"trial {i:2d}: Ctrl-C {self.delay_s:4.2f} s in, {self.landed:>15}, "
                f"ended {self.ended_s:4.2f} s later, {self.epochs} epoch(s) kept: {verdict}")


def trials(engine: str, count: int, per_process: int = 5, seed: int = 0,
           log=print) -> list[Trial]:
    """`count` Ctrl-C trials of `engine`'s runs, `per_process` in each training process."""
    rng, done = random.Random(seed), []
    while len(done) < count:
        done += _process(engine, min(per_process, count - len(done)), rng, log, len(done))
    return done


def _process(engine: str, count: int, rng: random.Random, log, first: int) -> list[Trial]:
    with tempfile.TemporaryDirectory(prefix="ctrl-c-") as tmp, \
            open(Path(tmp) / "stderr", "w+") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tools.ctrl_c", "--child", "--engine", engine,
             "--trials", str(count), "--runs-dir", str(Path(tmp) / "runs")],
            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
            text=True, start_new_session=True)   # its own group: Ctrl-C reaches it alone
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout] + [lines.put("")],
                         daemon=True).start()
        done = []
        try:
            for _ in range(count):
                trial = Trial(delay_s=_WITHIN_S[engine] * rng.random() ** 2)
                said = os.fstat(stderr.fileno()).st_size   # the trial's own stderr from here
                proc.stdin.write("go\n")
                proc.stdin.flush()
                if _expect(lines, "started", 120) is None:   # imports, the data set
                    trial.problems = (f"no run started ({_tail(stderr)})",)
                    done.append(trial)
                    break
                time.sleep(trial.delay_s)
                os.killpg(proc.pid, signal.SIGINT)
                report = _expect(lines, "ended", 60)
                if report is None:
                    trial.problems = (f"no end within 60 s ({_tail(stderr)})",)
                    done.append(trial)
                    log(trial.line(first + len(done) - 1))
                    break
                trial.landed, trial.epochs = report["landed"], report["epochs"]
                trial.ended_s = report["ended_s"]
                late = ("no handler saw Ctrl-C" if trial.landed == "nowhere" else
                        f"ended {trial.ended_s:.1f} s after Ctrl-C")
                trial.problems = tuple(report["problems"]) + (
                    (late,) if not trial.ended_s <= ENDS_WITHIN_S else ()) + _traceback(
                    stderr, said)
                done.append(trial)
                log(trial.line(first + len(done) - 1))
            proc.stdin.close()
            try:
                code = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                code = "none (it hung at exit)"
            if code != 130 and done:
                done[-1].problems += (f"the process exited with {code}, not 130 "
                                      f"({_tail(stderr)})",)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return done


# Ctrl-C comes within this many seconds of a run's start: from building the loaders to
# the second epoch's validation at the tiny sizes above on a shared 2-core machine; the
# delay is this times a random number squared, so that one trial in three lands in the
# first tenth (the run's setup and its workers' start, short but where Ctrl-C was lost)
_WITHIN_S = {"pytorch": 2.5, "gluon": 3.0}


def _expect(lines: queue.Queue, what: str, timeout: float):
    """The child's next `what` line (its JSON, or {}), else None after `timeout` s."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            return None
        if not line:   # the child's output ended
            return None
        if line.startswith(MARK + what):
            return json.loads(line[len(MARK + what):].strip() or "{}")
    return None


def _tail(stderr) -> str:
    stderr.flush()
    stderr.seek(0)
    text = stderr.read().strip().splitlines()
    return " | ".join(text[-3:]) or "no error output"


def _traceback(stderr, start: int) -> tuple:
    """A problem if the trial's stderr (from `start`) shows a traceback: Ctrl-C prints
    one line."""
    stderr.flush()
    stderr.seek(start)
    text = stderr.read()
    if "Traceback" not in text:
        return ()
    return ("a traceback: " + " | ".join(text.strip().splitlines()[-3:]),)


def summary(engine: str, done: list[Trial]) -> str:
    failed = [t for t in done if t.problems]
    landed: dict = {}
    for t in done:
        landed[t.landed] = landed.get(t.landed, 0) + 1
    worst = max((t.ended_s for t in done), default=float("nan"))
    return (f"{engine}: {len(done) - len(failed)} of {len(done)} trials ended as asked "
            f"(slowest {worst:.2f} s after Ctrl-C); Ctrl-C landed "
            + ", ".join(f"{n} {where}" for where, n in sorted(landed.items())))


# -- the training process ---------------------------------------------------------------
_phase = ["setting up"]   # where the run is now (the last entry)
_landed: list = []        # where it was when each SIGINT arrived


def _child(engine: str, count: int, runs_dir: Path) -> int:
    from gpu_course import cli
    gc = _track(engine)
    cfg = gc.Experiment(name="ctrl-c", **RUN)
    argv = ["run", "--engine", engine, "--no-progress", "--runs-dir", str(runs_dir)] + [
        f"--{k.replace('_', '-')}={v}" for k, v in RUN.items()]
    gc.load_datasets(cfg)   # the data set written before the first trial
    _note_signals()
    # "started" is said from inside the command and the call: a Ctrl-C right after it
    # lands in them, never in this loop (where it once ended this process)
    cli.build_parser, train = _saying_started(cli.build_parser), _saying_started(gc.train)
    code = 0
    for i in range(count):
        if sys.stdin.readline().strip() != "go":
            return 1
        before, handler = _runs(runs_dir), signal.getsignal(signal.SIGINT)
        _landed.clear()
        _phase[:] = ["setting up"]
        problems = []
        command_line = i % 2 == 0 or i == count - 1   # the last one: the process's status
        try:
            if command_line:
                code = cli.main(argv)
                if code != 130:
                    problems.append(f"gpu-course run returned {code}, not 130")
            else:
                train(cfg, runs_dir=runs_dir, progress=False, verbose=False)
                problems.append("gc.train returned instead of raising KeyboardInterrupt")
        except KeyboardInterrupt as err:
            if command_line:
                problems.append(f"gpu-course run raised KeyboardInterrupt: {err}")
        ended = time.monotonic()
        _phase[:] = ["checking"]
        if signal.getsignal(signal.SIGINT) is not handler:
            problems.append(f"the SIGINT handler is {signal.getsignal(signal.SIGINT)}, "
                            f"not {handler} as before")
        new = {p: s for p, s in _runs(runs_dir).items() if p not in before}
        problems += [f"{p.name} is {s}" for p, s in new.items() if s != "interrupted"]
        problems += _workers_left()
        landed, at = _landed[0] if _landed else ("nowhere", float("nan"))
        print(MARK + "ended" + json.dumps({
            "landed": landed, "ended_s": ended - at, "problems": problems,
            "epochs": sum(len(_epochs(p)) for p in new) if new else None}), flush=True)
    return code


def _saying_started(fn):
    def call(*args, **kwargs):
        print(MARK + "started", flush=True)
        return fn(*args, **kwargs)
    return call


def _track(engine: str):
    if engine == "pytorch":
        from gpu_course.tracks import torch as gc
        from torch.utils.data import dataloader
        _during(dataloader._MultiProcessingDataLoaderIter, "__init__", "workers starting")
    else:
        from gpu_course.tracks import gluon as gc
        from gpu_course.tracks.gluon import data
        _during(data.WatchedDataLoader, "__init__", "workers starting")
    from gpu_course.measure.harness import Harness
    _during(Harness, "batches", "mid-epoch", generator=True)
    _during(Harness, "end_epoch", "epoch end")
    _during(Harness, "__enter__", "opening record")
    _during(Harness, "__exit__", "closing record")
    return gc


def _during(owner, name: str, phase: str, generator: bool = False) -> None:
    """Name the phase while owner.name runs (a generator: while it is being iterated)."""
    inner = getattr(owner, name)

    def call(*args, **kwargs):
        _phase.append(phase)
        try:
            return inner(*args, **kwargs)
        finally:
            _phase.pop()

    def iterate(*args, **kwargs):
        _phase.append(phase)
        try:
            yield from inner(*args, **kwargs)
        finally:
            _phase.pop()
    setattr(owner, name, iterate if generator else call)


def _note_signals() -> None:
    """Note the phase each SIGINT lands in, in whichever handler runs it: the run's (a
    stop request) or, outside a run, this process's own (KeyboardInterrupt)."""
    from gpu_course.measure import guards
    obey = guards._on_signal

    def during_a_run(signum, frame):
        _landed.append((_phase[-1], time.monotonic()))
        obey(signum, frame)

    def outside(signum, frame):   # before the run's handler: Python's own Ctrl-C
        _landed.append(("before a handler", time.monotonic()))
        raise KeyboardInterrupt
    guards._on_signal = during_a_run
    signal.signal(signal.SIGINT, outside)


def _runs(runs_dir: Path) -> dict:
    statuses = {}
    for meta in runs_dir.glob("*/run.json"):
        try:
            statuses[meta.parent] = json.loads(meta.read_text())["status"]
        except (OSError, ValueError, KeyError) as err:
            statuses[meta.parent] = f"unreadable ({err})"
    return statuses


def _epochs(run: Path) -> list:
    path = run / "epochs.csv"
    return path.read_text().splitlines()[1:] if path.exists() else []


def _workers_left(timeout: float = 3.0) -> list[str]:
    import psutil
    children = psutil.Process().children(recursive=True)
    _, alive = psutil.wait_procs(children, timeout=timeout)
    return [f"{len(alive)} loader worker(s) still alive {timeout:g} s after the run ended"] \
        if alive else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", choices=("pytorch", "gluon"), required=True)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--per-process", type=int, default=5,
                        help="trials in one training process")
    parser.add_argument("--seed", type=int, default=0, help="of the random delays")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--runs-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.engine, args.trials, args.runs_dir)
    done = trials(args.engine, args.trials, args.per_process, args.seed)
    print(summary(args.engine, done))
    return 1 if any(t.problems for t in done) else 0


if __name__ == "__main__":
    sys.exit(main())
