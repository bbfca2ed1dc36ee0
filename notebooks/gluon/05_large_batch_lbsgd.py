# %% [markdown]
# # 5. Large batches, and an optimizer that copes with them
#
# **What this lesson measures.** A bigger batch gives the GPU more work per step and the
# Python loop fewer steps per epoch, so samples/s climbs. But with the same number of
# epochs the model takes fewer, larger steps and accuracy drops. We sweep the batch size per
# device, then train the largest one with Large-Batch SGD (LBSGD), a learning rate scaled
# linearly with the batch and a warm-up, and finally compare the optimizers the talk lists
# (SGD, NAG, LBSGD, DCASGD, Signum, FTML, plus LARS and LAMB) on time to a target accuracy.
#
# **The talk's numbers** (a V100 in 2019, ResNet on CIFAR-10, 3 epochs, plain SGD):
#
# | batch/GPU | val acc | epoch time |
# |---|---|---|
# | 64 | 0.7131 | ~27.5 s |
# | 128 | 0.7139 | ~14.5 s |
# | 256 | 0.6882 | ~8.3 s |
# | 512 | 0.6588 | ~6.4 s |
# | 1280 | 0.6082 | ~6.5 s |
#
# and, with every earlier fix in place, **batch 640 on one GPU: 17,000 samples/s, 4.0 s per
# epoch** with 29 loader workers, but **≈1,500 samples/s and 60+ s per epoch with one
# worker** (the talk's "Batch Size" slide): a large batch needs the input pipeline of
# lesson 2 to keep up. Your numbers come from your machine.
#
# Which change buys the accuracy back? MXNet 1.9.1's `lbsgd` with its default
# `batch_scale=1` is plain momentum SGD: its warm-up multiplies the rate by a factor that
# ramps from 1 to `batch_scale`, i.e. stays 1 (see `mxnet/optimizer/optimizer.py`). So we
# train the large batch four ways, one change at a time, and credit each point of accuracy
# to the change that bought it.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
DATASET = "synthetic"                 # "cifar10" where the real data set is in data/
MODEL = "tiny" if SMOKE else "resnet20"   # smoke: a small CNN, so that a dozen runs fit CI's minute
TRAIN_SIZE = 512 if SMOKE else 50_000
TEST_SIZE = 256 if SMOKE else 10_000
EPOCHS = 1 if SMOKE else 3            # the talk's table is after 3 epochs
BATCHES = [32, 64, 128] if SMOKE else [64, 128, 256, 640, 1280]   # per device; the last is "large"
BASE_BATCH = BATCHES[0] if SMOKE else 128   # lr = 0.1 at this batch, scaled linearly above it
WARMUP_EPOCHS = 0.5 if SMOKE else 1.0
WORKERS = 0 if SMOKE else max(2, os.cpu_count() - 3)   # smoke: CI's 2 shared cores load in-process
# the optimizer race: a smaller network in smoke mode so that eight runs fit in the minute
OPT_EPOCHS = 2 if SMOKE else 6
OPT_TRAIN_SIZE = 256 if SMOKE else TRAIN_SIZE
OPT_BATCH = 64 if SMOKE else 256
TARGET = 0.9                          # the race's target: this share of the best final accuracy
OPT_LR = {"sgd": 0.1, "nag": 0.1, "lbsgd": 0.1, "dcasgd": 0.1, "signum": 0.003, "ftml": 0.003,
          "lars": 5.0, "lamb": 0.01}  # each optimizer at a learning rate that suits it

# %%
import mxnet as mx
import numpy as np
import pandas as pd
from mxnet import autograd, gluon
from gpu_course.tracks import gluon as gc

on_gpu = gc.gpu_count() > 0
cfg = gc.Experiment(name="batch", dataset=DATASET, model=MODEL, train_size=TRAIN_SIZE,
                    test_size=TEST_SIZE, epochs=EPOCHS, num_workers=WORKERS, graph="static",
                    dtype="float16" if on_gpu else "float32",   # float16 needs a GPU (lesson 4)
                    warmup_steps=2 if SMOKE else 10, monitor_interval=0.2 if SMOKE else 0.5)


# %% [markdown]
# ## The batch-size sweep (plain SGD, same learning rate, same epochs)
# `gc.sweep` trains one run per value; a batch that does not fit in GPU memory is recorded
# as "out of memory" and the sweep goes on.

