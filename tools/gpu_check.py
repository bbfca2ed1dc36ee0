"""Check every PyTorch lesson on one GPU within a time budget, and pack the evidence.

    PYTHONPATH=. python3 -m tools.gpu_check --budget 480 --out DIR   # on a GPU (make gpu-check)
    python -m tools.gpu_check --plan                     # what it would run here, in order
    python -m tools.gpu_check --plan "NVIDIA H200"       # ... on that GPU (its committed checks)
    python -m tools.gpu_check --rehearse --out DIR       # the same plan on a CPU, smoke sizes

Given one GPU and --budget seconds, it runs, in this order (`--plan` prints the list):

1. ``machine``  the GPU, driver, CUDA and library versions, before anything runs;
2. ``smoke``    every notebook in notebooks/pytorch, in lesson order, top to bottom in a
   fresh kernel at smoke size (GPU_COURSE_SIZE=smoke): every lesson's GPU branches run,
   the whole track in a few minutes;
3. ``check``    the notebooks again at the check's size (GPU_COURSE_SIZE=check: each
   lesson's full settings, networks and compilers with fewer images and epochs), as many
   as the time left allows, the most needed first: those no committed check executed on
   this GPU, then those whose standing copy ended in an error, then those stopped for
   time, then the rest, the oldest copy first (report.executed_notebooks);
4. ``ladder``   the PyTorch ladder: at reference size where the reference's own time fits
   what is left, else quick; then what one step asks of the host (`tools.step_launches`)
   and, time allowing, the quick ladder on a network whose step keeps the GPU busy;
5. ``tests``    the gpu-marked tests (their JUnit report names what each verified), those
   that no committed check passed on this GPU first;
6. ``smi``      the course's monitor against nvidia-smi.

Each step may run until its cumulative share of the budget (SHARES) is spent, so time a
step leaves flows to the next; a step that does not fit is skipped with a line in the
summary, and one that runs out of time is stopped there (a notebook keeps the cells it
ran). It writes three files into --out: summary.md and gpu-check.json (device, versions,
the plan, each notebook's size, time and status, the ladder table, the GPU branches
verified and by what, what was skipped) and gpu-check.tar.gz, which holds everything:
the executed copies (notebooks/ at the check's size, notebooks-smoke/ at smoke size,
images capped), logs and run records. `python -m tools.gpu_evidence ARCHIVE` files that
archive under gpu_course/reference/.

--rehearse runs the same plan on a CPU with smoke sizes for both passes, so the command
cannot rot on machines without a GPU. Nothing here changes the GPU's settings.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks" / "pytorch"
ARCHIVE = "gpu-check.tar.gz"
SUMMARY = "gpu-check.json"
DEFAULT_BUDGET_S = 8 * 60
REHEARSAL_BUDGET_S = 150
# each step may run until its cumulative share of the budget is spent (a step that ends
# early leaves its time to the next); the rest is the summary's and the archive's
SHARES = {"smoke": 0.45, "check": 0.25, "ladder": 0.07, "tests": 0.15, "smi": 0.03}
LEAST_S = {"smoke": 20, "check": 20, "ladder": 15, "tests": 10, "smi": 25}   # worth starting with
_ANSI = re.compile(r"\x1b\[[0-9;]*m")   # a traceback's colours, out of the status
IMAGE_CAP = 200_000           # bytes of one image kept in an executed notebook
NOTEBOOK_IMAGES_CAP = 1_000_000   # and of all its images together
FILE_CAP = 4_000_000          # a larger file (a long trace) stays out of the archive
STOP_GRACE_S = 20             # a step past its time gets SIGINT, then this long to finish


@dataclass
class Clock:
    """The budget: when the check started and must end."""
    budget_s: float
    start: float = field(default_factory=time.monotonic)

    def left(self) -> float:
        return self.budget_s - (time.monotonic() - self.start)

    def allowance(self, step: str, order: list[str]) -> float:
        """Seconds `step` may take: until its cumulative share of the budget (the shares
        of the steps up to it in `order`, scaled so that the steps in `order` share what
        all STEPS would get) is spent."""
        chosen = sum(SHARES[s] for s in order)   # the steps run share what all would get
        shares = sum(SHARES[s] for s in order[:order.index(step) + 1]) / chosen \
            * sum(SHARES.values())
        return shares * self.budget_s - (self.budget_s - self.left())


@dataclass
class Step:
    name: str
    status: str = "skipped"
    seconds: float = 0.0
    detail: str = ""


# -- 1. the machine ------------------------------------------------------------------------
def machine(out: Path) -> dict:
    from gpu_course.measure import nvml
    from gpu_course.measure.records import hardware, versions
    from tools.monitor_vs_smi import nvidia_smi_query
    from tools.reference import SMI_FIELDS
    found = {"nvidia_smi": nvidia_smi_query(SMI_FIELDS),
             "cuda_driver": nvml.cuda_driver_version(), "hardware": hardware(),
             "versions": {**versions(), **_versions("nbclient", "ipykernel", "pytest")},
             "python": platform.python_version(), "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    (out / "machine.json").write_text(json.dumps(found, indent=1, default=str))
    return found


def _versions(*names) -> dict:
    from importlib.metadata import PackageNotFoundError, version
    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def device_name(found: dict) -> str:
    gpus = found.get("nvidia_smi") or []
    return str(gpus[0].get("name")) if gpus else "no GPU"


def this_gpu() -> str:
    """This machine's first GPU by name, "no GPU" where there is none."""
    from tools.monitor_vs_smi import nvidia_smi_query
    return device_name({"nvidia_smi": nvidia_smi_query(["name"])})


