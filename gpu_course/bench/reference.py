"""Make the reference results on a GPU machine, in one command, into one folder.

    python -m gpu_course.bench.reference --out gpu_course/reference/pytorch-h200
    python -m gpu_course.bench.reference --out /tmp/ref --parts ladder --quick

Parts (all by default, in this order; each writes its own files and a log line, and a
part that fails is reported without stopping the others):

- ``machine``  nvidia-smi's view of the GPU (name, driver, clocks, power limit) before
  anything runs: machine.json;
- ``ladder``   the PyTorch ladder at full size (50,000 images, 3 epochs a rung): run
  records with step timings and monitor samples, charts and the report;
- ``profiles`` a torch.profiler window (1 + 1 + 3 steps) of the naive and the tuned
  rung, as each runs: profile-naive/ and profile-tuned/ (trace.json.gz, ops.csv);
- ``smi``      the monitor against nvidia-smi under load: monitor_vs_smi.csv/.txt;
- ``overhead`` gc.train against a plain loop on the GPU: harness_overhead.txt.

Nothing here changes the GPU's settings: it measures the card as it is found.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
import traceback
from pathlib import Path

PARTS = ("machine", "ladder", "profiles", "smi", "overhead")
SMI_FIELDS = ["name", "driver_version", "pci.bus_id", "memory.total", "power.limit",
              "power.max_limit", "clocks.max.sm", "clocks.max.mem", "clocks.sm",
              "clocks.mem", "temperature.gpu", "persistence_mode", "compute_mode",
              "mig.mode.current", "pcie.link.gen.max", "pcie.link.width.max"]


def machine(out: Path, quick: bool) -> str:
    from .. import nvml
    from ..records import hardware, versions
    found = {"nvidia_smi": nvml.nvidia_smi_query(SMI_FIELDS),
             "cuda_driver": nvml.cuda_driver_version(), "hardware": hardware(),
             "versions": versions(), "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    (out / "machine.json").write_text(json.dumps(found, indent=1, default=str))
    gpus = found["nvidia_smi"] or [{"name": "no GPU"}]
    return f"{gpus[0].get('name')}, driver {gpus[0].get('driver_version')}"


def ladder(out: Path, quick: bool) -> str:
    from .. import report
    from ..ladder import run_ladder
    runs, _ = run_ladder("pytorch", quick=quick, runs_dir=out, out=out / "report")
    table = report.format_table(report.ladder_table(runs))
    (out / "ladder.txt").write_text(table + "\n\n" + report.conclusion(runs) + "\n")
    return "\n" + table


def profiles(out: Path, quick: bool) -> str:
    from ..ladder import rungs
    from ..torch.devices import gpu_count
    from ..torch.profile import profile_steps
    ladder = rungs("pytorch", gpu_count(), quick=quick)
    said = []
    for label, rung in (("naive", ladder[0]), ("tuned", ladder[-1])):
        window = profile_steps(rung.cfg, out / f"profile-{label}")
        (out / f"profile-{label}" / "table.txt").write_text(window["table"] + "\n")
        said.append(f"{label} ({rung.name}): {window['trace'].stat().st_size / 1e6:.1f} MB")
    return "; ".join(said)


def smi(out: Path, quick: bool) -> str:
    from . import monitor_vs_smi
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        code = monitor_vs_smi.main(["--seconds", "10" if quick else "30", "--load",
                                    "--out", str(out / "monitor_vs_smi.csv")])
    (out / "monitor_vs_smi.txt").write_text(text.getvalue())
    return f"exit {code}\n" + text.getvalue()


def overhead(out: Path, quick: bool) -> str:
    from ..config import Experiment
    from . import harness_overhead
    # the data set on the GPU: no loader process between the two sides (with eight
    # workers the pairs varied 16-22k samples/s, more than the 3% to be seen), and a
    # ResNet-20 step at batch 256 bound by its host dispatch, where bookkeeping shows
    cfg = Experiment(name="overhead", engine="pytorch", model="resnet20",
                     train_size=4096 if quick else 51_200, test_size=256, batch_size=256,
                     num_workers=0, data_on_gpu=True)
    lines = []
    result = harness_overhead.compare("pytorch", cfg, pairs=2 if quick else 7,
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated subset of {', '.join(PARTS)}")
    parser.add_argument("--quick", action="store_true", help="small sizes: checks the parts run")
    args = parser.parse_args(argv)
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
            said = globals()[part](args.out, args.quick)
            print(f"##### {part} done in {time.monotonic() - tic:.0f} s: {said}", flush=True)
        except Exception:  # report it and go on: the other parts are worth having
            failed.append(part)
            traceback.print_exc()
            print(f"##### {part} FAILED after {time.monotonic() - tic:.0f} s", flush=True)
    print(f"\nparts failed: {failed or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