# %%
sweep = gc.sweep(cfg, "batch_size", BATCHES, verbose=False)
table = gc.report.ladder_table(sweep)
table.insert(1, "batch_size", [r.config["batch_size"] for r in sweep])
talk = {64: (0.7131, 27.5), 128: (0.7139, 14.5), 256: (0.6882, 8.3), 512: (0.6588, 6.4), 1280: (0.6082, 6.5)}
table["talk val acc"] = [talk.get(b, (np.nan,))[0] for b in table.batch_size]
table["talk epoch (s)"] = [talk.get(b, (np.nan, np.nan))[1] for b in table.batch_size]
display(gc.tables.show(table[["rung", "batch_size", "samples_per_sec", "epoch_time_s", "val_acc",
                                   "status", "talk val acc", "talk epoch (s)"]]))

# %%
gc.plots.sweep(sweep, x="batch_size")

# %%
gc.plots.sweep(sweep, x="batch_size", y="val_acc")

# %%
done = [r for r in sweep if r.status == "finished"]
small_run, large_run = done[0], done[-1]
SMALL, LARGE = small_run.config["batch_size"], large_run.config["batch_size"]
say = gc.closing.Closing(table, sweep)   # prints a line only when its numbers are the table's
say(f"Batch {SMALL} → {LARGE}, samples/s: {say.compare(small_run, large_run)}; epoch time "
    f"{say.cell(small_run, 'epoch_time_s')} s → {say.cell(large_run, 'epoch_time_s')} s.")
say(f"Val acc after {EPOCHS} epoch(s): {say.cell(small_run, 'val_acc')} → {say.cell(large_run, 'val_acc')}, "
    f"{say.accuracy(small_run, large_run)[1]}.")
oom = table[table.status == "oom"].batch_size.tolist()
if oom:
    say(f"Out of memory at batch {oom}: the sweep recorded it and went on.")
say(f"The talk, batch 640 on a V100: {say.quote('the talk', 17000, '{:,} samples/s')} with 29 workers, "
    f"≈{say.quote('the talk', 1500, '{:,}')} with one worker ({say.quote('the talk', 1500 / 17000, '×{:.2f}')}, "
    f"60+ s per epoch). Here batch {LARGE} with {WORKERS} worker(s) waited for data "
    f"{say.cell(large_run, 'data_wait_share')} of its steady time.")
if not on_gpu:
    say(f"No GPU here ({gc.gpu_count()}): what a large batch buys by filling a GPU's cores (the talk's "
        f"{say.quote('the talk', 27.5, '{} s')} → {say.quote('the talk', 6.4, '{} s')} per epoch from batch 64 "
        "to 512) needs a GPU to show.")

# %% [markdown]
# ## Why one learning rate does not fit every layer
# Under SGD a layer moves by `lr * ||g||` per step, so a layer whose gradient is large
# against its weights moves much further, relative to its size, than the others. LARS
# (and `lbsgd` with `warmup_strategy="lars"`) gives each layer its own rate in proportion
# to `||w|| / ||g||`. One backward pass of ResNet-20 shows how far apart the layers are,
# in plain Gluon:

# %%
probe = gc.get_model("resnet20")                  # the real network, whatever MODEL is
probe.initialize(mx.init.Xavier())
data, label = next(iter(gc.load_data(cfg.replace(batch_size=LARGE, train_size=LARGE, num_workers=0))[0]))
with autograd.record():
    loss = gluon.loss.SoftmaxCrossEntropyLoss()(probe(data), label)
loss.backward()
ratios = pd.Series({name: (p.data().norm() / p.grad().norm()).asscalar()
                    for name, p in probe.collect_params().items()
                    if p.grad_req != "null" and len(p.shape) > 1 and p.grad().norm().asscalar() > 0})
print(f"||w|| / ||g|| over {len(ratios)} weight layers: from {ratios.min():.3g} ({ratios.idxmin()}) "
      f"to {ratios.max():.3g} ({ratios.idxmax()}), a spread of ×{ratios.max() / ratios.min():,.0f}.")