# -- 2. and 3. the notebooks, at smoke size, then at the check's ----------------------------
FOLDERS = {"smoke": "notebooks-smoke", "check": "notebooks"}   # the executed copies, by pass


def notebooks(only: list[str] | None = None) -> list[Path]:
    """Every notebook in notebooks/pytorch, in lesson order; `only`: those whose names
    start so ("08")."""
    found = sorted(NOTEBOOKS.glob("*.ipynb"))
    if only:
        unknown = [o for o in only if not any(p.name.startswith(o) for p in found)]
        if unknown:
            raise ValueError(f"--notebooks {','.join(unknown)}: no such PyTorch notebook; "
                             f"allowed: {', '.join(p.name[:2] for p in found)}")
        return [p for p in found if p.name.startswith(tuple(only))]
    return found


def by_need(paths: list[Path], device: str | None) -> list[tuple[Path, str]]:
    """`paths` with why each comes where it does, the most needed on `device` first: never
    executed there by a committed check, then a standing copy that ended in an error, then
    one stopped for time, then one that ran without error, the oldest first
    (report.executed_notebooks). With no device (a rehearsal): lesson order."""
    if device is None:
        return [(p, "") for p in paths]
    from gpu_course.show.report import executed_notebooks
    from tools.gpu_evidence import slug
    standing = executed_notebooks().get(f"pytorch-{slug(device)}", {})

    def need(path):
        entry = standing.get(path.name)
        if entry is None:
            return (0, "", path.name), "never executed on this GPU"
        said = entry["status"]
        rank = 3 if said == "ok" else 2 if said.startswith("stopped") else 1
        why = {3: "ran without error", 2: "stopped for time", 1: "ended in an error"}[rank]
        return (rank, entry["stamp"] if rank == 3 else "", path.name), \
            f"its copy of {entry['date']} {why}"
    return [(p, why) for p, (_, why) in sorted(((p, need(p)) for p in paths),
                                               key=lambda item: item[1][0])]


