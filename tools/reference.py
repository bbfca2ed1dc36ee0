"""Make the reference results on a GPU machine, in one command, into one folder.

    python -m tools.reference --out gpu_course/reference/pytorch-h200
    python -m tools.reference --out /tmp/ref --parts ladder --quick
    python -m tools.reference --out REF --parts ladder --repeats 3            # >= 3 seeds a rung
    python -m tools.reference --out REF-wrn --parts ladder --model wrn16_10   # the GPU-bound regime

Parts (all by default, in this order; each writes its own files and a log line, and a
part that fails is reported without stopping the others):

- ``machine``  nvidia-smi's view of the GPU (name, driver, clocks, power limit) before
  anything runs: machine.json;
- ``ladder``   the PyTorch ladder at full size (50,000 images, 3 epochs a rung): run
  records with step timings and monitor samples, charts and the report (--repeats
  walks, each its own seed; --model another network: wrn16_10's step is GPU-bound);
- ``profiles`` a torch.profiler window (1 + 1 + 3 steps) of the naive and the tuned
  rung, as each runs: profile-naive/, profile-tuned/ (trace.json.gz, ops.csv);
- ``smi``      the monitor against nvidia-smi under load: monitor_vs_smi.csv/.txt;
- ``overhead`` gc.train against a plain loop on the GPU: harness_overhead.txt.

Nothing here changes the GPU's settings: it measures the card as it is found.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import sys
import time
import traceback
from pathlib import Path

from gpu_course.config import MODELS
from gpu_course.rungs import RungName

PARTS = ("machine", "ladder", "profiles", "smi", "overhead")


@dataclasses.dataclass(frozen=True)
class Options:
    """What every part is given: small sizes (quick), and the ladder's walks and network."""
    quick: bool = False
    repeats: int = 1
    model: str | None = None   # None: the ladder's own (ResNet-20)
SMI_FIELDS = ["name", "driver_version", "pci.bus_id", "memory.total", "power.limit",
              "power.max_limit", "clocks.max.sm", "clocks.max.mem", "clocks.sm",
              "clocks.mem", "temperature.gpu", "persistence_mode", "compute_mode",
              "mig.mode.current", "pcie.link.gen.max", "pcie.link.width.max"]


def machine(out: Path, opts: Options) -> str:
    from gpu_course.measure import nvml
    from gpu_course.measure.records import hardware, versions
    from tools.monitor_vs_smi import nvidia_smi_query
    found = {"nvidia_smi": nvidia_smi_query(SMI_FIELDS),
             "cuda_driver": nvml.cuda_driver_version(), "hardware": hardware(),
             "versions": versions(), "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    (out / "machine.json").write_text(json.dumps(found, indent=1, default=str))
    gpus = found["nvidia_smi"] or [{"name": "no GPU"}]
    return f"{gpus[0].get('name')}, driver {gpus[0].get('driver_version')}"


def ladder(out: Path, opts: Options) -> str:
    from gpu_course.show import report
    from gpu_course.ladder import RUNG_SETTINGS, Walk, run_ladder
    runs, _ = run_ladder("pytorch", quick=opts.quick, walk=Walk(repeats=opts.repeats),
                         runs_dir=out, out=out / "report", model=opts.model)
    table = report.format_table(report.ladder_table(runs, varies=RUNG_SETTINGS))
    (out / "ladder.txt").write_text("\n\n".join([
        table, report.conclusion(runs, varies=RUNG_SETTINGS), report.anatomy_text(runs)]) + "\n")
    return "\n" + table


def profiles(out: Path, opts: Options) -> str:
    from gpu_course.ladder import rungs
    from gpu_course.tracks.torch.devices import gpu_count
    from gpu_course.tracks.torch.profile import profile_steps
    ladder = [r for r in rungs("pytorch", gpu_count(), quick=opts.quick, model=opts.model)
              if r.name != RungName.LONGER]
    said = []
    for label, rung in ((RungName.NAIVE, ladder[0]), ("tuned", ladder[-1])):
        window = profile_steps(rung.cfg, out / f"profile-{label}")
        (out / f"profile-{label}" / "table.txt").write_text(window["table"] + "\n")
        said.append(f"{label} ({rung.name}): {window['trace'].stat().st_size / 1e6:.1f} MB")
    return "; ".join(said)


def smi(out: Path, opts: Options) -> str:
    from tools import monitor_vs_smi
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        code = monitor_vs_smi.main(["--seconds", "10" if opts.quick else "30", "--load",
                                    "--out", str(out / "monitor_vs_smi.csv")])
    (out / "monitor_vs_smi.txt").write_text(text.getvalue())
    return f"exit {code}\n" + text.getvalue()


def overhead(out: Path, opts: Options) -> str:
    from gpu_course.config import Experiment
    from tools import harness_overhead
    # the data set on the GPU: no loader process between the two sides (with eight
    # workers the pairs varied 16-22k samples/s, more than the 3% to be seen), and a
    # ResNet-20 step at batch 256 bound by its host dispatch, where bookkeeping shows
    cfg = Experiment(name="overhead", engine="pytorch", model="resnet20",
                     train_size=4096 if opts.quick else 51_200, test_size=256, batch_size=256,
                     num_workers=0, data_on_gpu=True)
    lines = []
    result = harness_overhead.compare("pytorch", cfg, pairs=2 if opts.quick else 7,
                                      log=lines.append)
    lines.append(f"pytorch on the GPU: plain {result['plain']:.0f} samples/s, gc.train "
                 f"{result['harness']:.0f} samples/s (medians); ratio harness/plain "
                 f"median {result['ratio']:.3f} (min {min(result['ratios']):.3f}, max "
                 f"{max(result['ratios']):.3f}); target >= 0.97; load mean "
                 f"{result['load_mean']:.2f}")
    (out / "harness_overhead.txt").write_text("\n".join(lines) + "\n")
    (out / "harness_overhead.json").write_text(json.dumps(
        {**result, "config": cfg.to_dict(), "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")},
        indent=1))
    return lines[-1]


