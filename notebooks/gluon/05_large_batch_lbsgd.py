# %% [markdown]
# # 5. Large batches, and an optimizer that copes with them
#
# **What this lesson measures.** A bigger batch gives the GPU more work per step and the
# Python loop fewer steps per epoch, so samples/s climbs. But with the same number of
# epochs the model takes fewer, larger steps and accuracy drops. We sweep the batch size per
# device, then train the largest one with Large-Batch SGD (LBSGD), a learning rate scaled
# linearly with the batch and a warm-up then a decay, and finally compare the optimizers the talk lists
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

# %%
import mxnet as mx
import pandas as pd
from mxnet import autograd, gluon
from gpu_course import gluon as gc

# %% tags=["parameters"]
SIZES = gc.sizes("05")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("05", batches=(64, 512))

# %% [markdown]
# ## The batch-size sweep (plain SGD, same learning rate, same epochs)
# `gc.sweep` trains one run per value; a batch that does not fit in GPU memory is recorded
# as "out of memory" and the sweep goes on. The talk's numbers sit beside each batch it
# measured: another network, data set and machine, so compare their shape, not their size.

# %%
cfg = gc.Experiment(name="batch", graph="static-alloc", **SIZES,
                    dtype="float16" if gc.gpu_count() else "float32")   # float16 needs a GPU (lesson 4)
sweep = gc.sweep(cfg, "batch_size", SIZES.batches, verbose=False)      # <- the batch per device
gc.show(sweep, lesson="05", chart=False)
gc.conclude("05", sweep)   # the sentences, checked against the table: gpu_course/lessons/l05_large_batch.py

# %%
gc.plots.sweep(sweep, x="batch_size", y="val_acc")

# %% [markdown]
# ## Why one learning rate does not fit every layer
# Under SGD a layer moves by `lr * ||g||` per step, so a layer whose gradient is large
# against its weights moves much further, relative to its size, than the others. LARS
# (and `lbsgd` with `warmup_strategy="lars"`) gives each layer its own rate in proportion
# to `||w|| / ||g||`. One backward pass of ResNet-20 shows how far apart the layers are,
# in plain Gluon:

# %%
LARGE = SIZES.batches[-1]
probe = gc.get_model("resnet20")                  # the real network, whatever the sizes train
probe.initialize(mx.init.Xavier())
data, label = next(iter(gc.load_data(cfg.replace(batch_size=LARGE, train_size=LARGE, num_workers=0))[0]))
with autograd.record():
    loss = gluon.loss.SoftmaxCrossEntropyLoss()(probe(data), label)
loss.backward()
ratios = pd.Series({name: (p.data().norm() / p.grad().norm()).asscalar()
                    for name, p in probe.collect_params().items()
                    if p.grad_req != "null" and len(p.shape) > 1 and p.grad().norm().asscalar() > 0})
print(f"||w|| / ||g|| over {len(ratios)} weight layers: {ratios.min():.3g} ({ratios.idxmin()}) to "
      f"{ratios.max():.3g} ({ratios.idxmax()}), ×{ratios.max() / ratios.min():,.0f} apart.")

# %% [markdown]
# ## The large-batch step, in plain Gluon
# Three changes to the training step at the large batch, each a line below: the learning
# rate grows with the batch (`lr × LARGE / base_batch`: Goyal et al. 2017's linear
# scaling), a warm-up ramps it from 0 over the first epoch(s) (large steps on an
# untrained network diverge) and a cosine decay brings it down to 0 by the last update (in
# MXNet one `CosineScheduler` with `warmup_steps` does both), and the optimizer is MXNet's
# `lbsgd`. `gc.build` makes the network and loaders; the Trainer is built here and
# `gc.record` records this one. This loop is what the runs below measure.
#
# Why a decay after the warm-up: without one the last updates are as large as the first.
# The course's own CPU records (ResNet-20 in PyTorch, batch 512, LARS at lr 0.4, 3 epochs,
# `gpu_course/reference/recipes-cpu/`) ended at 21.5 % and 14.4 % validation accuracy with a
# warm-up then a constant rate, and at 77.2 % and 80.4 % with a warm-up then a cosine decay.
# Lesson 6 compares schedules.

# %%
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()


