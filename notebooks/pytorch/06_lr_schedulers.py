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

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
DATASET = "synthetic"                 # "cifar10" where the real data set is in data/
MODEL = "tiny" if SMOKE else "resnet20"   # smoke: a small CNN, so that five runs fit CI's minute
TRAIN_SIZE = 512 if SMOKE else 50_000
TEST_SIZE = 256 if SMOKE else 10_000
EPOCHS = 2 if SMOKE else 12
BATCH_SIZE = 64 if SMOKE else 1024    # the large batch of lesson 5
BASE_BATCH = 32 if SMOKE else 128     # lr = 0.1 at this batch, scaled linearly (lesson 5)
WORKERS = 0 if SMOKE else max(2, os.cpu_count() - 3)   # smoke: CI's 2 shared cores load in-process
THREADS = 1 if SMOKE else None        # intra-op threads, held fixed for every run (None: PyTorch's default)

# %%
import pandas as pd
import torch
import torch.nn.functional as F
from torch.optim import lr_scheduler as sched
import gpu_course
from gpu_course.tracks import torch as gc

if THREADS:
    torch.set_num_threads(THREADS)    # the same for every run compared; each record keeps it


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
# ## Training with each, the schedule stepped in the loop
# The loop below calls `scheduler.step()` after every `optimizer.step()`: that is the whole
# change. `gc.lr_scheduler(cfg, steps_per_epoch, optimizer)` builds the
# `torch.optim.lr_scheduler` the config names (counting epochs in updates, with a linear
# warm-up in front). All runs use the large-batch setup of lesson 5: learning rate scaled
# with the batch and a warm-up (one-cycle brings its own). The schedules they get, in
# updates of this run:

# %%
on_gpu = gc.gpu_count() > 0
cfg = gc.Experiment(name="lr", engine="pytorch", dataset=DATASET, model=MODEL, train_size=TRAIN_SIZE,
                    test_size=TEST_SIZE, epochs=EPOCHS, batch_size=BATCH_SIZE, num_workers=WORKERS,
                    pin_memory=on_gpu, persistent_workers=WORKERS > 0,
                    dtype="bfloat16" if on_gpu else "float32", channels_last=on_gpu,
                    lr_base_batch=BASE_BATCH, warmup_epochs=min(1.0, EPOCHS / 2),
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
def train_with(c):
    """Train a fresh network under c's schedule with this notebook's loop; returns the run record."""
    parts = gc.build(c)
    net, train_iter, val_iter, optimizer = parts       # SGD at the scaled rate
    device, ran = parts.devices[0], parts.cfg
    scheduler = gc.lr_scheduler(c, len(train_iter), optimizer)
    with gc.record(parts, verbose=False) as rec:
        for epoch in rec.epochs():
            net.train()
            for x, y in rec.batches(train_iter):
                x, y = gc.to_device(x, y, device, ran.channels_last)
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=ran.dtype == "bfloat16"):
                    out = net(x)
                    loss = F.cross_entropy(out, y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                scheduler.step()                        # <- the lesson: the next update's rate
                rec.step(len(y), loss=loss.detach(), correct=(out.argmax(1) == y).sum())
            rec.end_epoch(sync=torch.cuda.synchronize if device.type == "cuda" else None,
                          lr=optimizer.param_groups[0]["lr"],
                          evaluate=lambda: gc.evaluate(net, val_iter, parts.devices, ran.dtype,
                                                       ran.channels_last))
    return rec.run


runs = [train_with(c if c.name == "lr-schedule" else c.replace(name=f"lr_scheduler={name}"))
        for name, c in variants.items()]
gc.plots.curves(runs)

# %%
table = gc.report.ladder_table(runs)
display(gc.tables.show(table))

# %% [markdown]
# ## What the runs say
# Computed from the runs above: each schedule's accuracy against the constant rate, judged
# against its binomial noise on the validation images, and each schedule's speed against
# the constant rate's, judged against the spread of their steady steps (a schedule is one
# number per update: it should cost nothing).

# %%
def called(run):
    """The run by what ran, with its schedule where the name does not say it."""
    label = gc.metrics.label(run)
    return label if "lr_scheduler" in label else f"{label} ({run.config['lr_scheduler']})"


say = gc.closing.Closing(table, runs)   # prints a line only when its numbers are the table's
constant = runs[0]
changes = [(run, say.accuracy(constant, run)[1]) for run in runs[1:]]
for run, verdict in changes:
    say(f"{called(run)}: val acc {say.cell(run, 'val_acc')} against the constant rate's "
        f"{say.cell(constant, 'val_acc')}: {verdict}.")
best = max(runs, key=gc.metrics.val_acc)
beat = [run for run, verdict in changes if run is best and "an effect" in verdict]
if say.at_chance(runs):
    say(f"Every run is within noise of chance, the best too: {say.chance(best)} No schedule is named "
        "best at this size.")
elif not beat:
    say(f"The best, {called(best)} at {say.cell(best, 'val_acc')}, is the constant rate or within noise "
        f"of it: no schedule is named the winner after {EPOCHS} epoch(s).")
else:
    say(f"Best after {EPOCHS} epoch(s): {called(best)} at {say.cell(best, 'val_acc')}, beyond noise of the "
        "constant rate (its verdict above).")
speeds = [(run, say.compare(constant, run)) for run in runs[1:]]
for run, verdict in speeds:
    say(f"{called(run)}, speed against the constant rate: {verdict}.")
off = [run for run, v in speeds if v.is_effect]
if off:
    say(f"{len(off)} of {len(speeds)} differ in speed beyond their steady-step spread, which a schedule "
        "cannot cost: this machine's load changed between the runs (one run's steady steps "
        "understate run-to-run noise).")
else:
    say("No schedule changed the speed beyond noise: a schedule changes where training goes, not "
        "how fast each step runs.")

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
