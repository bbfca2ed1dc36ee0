# %% [markdown]
# # 5. Large batches, and an optimizer that copes with them
#
# **What this lesson measures.** A bigger batch gives the GPU more work per step and the
# Python loop fewer steps per epoch, so samples/s climbs. But with the same number of
# epochs the model takes fewer, larger steps and accuracy drops. We sweep the batch size,
# then train the largest one with a learning rate scaled linearly with the batch, a
# warm-up, and LARS (layer-wise adaptive rate scaling, the PyTorch counterpart of MXNet's
# LBSGD/LARS), and finally compare SGD, NAG, LARS and Adam on time to a target accuracy.
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
# epoch**. Your numbers come from your machine.

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
TRAIN_SIZE = 768 if SMOKE else 50_000
TEST_SIZE = 256 if SMOKE else 10_000
EPOCHS = 2 if SMOKE else 3            # the talk's table is after 3 epochs
BATCHES = [32, 64, 128] if SMOKE else [64, 128, 256, 512, 1024]
WORKERS = max(2, os.cpu_count() - 3)
LARS_ETA = 0.1                        # LARS trust coefficient: a layer moves ~lr × eta of its weight norm per step
# the optimizer race: a smaller network in smoke mode so that its runs fit in the minute
OPT_MODEL = "tiny" if SMOKE else "resnet20"
OPT_EPOCHS = 2 if SMOKE else 6
OPT_BATCH = 64 if SMOKE else 256
OPT_LR = {"sgd": 0.1, "nag": 0.1, "lars": 0.1, "adam": 0.002}   # at batch 128, scaled linearly

# %%
import numpy as np
import pandas as pd
import torch
import gpu_course
from gpu_course import torch as gc

