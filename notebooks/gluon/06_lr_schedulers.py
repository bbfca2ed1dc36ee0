# %% [markdown]
# # 6. Learning-rate schedules
#
# **What this lesson measures.** A schedule changes the optimizer's global learning rate
# as training goes on, fixed in advance (unlike Adam-style methods, which adapt a rate per
# parameter from what they see). Large batches lean on them: a high rate early, a low one to
# settle at the end. We draw MXNet's schedulers as the talk does, then train the same
# large-batch job with each and compare the accuracy curves.
#
# **From the talk** (a V100 in 2019): `FactorScheduler(step=250, factor=0.5)` and
# `MultiFactorScheduler(step=[250, 750, 900], factor=0.5)` drawn with `base_lr = 1`; the
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
BATCH_SIZE = 64 if SMOKE else 640     # per device: the large batch of lesson 5
BASE_BATCH = 32 if SMOKE else 128     # lr = 0.1 at this batch, scaled linearly (lesson 5)
WORKERS = 0 if SMOKE else max(2, os.cpu_count() - 3)   # smoke: CI's 2 shared cores load in-process

# %%
import mxnet as mx
from mxnet import autograd, gluon
from gpu_course.tracks import gluon as gc


# %% [markdown]
# ## The schedules, drawn
# Each scheduler is a function from the update number to a learning rate. As in the talk,
# `base_lr = 1` and 1,000 updates; Cosine and Poly are newer MXNet schedulers, here with a
# linear warm-up over the first 100 updates.

# %%
factor = mx.lr_scheduler.FactorScheduler(step=250, factor=0.5)
factor.base_lr = 1
multifactor = mx.lr_scheduler.MultiFactorScheduler(step=[250, 750, 900], factor=0.5)
multifactor.base_lr = 1
cosine = mx.lr_scheduler.CosineScheduler(max_update=1000, base_lr=1, final_lr=0,
                                         warmup_steps=100, warmup_begin_lr=0)
poly = mx.lr_scheduler.PolyScheduler(max_update=1000, base_lr=1, pwr=2, final_lr=0,
                                     warmup_steps=100, warmup_begin_lr=0)
gc.plots.lr_schedule({"Factor(step=250, factor=0.5)": factor,
                      "MultiFactor(step=[250, 750, 900], factor=0.5)": multifactor,
                      "Cosine, 100 warm-up": cosine, "Poly(pwr=2), 100 warm-up": poly}, steps=1000)

# %% [markdown]
# ## Training with each, the schedule stepped in the loop
# A schedule is a function from the update number to a learning rate. The loop below asks
# it for the rate of every update and hands that to the Trainer
# (`trainer.set_learning_rate(schedule(update))`): the same thing MXNet does inside the
# optimizer when a scheduler is passed as `lr_scheduler`, here in plain sight. All runs use
# the large-batch setup of lesson 5: learning rate scaled with the batch and one warm-up
# epoch (`gc.lr_scheduler(cfg, steps_per_epoch)` builds the MXNet scheduler the config names,
# counting epochs in updates). The schedules they get, in updates of this run:

# %%
on_gpu = gc.gpu_count() > 0
cfg = gc.Experiment(name="lr", dataset=DATASET, model=MODEL, train_size=TRAIN_SIZE,
                    test_size=TEST_SIZE, epochs=EPOCHS, batch_size=BATCH_SIZE, num_workers=WORKERS,
                    graph="static", dtype="float16" if on_gpu else "float32", lr_base_batch=BASE_BATCH,
                    warmup_epochs=min(1.0, EPOCHS / 2), lr_factor=0.5,
                    warmup_steps=2 if SMOKE else 10, monitor_interval=0.2 if SMOKE else 0.5)
variants = {
    "constant": cfg.replace(lr_scheduler="none"),
    "factor": cfg.replace(lr_scheduler="factor", lr_steps=(max(1, EPOCHS // 4),)),
    "multifactor": cfg.replace(lr_scheduler="multifactor",
                               lr_steps=tuple(sorted({max(1, round(EPOCHS * f)) for f in (0.5, 0.75)}))),
    "cosine": cfg.replace(name="lr-schedule", lr_scheduler="cosine"),   # the ladder's rung
    "poly": cfg.replace(lr_scheduler="poly"),
}
steps_per_epoch = TRAIN_SIZE // cfg.global_batch
gc.plots.lr_schedule({name: gc.lr_scheduler(c, steps_per_epoch) or (lambda step, c=c: c.scaled_lr)
                      for name, c in variants.items()}, steps=EPOCHS * steps_per_epoch)

# %%
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()


def train_with(c):
    """Train a fresh network under c's schedule with this notebook's loop; returns the run record."""
    parts = gc.build(c)
    net, train_iter, val_iter, _ = parts
    schedule = gc.lr_scheduler(c, len(train_iter))      # update number -> learning rate
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": c.scaled_lr, "momentum": c.momentum, "wd": c.wd,
                             "multi_precision": parts.cfg.dtype == "float16"})
    update = 0
    with gc.record(parts, optimizer=trainer, verbose=False) as rec:
        for epoch in rec.epochs():
            for data, label in rec.batches(train_iter):
                update += 1
                if schedule is not None:
                    trainer.set_learning_rate(schedule(update))   # <- the lesson: this update's rate
                xs, ys = gc.split(data, label, parts.devices, parts.cfg.dtype)
                with autograd.record():
                    outs = [net(x) for x in xs]
                    losses = [loss_fn(out.astype("float32"), y) for out, y in zip(outs, ys)]
                autograd.backward(losses)
                trainer.step(data.shape[0])
                rec.step(data.shape[0], loss_sum=[loss.sum() for loss in losses],
                         correct=[(out.argmax(axis=1) == y.astype(out.dtype)).sum()
                                  for out, y in zip(outs, ys)])
            rec.end_epoch(sync=mx.nd.waitall, lr=trainer.learning_rate,
                          evaluate=lambda: gc.evaluate(net, val_iter, parts.devices))
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