# -- what the folder says, computed from it ------------------------------------------------
TARGETS = {"samples_per_sec": 100_000, "speedup": 20.0, "gpu_util": 95.0,
           "data_wait_share": 0.05, "val_points": 1.0, "overhead": 0.97}


def summary(folder: Path, short: bool = False) -> str:
    """The reference folder in Markdown, every number read from its files: the hardware,
    the newest ladder (with the spread over every ladder recorded there), the issue-14
    targets met or missed, the monitor against nvidia-smi, the harness's cost and where
    the profiled steps spent their time. README files quote this text verbatim (a test
    checks), so nothing in them is typed by hand. short: the hardware and the targets."""
    from gpu_course.show import report
    from gpu_course.measure.records import load_runs
    from tools import monitor_vs_smi
    folder = Path(folder)
    try:
        machine = json.loads((folder / "machine.json").read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"{folder / 'machine.json'}: not readable ({err}); --summary needs "
                         "a folder that `python -m tools.reference --out` wrote") from None
    ladders = sorted(p for p in folder.glob("ladder-pytorch-*") if p.is_dir())
    runs = load_runs(ladders[-1]) if ladders else []
    if not runs or not isinstance(machine, dict):
        raise ValueError(f"{folder}: no readable ladder-pytorch-*/ run records beside a "
                         "machine.json; --summary needs a folder that `python -m "
                         "tools.reference --out` wrote")
    smi = (machine.get("nvidia_smi") or [{}])[0]
    hw, versions = runs[0].meta["hardware"], runs[0].meta["versions"]
    out = [f"Measured {runs[0].meta['started_at'][:10]} on one {smi.get('name')} "
           f"({smi.get('memory.total')} MiB, power limit {smi.get('power.limit')} W, SM clock "
           f"up to {smi.get('clocks.max.sm')} MHz, driver {smi.get('driver_version')}, CUDA "
           f"{hw.get('cuda')}), {hw.get('cpu_count')} CPU cores ({hw.get('cpu_model')}); "
           f"Python {versions.get('python')}, PyTorch {versions.get('torch')}; code of "
           f"commit {_commit(runs[0])}. The card's settings were left as found.", ""]
    from gpu_course.ladder import RUNG_SETTINGS
    table = report.ladder_table(runs, varies=RUNG_SETTINGS)   # + what else the rungs differ in
    if short:
        return "\n".join(out + _targets(runs, table, folder)).rstrip() + "\n"
    out += ["The newest ladder (`" + ladders[-1].name + "`, 3 epochs a rung at 50,000 "
            "images, the tuned rung " + str(runs[-1].config["epochs"]) + "):", "", "```",
            report.format_table(table), "```", ""]
    out += _spread(ladders) + _targets(runs, table, folder) + [""]
    agree = monitor_vs_smi.agreement(_csv_rows(folder / "monitor_vs_smi.csv"))
    out += ["The monitor against `nvidia-smi`, read back to back every 0.5 s for 30 s "
            "under an on/off matrix-multiply load (`monitor_vs_smi.csv`): " + "; ".join(
                f"{r['quantity']} mean |difference| {r['mean_diff']:.2f} {r['unit']} "
                f"(largest {r['max_diff']:.1f}) against a mean of {r['ours']:.1f}"
                for r in agree if r["samples"]) + ".", ""]
    out += _profiles(folder)
    return "\n".join(out).rstrip() + "\n"