on_gpu = gc.gpu_count() > 0
cfg = gc.Experiment(name="batch", engine="pytorch", dataset=DATASET, train_size=TRAIN_SIZE,
                    test_size=TEST_SIZE, epochs=EPOCHS, num_workers=WORKERS, pin_memory=on_gpu,
                    persistent_workers=True,
                    graph="hybrid" if on_gpu else "eager",            # lesson 3
                    dtype="bfloat16" if on_gpu else "float32",        # lesson 4
                    channels_last=on_gpu,
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
gc.tables.show(table[["batch_size", "samples_per_sec", "epoch_time_s", "val_acc", "status", "talk val acc", "talk epoch (s)"]])

# %%
display(gc.plots.sweep(sweep, x="batch_size"))
gc.plots.sweep(sweep, x="batch_size", y="val_acc")

# %%
done = table[table.status == "finished"]
small, large = done.iloc[0], done.iloc[-1]
oom = table[table.status == "oom"].batch_size.tolist()
print(f"Batch {int(small.batch_size)} → {int(large.batch_size)}: samples/s ×{large.samples_per_sec / small.samples_per_sec:.1f}, "
      f"epoch time {small.epoch_time_s:.1f} s → {large.epoch_time_s:.1f} s, "
      f"val acc {small.val_acc:.1%} → {large.val_acc:.1%} after {EPOCHS} epoch(s).")
if oom:
    print(f"Out of memory at batch {oom}: the sweep recorded it and went on.")
if not on_gpu:
    print(f"No GPU here: {os.cpu_count()} CPU cores are already busy at batch {int(small.batch_size)}, so a larger "
          "batch saves only the per-step overhead; on a GPU it also fills thousands of idle cores, "
          "which is how the talk's epoch fell from 27.5 s at batch 64 to 6.4 s at batch 512.")
LARGE = int(large.batch_size)

# %% [markdown]
# ## Why one learning rate does not fit every layer
# Under SGD a layer moves by `lr * ||g||` per step, so a layer whose gradient is large
# against its weights moves much further, relative to its size, than the others. LARS
# gives each layer its own rate, `lr * trust` with `trust = eta * ||w|| / (||g|| + wd * ||w||)`:
# every layer then moves by about `lr * eta` of its own weight norm. One backward pass of
# ResNet-20 shows how far apart the layers are, in plain PyTorch:

# %%
train_set, _ = gc.load_datasets(cfg)
x, y = next(iter(torch.utils.data.DataLoader(train_set, batch_size=LARGE)))
probe = gc.get_model("resnet20")
torch.nn.functional.cross_entropy(probe(x), y).backward()
ratios = pd.Series({name: (p.norm() / p.grad.norm()).item()
                    for name, p in probe.named_parameters() if p.ndim > 1 and p.grad.norm() > 0})
print(f"||w|| / ||g|| over {len(ratios)} weight layers: from {ratios.min():.3g} ({ratios.idxmin()}) "
      f"to {ratios.max():.3g} ({ratios.idxmax()}), a spread of ×{ratios.max() / ratios.min():,.0f}.")
print("One global rate large enough for the slowest layer is too large for the fastest one.")

# %% [markdown]
# ## Linear scaling, warm-up and LARS for the largest batch
# Three changes: the learning rate grows with the batch (`lr_base_batch=128`: `lr` at 128
# images per step, ×2 at 256, ...), a linear warm-up ramps it from 0 over the first epoch
# (large steps on an untrained network diverge), and the optimizer is LARS (`gc.LARS`,
# a small `torch.optim.Optimizer`: PyTorch ships none). Biases and BatchNorm parameters
# get plain momentum SGD at the global rate, so that rate stays on SGD's scale and
# `eta` sets how far the weight layers move. In plain PyTorch, what `gc.train` builds:

# %%
large_cfg = cfg.replace(name="large-batch", batch_size=LARGE, optimizer="lars",
                        optimizer_params=(("eta", LARS_ETA),), lr_base_batch=128,
                        warmup_epochs=min(1.0, EPOCHS / 2))
net = gc.get_model(large_cfg)
optimizer = gc.LARS(net.parameters(), lr=large_cfg.scaled_lr, momentum=0.9, weight_decay=5e-4,
                    eta=LARS_ETA)                                           # <- the optimizer
print(f"LARS(lr={large_cfg.scaled_lr:g} = {cfg.lr:g} × {LARGE}/128, momentum=0.9, weight_decay=5e-4, "
      f"eta={LARS_ETA}): a weight layer moves ~{large_cfg.scaled_lr * LARS_ETA:.0%} of its norm per step, "
      f"where SGD moves ResNet-20's layers between {large_cfg.scaled_lr / ratios.max():.1%} and "
      f"{large_cfg.scaled_lr / ratios.min():.0%}.")
steps_per_epoch = TRAIN_SIZE // LARGE
gc.plots.lr_schedule({f"linear scaling + warm-up, batch {LARGE}": gc.lr_curve(large_cfg, steps_per_epoch),
                      f"SGD in the sweep, batch {LARGE}": [cfg.lr] * (EPOCHS * steps_per_epoch)})

# %%
lars = gc.train(large_cfg, verbose=False)
scaled_sgd = gc.train(large_cfg.replace(name="large-batch sgd", optimizer="sgd", optimizer_params=()),
                      verbose=False)
plain = next(r for r in sweep if r.config["batch_size"] == LARGE)
gc.plots.curves([plain, scaled_sgd, lars])

# %%
acc_plain, acc_sgd, acc_lars = (gc.report.val_acc(r) for r in (plain, scaled_sgd, lars))
acc_small = small.val_acc
lost = acc_small - acc_plain
print(f"Batch {LARGE}: plain SGD {acc_plain:.1%}; SGD + scaled lr + warm-up {acc_sgd:.1%}; "
      f"LARS + scaled lr + warm-up {acc_lars:.1%} (batch {int(small.batch_size)}: {acc_small:.1%}).")
gain = acc_lars - acc_plain
if lost > 0:
    print(f"The large batch lost {lost * 100:.1f} points; LARS with the recipe "
          + (f"won back {gain * 100:.1f} of them" if gain > 0 else f"did not win them back ({gain * 100:+.1f} points)")
          + f", at {gc.report.samples_per_sec(lars):,.0f} samples/s.")
else:
    print("Here the large batch lost no accuracy to begin with, so there was nothing to recover; "
          f"LARS with the recipe changed accuracy by {gain * 100:+.1f} points.")

# %% [markdown]
# ## Which optimizer reaches the target first?
# Each optimizer trains the same network from the same start, with its own learning rate
# at batch 128, scaled linearly to the batch used and warmed up (Adam wants a much smaller
# rate; LARS runs at SGD's rate with its trust coefficient `eta`). The target is computed
# from these runs: 90 % of the best validation accuracy any of them reached. Time counts
# training epochs only, not validation.

# %%
opt_cfg = cfg.replace(model=OPT_MODEL, batch_size=OPT_BATCH, epochs=OPT_EPOCHS, lr_base_batch=128,
                      warmup_epochs=min(1.0, OPT_EPOCHS / 2))
races = [gc.train(opt_cfg.replace(name=f"optimizer={name}", optimizer=name, lr=lr,
                                  optimizer_params=(("eta", LARS_ETA),) if name == "lars" else ()),
                  verbose=False)
         for name, lr in OPT_LR.items()]

def time_to(run, target):
    """Training seconds until the first epoch whose val acc reaches `target` (NaN if none)."""
    epochs = run.epochs
    hit = np.flatnonzero(epochs.val_acc.to_numpy(float) >= target)
    return float(epochs.epoch_time_s.cumsum().iloc[hit[0]]) if len(hit) else np.nan

best = max(gc.report.val_acc(r) for r in races)
target = 0.9 * best
race = pd.DataFrame({"optimizer": list(OPT_LR), "lr at 128": list(OPT_LR.values()),
                     "final val acc": [gc.report.val_acc(r) for r in races],
                     "samples/s": [gc.report.samples_per_sec(r) for r in races],
                     "seconds to target": [time_to(r, target) for r in races]})
gc.tables.show(race)

# %%
gc.plots.curves(races)

# %%
reached = race.dropna(subset=["seconds to target"])
first = reached.loc[reached["seconds to target"].idxmin()]
missed = race[race["seconds to target"].isna()].optimizer.tolist()
print(f"Target: {target:.1%} validation accuracy (90% of the best, {best:.1%}). "
      f"First there: {first.optimizer} after {first['seconds to target']:.1f} s of training.")
print(f"Not reached in {OPT_EPOCHS} epoch(s): {', '.join(missed) if missed else 'none'}.")

# %% [markdown]
# ## Beside the reference machine
# Runs of these notebooks at full size on an NVIDIA H200, when recorded, are kept in
# `gpu_course/reference/pytorch-h200/`.

# %%
mine = sweep + [scaled_sgd, lars] + races
latest = gc.report.reference_runs("batch_size=", "large-batch", "optimizer=")
if latest:
    display(gc.tables.show(gc.report.beside_reference(mine, latest)))
    ref = latest.get("large-batch")
    if ref is not None:
        print(f"The H200 reference's large-batch rung (batch {ref.config['batch_size']}, LARS) trained at "
              f"{gc.report.samples_per_sec(ref):,.0f} samples/s to {gc.report.val_acc(ref):.1%}; this machine "
              f"(batch {LARGE}): {gc.report.samples_per_sec(lars):,.0f} samples/s to {acc_lars:.1%}.")
else:
    print(gc.report.no_reference_line())
