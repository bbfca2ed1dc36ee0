# %% [markdown]
# # 6. Learning-rate schedules
#
# **What this lesson measures.** A schedule changes the optimizer's global learning rate
# as training goes on, fixed in advance (unlike Adam-style methods, which adapt a rate per
# parameter from what they see). Large batches lean on them: a high rate early, a low one to
# settle at the end. We draw PyTorch's schedulers next to the talk's MXNet ones (`StepLR`
# is MXNet's `FactorScheduler`, `MultiStepLR` its `MultiFactorScheduler`), plus cosine with
# a warm-up and the one-cycle policy, then train the same large-batch job with each and
# compare the accuracy curves.
#
# **From the talk** (Apache MXNet on a V100 in 2019): `FactorScheduler(step=250, factor=0.5)`
# and `MultiFactorScheduler(step=[250, 750, 900], factor=0.5)` drawn with `base_lr = 1`; the
# talk shows their shapes, not a speed-up: a schedule costs nothing per step, it changes how
# many epochs reach a given accuracy. (For scale: with every fix up to here the talk trained
# at 17,000 samples/s, batch 640, 4.0 s per epoch.) Your numbers come from your machine.

# %%
# Makes gpu_course importable in this kernel; a fresh kernel gets its track installed.
import importlib.util, pathlib, subprocess, sys  # later cells use these too
here = pathlib.Path.cwd()
sys.path.insert(0, str(next(p for p in (here, *here.parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %% tags=["parameters"]
import os
SMOKE = os.environ.get("GPU_COURSE_SMOKE") == "1"   # CI sets it: tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
DATASET = "synthetic"                 # "cifar10" where the real data set is in data/
TRAIN_SIZE = 512 if SMOKE else 50_000
TEST_SIZE = 256 if SMOKE else 10_000
EPOCHS = 2 if SMOKE else 12
BATCH_SIZE = 64 if SMOKE else 1024    # the large batch of lesson 5
WORKERS = max(2, os.cpu_count() - 3)

# %%
import pandas as pd
import torch
from torch.optim import lr_scheduler as sched
import gpu_course
from gpu_course import torch as gc

# %% [markdown]
# ## The schedules, drawn
# A PyTorch scheduler changes the learning rate of an optimizer each time `.step()` is
# called (here once per update). As in the talk, `lr = 1` and 1,000 updates; cosine has a
# linear warm-up over the first 100 updates, and one-cycle warms up over its first 30 %
# then anneals to nearly 0.

# %%
def curve(make, steps=1000):
    """The learning rate of each of `steps` updates under the scheduler `make(optimizer)`."""
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    scheduler, lrs = make(optimizer), []
    for _ in range(steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return lrs

gc.plots.lr_schedule({
    "StepLR(step_size=250, gamma=0.5)": curve(lambda o: sched.StepLR(o, step_size=250, gamma=0.5)),
    "MultiStepLR([250, 750, 900], gamma=0.5)": curve(lambda o: sched.MultiStepLR(o, [250, 750, 900], gamma=0.5)),
    "cosine, 100 warm-up": curve(lambda o: sched.SequentialLR(o, [
        sched.LinearLR(o, start_factor=0.01, total_iters=100),
        sched.CosineAnnealingLR(o, T_max=900)], milestones=[100])),
    "OneCycleLR(max_lr=1)": curve(lambda o: sched.OneCycleLR(o, max_lr=1.0, total_steps=1000)),
})

# %% [markdown]
# ## Training with each
# The lesson's change is one field, `lr_scheduler`; `gc.train` builds the matching
# `torch.optim.lr_scheduler` (counting epochs in updates) and steps it after every update.
# All runs use the large-batch setup of lesson 5: learning rate scaled with the batch and a
# warm-up (one-cycle brings its own). The schedules they get, in updates of this run:

# %%
on_gpu = gc.gpu_count() > 0
cfg = gc.Experiment(name="lr", engine="pytorch", dataset=DATASET, train_size=TRAIN_SIZE,
                    test_size=TEST_SIZE, epochs=EPOCHS, batch_size=BATCH_SIZE, num_workers=WORKERS,
                    pin_memory=on_gpu, persistent_workers=True,
                    graph="hybrid" if on_gpu else "eager", dtype="bfloat16" if on_gpu else "float32",
                    channels_last=on_gpu, lr_base_batch=128, warmup_epochs=min(1.0, EPOCHS / 2),
                    lr_factor=0.5, warmup_steps=2 if SMOKE else 10,
                    monitor_interval=0.2 if SMOKE else 0.5)
variants = {
    "constant": cfg.replace(lr_scheduler="none"),
    "step": cfg.replace(lr_scheduler="factor", lr_steps=(max(1, EPOCHS // 4),)),
    "multistep": cfg.replace(lr_scheduler="multifactor",
                             lr_steps=tuple(sorted({max(1, round(EPOCHS * f)) for f in (0.5, 0.75)}))),
    "cosine": cfg.replace(lr_scheduler="cosine"),
    "onecycle": cfg.replace(name="lr-schedule", lr_scheduler="onecycle", warmup_epochs=0),  # the ladder's rung
}
steps_per_epoch = TRAIN_SIZE // cfg.global_batch
gc.plots.lr_schedule({name: gc.lr_curve(c, steps_per_epoch) for name, c in variants.items()})

# %%
train_iter, val_iter = gc.load_data(cfg)
runs = []
for name, c in variants.items():
    c = c if c.name == "lr-schedule" else c.replace(name=f"lr_scheduler={name}")
    runs.append(gc.train(c, train_iter=train_iter, val_iter=val_iter, verbose=False))
gc.plots.curves(runs)

# %%
table = gc.report.ladder_table(runs)
table.insert(1, "schedule", list(variants))
gc.tables.show(table[["schedule", "rung", "val_acc", "samples_per_sec", "epoch_time_s"]])

# %%
best = table.loc[table.val_acc.idxmax()]
constant = table.iloc[0]
print(f"After {EPOCHS} epoch(s): best schedule '{best.schedule}' at {best.val_acc:.1%} validation accuracy, "
      f"{(best.val_acc - constant.val_acc) * 100:+.1f} points over a constant rate ({constant.val_acc:.1%}).")
spread = table.samples_per_sec.max() / table.samples_per_sec.min() - 1
if spread < 0.15:
    print(f"Throughput differs by only {spread:.0%} between the runs: a schedule changes where training "
          "goes, not how fast each step runs.")
else:
    print(f"Throughput differs by {spread:.0%} between the runs, more than a schedule can cost (it is one "
          "number per step): something else shared this machine; compare the utilisation timelines.")

# %% [markdown]
# ## Beside the reference machine
# Runs of these notebooks at full size on an NVIDIA H200, when recorded, are kept in
# `gpu_course/reference/pytorch-h200/`.

# %%
latest = gc.report.reference_runs("lr_scheduler=", "lr-schedule")
if latest:
    display(gc.tables.show(gc.report.beside_reference(runs, latest)))
    ref = latest.get("lr-schedule")
    if ref is not None:
        print(f"The H200 reference's one-cycle run reached {gc.report.val_acc(ref):.1%} after "
              f"{len(ref.epochs)} epochs at {gc.report.samples_per_sec(ref):,.0f} samples/s; this machine: "
              f"{gc.report.val_acc(runs[-1]):.1%} after {EPOCHS}.")
else:
    print(gc.report.no_reference_line())
