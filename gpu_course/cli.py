"""The `gpu-course` command line; an error in what the user typed is one line and exit 2."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import config as _config
from .flags import add_config_flags as _add_config_flags
from .flags import config_from_args
from .page import Page


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except KeyboardInterrupt:   # Ctrl-C as the command starts
        print("gpu-course: interrupted", file=sys.stderr)
        return 130
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args) or 0
    except ValueError as err:
        print(f"gpu-course {args.verb}: error: {err}", file=sys.stderr)
        return 2
    except RuntimeError as err:  # a run stopped, or the framework said why: one line
        if os.environ.get("GPU_COURSE_DEBUG"):
            raise
        print(f"gpu-course {args.verb}: {type(err).__name__}: {err}", file=sys.stderr)
        from .measure.guards import RunStopped
        from .measure.records import OutOfMemory
        if not isinstance(err, (RunStopped, OutOfMemory)):
            print("(GPU_COURSE_DEBUG=1 shows where it was raised)", file=sys.stderr)
        return 1
    except OSError as err:  # disk full, read-only, a file where a folder should be
        print(f"gpu-course {args.verb}: error: {_os_error(err)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"gpu-course {args.verb}: interrupted", file=sys.stderr)
        return 130


def _os_error(err: OSError) -> str:
    """One line for a file-system error: what, where, and the setting that pointed there."""
    from .measure.guards import DISK_ERRORS
    what = DISK_ERRORS.get(err.errno) or (
        "a file is in the way of a folder" if err.errno == 17 else err.strerror or str(err))
    where = err.filename or "?"
    text = f"{what} while writing {where}"
    for name in ("GPU_COURSE_RUNS", "GPU_COURSE_DATA"):
        if (value := os.environ.get(name)) and _inside(where, value):   # a folder, not a prefix
            text += f" (from {name}={value})"
    return text + f" [{type(err).__name__}: {err.strerror or err}]"


def _inside(path, folder) -> bool:
    """Whether `path` lies in `folder` (either may start with ~ or be relative)."""
    try:
        return Path(path).expanduser().resolve().is_relative_to(Path(folder).expanduser().resolve())
    except (OSError, RuntimeError):
        return False


def _user_path(text: str) -> Path:
    """A path option as a shell would read it: a leading ~ is the home folder."""
    return Path(text).expanduser()


PAGE = Page(Path(__file__).resolve().parent / "text" / "cli.md")   # by path: run as __main__ too


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpu-course", description=PAGE.text("gpu_course"))
    sub = parser.add_subparsers(dest="verb", metavar="VERB")

    summary = PAGE.means("summaries", str)   # each verb's line in `gpu-course --help`

    def verb(name: str, func, runs_dir: bool = True, description: bool = True):
        """A verb, its page section the description; runs_dir: it takes --runs-dir."""
        p = sub.add_parser(name, help=summary[name], description=PAGE.text(name) if description else None)
        p.set_defaults(func=func)
        if runs_dir:
            p.add_argument("--runs-dir", type=_user_path, default=None)
        return p

    p = verb("data", _data, False)
    p.add_argument("--out", type=_user_path, default=None, help="default: data/")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--train", type=int, default=50_000, help="training images")
    p.add_argument("--test", type=int, default=10_000, help="test images")
    p.add_argument("--kind", default="synthetic", choices=("synthetic", "folder"),
                   help="folder: JPEGs, a folder a class")
    p.add_argument("--classes", type=int, default=10, help="folder: classes (2-10)")
    p.add_argument("--per-class", type=int, default=300, help="folder: JPEGs per class")
    p.add_argument("--overwrite", action="store_true", help="replace gpu-course's data")

    p = verb("monitor", _monitor, False)
    p.add_argument("--out", type=_user_path, required=True, help="CSV of GPU samples")
    p.add_argument("--seconds", type=float, default=None, help="default: until Ctrl-C")
    for p in (p, verb("watch", _watch)):
        p.add_argument("--interval", type=float, default=0.5, help="seconds between samples")
    p.add_argument("--name", default=None, help="default: the command's")
    p.add_argument("command", nargs=argparse.REMAINDER, help="after --: the command")

    verb("runs", _runs, description=False)

    p = verb("run", _run)
    _add_config_flags(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = verb("ladder", _ladder)
    p.add_argument("--engine", choices=_config.ENGINES, default=None,
                   help="default: $ENGINE or this machine's")
    p.add_argument("--quick", action="store_true", help="a minute on a CPU")
    for flag in ("--train-size", "--test-size", "--epochs"):
        p.add_argument(flag, type=int, default=None)
    p.add_argument("--model", choices=_config.MODELS, default=None,
                   help="default: resnet20 (GPU), tiny (CPU)")
    p.add_argument("--rungs", default=None, help="comma-separated rung names")
    p.add_argument("--repeats", type=int, default=1, help="interleaved walks, walk i seed + i")
    p.add_argument("--out", type=_user_path, default=None, help="report folder")

    verb("diagnose", _diagnose).add_argument("run", help="run folder or id")

    p = verb("distributed", _distributed)
    p.add_argument("--engine", choices=_config.ENGINES, default=None)
    p.add_argument("--nodes", type=int, default=2, help="local 'hosts'")
    p.add_argument("--procs-per-node", type=int, default=1, help="processes per host")
    p.add_argument("--quick", action="store_true", help="short, on a CPU")

    p = verb("env", _env, False)
    p.add_argument("--engine", choices=_config.ENGINES, default=None, help="default: the first installed")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--no-measure", action="store_true", help="read only")
    p.add_argument("--quick", action="store_true", help="smaller measurements (seconds)")

    _add_config_flags(verb("profile", _profile))
    p = sub.add_parser("sagemaker", prefix_chars="\0", add_help=False)   # unlisted; any flags
    p.add_argument("flags", nargs="*")
    p.set_defaults(func=_sagemaker_moved)
    return parser


def _sagemaker_moved(args) -> None:
    raise ValueError("the SageMaker launcher is its own command now: gpu-course-sagemaker "
                     "(python -m gpu_course_sagemaker), same flags")


def _data(args) -> None:
    from . import data
    if args.kind == "folder":
        from .data import folder
        path = folder.generate_folder(args.out, folder.Photos(args.classes, args.per_class, args.seed),
                                      overwrite=args.overwrite)
        print(f"wrote {args.classes * args.per_class:,} JPEGs in {args.classes} class folders to {path}")
    else:
        path = data.generate_to(args.out, seed=args.seed, train_size=args.train,
                                test_size=args.test, overwrite=args.overwrite)
        print(f"wrote {args.train} training and {args.test} test images to {path}")


def _monitor(args) -> None:
    from .measure import monitor
    monitor.record_to_csv(args.out, seconds=args.seconds, interval=args.interval)


def _watch(args) -> int:
    from .measure import watch
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    return watch.watch(command, watch.Options(args.runs_dir, args.interval, args.name))


def _runs(args) -> None:
    from .measure import records
    root = records.runs_root(args.runs_dir)
    if root.exists() and not root.is_dir():
        raise ValueError(f"{root} is a file, not a folder of run records; set --runs-dir")
    if not (runs := records.load_runs(args.runs_dir)):
        print(f"no runs under {root}" + ("" if root.exists() else " (no such folder)"))
        return
    cols = ["run_id", "status", "engine", "batch_size", "num_workers", "dtype",
            "samples_per_sec", "epoch_time_s", "gpu_util", "val_acc", "device"]
    print(records.runs_table(runs)[cols].to_string(index=False, float_format=lambda v: f"{v:,.2f}"))


def _engine(requested: str | None) -> str:
    from .engines import pick_engine
    if requested:
        return requested
    engine, reason = pick_engine()
    print(f"engine: {engine} ({reason})")
    return engine


def _run(args) -> int:
    from .ladder import adapter
    cfg = config_from_args(args, engine=_engine(args.cfg_engine))
    run = adapter(cfg.engine).train(cfg, runs_dir=args.runs_dir, progress=not args.no_progress)
    print(f"run record: {run.path}")
    return 0 if run.status == "finished" else 1


def _ladder(args) -> int:
    from .ladder import RUNG_SETTINGS, Walk, adapter, closing_lines, run_ladder
    from .show import report
    for flag, path in (("--out", args.out), ("--runs-dir", args.runs_dir)):
        if path is not None and path.exists() and not path.is_dir():   # before an hour's walk
            raise ValueError(f"{flag} {path} is a file; it must name a folder")
    engine = _engine(args.engine)
    only = [r.strip() for r in args.rungs.split(",")] if args.rungs else None
    runs, paths = run_ladder(engine, quick=args.quick, walk=Walk(only, repeats=args.repeats),
                             runs_dir=args.runs_dir, out=args.out, train_size=args.train_size,
                             test_size=args.test_size, epochs=args.epochs, model=args.model)
    print("\n" + "\n\n".join([report.format_table(report.ladder_table(runs, varies=RUNG_SETTINGS)),
                              report.conclusion(runs, varies=RUNG_SETTINGS),
                              report.anatomy_text(runs)]))
    default = not args.quick and only is None and all(
        v is None for v in (args.train_size, args.test_size, args.epochs, args.model))
    gpus = adapter(engine).gpu_count()
    lines, ok = closing_lines(engine, runs, gpus, check_accuracy=default and gpus == 0)
    print("\n".join(lines + [f"report: {paths.get('html')}"]))
    return 0 if ok else 1


def _distributed(args) -> None:
    from .scale import distributed
    asked = f"--nodes={args.nodes} x --procs-per-node={args.procs_per_node}"
    if args.nodes < 1 or args.procs_per_node < 1:
        raise ValueError(f"{asked}: both must be >= 1")
    engine = _engine(args.engine)
    k = args.nodes * args.procs_per_node
    from .env.cores import check_training_processes
    check_training_processes(k, asked)
    base, job = distributed.run(engine, args.nodes, args.procs_per_node, quick=args.quick,
                                runs_dir=args.runs_dir)
    cfg = _config.Experiment.from_dict(job.config)
    rows = distributed.scaling_table(base, job, k, cfg.batch_size, distributed.gradient_bytes(cfg))
    one = "1 process" if engine == "pytorch" else "1 worker with 1 server"
    print(f"{engine}: {one}, then {args.nodes} host(s) x {args.procs_per_node} "
          f"process(es) on 127.0.0.1 (records: {base.path.parent})")
    print(distributed.format_table(rows))


def _diagnose(args) -> None:
    from .analyse import diagnose
    from .measure import records
    try:
        run = records.load_run(_find_run(args.run, args.runs_dir), runs_dir=args.runs_dir)
    except FileNotFoundError:
        root = args.runs_dir or records.default_runs_dir()
        raise ValueError(f"run {args.run!r} not found under {root}; `gpu-course runs` lists them") from None
    print(diagnose.explain(run))


def _find_run(run: str, runs_dir) -> str:
    """A run folder, or the folder of run id `run` at any depth under the runs folder."""
    from .measure import records
    if Path(run, "run.json").exists():
        return run
    found = sorted(p.parent for p in records.runs_root(runs_dir).rglob("run.json")
                   if p.parent.name == run)
    return str(found[0]) if found else run


def _env(args) -> None:
    import json
    from .engines import FRAMEWORKS, installed_engines
    if (engine := args.engine) and engine not in installed_engines():
        raise ValueError(f"--engine {engine} needs {FRAMEWORKS[engine]}, not installed here; "
                         f"run `make setup-{engine}`, then `.venv/{engine}/bin/gpu-course env`")
    from .env import report as env
    report = env.report(args.engine, measure=not args.no_measure, quick=args.quick)
    print(json.dumps(report, indent=2, default=str) if args.json else env.format_report(report))


def _profile(args) -> None:
    from .analyse import profiling
    from .ladder import adapter
    cfg = config_from_args(args, engine=_engine(args.cfg_engine))
    print(profiling.format_result(profiling.profile_run(adapter(cfg.engine), cfg, runs_dir=args.runs_dir)))


if __name__ == "__main__":
    sys.exit(main())
