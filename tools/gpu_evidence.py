"""What a GPU check verified, and its evidence in the repository.

    python -m tools.gpu_evidence ARCHIVE        # a gpu-check.tar.gz into gpu_course/reference/
    python -m tools.gpu_evidence --readme       # README's block: lessons executed on a GPU

`tools.gpu_check` writes the archive on a GPU machine. Unpacked here it becomes
gpu_course/reference/gpu-checks/pytorch-<gpu>/<when>/ (its summary, machine, logs, run
records and ladder), kept apart from the reference runs that the lessons compare with,
and each notebook executed at the check's size that now stands (images capped) goes to
gpu-checks/pytorch-<gpu>/notebooks/: several checks complete the evidence in parts, and a
notebook stopped for time never replaces one that ran to its end. The smoke pass's
copies stay in the archive; its statuses are in the summary. Each GPU branch a lesson
has is listed as verified only where a run record shows it ran on the GPU, or a
gpu-marked test of it passed, or the notebook that takes it ran without error on the GPU
(at either size); branches that need several GPUs are listed as not verified on one.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MARKERS = ("<!-- gpu-executed -->", "<!-- /gpu-executed -->")


def _on_gpu(run) -> bool:
    return str((run.meta.get("ran") or {}).get("torch_device", "")).startswith("cuda")


def _ran(run, *keys):
    value = run.meta.get("ran") or {}
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _as_ran(run, setting):
    from gpu_course.analyse import alike
    return alike.value(run, setting)


@dataclass(frozen=True)
class Branch:
    """A path of the lessons' code that only a GPU takes, and what shows it ran."""
    name: str
    run: Callable | None = None        # a run record that ran on the GPU shows it
    tests: tuple[str, ...] = ()        # a gpu-marked test of it passed
    notebook: str | None = None        # the notebook that takes it ran without error


BRANCHES = (
    Branch("a GPU present: the device, CUDA events, the GPU monitor", run=lambda r: True,
           tests=("test_the_monitor_reads_a_real_driver",)),
    Branch("TF32 convolutions (float32 on tensor cores)",
           run=lambda r: _ran(r, "tf32", "convolutions") is True),
    Branch("float16 with a GradScaler", run=lambda r: _as_ran(r, "dtype") == "float16",
           tests=("test_float16_trains_with_a_grad_scaler_on_cuda",)),
    Branch("bfloat16 with channels_last",
           run=lambda r: _as_ran(r, "dtype") == "bfloat16" and bool(r.config.get("channels_last"))),
    Branch("torch.compile with inductor", run=lambda r: _ran(r, "compile_backend") == "inductor"),
    Branch("CUDA graphs (the whole step, or mode='reduce-overhead')",
           run=lambda r: bool((r.meta.get("notes") or {}).get("cuda_graph")) or (
               (r.meta.get("notes") or {}).get("compiled") or {}).get("mode") == "reduce-overhead",
           tests=("test_the_whole_step_runs_as_one_cuda_graph",
                  "test_reduce_overhead_graphs_without_the_whole_step")),
    Branch("the GPU-resident loader", run=lambda r: _ran(r, "train_data", "class") == "GpuLoader",
           tests=("test_the_data_on_gpu_loader_cuts_batches_on_the_device",)),
    Branch("pinned host memory and non-blocking copies",
           run=lambda r: bool(r.config.get("pin_memory"))),
    Branch("cudnn.benchmark", run=lambda r: _ran(r, "cudnn_benchmark") is True,
           tests=("test_cudnn_benchmark_is_on_and_recorded",)),
    Branch("a clear out-of-memory error, finished epochs kept",
           tests=("test_an_absurd_batch_is_a_clear_oom_and_the_sweep_goes_on",
                  "test_an_oom_after_finished_epochs_keeps_them")),
    Branch("DDP with NCCL at world size 1", tests=("test_ddp_with_nccl_at_world_size_one",)),
    Branch("the capstone's reference solution steady by its grading (lesson 16)",
           tests=("test_the_capstone_s_reference_solution_is_steady_on_the_gpu",)),
    Branch("pageable against pinned copies", notebook="11_"),
    Branch("the CUDA profiler trace", notebook="12_"),
    Branch("inference timed by CUDA events: batch-1 requests (p50, p99) and queued batches, "
           "eager, compiled, CUDA graphs and bfloat16",
           tests=("test_on_a_gpu_events_time_each_request_and_each_queued_pass",), notebook="15_"),
)
# what one GPU cannot show; their logic is tested with fake runs
SEVERAL_GPUS = (
    "lesson 07: data parallel across two or more GPUs (DDP, NCCL all-reduce between devices), "
    "its scaling table and the choice of GPU count (tests/lessons/test_l07_devices.py)",
    "the ladder's multi-GPU rungs and the summary's GPU-count advice "
    "(tests/lessons/test_l08_summary.py)",
)