def run_notebook(path: Path, keep: Path, deadline: float) -> dict:
    """Execute `path` cell by cell in a fresh kernel until `deadline` (a monotonic time);
    the executed copy, images capped, goes to `keep`. Returns name, status, seconds,
    cells run and cells in all."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    nb = nbformat.read(path, as_version=4)
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    client = NotebookClient(nb, kernel_name="python3", allow_errors=False,
                            resources={"metadata": {"path": str(path.parent)}})
    start, ran, status = time.monotonic(), 0, "ok"
    try:
        with client.setup_kernel():
            for ordinal, index in enumerate(code, 1):
                where = f"code cell {ordinal} of {len(code)}"
                left = deadline - time.monotonic()
                if left < 1:
                    status = f"stopped before {where}: the notebooks' time was up"
                    break
                client.timeout = int(left) + 1
                try:
                    client.execute_cell(nb.cells[index], index)
                except CellTimeoutError:
                    status = f"stopped in {where}: the notebooks' time was up"
                    break
                except CellExecutionError as err:
                    lines = _ANSI.sub("", str(err)).strip().splitlines() or ["?"]
                    status = f"error in {where}: {lines[-1][:160]}"
                    ran += 1
                    break
                ran += 1
    except Exception as err:   # the kernel did not start, or died
        status = f"error: {type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}"
    seconds = time.monotonic() - start
    cap_images(nb)
    keep.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, keep / path.name)
    return {"name": path.name, "status": status, "seconds": round(seconds, 1),
            "cells_run": ran, "cells": len(code)}


def cap_images(nb) -> int:
    """Leave out images over IMAGE_CAP bytes, and any once the notebook's images reach
    NOTEBOOK_IMAGES_CAP, saying so in their place; returns the bytes kept."""
    kept = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            for kind in [k for k in data if k.startswith("image/")]:
                size = len(base64.b64decode(data[kind])) if kind != "image/svg+xml" \
                    else len(data[kind])
                if size > IMAGE_CAP or kept + size > NOTEBOOK_IMAGES_CAP:
                    del data[kind]
                    data["text/plain"] = (f"(an image of {size / 1e3:.0f} kB left out by the "
                                          "GPU check, which keeps the evidence small)")
                else:
                    kept += size
    return kept


def notebooks_step(folder: Path, paths: list[Path], seconds: float,
                   size: str) -> tuple[str, list[dict]]:
    """`paths` in turn, each in a fresh kernel, their executed copies into `folder`, until
    `seconds` are spent; those left are listed as skipped."""
    deadline = time.monotonic() + seconds
    results = []
    for path in paths:
        if deadline - time.monotonic() < LEAST_S["smoke"] / 2:
            results.append({"name": path.name, "size": size, "cells_run": 0, "cells": None,
                            "status": "skipped: the notebooks' time was up", "seconds": 0.0})
            continue
        results.append({**run_notebook(path, folder, deadline), "size": size})
        print(f"  {path.name} ({size}): {results[-1]['status']} "
              f"({results[-1]['seconds']:.0f} s)", flush=True)
    ok = sum(r["status"] == "ok" for r in results)
    return f"{ok} of {len(results)} ran without error at {size} size", results


# -- 4. the ladder -------------------------------------------------------------------------
def reference_ladder_seconds() -> float | None:
    """How long the newest reference ladder of ResNet-20 (the ladder this check walks;
    not another regime's) took, rung by rung, on the GPU it ran on."""
    from datetime import datetime
    from gpu_course.measure.records import load_runs
    from gpu_course.show.report import REFERENCE_ROOT
    ladders = [runs for runs in (load_runs(p) for p in sorted(
        REFERENCE_ROOT.glob("pytorch-*/ladder-pytorch-*"), key=lambda p: p.name))
        if runs and runs[0].config.get("model") == "resnet20"]
    if not ladders:
        return None
    total = 0.0
    for run in ladders[-1]:
        start, end = (datetime.fromisoformat(run.meta[k]) for k in ("started_at", "ended_at"))
        total += (end - start).total_seconds()
    return total


def ladder_command(out: Path, rehearse: bool, seconds: float) -> tuple[list[str], str]:
    args = [sys.executable, "-m", "gpu_course.cli", "ladder", "--engine", "pytorch",
            "--runs-dir", str(out / "ladder"), "--out", str(out / "ladder" / "report")]
    if rehearse:
        return args + ["--quick", "--rungs", "naive"], "quick, the first rung (rehearsal)"
    full = reference_ladder_seconds()
    if full is not None and full * 1.5 < seconds:
        return args, f"reference size (the reference took {full:.0f} s)"
    return args + ["--quick"], ("quick: the reference size needs about "
                                f"{full:.0f} s" if full else "quick: no reference time known")


# the second regime: a network whose step keeps the GPU busy, where lower precision and
# compilation pay and graphs matter less (rehearsed with the tiny network on a CPU)
GPU_BOUND_MODEL = "wrn16_10"


def ladder_step(out: Path, seconds: float, rehearse: bool) -> str:
    command, size = ladder_command(out, rehearse, seconds)
    code, log = run_for(command, seconds * 0.7, out / "ladder.log")
    said = f"{size}; " + ("finished" if code == 0 else f"exit {code}")
    left = seconds - log["seconds"]
    anatomy = [sys.executable, "-m", "tools.step_launches"] + (["--quick"] if rehearse else [])
    if left > LEAST_S["ladder"]:
        began = time.monotonic()
        code, _ = run_for(anatomy, left / 2, out / "step_launches.txt")
        said += "; step launches " + ("written" if code == 0 else f"exit {code}")
        left -= time.monotonic() - began
    else:
        said += "; step launches skipped: no time left"
    if left > LEAST_S["ladder"]:
        model = "tiny" if rehearse else GPU_BOUND_MODEL
        second = [sys.executable, "-m", "gpu_course.cli", "ladder", "--engine", "pytorch",
                  "--model", model, "--quick", "--runs-dir", str(out / "ladder-gpu-bound"),
                  "--out", str(out / "ladder-gpu-bound" / "report")] \
            + (["--rungs", "naive"] if rehearse else [])
        code, _ = run_for(second, left, out / "ladder-gpu-bound.log")
        said += f"; the {model} regime (quick) " + ("finished" if code == 0 else f"exit {code}")
    else:
        said += f"; the {GPU_BOUND_MODEL} regime skipped: no time left"
    return said


def run_for(command: list[str], seconds: float, log_path: Path) -> tuple[int | str, dict]:
    """Run `command` into `log_path` for at most `seconds`: past them it gets SIGINT (the
    course's commands keep what finished), then STOP_GRACE_S, then SIGKILL."""
    start = time.monotonic()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code: int | str = proc.wait(timeout=max(seconds, 1))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            code = "stopped: its time was up"
    return code, {"seconds": time.monotonic() - start}


# -- 5. the gpu-marked tests, 6. the monitor against nvidia-smi -------------------------------
GPU_TESTS = "tests/pytorch"


def gpu_tests(device: str | None) -> list[str]:
    """The gpu-marked tests to run, as pytest node ids: on `device`, those that no
    committed check passed on it first (a short budget may not reach them all); else
    the folder."""
    if device is None:
        return [GPU_TESTS]
    from gpu_course.show.report import GPU_CHECKS
    from tools.gpu_evidence import slug
    listed = subprocess.run([sys.executable, "-m", "pytest", "-m", "gpu", "-q", "--collect-only",
                             "-p", "no:cacheprovider", GPU_TESTS], cwd=REPO, text=True,
                            capture_output=True, timeout=120).stdout
    ids = [line for line in listed.splitlines() if "::" in line]
    passed = set()
    for report in (GPU_CHECKS / f"pytorch-{slug(device)}").glob("*/gpu_tests.xml"):
        passed |= {name for name, how in test_outcomes(report).items() if how == "passed"}
    return sorted(ids, key=lambda i: i.rsplit("::", 1)[-1] in passed) or [GPU_TESTS]


def tests_step(out: Path, seconds: float, device: str | None = None) -> str:
    report = out / "gpu_tests.xml"
    began = time.monotonic()
    ids = gpu_tests(device)
    code, _ = run_for([sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
                       *ids, f"--junitxml={report}"], seconds - (time.monotonic() - began),
                      out / "gpu_tests.log")
    results = test_outcomes(report)
    counts = {k: sum(v == k for v in results.values()) for k in ("passed", "failed", "skipped")}
    return (f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
            + ("" if code in (0, 5) else f" (exit {code})"))


def test_outcomes(report: Path) -> dict[str, str]:
    """test name -> passed / failed / skipped, from a JUnit report ({} when none)."""
    if not report.is_file():
        return {}
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        outcomes[case.get("name")] = ("failed" if kinds & {"failure", "error"} else
                                      "skipped" if "skipped" in kinds else "passed")
    return outcomes


def smi_step(out: Path, seconds: float) -> str:
    if not _has_nvidia_smi():
        return "skipped: no nvidia-smi here"
    code, _ = run_for([sys.executable, "-m", "tools.monitor_vs_smi", "--seconds",
                       str(int(min(30, seconds - 10))), "--load", "--out",
                       str(out / "monitor_vs_smi.csv")], seconds, out / "monitor_vs_smi.txt")
    return "finished" if code == 0 else f"exit {code}"


def _has_nvidia_smi() -> bool:
    import shutil
    return shutil.which("nvidia-smi") is not None


# -- the plan ------------------------------------------------------------------------------
STEPS = ("smoke", "check", "ladder", "tests", "smi")


@dataclass(frozen=True)
class Planned:
    """One thing the check runs: a step, and for the notebook passes one notebook."""
    step: str
    notebook: str | None = None
    why: str = ""          # the check pass: why this notebook comes where it does


def plan(steps: tuple = STEPS, only: list[str] | None = None,
         device: str | None = None) -> list[Planned]:
    """What the check runs, in order: `steps` (a subset of STEPS, in STEPS' order), every
    notebook (or `only` those) at smoke size in lesson order, then at the check's size the
    most needed on `device` first (`by_need`)."""
    found = notebooks(only)
    items = []
    for step in (s for s in STEPS if s in steps):
        if step == "smoke":
            items += [Planned(step, p.name) for p in found]
        elif step == "check":
            items += [Planned(step, p.name, why) for p, why in by_need(found, device)]
        else:
            items.append(Planned(step))
    return items


def plan_text(items: list[Planned], budget_s: float, device: str) -> str:
    """The plan, one line a thing, each with the second of the budget its step must end by."""
    order = list(dict.fromkeys(i.step for i in items))
    ends = {s: Clock(budget_s).allowance(s, order) for s in order}
    lines = [f"gpu-check plan on {device}, a budget of {budget_s:.0f} s:"]
    for n, item in enumerate(items, 1):
        lines.append(f"{n:3d}. {item.step:<6} {item.notebook or '':<30} by {ends[item.step]:3.0f} s"
                     + (f"  ({item.why})" if item.why else ""))
    return "\n".join(line.rstrip() for line in lines)


def check(out: Path, budget_s: float, rehearse: bool, steps: tuple = STEPS,
          only: list[str] | None = None, work: Path | None = None) -> dict:
    """The plan (`plan`) under `budget_s`; `only` limits the notebooks. Everything is
    written in `work` (default: a temporary folder, removed after); `out` gets three
    files: the archive, summary.md and the summary's JSON."""
    import shutil
    import tempfile
    from tools.gpu_evidence import branches, write_summary
    clock = Clock(budget_s)
    out.mkdir(parents=True, exist_ok=True)
    keep = work is not None
    work = Path(work) if keep else Path(tempfile.mkdtemp(prefix="gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        summary = _run_plan(work, clock, rehearse, steps, only)
        summary["branches"] = branches(work, summary["smoke"] + summary["notebooks"])
        write_summary(work, summary)
        archive = pack(work)
        for path in (archive, work / "summary.md", work / SUMMARY):
            shutil.copy2(path, out / path.name)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return summary


def _size(name: str, rehearse: bool) -> str:
    """Set the lessons' size for what runs next: smoke for the smoke pass (and for all of
    a rehearsal), the check's for the rest."""
    size = "smoke" if rehearse or name == "smoke" else "check"
    os.environ["GPU_COURSE_SIZE"] = size
    if size == "smoke":
        os.environ["GPU_COURSE_SMOKE"] = "1"
    else:
        os.environ.pop("GPU_COURSE_SMOKE", None)
    return size


def _run_plan(out: Path, clock: Clock, rehearse: bool, steps: tuple, only) -> dict:
    budget_s = clock.budget_s
    os.environ.update({"GPU_COURSE_RUNS": str(out / "runs"), "PYTHONUNBUFFERED": "1"})
    os.environ.pop("MPLBACKEND", None)   # the kernels draw inline: the executed copies keep charts
    found = machine(out)
    device = device_name(found)
    items = plan(steps, only, None if rehearse else device)
    print(plan_text(items, budget_s, device + (" (a rehearsal: smoke sizes)" if rehearse else "")),
          flush=True)
    done, results = [], {"smoke": [], "check": []}
    order = list(dict.fromkeys(i.step for i in items))
    for name in order:
        step = Step(name)
        seconds = clock.allowance(name, order)
        if seconds < LEAST_S[name]:
            step.detail = f"skipped: {max(seconds, 0):.0f} s left for it, it needs {LEAST_S[name]}"
            done.append(step)
            print(f"gpu-check: {name} {step.detail}", flush=True)
            continue
        began = time.monotonic()
        size = _size(name, rehearse)
        try:
            if name in FOLDERS:
                paths = [NOTEBOOKS / i.notebook for i in items if i.step == name]
                step.detail, results[name] = notebooks_step(out / FOLDERS[name], paths, seconds, size)
            elif name == "ladder":
                step.detail = ladder_step(out, seconds, rehearse)
            elif name == "tests":
                step.detail = tests_step(out, seconds, None if rehearse else device)
            else:
                step.detail = smi_step(out, seconds)
            step.status = "skipped" if step.detail.startswith("skipped") else "ran"
        except Exception as err:   # one step's failure is reported; the others still run
            step.status, step.detail = "failed", f"{type(err).__name__}: {err}"
        step.seconds = round(time.monotonic() - began, 1)
        done.append(step)
        print(f"gpu-check: {name} {step.status} in {step.seconds:.0f} s: {step.detail}",
              flush=True)
    return {"device": device, "machine": found, "rehearsal": rehearse,
            "budget_s": budget_s, "wall_s": round(time.monotonic() - clock.start, 1),
            "plan": [vars(i) for i in items], "steps": [vars(s) for s in done],
            "smoke": results["smoke"], "notebooks": results["check"], "at": found["at"]}


def pack(out: Path) -> Path:
    """Everything under `out` but the archive itself, files over FILE_CAP left out (named
    in left_out.txt), into out/gpu-check.tar.gz."""
    archive = out / ARCHIVE
    left_out = []
    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted(p for p in out.rglob("*") if p.is_file() and p != archive):
            if path.stat().st_size > FILE_CAP:
                left_out.append(f"{path.relative_to(out)} ({path.stat().st_size / 1e6:.1f} MB)")
                continue
            tar.add(path, arcname=str(path.relative_to(out)))
        if left_out:
            note = out / "left_out.txt"
            note.write_text("\n".join(left_out) + "\n")
            tar.add(note, arcname=note.name)
    return archive


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "gpu-check"),
                        help="where the archive, summary.md and gpu-check.json go (default: "
                             "$OUT, else ./gpu-check)")
    parser.add_argument("--work", type=Path, default=None,
                        help="keep the working files here (default: a temporary folder)")
    parser.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                        help=f"wall time for everything (default {DEFAULT_BUDGET_S} s; "
                             f"{REHEARSAL_BUDGET_S} s with --rehearse)")
    parser.add_argument("--rehearse", action="store_true",
                        help="the same plan on a CPU with smoke sizes")
    parser.add_argument("--plan", nargs="?", const="", default=None, metavar="GPU",
                        help="print what would run, in order, and run nothing: on this "
                             "machine's GPU, or on the GPU named (its committed checks "
                             "set the order of the check pass)")
    parser.add_argument("--steps", default=",".join(STEPS),
                        help=f"a subset of {','.join(STEPS)} (default: all, in that order)")
    parser.add_argument("--notebooks", default=None, metavar="NN,NN",
                        help="only these PyTorch notebooks, by number (default: all)")
    args = parser.parse_args(argv)
    budget = args.budget or (REHEARSAL_BUDGET_S if args.rehearse else DEFAULT_BUDGET_S)
    if not 60 <= budget <= 3600:
        parser.error(f"--budget={budget:g} must be 60..3600 seconds")
    steps = tuple(s.strip() for s in args.steps.split(",") if s.strip())
    if not steps or set(steps) - set(STEPS):
        parser.error(f"--steps={args.steps}: allowed: a comma-separated subset of {','.join(STEPS)}")
    only = [n.strip() for n in args.notebooks.split(",")] if args.notebooks else None
    try:
        notebooks(only)
    except ValueError as err:
        parser.error(str(err))
    if args.plan is not None:
        device = args.plan or this_gpu()
        print(plan_text(plan(steps, only, None if args.rehearse else device), budget,
                        device + (" (a rehearsal: smoke sizes)" if args.rehearse else "")))
        return 0
    summary = check(args.out.expanduser(), budget, args.rehearse, steps, only,
                    args.work.expanduser() if args.work else None)
    print((args.out / "summary.md").read_text())
    return 0 if all(n["status"] == "ok" or n["status"].startswith(("skipped", "stopped"))
                    for n in summary["smoke"] + summary["notebooks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