# %% [markdown]
# ## The large-batch step, in plain Gluon
# Three changes to the training step at the large batch, each a line below: the learning
# rate grows with the batch (`lr × LARGE / BASE_BATCH`: Goyal et al. 2017's linear
# scaling), a warm-up ramps it from 0 over the first epoch(s) (large steps on an
# untrained network diverge; in MXNet a scheduler's `warmup_steps` does it), and the
# optimizer is MXNet's `lbsgd`. `gc.build` makes the network and loaders; the Trainer is
# built here and `gc.record` records this one. This loop is what the runs below measure.

# %%
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()


def train_large(name, optimizer="sgd", scaled=False, warmup=False, **extra):
    """Train a fresh network at batch LARGE with this notebook's loop; returns the run record."""
    c = cfg.replace(name=name, batch_size=LARGE, optimizer=optimizer,
                    lr_base_batch=BASE_BATCH if scaled else None,
                    warmup_epochs=WARMUP_EPOCHS if warmup else 0.0, optimizer_params=tuple(extra.items()))
    parts = gc.build(c)
    net, train_iter, val_iter, _ = parts
    steps = len(train_iter)
    params = {"learning_rate": c.scaled_lr,            # <- lr × LARGE / BASE_BATCH when scaled
              "momentum": c.momentum, "wd": c.wd, "multi_precision": parts.cfg.dtype == "float16"}
    if warmup:                                         # <- linear warm-up from 0, then constant
        params["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(
            step=max(1, EPOCHS * steps), factor=1.0, base_lr=c.scaled_lr,
            warmup_steps=max(1, round(WARMUP_EPOCHS * steps)), warmup_begin_lr=0.0)
    if optimizer == "lbsgd":                           # LBSGD's own bookkeeping (batch_scale=1)
        params.update(warmup_epochs=WARMUP_EPOCHS, updates_per_epoch=steps, num_epochs=EPOCHS)
    params.update(extra)
    trainer = gluon.Trainer(net.collect_params(), optimizer, params)   # <- the optimizer measured
    with gc.record(parts, optimizer=trainer, verbose=False) as rec:
        for epoch in rec.epochs():
            for data, label in rec.batches(train_iter):
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


# %% [markdown]
# ## One change at a time
# The large batch trained five ways, each adding one change to the one before. The last
# swaps `lbsgd`'s warm-up strategy for `"lars"`: a per-layer multiplier
# `sqrt(||w||² / (||g||² + wd·||w||²))`, clipped to 0.01–100, computed on the host (two
# `.asnumpy()` reads per parameter per step: a sync point per layer).

# %%
ladder = {
    f"batch {LARGE}, sgd, lr {cfg.lr:g}": dict(),
    "+ scaled lr": dict(scaled=True),
    "+ warm-up": dict(scaled=True, warmup=True),
    "lbsgd instead of sgd": dict(optimizer="lbsgd", scaled=True, warmup=True),
    "lbsgd, warmup_strategy='lars'": dict(optimizer="lbsgd", scaled=True, warmup=True,
                                          warmup_strategy="lars"),
}
controls = {name: train_large(name, **kwargs) for name, kwargs in ladder.items()}
control_runs = [small_run, *controls.values()]
control_table = gc.report.ladder_table(control_runs)
display(gc.tables.show(control_table))

# %%
gc.plots.curves([small_run, *controls.values()])

# %%
say = gc.closing.Closing(control_table, control_runs)   # prints a line only when its numbers are the table's
rows, before = [], small_run
for name, run in controls.items():
    rows.append({"run": gc.metrics.label(run), "val_acc": gc.metrics.val_acc(run),
                 "change from the row above": say.accuracy(before, run)[1],
                 "samples_per_sec": gc.metrics.samples_per_sec(run)})
    before = run
say(f"From batch {SMALL} (val acc {say.cell(small_run, 'val_acc')}, lr {say.setting('cfg.lr', cfg.lr, '{:g}')}) "
    "down the ladder, each change against the row above:")
display(gc.tables.show(pd.DataFrame(rows)))
same = say.compare(controls["+ warm-up"], controls["lbsgd instead of sgd"])
say(f"lbsgd (batch_scale=1) against sgd with the same scaled lr and warm-up: accuracy "
    f"{say.accuracy(controls['+ warm-up'], controls['lbsgd instead of sgd'])[1]}, speed {same}.")