def branches(out: Path, notebooks: list[dict]) -> list[dict]:
    """Each GPU branch: verified or not, and by what: the run records and the tests'
    report in `out` (as tools.gpu_check leaves them), and the notebooks' results (both
    passes: each result may name its `size`)."""
    from gpu_course.measure.records import load_runs
    from tools.gpu_check import test_outcomes
    runs = [r for r in load_runs(out) if _on_gpu(r)]
    tests = test_outcomes(out / "gpu_tests.xml")
    gpu = bool(runs) or any(v == "passed" for v in tests.values())
    found = []
    for branch in BRANCHES:
        by = []
        if branch.run is not None:
            shown = sorted({r.name for r in runs if branch.run(r)})
            if shown:
                by.append(f"runs {', '.join(shown[:4])}" + (" ..." if len(shown) > 4 else ""))
        by += [f"test {t}" for t in branch.tests if tests.get(t) == "passed"]
        if branch.notebook and gpu:
            by += [f"notebook {n['name']}" + (f" at {n['size']} size" if n.get("size") else "")
                   for n in notebooks if n["name"].startswith(branch.notebook)
                   and n["status"] == "ok"]
        found.append({"branch": branch.name, "verified": bool(by), "by": "; ".join(by)})
    found += [{"branch": text, "verified": False, "by": "needs two or more GPUs"}
              for text in SEVERAL_GPUS]
    return found


def write_summary(out: Path, summary: dict) -> None:
    from tools.gpu_check import SUMMARY
    (out / SUMMARY).write_text(json.dumps(summary, indent=1, default=str))
    (out / "summary.md").write_text(summary_text(summary, out))


def summary_text(summary: dict, out: Path) -> str:
    m = summary["machine"]
    smi = (m.get("nvidia_smi") or [{}])[0]
    v = m.get("versions", {})
    lines = [f"# GPU check: {summary['device']}" + (" (a CPU rehearsal)" if summary["rehearsal"] else ""),
             "",
             f"{summary['at']}; {summary['wall_s']:.0f} s of a {summary['budget_s']:.0f} s budget. "
             f"Driver {smi.get('driver_version', '-')}, CUDA {m.get('hardware', {}).get('cuda', '-')}, "
             f"Python {m.get('python')}, PyTorch {v.get('torch')}, nbclient {v.get('nbclient')}, "
             f"ipykernel {v.get('ipykernel')}; {m.get('hardware', {}).get('cpu_count')} CPU cores. "
             "The GPU's settings were left as found.", "", "## Steps", "",
             "| step | status | seconds | what |", "| :-- | :-- | --: | :-- |"]
    lines += [f"| {s['name']} | {s['status']} | {s['seconds']:.0f} | {_cell(s['detail'])} |"
              for s in summary["steps"]]
    for title, key in (("Notebooks at smoke size", "smoke"), ("Notebooks at the check's size",
                                                              "notebooks")):
        if not summary.get(key):
            continue
        lines += ["", f"## {title}", "", "| notebook | status | seconds | cells run |",
                  "| :-- | :-- | --: | --: |"]
        lines += [f"| {n['name']} | {_cell(n['status'])} | {n['seconds']:.0f} | "
                  f"{n['cells_run']} of {n['cells'] if n['cells'] is not None else '-'} |"
                  for n in summary[key]]
    ladder = _ladder_table(out)
    if ladder:
        lines += ["", "## The ladder", "", "```", ladder, "```"]
    lines += ["", "## GPU branches", "", "| branch | verified | by |", "| :-- | :-- | :-- |"]
    lines += [f"| {b['branch']} | {'yes' if b['verified'] else 'no'} | {_cell(b['by']) or '-'} |"
              for b in summary["branches"]]
    return "\n".join(lines) + "\n"


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _ladder_table(out: Path) -> str | None:
    from gpu_course.ladder import RUNG_SETTINGS
    from gpu_course.measure.records import load_runs
    from gpu_course.show import report
    runs = load_runs(out / "ladder")
    if not runs:
        return None
    return report.format_table(report.ladder_table(runs, varies=RUNG_SETTINGS))