def _commit(run) -> str:
    """The commit whose code ran: the record's note where git_info could not see it."""
    notes = run.meta.get("notes") or {}
    git = run.meta.get("git") or {}
    commit = notes.get("code_commit") or git.get("commit") or "unknown"
    return commit[:7] + (" (with changes)" if git.get("dirty") and "code_commit" not in notes
                         else "")


def _csv_rows(path: Path) -> list[dict]:
    import csv
    with open(path) as f:
        return [{k: (None if v == "" else float(v)) for k, v in row.items()}
                for row in csv.DictReader(f)]


def _spread(ladders: list[Path]) -> list[str]:
    from gpu_course.analyse import metrics
    from gpu_course.measure.records import load_runs
    if len(ladders) < 2:
        return []
    by_rung: dict[str, list[float]] = {}
    for ladder in ladders:
        for run in load_runs(ladder):
            by_rung.setdefault(run.name, []).append(metrics.samples_per_sec(run))
    parts = [f"{name} {min(v):,.0f}–{max(v):,.0f}" for name, v in by_rung.items()]
    utils = {ladder.name: metrics.gpu_util(load_runs(ladder)[-1]) for ladder in ladders}
    return [f"Steady samples/s over the {len(ladders)} ladders recorded here (min–max): "
            + "; ".join(parts) + ". The tuned rung's GPU util: " + ", ".join(
                f"{v:.0f}%" for v in utils.values()) + ".", ""]


def _targets(runs, table, folder: Path) -> list[str]:
    from gpu_course.analyse import metrics
    naive, tuned = runs[0], runs[-1]
    row = table.iloc[-1]

    def judged(value, target, higher=True):
        met = value >= target if higher else value <= target
        return "met" if met else "missed"
    lines = ["Targets the course set for the tuned rung, against the naive rung:", ""]
    lines.append(f"- {row['samples_per_sec']:,.0f} images/s, target ≥ "
                 f"{TARGETS['samples_per_sec']:,}: "
                 f"{judged(row['samples_per_sec'], TARGETS['samples_per_sec'])}.")
    lines.append(f"- ×{row['speedup']:.1f} the naive rung, target ≥ ×{TARGETS['speedup']:.0f}: "
                 f"{judged(row['speedup'], TARGETS['speedup'])}.")
    gpm = metrics.gpm_activity(tuned)
    lines.append(f"- GPU util {row['gpu_util']:.0f}%, target ≥ {TARGETS['gpu_util']:.0f}%: "
                 f"{judged(row['gpu_util'], TARGETS['gpu_util'])} (GPM: SMs active "
                 f"{gpm['sm_active']:.0f}%, tensor cores {gpm['tensor_active']:.0f}%; naive "
                 f"{metrics.gpu_util(naive):.0f}% GPU util, SMs "
                 f"{metrics.gpm_activity(naive)['sm_active']:.0f}%).")
    lines.append(f"- data wait {100 * row['data_wait_share']:.1f}% of step time, target ≤ "
                 f"{100 * TARGETS['data_wait_share']:.0f}%: "
                 f"{judged(row['data_wait_share'], TARGETS['data_wait_share'], False)}.")
    lines.append("- " + _accuracy_line(naive, tuned))
    overhead = folder / "harness_overhead.json"
    if overhead.exists():
        o = json.loads(overhead.read_text())
        lines.append(f"- gc.train against a plain loop (`harness_overhead.json`, "
                     f"{len(o['ratios'])} alternated pairs, data on the GPU): median ratio "
                     f"{o['ratio']:.3f} (min {min(o['ratios']):.3f}, max "
                     f"{max(o['ratios']):.3f}), target ≥ {TARGETS['overhead']}: "
                     f"{judged(o['ratio'], TARGETS['overhead'])}.")
    return lines


