"""The tuned rung against itself with one lever changed, each measured in the same call.

    python -m tools.levers --out "$OUT"                 # on a GPU: the tuned rung, 3 epochs
    python -m tools.levers --quick --out /tmp/levers    # a CPU rehearsal (what CI runs)

Issue 28 asks for each lever that could take the tuned rung (the whole step as one CUDA
graph, bfloat16, channels last, LARS, the data on the GPU) toward the GPU's limit, each
measured alone against the rung as shipped, in the same call. The levers built so far:

* ``triton``    the 16-channel stage's convolutions by the kernel rung's own Triton
                kernels (`convolutions="triton"`): cuDNN runs them 8-17 times slower than
                their bytes allow on an H200 (tools.conv_bench);
* ``batch2048`` twice the batch, the learning rate scaled with it (the ladder's
                lr_base_batch), if accuracy holds;
* ``evalgraph`` the validation pass recorded once as a CUDA graph and replayed
                (`graphed_eval=True`, tracks/torch/static_eval.py): the eager pass
                dispatches every batch's operators from Python, and the GPU waits between
                epochs (GPU-Util 92 % on the H200 reference). Its effect is in the
                validation time and the GPU-Util, which each verdict gives beside
                samples/s;
* ``autotune``  inductor's kernel search inside the captured step (`autotune=True`:
                max_autotune and coordinate-descent tuning, without the CUDA graphs of
                mode="max-autotune", which would nest in the step's own): it times
                candidate kernels for each fused operator and each matrix product,
                convolutions included, and keeps the fastest (compiling takes minutes);
* ``multistep`` four steps recorded in one CUDA graph, replayed by one launch
                (`graph_steps=4`): in the H200 reference's trace (profile-tuned) each
                launch of the 440-kernel step took the host 0.9-1.2 ms, and inside each
                replay the GPU sat idle 0.22-0.33 ms after the step's first 16 kernels;
                fewer, longer launches may hide part of that.

The runs alternate (as shipped, triton, batch2048, as shipped, ...) over --repeats walks,
each walk its own seed, so that drift in the machine hits every variant alike. Each
lever's verdict is its samples/s against the rung as shipped, over the runs, judged
against their spread (`noise.compare`), with its validation accuracy beside it; the runs
stay in --out/runs, and levers.txt says it all. Nothing here changes the GPU's settings.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import tarfile
from pathlib import Path

LEVERS = {"triton": {"convolutions": "triton"}, "batch2048": {"batch_size": 2048},
          "evalgraph": {"graphed_eval": True}, "autotune": {"autotune": True},
          "multistep": {"graph_steps": 4}}
AS_SHIPPED = "as shipped"


TUNED_BATCH = 1024   # issue 28's tuned rung (the ladder's own large batch is 512: ladder.py)


def tuned(quick: bool):
    """Issue 28's tuned rung: the ladder's data-on-GPU rung as it builds it on this machine
    (on a GPU the whole step is one CUDA graph), 3 epochs, at batch TUNED_BATCH with the
    learning rate scaled to it; --quick: a few images."""
    from gpu_course.ladder import RungName, rungs
    from gpu_course.tracks.torch import gpu_count
    # --quick: the GPU ladder's rung (whole step, LARS, data on the device: on a CPU the
    # same step runs eagerly, compiled by tracing), few enough images for seconds a run
    found = {r.name: r for r in rungs("pytorch", 1 if quick else gpu_count(), quick=quick)}
    cfg = found[RungName.DATA_ON_GPU].cfg.replace(batch_size=TUNED_BATCH)
    if quick:
        cfg = cfg.replace(dataset="synthetic", data_dir=None, data_format="loose",
                          model="tiny", train_size=256, test_size=64, batch_size=32,
                          dtype="float32", channels_last=True)
    return cfg


def variants(cfg, levers: list[str], quick: bool = False) -> dict:
    """The rung as shipped and with each lever, named (--quick: the batch doubled rather
    than 2048, which the rehearsal's few images cannot fill)."""
    out = {AS_SHIPPED: cfg.replace(name=f"tuned, {AS_SHIPPED}")}
    for lever in levers:
        change = dict(LEVERS[lever])
        if "batch_size" in change and quick:
            change["batch_size"] = 2 * cfg.batch_size
        out[lever] = cfg.replace(name=f"tuned, {lever}", **change)
    return out


def walk(cfgs: dict, repeats: int, runs_dir: Path, done: dict | None = None) -> dict:
    """Every variant once a walk, in order, walk i with seed + i; {variant: [runs]}
    (into `done` as they finish, so that a caller stopped midway keeps them)."""
    from gpu_course import torch as gc
    done = {name: [] for name in cfgs} if done is None else done
    for name in cfgs:
        done.setdefault(name, [])
    for repeat in range(repeats):
        for name, cfg in cfgs.items():
            print(f"=== {name} (walk {repeat + 1} of {repeats})", flush=True)
            try:
                done[name].append(gc.train(cfg.replace(seed=cfg.seed + repeat),
                                           runs_dir=runs_dir, progress=False))
            except Exception as err:   # noqa: BLE001 - a lever that fails is a finding
                print(f"{name}: failed with {type(err).__name__}: {err}", flush=True)
    return done


def verdicts(done: dict) -> list[str]:
    """Each lever against the rung as shipped: samples/s judged against the runs' spread,
    with validation accuracy, GPU-Util and the validation pass's time beside, in words."""
    from gpu_course.analyse import noise
    from gpu_course.ladder import RUNG_SETTINGS
    base = [r for r in done.get(AS_SHIPPED, []) if r.status == "finished"]
    lines = []
    for name, runs in done.items():
        if name == AS_SHIPPED:
            continue
        mine = [r for r in runs if r.status == "finished"]
        if not base or not mine:
            lines.append(f"{name}: no verdict: {len(mine)} of its {len(runs)} runs and "
                         f"{len(base)} of the rung's as shipped finished")
            continue
        a, b = (runs_ if len(runs_) > 1 else runs_[0] for runs_ in (base, mine))
        verdict = noise.compare(a, b, varies=RUNG_SETTINGS)
        lines.append(f"{name}: samples/s {noise.sentence(verdict)} against the rung as "
                     f"shipped; " + "; ".join(
                         f"{what} {_range([read(r) for r in mine], form)} against "
                         f"{_range([read(r) for r in base], form)}"
                         for what, read, form in SIDE_BY_SIDE))
    return lines


def _eval_ms(run) -> float:
    """The median validation pass of a run, in ms (its epochs' eval_s)."""
    values = run.epochs["eval_s"].dropna() if "eval_s" in run.epochs else []
    return 1000 * float(values.median()) if len(values) else float("nan")


def _util(run) -> float:
    from gpu_course.analyse import metrics
    return metrics.gpu_util(run) / 100


def _acc(run) -> float:
    from gpu_course.analyse import metrics
    return metrics.val_acc(run)


# what each verdict gives beside samples/s: (words, reading of a run, format)
SIDE_BY_SIDE = (("validation accuracy", _acc, "{:.1%}"),
                ("GPU-Util", _util, "{:.0%}"),
                ("a validation pass", _eval_ms, "{:.1f} ms"))


def _range(values, form: str = "{:.1%}") -> str:
    """The values' lowest to highest, in `form`; "-" when none was measured."""
    values = sorted(v for v in values if v == v)
    if not values:
        return "-"
    low, high = form.format(values[0]), form.format(values[-1])
    if low == high:
        return low
    unit = re.fullmatch(r".*?\d(\D*)", high).group(1)   # what follows the number: "%", " ms"
    return f"{low.removesuffix(unit)}–{high}"   # 47.3–285.1 ms


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True,
                        help="levers.txt and levers.tar.gz (the runs) go here")
    parser.add_argument("--levers", default=",".join(LEVERS),
                        help=f"a comma-separated subset of {','.join(LEVERS)}")
    parser.add_argument("--repeats", type=int, default=2, help="walks (default 2)")
    parser.add_argument("--quick", action="store_true", help="a CPU rehearsal: few images")
    args = parser.parse_args(argv)
    levers = [name.strip() for name in args.levers.split(",") if name.strip()]
    unknown = [name for name in levers if name not in LEVERS]
    if unknown or not levers:
        parser.error(f"--levers={args.levers}: allowed: a comma-separated subset of "
                     f"{','.join(LEVERS)}")
    if args.repeats < 1:
        parser.error(f"--repeats={args.repeats} must be at least 1")
    from gpu_course.ladder import RUNG_SETTINGS
    from gpu_course.measure.records import load_runs
    from gpu_course.show import report
    if args.quick:   # a rehearsal compiles by tracing, in seconds (inductor: minutes)
        from gpu_course.tracks.torch.compiling import COMPILE_BACKEND_ENV
        os.environ.setdefault(COMPILE_BACKEND_ENV, "aot_eager")
    args.out.mkdir(parents=True, exist_ok=True)
    runs_dir = args.out / "runs"
    from gpu_course.measure.guards import Terminated

    def stop(signum, frame):   # a session's `timeout`, between runs (a run stops itself)
        raise Terminated("stopped by SIGTERM")
    previous = signal.signal(signal.SIGTERM, stop)
    done, stopped = {}, None
    try:
        walk(variants(tuned(args.quick), levers, args.quick), args.repeats, runs_dir, done)
    except KeyboardInterrupt as err:   # Ctrl-C, or SIGTERM (Terminated)
        stopped = (f"{err or 'interrupted'}: the verdicts cover the "
                   f"{sum(len(v) for v in done.values())} runs that ended before it")
    finally:
        signal.signal(signal.SIGTERM, previous)
    runs = load_runs(runs_dir) if runs_dir.exists() else []
    table = report.format_table(report.ladder_table(runs, varies=RUNG_SETTINGS)) if runs else ""
    text = "\n".join([table, "", *verdicts(done), *([stopped] if stopped else [])]) + "\n"
    (args.out / "levers.txt").write_text(text)
    with tarfile.open(args.out / "levers.tar.gz", "w:gz") as tar:
        if runs_dir.exists():
            tar.add(runs_dir, arcname="runs")
    print(text)
    return 1 if stopped else 0


if __name__ == "__main__":
    sys.exit(main())