say("MXNet runs the same sgd_mom_update for both (batch_scale=1): " + (
    "a speed difference the spread calls an effect is this machine's load changing between the runs; "
    "the steady steps of one run understate run-to-run noise." if same.is_effect else
    "as expected, no difference beyond noise."))
if say.at_chance(control_runs):
    top = max(control_runs, key=gc.metrics.val_acc)
    say(f"Every run is within noise of chance, the best too: {say.chance(top)} At this size no change "
        "can be credited with accuracy; run at full size for the attribution.")

# %% [markdown]
# ## Which optimizer reaches the target first?
# Each optimizer trains the same network from the same start, with its own learning rate
# (adaptive methods such as FTML and LAMB want much smaller ones; LARS multiplies its rate by
# a small per-layer trust ratio, so it wants a larger one). The target is computed from these
# runs: 90 % (`TARGET`) of the best final validation accuracy. Time counts training
# epochs only, not validation. An optimizer is named first only when the best accuracy is
# clear of chance and ahead of the next best beyond their noise.
#
# (MXNet 1.9's DCASGD fails with momentum (`if mom:` on an array), so it runs without.)

# %%
opt_cfg = cfg.replace(batch_size=OPT_BATCH, epochs=OPT_EPOCHS, train_size=OPT_TRAIN_SIZE)
races = []
for name, lr in OPT_LR.items():
    momentum = 0.0 if name == "dcasgd" else opt_cfg.momentum
    try:
        races.append(gc.train(opt_cfg.replace(name=f"optimizer={name}", optimizer=name, lr=lr,
                                              momentum=momentum), verbose=False))
    except Exception as err:  # one broken optimizer must not end the race: its record says "failed"
        print(f"{name} failed: {type(err).__name__}: {err}")
        if getattr(err, "run_path", None):
            races.append(gc.load_run(err.run_path))

def time_to(run, target):
    """Training seconds until the first epoch whose val acc reaches `target` (NaN if none)."""
    epochs = run.epochs
    hit = np.flatnonzero(epochs.val_acc.to_numpy(float) >= target)
    return float(epochs.epoch_time_s.cumsum().iloc[hit[0]]) if len(hit) else np.nan

final = [gc.report.val_acc(r) for r in races]    # NaN for a failed run
best = np.nanmax(final)                            # the best final accuracy of any optimizer
target = TARGET * best
race = pd.DataFrame({"rung": [r.name for r in races],
                     "lr": [r.config["lr"] for r in races], "status": [r.status for r in races],
                     "best val acc": [pd.to_numeric(r.epochs.val_acc).max() for r in races],
                     "final val acc": final,
                     "samples/s": [gc.report.samples_per_sec(r) for r in races],
                     "seconds to target": [time_to(r, target) for r in races]})
gc.tables.show(race)

# %%
gc.plots.curves(races)

# %%
say = gc.closing.Closing(race, races)   # prints a line only when its numbers are the table's
lead = int(race["final val acc"].idxmax())
second = int(race["final val acc"].drop(index=lead).idxmax())
reached = [i for i in range(len(race)) if not np.isnan(race["seconds to target"][i])]
say(f"Target: {say.setting('TARGET', TARGET, '{:.0%}')} of the best final accuracy, "
    f"{say.cell(lead, 'final val acc', '{:.1%}')} ({race.rung[lead]}). Reached by "
    + (", ".join(f"{race.rung[i]} ({say.cell(i, 'seconds to target', '{:.1f} s')})" for i in reached)
       or "none") + ".")
lead_over = say.accuracy(second, lead)[1]
if say.at_chance(lead):
    say(f"{say.chance(lead)} So reaching the target says nothing: no optimizer is named first. Run at "
        "full size for the race.")
elif "an effect" in lead_over:
    first = min(reached, key=lambda i: race["seconds to target"][i])
    say(f"First there: {race.rung[first]} after {say.cell(first, 'seconds to target', '{:.1f} s')} of "
        f"training; the best accuracy against the next best ({race.rung[second]}): {lead_over}.")
else:
    say(f"The best accuracy against the next best ({race.rung[second]}): {lead_over}: no optimizer is "
        "named first.")
missed = [race.rung[i] for i in range(len(race)) if i not in reached]
say(f"Not reached in {OPT_EPOCHS} epoch(s): {', '.join(missed) if missed else 'none'}.")

