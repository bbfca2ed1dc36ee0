# %% [markdown]
# # 5. Large batches, and an optimizer that copes with them
#
# **What this lesson measures.** A bigger batch gives the GPU more work per step and the
# Python loop fewer steps per epoch, so samples/s climbs. But with the same number of
# epochs the model takes fewer, larger steps and accuracy drops. We sweep the batch size,
# then train the largest one with a learning rate scaled linearly with the batch, a
# warm-up then a decay, and LARS (layer-wise adaptive rate scaling, the PyTorch counterpart of MXNet's
# LBSGD/LARS), and finally compare SGD, NAG, LARS, Signum and Adam on time to a target accuracy.
#
# **The talk's numbers** (Apache MXNet on a V100 in 2019, ResNet on CIFAR-10, 3 epochs, plain SGD):
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
# Which change buys the accuracy back? We train the large batch one change at a time
# (scaled learning rate, warm-up then decay, LARS) and credit each point of accuracy to the
# change that bought it.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import math

import pandas as pd
import torch
import torch.nn.functional as F
from gpu_course import torch as gc

# %% tags=["parameters"]
SIZES = gc.sizes("05")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("05", batches=(64, 512))
LARS_ETA = 0.1           # LARS trust coefficient: a layer moves ~lr × eta of its weight norm per step

# %% [markdown]
# ## The batch-size sweep (plain SGD, same learning rate, same epochs)
# `gc.sweep` trains one run per value; a batch that does not fit in GPU memory is recorded
# as "out of memory" and the sweep goes on. The talk's numbers sit beside each batch it
# measured: another network, data set and machine, so compare their shape, not their size.
# Every run uses the same intra-op threads (`torch_threads` in the sizes; each record keeps it).

# %%
torch.set_num_threads(SIZES.torch_threads or torch.get_num_threads())
on_gpu = gc.gpu_count() > 0
cfg = gc.Experiment(name="batch", pin_memory=on_gpu, persistent_workers=SIZES["num_workers"] > 0,
                    dtype="bfloat16" if on_gpu else "float32", channels_last=on_gpu, **SIZES)   # lesson 4
sweep = gc.sweep(cfg, "batch_size", SIZES.batches, verbose=False)   # <- the batch size
gc.show(sweep, lesson="05", chart=False)
gc.conclude("05", sweep)   # the sentences, checked against the table: gpu_course/lessons/l05_large_batch.py

# %%
gc.plots.sweep(sweep, x="batch_size", y="val_acc")

# %% [markdown]
# ## Why one learning rate does not fit every layer
# Under SGD a layer moves by `lr * ||g||` per step, so a layer whose gradient is large
# against its weights moves much further, relative to its size, than the others. LARS
# gives each layer its own rate, `lr * trust` with `trust = eta * ||w|| / (||g|| + wd * ||w||)`:
# every layer then moves by about `lr * eta` of its own weight norm. One backward pass of
# ResNet-20 shows how far apart the layers are, in plain PyTorch:

# %%
LARGE = SIZES.batches[-1]
train_set, _ = gc.load_datasets(cfg)
x, y = next(iter(torch.utils.data.DataLoader(train_set, batch_size=LARGE)))
probe = gc.get_model("resnet20")            # the real network, whatever the sizes train
F.cross_entropy(probe(x), y).backward()
ratios = pd.Series({name: (p.norm() / p.grad.norm()).item()
                    for name, p in probe.named_parameters() if p.ndim > 1 and p.grad.norm() > 0})
print(f"||w|| / ||g|| over {len(ratios)} weight layers: {ratios.min():.3g} ({ratios.idxmin()}) to "
      f"{ratios.max():.3g} ({ratios.idxmax()}), ×{ratios.max() / ratios.min():,.0f} apart.")

# %% [markdown]
# ## The large-batch step, in plain PyTorch
# Three changes to the training step at the large batch, each a line below: the learning
# rate grows with the batch (`lr × LARGE / base_batch`: Goyal et al. 2017's linear
# scaling), a warm-up ramps it up over the first epoch(s) (large steps on an untrained
# network diverge) and a cosine decay brings it down to 0 by the last update (here one
# `LambdaLR` stepped after every update), and the optimizer is LARS
# (`gc.LARS`, a small `torch.optim.Optimizer`: PyTorch ships none). Biases and BatchNorm
# parameters get plain momentum SGD at the global rate, so that rate stays on SGD's scale
# and `eta` sets how far the weight layers move. `gc.build` makes the network and loaders;
# the optimizer is built here and `gc.record` records this one. This loop is what the
# runs below measure.
#
# Why a decay after the warm-up: without one the last updates are as large as the first.
# The course's own CPU records (ResNet-20, batch 512, LARS at lr 0.4, 3 epochs,
# `gpu_course/reference/recipes-cpu/`) ended at 21.5 % and 14.4 % validation accuracy with a
# warm-up then a constant rate, and at 77.2 % and 80.4 % with a warm-up then a cosine decay.
# Lesson 6 compares schedules.