# -- the evidence, committed ---------------------------------------------------------------
def slug(device: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'h100'; the reference folder is pytorch-<slug>."""
    match = re.search(r"\b([A-Z]+\d{2,4}[A-Z]?)\b", device.upper().replace("NVIDIA", ""))
    return (match.group(1) if match else re.sub(r"[^a-z0-9]+", "-", device.lower())).lower()


def unpack(archive: Path, root: Path | None = None) -> Path:
    """The archive's evidence into root/pytorch-<gpu>/<when>/ (root: the reference's
    gpu-checks/, apart from the reference runs the lessons compare with): its summary
    (gpu-check.json, summary.md), machine, logs, run records and ladder. Each notebook
    executed at the check's size goes to root/pytorch-<gpu>/notebooks/ where it is now the copy that stands
    (report.executed_notebooks: a notebook stopped for time does not replace one that ran
    to its end). A rehearsal's archive is refused: it ran on no GPU."""
    from gpu_course.show.report import GPU_CHECKS, executed_notebooks
    from tools.gpu_check import SUMMARY
    root = Path(root or GPU_CHECKS)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            with tarfile.open(archive) as tar:
                for member in tar.getmembers():
                    parts = Path(member.name).parts
                    if member.isreg() and not member.name.startswith("/") and ".." not in parts:
                        tar.extract(member, tmp, set_attrs=False)
            summary = json.loads((Path(tmp) / SUMMARY).read_text())
        except (OSError, tarfile.TarError, ValueError) as err:
            why = (str(err).splitlines() or [type(err).__name__])[0]
            raise ValueError(f"{archive} is not a GPU check's archive with its {SUMMARY} "
                             f"(tools.gpu_check writes one): {why}") from None
        summary = summary if isinstance(summary, dict) else {}
        if summary.get("rehearsal") or summary.get("device") == "no GPU":
            raise ValueError(f"{archive} is a CPU rehearsal ({summary.get('device')}): "
                             "only a check on a GPU is evidence")
        device, at = summary.get("device"), summary.get("at")
        stamp = re.sub(r"[^0-9]", "", str(at))[:12]   # YYYYmmddHHMM
        if not isinstance(device, str) or not device.strip() or len(stamp) != 12 \
                or not isinstance(summary.get("notebooks"), list):
            raise ValueError(f"{archive}: its {SUMMARY} lacks what files a check (device "
                             f"{device!r}, at {at!r}, a list of notebooks): allowed is a device "
                             "name and a date and time like 2026-11-27T10:15:00+0000")
        target = root / f"pytorch-{slug(device)}"
        check = target / stamp
        if check.exists():
            raise ValueError(f"{archive}: the check of {summary['at']} is already committed "
                             f"in {check}")
        shutil.copytree(tmp, check, ignore=shutil.ignore_patterns("notebooks", "notebooks-smoke"))
        standing = executed_notebooks(root).get(target.name, {})
        for path in sorted((Path(tmp) / "notebooks").glob("*.ipynb")):
            if standing.get(path.name, {}).get("stamp") == stamp:
                (target / "notebooks").mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target / "notebooks" / path.name)
    return check


def readme_block(root: Path | None = None) -> str:
    """README's table: each PyTorch lesson's standing executed copy on each GPU."""
    from gpu_course.show.report import GPU_CHECKS, REFERENCE_ROOT, gpu_checks, executed_notebooks
    root = Path(root or GPU_CHECKS)
    checks = gpu_checks(root)
    if not checks:
        return ("No lesson has been executed on a GPU yet: `make test` runs every notebook "
                "on a CPU in smoke mode, and `make gpu-check` on a machine with one GPU "
                "executes the PyTorch lessons there and packs the evidence (`python -m "
                "tools.gpu_evidence ARCHIVE` commits it under `gpu_course/reference/`).")
    standing = executed_notebooks(root)
    folders = sorted({c["folder"] for c in checks})
    devices = {c["folder"]: c["device"] for c in checks}
    counts = {f: sum(c["folder"] == f for c in checks) for f in folders}
    lines = ["| lesson | " + " | ".join(f"{devices[f]} ({counts[f]} check"
                                         f"{'s' if counts[f] > 1 else ''})" for f in folders) + " |",
             "| :-- |" + " :-- |" * len(folders)]
    names = sorted({n["name"] for c in checks for n in c["notebooks"]})
    for name in names:
        cells = []
        for folder in folders:
            entry = standing.get(folder, {}).get(name)
            path = root / folder / "notebooks" / name
            if entry is None:
                cells.append("not run yet")
                continue
            said = f"{_cell(entry['status'])}, {entry['date']}"
            try:
                link = path.relative_to(REFERENCE_ROOT.parents[1]).as_posix()
            except ValueError:
                link = path.as_posix()
            cells.append(f"[{said}]({link})" if path.is_file() else said)
        lines.append(f"| pytorch/{name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_readme(readme: Path = README, root: Path | None = None) -> None:
    text = readme.read_text()
    start, end = text.index(MARKERS[0]) + len(MARKERS[0]), text.index(MARKERS[1])
    readme.write_text(text[:start] + "\n" + readme_block(root) + "\n" + text[end:])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("archive", nargs="?", type=Path, help="a gpu-check.tar.gz")
    parser.add_argument("--readme", action="store_true", help="rewrite README's block")
    args = parser.parse_args(argv)
    if args.archive:
        try:
            print(f"unpacked into {unpack(args.archive)}")
        except ValueError as err:
            print(f"gpu_evidence: {err}", file=sys.stderr)
            return 1
    if args.archive or args.readme:
        write_readme()
        print("README: the lessons executed on a GPU, rewritten")
    else:
        parser.error("give an archive, or --readme")
    return 0


if __name__ == "__main__":
    sys.exit(main())