def _accuracy_line(naive, tuned) -> str:
    """Validation accuracy after the same epochs, and when the tuned rung catches up."""
    import pandas as pd
    n_acc = pd.to_numeric(naive.epochs["val_acc"]).tolist()
    t = tuned.epochs
    t_acc = pd.to_numeric(t["val_acc"]).tolist()
    same = len(n_acc)
    gap = 100 * (t_acc[same - 1] - n_acc[-1])
    text = (f"validation accuracy after {same} epochs: naive {100 * n_acc[-1]:.1f}%, tuned "
            f"{100 * t_acc[same - 1]:.1f}% ({gap:+.1f} points), target within "
            f"{TARGETS['val_points']:.0f} point: "
            f"{'met' if abs(gap) <= TARGETS['val_points'] or gap > 0 else 'missed'}")
    caught = next((i for i, a in enumerate(t_acc) if a >= n_acc[-1]), None)
    if caught is not None:
        seconds = pd.to_numeric(t["epoch_time_s"]).iloc[:caught + 1].sum()
        text += (f". Its batch of {tuned.config['batch_size']:,} takes "
                 f"{tuned.config['batch_size'] // naive.config['batch_size']}× fewer steps "
                 "an epoch; with LARS and its "
                 f"warm-up it first reaches the naive rung's {100 * n_acc[-1]:.1f}% after "
                 f"epoch {caught + 1} ({seconds:.1f} s of training against the naive "
                 f"rung's {pd.to_numeric(naive.epochs['epoch_time_s']).sum():.1f} s) and "
                 f"ends at {100 * t_acc[-1]:.1f}% after {len(t_acc)}")
    return text + "."


def _profiles(folder: Path) -> list[str]:
    import pandas as pd
    out = []
    for label in ("naive", "tuned"):
        ops = folder / f"profile-{label}" / "ops.csv"
        if not ops.exists():
            continue
        table = pd.read_csv(ops)
        table = table[~table["operator"].str.startswith("ProfilerStep")]
        step = table[~table["operator"].str.startswith(("aten::", "autograd::", "Optimizer",
                                                        "cudaGraph", "Compiled"))]
        total = step["self_device_ms"].sum()
        top = step.sort_values("self_device_ms", ascending=False).head(3)
        if total <= 0:
            continue
        parts = [f"{r.operator[:48]}… {100 * r.self_device_ms / total:.0f}%" for r in
                 top.itertuples()]
        out.append(f"- {label}: three profiled steps, {total:.1f} ms of device time; the "
                   "largest kernels: " + "; ".join(parts) + ".")
    if out:
        out = ["Where the profiled steps spent device time (`profile-*/ops.csv`, "
               "`trace.json.gz` opens in ui.perfetto.dev):", ""] + out
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="the folder to write into")
    parser.add_argument("--summary", type=Path, metavar="FOLDER",
                        help="print what a reference folder says (Markdown) and stop")
    parser.add_argument("--short", action="store_true", help="--summary: hardware and targets")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated subset of {', '.join(PARTS)}")
    parser.add_argument("--quick", action="store_true", help="small sizes: checks the parts run")
    parser.add_argument("--repeats", type=int, default=1,
                        help="ladder: walks, interleaved, walk i with seed + i (default 1)")
    parser.add_argument("--model", choices=MODELS, default=None,
                        help="ladder and profiles: the network (default: the ladder's)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats={args.repeats} must be at least 1")
    if args.summary:
        try:
            print(summary(args.summary, short=args.short), end="")
        except ValueError as err:
            print(f"reference: {err}", file=sys.stderr)
            return 1
        return 0
    if args.out is None:
        parser.error("--out is required (or --summary FOLDER)")
    wanted = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(wanted) - set(PARTS))
    if unknown:
        raise SystemExit(f"--parts: unknown {unknown}; allowed: {', '.join(PARTS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    failed = []
    for part in wanted:
        tic = time.monotonic()
        print(f"\n##### {part}", flush=True)
        try:
            said = globals()[part](args.out, Options(args.quick, args.repeats, args.model))
            print(f"##### {part} done in {time.monotonic() - tic:.0f} s: {said}", flush=True)
        except Exception:  # report it and go on: the other parts are worth having
            failed.append(part)
            traceback.print_exc()
            print(f"##### {part} FAILED after {time.monotonic() - tic:.0f} s", flush=True)
    print(f"\nparts failed: {failed or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