# %%
def train_large(name, optimizer="sgd", scaled=False, warmup=False):
    """Train a fresh network at batch LARGE with this notebook's loop; returns the run record."""
    c = cfg.replace(name=name, batch_size=LARGE, optimizer=optimizer,
                    lr_base_batch=SIZES.base_batch if scaled else None,
                    warmup_epochs=SIZES.large_warmup_epochs if warmup else 0.0,
                    lr_scheduler="cosine" if warmup else "none",
                    optimizer_params=(("eta", LARS_ETA),) if optimizer == "lars" else ())
    parts = gc.build(c)
    net, train_iter, val_iter, _ = parts
    device, ran = parts.devices[0], parts.cfg
    lr = c.scaled_lr                                   # <- lr × LARGE / base_batch when scaled
    if optimizer == "lars":                            # <- the optimizer measured
        opt = gc.LARS(net.parameters(), lr=lr, momentum=c.momentum, weight_decay=c.wd, eta=LARS_ETA)
    else:
        opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=c.momentum, weight_decay=c.wd)
    warm, total = max(1, round(c.warmup_epochs * len(train_iter))), c.epochs * len(train_iter)

    def rate(k):                                       # the rate's multiplier at update k
        if k < warm:
            return (k + 1) / warm                      # <- linear warm-up to lr
        return 0.5 * (1 + math.cos(math.pi * (k - warm) / max(1, total - warm)))   # <- cosine decay to 0
    scheduler = torch.optim.lr_scheduler.LambdaLR(opt, rate if warmup else lambda k: 1.0)
    with gc.record(parts, optimizer=opt, verbose=False) as rec:
        for epoch in rec.epochs():
            net.train()
            for x, y in rec.batches(train_iter):
                x, y = gc.to_device(x, y, device, ran.channels_last)
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=ran.dtype == "bfloat16"):
                    out = net(x)
                    loss = F.cross_entropy(out, y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                scheduler.step()
                rec.step(len(y), loss=loss.detach(), correct=(out.argmax(1) == y).sum())
            rec.end_epoch(sync=torch.cuda.synchronize if device.type == "cuda" else None,
                          lr=opt.param_groups[0]["lr"],
                          evaluate=lambda: gc.evaluate(net, val_iter, parts.devices, ran.dtype,
                                                       ran.channels_last))
    return rec.run


# %% [markdown]
# ## One change at a time
# After the sweep's smallest batch, the large batch trained four ways, each adding one
# change to the one before. The table says what each row changed from the row above, read
# from the records.

# %%
steps = {f"batch {LARGE}, sgd, lr {cfg.lr:g}": {},
         "+ scaled lr": {"scaled": True},
         "+ warm-up, then decay": {"scaled": True, "warmup": True},
         "LARS instead of SGD": {"scaled": True, "warmup": True, "optimizer": "lars"}}
changes = [sweep[0]] + [train_large(name, **step) for name, step in steps.items()]
gc.show(changes, lesson="05", chart=False)
gc.conclude("05", changes)   # each change's accuracy against the row above, judged against noise

# %%
gc.plots.curves(changes)

# %% [markdown]
# ## Which optimizer reaches the target first?
# Each optimizer trains the same network from the same start, with its own learning rate
# at batch 128, scaled linearly to the batch used and warmed up (Adam wants a much smaller
# rate; LARS runs at SGD's rate with its trust coefficient `eta`). The target is computed
# from these runs: 90 % (`TARGET` in the lesson module) of the best final validation
# accuracy. Time counts training epochs only, not validation. An optimizer is named first
# only when the best accuracy is clear of chance and ahead of the next best beyond their
# noise.
#
# Signum (`gc.Signum`, Bernstein et al. 2018: momentum SGD that steps by the *sign* of the
# momentum, every weight by exactly `lr`) joins from the talk's list: it is a few lines,
# tested against a hand-computed step. Two of the talk's optimizers are left out. DCASGD
# compensates the delay of *asynchronous* updates (a worker's gradient computed on weights
# others have since changed); every run here is synchronous, so there is no delay to
# compensate and nothing honest to show. FTML (Zheng and Kwok 2017) is an Adam-like method
# with three state tensors and bias corrections: not a few lines, and with no reference
# implementation in PyTorch to test ours against; Adam, the method it set out to improve,
# stands in.

# %%
race = cfg.replace(train_size=SIZES.race_train_size, batch_size=SIZES.race_batch, epochs=SIZES.race_epochs,
                   lr_base_batch=128, warmup_epochs=min(1.0, SIZES.race_epochs / 2))
lrs = {"sgd": 0.1, "nag": 0.1, "lars": 0.1, "signum": 0.002, "adam": 0.002}   # each at batch 128
races = [gc.train(race.replace(name=f"optimizer={name}", optimizer=name, lr=lr,   # <- the optimizer
                               optimizer_params=(("eta", LARS_ETA),) if name == "lars" else ()),
                  verbose=False)
         for name, lr in lrs.items()]
gc.show(races, lesson="05", chart=False)
gc.conclude("05", races)

# %%
gc.plots.curves(races)

# %% [markdown]
# ## Exercise 05.1: a larger batch, the same epochs
# The sweep's smallest batch again on `SIZES.exercise_size` images, and beside it a larger
# batch of your choice at the line marked `# >>>`: on a GPU, try the largest that fits in
# its memory (a batch that does not fit ends in an out-of-memory record, and the check
# says so). The learning rate stays the same. **Before you run**, predict its samples/s
# against the small batch: `"faster"`, `"slower"` or `"same"`. The check judges that
# against noise and then reports what the larger batch did to the accuracy after the
# same epochs, which is where the lesson's scaled rate and warm-up come in.
# `gc.solution("05.1")` shows an answer, after you have tried.

# %% tags=["exercise"]
ex_cfg = gc.Experiment(name="exercise", pin_memory=gc.gpu_count() > 0,
                       **SIZES.replace(train_size=SIZES.exercise_size))
batch = SIZES.batches[0]     # >>> a larger batch than the sweep's first
prediction = None            # >>> before you run: "faster", "slower" or "same" than the small batch
mine = [gc.train(ex_cfg.replace(name=f"exercise: batch {b}", batch_size=b), verbose=False)   # <- the batch
        for b in dict.fromkeys((SIZES.batches[0], batch))]

# %% tags=["check"]
gc.check("05.1", mine, prediction)
