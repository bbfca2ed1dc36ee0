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
TRAIN_SIZE = 512 if SMOKE else 50_000
TEST_SIZE = 256 if SMOKE else 10_000
EPOCHS = 1 if SMOKE else 3            # the talk's table is after 3 epochs
BATCHES = [32, 64, 128] if SMOKE else [64, 128, 256, 640, 1280]   # per device
WORKERS = max(2, os.cpu_count() - 3)
# the optimizer race: a smaller network in smoke mode so that eight runs fit in the minute
OPT_MODEL = "tiny" if SMOKE else "resnet20"
OPT_EPOCHS = 2 if SMOKE else 6
OPT_TRAIN_SIZE = 256 if SMOKE else TRAIN_SIZE
OPT_BATCH = 64 if SMOKE else 256
OPT_LR = {"sgd": 0.1, "nag": 0.1, "lbsgd": 0.1, "dcasgd": 0.1, "signum": 0.003, "ftml": 0.003,
          "lars": 5.0, "lamb": 0.01}  # each optimizer at a learning rate that suits it

# %%
import mxnet as mx
import numpy as np
import pandas as pd
from gpu_course import gluon as gc

on_gpu = gc.gpu_count() > 0
cfg = gc.Experiment(name="batch", dataset=DATASET, train_size=TRAIN_SIZE, test_size=TEST_SIZE,
                    epochs=EPOCHS, num_workers=WORKERS, graph="static",
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
gc.tables.show(table[["batch_size", "samples_per_sec", "epoch_time_s", "val_acc", "status", "talk val acc", "talk epoch (s)"]])

# %%
gc.plots.sweep(sweep, x="batch_size")

# %%
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
LARGE = int(large.batch_size)

# %% [markdown]
# ## Large-Batch SGD with warm-up and linear scaling
# Three changes for the largest batch that fit: the learning rate grows with the batch
# (`lr_base_batch=128`: 0.1 at 128 images per step, ×2 at 256, ...), a linear warm-up ramps
# it from 0 over the first epoch (large steps on an untrained network diverge), and the
# optimizer is MXNet's `lbsgd`. These are the keyword arguments `gc.train` hands to
# `gluon.Trainer(net.collect_params(), "lbsgd", ...)`:

# %%
large_cfg = cfg.replace(name="large-batch", batch_size=LARGE, optimizer="lbsgd", lr_base_batch=128,
                        warmup_epochs=min(1.0, EPOCHS / 2))
steps_per_epoch = TRAIN_SIZE // large_cfg.global_batch
params = gc.optimizer_params(large_cfg, steps_per_epoch)
print({k: v for k, v in params.items() if k != "lr_scheduler"})
schedule = params["lr_scheduler"]
gc.plots.lr_schedule({f"lbsgd, batch {LARGE}": schedule}, steps=EPOCHS * steps_per_epoch)

# %%
lbsgd = gc.train(large_cfg, verbose=False)
plain = next(r for r in sweep if r.config["batch_size"] == LARGE)
gc.plots.curves([plain, lbsgd])

# %%
acc_plain, acc_lbsgd = gc.report.val_acc(plain), gc.report.val_acc(lbsgd)
acc_small = small.val_acc
lost = acc_small - acc_plain
print(f"Batch {LARGE}: plain SGD {acc_plain:.1%}, LBSGD + warm-up + scaled lr {acc_lbsgd:.1%} "
      f"(batch {int(small.batch_size)}: {acc_small:.1%}).")
if lost > 0:
    print(f"The large batch lost {lost * 100:.1f} points; the large-batch recipe won back "
          f"{(acc_lbsgd - acc_plain) * 100:+.1f} of them, at {gc.report.samples_per_sec(lbsgd):,.0f} samples/s.")
else:
    print("Here the large batch lost no accuracy to begin with, so there was nothing to recover; "
          f"the recipe changed accuracy by {(acc_lbsgd - acc_plain) * 100:+.1f} points.")

# %% [markdown]
# ## Which optimizer reaches the target first?
# Each optimizer trains the same network from the same start, with its own learning rate
# (adaptive methods such as FTML and LAMB want much smaller ones; LARS multiplies its rate by
# a small per-layer trust ratio, so it wants a larger one). The target is computed from these
# runs: 90 % of the best validation accuracy any of them reached. Time counts training
# epochs only, not validation.
#
# (MXNet 1.9's DCASGD fails with momentum (`if mom:` on an array), so it runs without.)

# %%
opt_cfg = cfg.replace(model=OPT_MODEL, batch_size=OPT_BATCH, epochs=OPT_EPOCHS, train_size=OPT_TRAIN_SIZE)
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

best_each = [pd.to_numeric(r.epochs.val_acc).max() for r in races]   # NaN for a failed run
best = np.nanmax(best_each)                  # the best any optimizer reached in any epoch
target = 0.9 * best
race = pd.DataFrame({"optimizer": [r.config["optimizer"] for r in races],
                     "lr": [r.config["lr"] for r in races], "status": [r.status for r in races],
                     "best val acc": best_each,
                     "final val acc": [gc.report.val_acc(r) for r in races],
                     "samples/s": [gc.report.samples_per_sec(r) for r in races],
                     "seconds to target": [time_to(r, target) for r in races]})
race["seconds to target"] = race["seconds to target"].map(lambda s: "not reached" if np.isnan(s) else round(s, 1))
gc.tables.show(race)

# %%
gc.plots.curves(races)

# %%
reached = race[race["seconds to target"] != "not reached"]
first = reached.loc[reached["seconds to target"].astype(float).idxmin()]
missed = race[race["seconds to target"] == "not reached"].optimizer.tolist()
print(f"Target: {target:.1%} validation accuracy (90% of the best, {best:.1%}). "
      f"First there: {first.optimizer} after {first['seconds to target']} s of training.")
print(f"Not reached in {OPT_EPOCHS} epoch(s): {', '.join(missed) if missed else 'none'}.")