def train_large(name, optimizer="sgd", scaled=False, warmup=False, **extra):
    """Train a fresh network at batch LARGE with this notebook's loop; returns the run record."""
    c = cfg.replace(name=name, batch_size=LARGE, optimizer=optimizer,
                    lr_base_batch=SIZES.base_batch if scaled else None,
                    warmup_epochs=SIZES.large_warmup_epochs if warmup else 0.0,
                    lr_scheduler="cosine" if warmup else "none", optimizer_params=tuple(extra.items()))
    parts = gc.build(c)
    net, train_iter, val_iter, _ = parts
    steps = len(train_iter)
    params = {"learning_rate": c.scaled_lr,            # <- lr × LARGE / base_batch when scaled
              "momentum": c.momentum, "wd": c.wd, "multi_precision": parts.cfg.dtype == "float16"}
    if warmup:                                         # <- linear warm-up from 0, then cosine decay to 0
        params["lr_scheduler"] = mx.lr_scheduler.CosineScheduler(
            max_update=c.epochs * steps, base_lr=c.scaled_lr, final_lr=0.0,
            warmup_steps=max(1, round(c.warmup_epochs * steps)), warmup_begin_lr=0.0)
    if optimizer == "lbsgd":                           # LBSGD's own bookkeeping (batch_scale=1)
        params.update(warmup_epochs=c.warmup_epochs, updates_per_epoch=steps, num_epochs=c.epochs)
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
# The large batch trained five ways, each adding one change to the one before, after the
# sweep's smallest batch. The last swaps `lbsgd`'s warm-up strategy for `"lars"`: a
# per-layer multiplier `sqrt(||w||² / (||g||² + wd·||w||²))`, clipped to 0.01–100,
# computed on the host (two `.asnumpy()` reads per parameter per step: a sync point per
# layer). The table says what each row changed from the row above, read from the records.

# %%
changes = [sweep[0],                                                   # the smallest batch, plain SGD
           train_large(f"batch {LARGE}, sgd, lr {cfg.lr:g}"),
           train_large("+ scaled lr", scaled=True),
           train_large("+ warm-up, then decay", scaled=True, warmup=True),
           train_large("lbsgd instead of sgd", optimizer="lbsgd", scaled=True, warmup=True),
           train_large("lbsgd, warmup_strategy='lars'", optimizer="lbsgd", scaled=True, warmup=True,
                       warmup_strategy="lars")]
gc.show(changes, lesson="05", chart=False)
gc.conclude("05", changes)   # each change's accuracy against the row above, judged against noise

# %%
gc.plots.curves(changes)

# %% [markdown]
# ## Which optimizer reaches the target first?
# Each optimizer trains the same network from the same start, with its own learning rate
# (adaptive methods such as FTML and LAMB want much smaller ones; LARS multiplies its rate by
# a small per-layer trust ratio, so it wants a larger one). The target is computed from these
# runs: 90 % (`TARGET` in the lesson module) of the best final validation accuracy. Time
# counts training epochs only, not validation. An optimizer is named first only when the
# best accuracy is clear of chance and ahead of the next best beyond their noise.
#
# (MXNet 1.9's DCASGD fails with momentum (`if mom:` on an array), so it runs without.)

# %%
race = cfg.replace(batch_size=SIZES.race_batch, epochs=SIZES.race_epochs, train_size=SIZES.race_train_size)
races = []
for optimizer, lr in {"sgd": 0.1, "nag": 0.1, "lbsgd": 0.1, "dcasgd": 0.1, "signum": 0.003,
                      "ftml": 0.003, "lars": 5.0, "lamb": 0.01}.items():   # each at a rate that suits it
    c = race.replace(name=f"optimizer={optimizer}", optimizer=optimizer, lr=lr)   # <- the optimizer
    try:
        races.append(gc.train(c, verbose=False))
    except Exception as err:   # a diverged or broken optimizer: its record says so, the race goes on
        races.append(gc.load_run(err.run_path))
gc.show(races, lesson="05", chart=False)
gc.conclude("05", races)

# %%
gc.plots.curves(races)

# %% [markdown]
# ## Exercise 05.1: how large a batch, and at what cost?
# Below, the sweep's first batch size on `SIZES.exercise_size` images, then one of your
# own, larger, set at the line marked `# >>>`. On a GPU, look for the largest batch its
# memory holds (one too large leaves an out-of-memory record, which the check names).
# The learning rate is left alone. **Before running**, guess the larger batch's samples/s
# against the small one: `"faster"`, `"slower"` or `"same"`. The check rules on that
# against noise, then tells you what the larger batch cost in accuracy after the same
# epochs: the reason for the scaled rate and warm-up above. After trying, `gc.solution("05.1")`.

# %% tags=["exercise"]
ex = gc.Experiment(name="exercise", graph="static-alloc", **SIZES.replace(train_size=SIZES.exercise_size),
                   dtype="float16" if gc.gpu_count() else "float32")
size = SIZES.batches[0]      # >>> a batch size larger than the sweep's first
guess = None                 # >>> written before running: "faster", "slower" or "same"
tried = []
for b in dict.fromkeys((SIZES.batches[0], size)):   # the small batch, then yours
    tried.append(gc.train(ex.replace(name=f"exercise: batch {b}", batch_size=b), verbose=False))   # <-

# %% tags=["check"]
gc.check("05.1", tried, guess)
