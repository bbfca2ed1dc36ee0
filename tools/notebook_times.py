"""How long each notebook takes in smoke mode, measured here (not typed from memory).

    .venv/gluon/bin/python -m tools.notebook_times              # Gluon lessons + SageMaker
    .venv/pytorch/bin/python -m tools.notebook_times            # PyTorch lessons
    ... -m tools.notebook_times --write notebooks/SMOKE_TIMES.md  # update the table

Each notebook runs top to bottom in a fresh kernel of this environment, the way `make test`
runs it (GPU_COURSE_SMOKE=1, runs recorded in a temporary folder), and its wall time is the
time from kernel start to the last cell. The machine's load average is taken before and
after: on a shared machine the times grow with it. `--write` replaces this track's block
of the Markdown file (between `<!-- smoke-times:TRACK -->` markers) and keeps the rest.
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import re
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
NO_VALUE = "–"


def track_here() -> str:
    import importlib.util
    return "gluon" if importlib.util.find_spec("mxnet") else "pytorch"


def notebooks_of(track: str) -> list[Path]:
    found = sorted((NOTEBOOKS / track).glob("[0-9]*.ipynb"))
    return found + ([NOTEBOOKS / "run_on_sagemaker.ipynb"] if track == "gluon" else [])


def time_notebook(path: Path, timeout: int = 900, keep: Path | None = None) -> tuple[float, str]:
    """(seconds, "ok" or the error's first line) for one smoke run of the notebook; `keep`:
    a folder to write the executed notebook into (its outputs, to read what it printed)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    try:
        client.execute()
        status = "ok"
    except CellExecutionError as err:
        status = "error: " + (str(err).strip().splitlines() or ["?"])[-1][:120]
    seconds = time.perf_counter() - start
    if keep is not None:
        out = keep / path.relative_to(NOTEBOOKS)
        out.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out)
    slowest = sorted(((_cell_seconds(c), i) for i, c in enumerate(nb.cells) if c.cell_type == "code"),
                     reverse=True)[:3]
    print(f"  {path.name}: slowest cells " + ", ".join(f"#{i} {t:.0f} s" for t, i in slowest), flush=True)
    return seconds, status


def _cell_seconds(cell) -> float:
    from datetime import datetime
    timing = cell.get("metadata", {}).get("execution", {})
    try:
        start, end = (datetime.fromisoformat(timing[k].replace("Z", "+00:00"))
                      for k in ("iopub.execute_input", "shell.execute_reply"))
    except (KeyError, ValueError):
        return 0.0
    return (end - start).total_seconds()


def measure(track: str, names: list[str] | None = None, keep: Path | None = None) -> dict:
    os.environ.update(GPU_COURSE_SMOKE="1", MPLBACKEND="Agg")
    paths = [p for p in notebooks_of(track) if not names or any(n in p.name for n in names)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="smoke-runs-") as runs:
        os.environ["GPU_COURSE_RUNS"] = runs
        load_before = os.getloadavg()[0]
        for path in paths:
            seconds, status = time_notebook(path, keep=keep)
            rows.append((path.relative_to(NOTEBOOKS).as_posix(), seconds, status, os.getloadavg()[0]))
            print(f"{rows[-1][0]:40s} {seconds:6.0f} s  load {rows[-1][3]:.1f}  {status}", flush=True)
    return {"track": track, "rows": rows, "load_before": load_before, "cpus": os.cpu_count(),
            "cpu": platform.processor() or platform.machine(),
            "when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def from_log(text: str, track: str) -> dict:
    """The result of a run from its printed lines (a long run stopped early still counts)."""
    line = re.compile(r"^(\S+\.ipynb)\s+(\d+) s  load ([\d.]+)  (.*)$", re.M)
    latest = {m[1]: (m[1], float(m[2]), m[4], float(m[3])) for m in line.finditer(text)}
    rows = sorted(latest.values())  # a notebook measured twice: the later line counts
    measured = set(latest)
    rows += [(p.relative_to(NOTEBOOKS).as_posix(), math.nan, "not measured (the run was stopped)",
              math.nan) for p in notebooks_of(track) if p.relative_to(NOTEBOOKS).as_posix() not in measured]
    rows.sort(key=lambda row: (not row[0].startswith(track), row[0]))
    return {"track": track, "rows": rows, "load_before": math.nan,
            "cpus": os.cpu_count(), "cpu": platform.machine(),
            "when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def markdown(result: dict) -> str:
    total = sum(seconds for _, seconds, _, _ in result["rows"] if not math.isnan(seconds))
    lines = [f"<!-- smoke-times:{result['track']} -->",
             f"{result['track']} track, measured {result['when']} by `python -m "
             f"tools.notebook_times` on {result['cpus']} CPU cores, no GPU "
             + (f"(load average {result['load_before']:.1f} at the start):"
                if not math.isnan(result["load_before"]) else "(from the runs' printed lines):"), "",
             "| notebook | smoke time | load average | result |", "| :-- | --: | --: | :-- |"]
    lines += [f"| {name} | {_duration(seconds)} | {_load(load)} | {status} |"
              for name, seconds, status, load in result["rows"]]
    missing = any(math.isnan(seconds) for _, seconds, _, _ in result["rows"])
    lines += [f"| {'the measured ones' if missing else 'all'} | {_duration(total)} | | |", f"<!-- /smoke-times:{result['track']} -->"]
    return "\n".join(lines)


def write(path: Path, block: str, track: str) -> None:
    text = path.read_text() if path.exists() else "# Smoke times\n"
    pattern = re.compile(rf"<!-- smoke-times:{track} -->.*?<!-- /smoke-times:{track} -->", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


def _load(load: float) -> str:
    return NO_VALUE if math.isnan(load) else f"{load:.1f}"


def _duration(seconds: float) -> str:
    if math.isnan(seconds):
        return NO_VALUE
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--track", choices=["gluon", "pytorch"], default=None,
                        help="default: the track of this environment")
    parser.add_argument("--only", nargs="*", help="notebooks whose file name contains one of these")
    parser.add_argument("--write", type=Path, help="Markdown file whose table to update")
    parser.add_argument("--from-log", type=Path,
                        help="the printed lines of an earlier (perhaps stopped) run, instead of running")
    parser.add_argument("--keep", type=Path,
                        help="a folder to write each executed notebook into, outputs and all")
    args = parser.parse_args(argv)
    if args.from_log:
        result = from_log(args.from_log.read_text(), args.track or track_here())
    else:
        result = measure(args.track or track_here(), args.only, args.keep)
    block = markdown(result)
    print(block)
    if args.write:
        write(args.write, block, result["track"])


if __name__ == "__main__":
    main()
