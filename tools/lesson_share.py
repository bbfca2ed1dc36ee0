"""How much of each notebook an attendee reads is the lesson: the framework's own code,
the loop the lesson shows and the calls that run it, against the course's scaffolding.

    python -m tools.lesson_share            # one row a notebook, then the totals

Read from the .py twins, statement by statement (a statement's lines count together;
blank and comment-only lines not at all). Lesson code: a statement that uses the framework
(mxnet, gluon, torch, a network, loader, optimizer, trainer, scheduler, autocast...) or
runs the lesson through the course (gc.train, gc.record, gc.sweep, gc.Experiment, ...,
and lesson 11's env.bench / env.hook and lesson 15's env.infer, which run a framework
variant in its own process;
the SageMaker notebook's SDK estimator).
Scaffolding: the first (setup) cell, the parameters cell, imports of gpu_course, the
course's show/conclude/plot/table calls, print/display, closing sentences (`say(`), and
any statement that does neither (table plumbing, dicts of numbers).
"""
from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCAFFOLD = re.compile(r"^\s*(from gpu_course\b|import gpu_course\b|gc\.(show|conclude|plots|tables)\b"
                      r"|tables\.show\b|print\(|display\()|\bsay\b|Closing\(")
LESSON = re.compile(r"\b(mx|mxnet|gluon|nd|autograd|torch|nn|F|optim|net|trainer|optimizer|scheduler|"
                    r"DataLoader|hybridize|autocast|GradScaler|kvstore|DDP|DistributedDataParallel|"
                    r"rec|train_iter|loss)\b|\bgc\.(train|record|sweep|repeat|build|Experiment|"
                    r"get_model|load_data|load_datasets|make_loader|prepare_data|evaluate|"
                    r"lr_scheduler|make_trainer|make_optimizer|profile_steps|split|to_device|"
                    r"optimizer_params|lr_curve|LARS|Signum|GpuLoader|inference_net|time_inference)\b"
                    r"|\benv\.(bench|hook|infer)\("   # lessons 11, 15 run each framework variant in a process
                    r"|\b(Estimator|estimator)\b")  # the SageMaker notebook's framework is the SDK


def cells(text: str) -> list[tuple[str, list[str]]]:
    """(header, lines) of each cell of a percent-format twin."""
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("# %%"):
            out.append((line, []))
        elif out:
            out[-1][1].append(line)
    return out


def statements(lines: list[str]) -> list[list[str]]:
    """The cell's top-level statements, each as its code lines (no blanks, no comments)."""
    text = "\n".join(ln for ln in lines if not ln.lstrip().startswith(("%", "!")))
    try:
        tree = ast.parse(text)
    except SyntaxError:  # a cell that is not plain Python: one statement a line
        return [[ln] for ln in lines if ln.strip() and not ln.strip().startswith("#")]
    src = text.splitlines()
    return [[ln for ln in src[node.lineno - 1:node.end_lineno]
             if ln.strip() and not ln.strip().startswith("#")] for node in tree.body]


def count(path: Path) -> dict:
    """{"code": lines of code, "lesson": of them the lesson's, "say": closing lines}."""
    code = lesson = say = 0
    first = True
    for header, lines in cells(path.read_text()):
        if "[markdown]" in header:
            continue
        for stmt in statements(lines):
            code += len(stmt)
            text = "\n".join(stmt)
            say += "say(" in text
            if not (first or "parameters" in header) and LESSON.search(text) \
                    and not SCAFFOLD.search(text.lstrip()):
                lesson += len(stmt)
        first = False
    return {"code": code, "lesson": lesson, "say": say}


def main(argv=None) -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    total = {"code": 0, "lesson": 0, "say": 0}
    print(f"{'notebook':40s} {'code':>5s} {'lesson':>6s} {'share':>6s} {'say(':>5s}")
    for path in sorted((REPO / "notebooks").glob("*/*.py")) + [REPO / "notebooks/run_on_sagemaker.py"]:
        c = count(path)
        total = {k: total[k] + c[k] for k in total}
        share = c["lesson"] / c["code"] if c["code"] else 0.0
        print(f"{path.relative_to(REPO / 'notebooks').as_posix():40s} {c['code']:5d} {c['lesson']:6d} "
              f"{share:6.0%} {c['say']:5d}")
    print(f"{'all':40s} {total['code']:5d} {total['lesson']:6d} "
          f"{total['lesson'] / max(1, total['code']):6.0%} {total['say']:5d}")


if __name__ == "__main__":
    main()
