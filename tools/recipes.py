"""The large-batch recipe, measured: which batch and learning-rate schedule hold the naive
rung's accuracy in the ladder's epochs.

    python -m tools.recipes --out gpu_course/reference/recipes-cpu    # every recipe, seed 0
    python -m tools.recipes --out DIR --recipes lars512_cos --seeds 0,1,2
    python -m tools.recipes --table gpu_course/reference/recipes-cpu   # the table, from the records

Each recipe is the PyTorch GPU ladder's large-batch rung (ResNet-20, the generated
stand-in for CIFAR-10 at 50,000 images, 3 epochs, bfloat16 autocast, channels_last, the
data set in memory) with its batch, optimizer and schedule changed, trained by `gc.train`
as a real run, one after the other. Accuracy after a given number of updates does not
depend on the device, so a CPU with fast bfloat16 (AMX) answers the question in minutes a
run; on a GPU the same command runs them in seconds. The runs stay in --out/runs, and
recipes.md (the table: validation accuracy after each epoch, a row a run) is computed
from them, never typed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAIVE = {"batch_size": 64, "optimizer": "sgd", "optimizer_params": (), "lr_base_batch": None,
         "warmup_epochs": 0.0, "lr_scheduler": "none"}
LARS_512 = {"batch_size": 512, "warmup_epochs": 0.5}
NAG = {"optimizer": "nag", "optimizer_params": (), "warmup_epochs": 0.5, "lr_scheduler": "cosine"}
# name: (what it is, in words; the change to the large-batch rung as shipped before issue
# 26: batch 1024, LARS eta 0.1, lr 0.1 x batch / 128, one epoch of warm-up, no decay)
RECIPES = {
    "naive64": ("batch 64, SGD lr 0.1, constant: the naive rung", NAIVE),
    "lars512_const": ("batch 512, LARS, lr 0.4, half-epoch warm-up, then constant",
                      {**LARS_512, "lr_scheduler": "none"}),
    "lars512_cos": ("batch 512, LARS, lr 0.4, half-epoch warm-up, then cosine decay",
                    {**LARS_512, "lr_scheduler": "cosine"}),
    "lars512_onecycle": ("batch 512, LARS, one-cycle to lr 0.4",
                         {"batch_size": 512, "warmup_epochs": 0.0, "lr_scheduler": "onecycle"}),
    "nag512_cos_lr04": ("batch 512, SGD Nesterov, lr 0.4, half-epoch warm-up, cosine decay",
                        {**NAG, "batch_size": 512}),
    "nag1024_cos_lr08": ("batch 1024, SGD Nesterov, lr 0.8, half-epoch warm-up, cosine decay",
                         NAG),
}


def base_config(quick: bool):
    """The large-batch rung as the GPU ladder had it before these recipes were measured
    (batch 1024, LARS, no decay), on this device: on a
    CPU eager (the whole-step graph needs a GPU) and in bfloat16 on all its cores."""
    from gpu_course.ladder import rungs
    from gpu_course.rungs import RungName
    from gpu_course.tracks.torch import gpu_count
    found = {r.name: r for r in rungs("pytorch", 1, cpu_count=16)}
    cfg = found[RungName.LARGE_BATCH].cfg.replace(
        batch_size=1024, lr_scheduler="none", warmup_epochs=1.0, data_on_gpu=True,
        num_workers=0, pin_memory=False, persistent_workers=False)
    if gpu_count() == 0:
        cfg = cfg.replace(graph="eager")
    if quick:
        cfg = cfg.replace(train_size=1024, test_size=256, epochs=1, model="tiny")
    return cfg


def recipe_config(base, name: str, seed: int):
    change = dict(RECIPES[name][1])
    if base.epochs < change.get("warmup_epochs", 0):
        change["warmup_epochs"] = float(base.epochs)
    return base.replace(name=name, seed=seed, **change)


def table(runs_dir: Path) -> str:
    """recipes.md: a row a finished run, its accuracy after each epoch, in recipe order."""
    from gpu_course.measure.records import load_runs
    runs = [r for r in load_runs(runs_dir) if r.status == "finished" and r.name in RECIPES]
    runs.sort(key=lambda r: (list(RECIPES).index(r.name), r.config.get("seed", 0)))
    if not runs:
        return f"No finished recipe run under {runs_dir}.\n"
    first = runs[0]
    hardware = first.meta.get("hardware") or {}
    device = (hardware.get("gpus") or [{}])[0].get("name") if hardware.get("gpus") else \
        hardware.get("cpu_model", "a CPU")
    epochs = max(len(r.epochs) for r in runs)
    lines = [f"ResNet-20 on {first.config.get('train_size'):,} generated images, "
             f"{first.config.get('dtype')}, validation on {first.config.get('test_size'):,}; "
             f"trained on {device}; computed by `python -m tools.recipes --table` from the "
             "records in runs/.", "",
             "| recipe | what | seed | " + " | ".join(f"epoch {e + 1}" for e in range(epochs))
             + " |", "|" + " :-- |" * 3 + " --: |" * epochs]
    for r in runs:
        accs = [f"{a:.1%}" for a in r.epochs["val_acc"]]
        lines.append(f"| {r.name} | {RECIPES[r.name][0]} | {r.config.get('seed', 0)} | "
                     + " | ".join(accs + ["–"] * (epochs - len(accs))) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="runs/ and recipes.md go here")
    parser.add_argument("--table", type=Path, metavar="FOLDER",
                        help="print the table of the runs under FOLDER/runs and stop")
    parser.add_argument("--recipes", default=",".join(RECIPES),
                        help=f"a comma-separated subset of {','.join(RECIPES)}")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    parser.add_argument("--quick", action="store_true", help="a few images, one epoch (tests)")
    args = parser.parse_args(argv)
    if args.table:
        print(table(args.table / "runs"), end="")
        return 0
    if args.out is None:
        parser.error("--out is required (or --table FOLDER)")
    names = [n.strip() for n in args.recipes.split(",") if n.strip()]
    unknown = [n for n in names if n not in RECIPES]
    if unknown or not names:
        parser.error(f"--recipes={args.recipes}: allowed: a comma-separated subset of "
                     f"{','.join(RECIPES)}")
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--seeds={args.seeds}: allowed: comma-separated whole numbers, e.g. 0,1,2")
    from gpu_course import torch as gc
    base = base_config(args.quick)
    runs_dir = args.out / "runs"
    for seed in seeds:
        for name in names:
            print(f"=== {name}, seed {seed}: {RECIPES[name][0]}", flush=True)
            gc.train(recipe_config(base, name, seed), runs_dir=runs_dir, progress=False)
    text = table(runs_dir)
    (args.out / "recipes.md").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
