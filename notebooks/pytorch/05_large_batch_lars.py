# %% [markdown]
# # 5. Large batches, and an optimizer that copes with them
#
# **What this lesson measures.** A bigger batch gives the GPU more work per step and the
# Python loop fewer steps per epoch, so samples/s climbs. But with the same number of
# epochs the model takes fewer, larger steps and accuracy drops. We sweep the batch size,
# then train the largest one with a learning rate scaled linearly with the batch, a
# warm-up, and LARS (layer-wise adaptive rate scaling, the PyTorch counterpart of MXNet's
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
# (scaled learning rate, warm-up, LARS) and credit each point of accuracy to the change
# that bought it.

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
BATCHES = [32, 64, 128] if SMOKE else [64, 128, 256, 512, 1024]   # the last is "large"
BASE_BATCH = BATCHES[0] if SMOKE else 128   # lr = 0.1 at this batch, scaled linearly above it
WARMUP_EPOCHS = 0.5 if SMOKE else 1.0
WORKERS = 0 if SMOKE else max(2, os.cpu_count() - 3)   # smoke: CI's 2 shared cores load in-process
THREADS = 1 if SMOKE else None        # intra-op threads, held fixed for every run (None: PyTorch's default)
LARS_ETA = 0.1                        # LARS trust coefficient: a layer moves ~lr × eta of its weight norm per step
# the optimizer race
OPT_EPOCHS = 2 if SMOKE else 6
OPT_TRAIN_SIZE = 256 if SMOKE else TRAIN_SIZE
OPT_BATCH = 64 if SMOKE else 256
TARGET = 0.9                          # the race's target: this share of the best final accuracy
OPT_LR = {"sgd": 0.1, "nag": 0.1, "lars": 0.1, "signum": 0.002, "adam": 0.002}   # at batch 128, scaled linearly

# %%
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
import gpu_course
from gpu_course.tracks import torch as gc

if THREADS:
    torch.set_num_threads(THREADS)    # the same for every run compared; each record keeps it
on_gpu = gc.gpu_count() > 0
cfg = gc.Experiment(name="batch", engine="pytorch", dataset=DATASET, model=MODEL,
                    train_size=TRAIN_SIZE, test_size=TEST_SIZE, epochs=EPOCHS, num_workers=WORKERS,
                    pin_memory=on_gpu, persistent_workers=WORKERS > 0,
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
display(gc.tables.show(table[["rung", "batch_size", "samples_per_sec", "epoch_time_s", "val_acc",
                                   "status", "talk val acc", "talk epoch (s)"]]))

# %%
display(gc.plots.sweep(sweep, x="batch_size"))
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
# gives each layer its own rate, `lr * trust` with `trust = eta * ||w|| / (||g|| + wd * ||w||)`:
# every layer then moves by about `lr * eta` of its own weight norm. One backward pass of
# ResNet-20 shows how far apart the layers are, in plain PyTorch:

# %%
train_set, _ = gc.load_datasets(cfg)
x, y = next(iter(torch.utils.data.DataLoader(train_set, batch_size=LARGE)))
probe = gc.get_model("resnet20")            # the real network, whatever MODEL is
torch.nn.functional.cross_entropy(probe(x), y).backward()
ratios = pd.Series({name: (p.norm() / p.grad.norm()).item()
                    for name, p in probe.named_parameters() if p.ndim > 1 and p.grad.norm() > 0})
print(f"||w|| / ||g|| over {len(ratios)} weight layers: from {ratios.min():.3g} ({ratios.idxmin()}) "
      f"to {ratios.max():.3g} ({ratios.idxmax()}), a spread of ×{ratios.max() / ratios.min():,.0f}.")

# %% [markdown]
# ## The large-batch step, in plain PyTorch
# Three changes to the training step at the large batch, each a line below: the learning
# rate grows with the batch (`lr × LARGE / BASE_BATCH`: Goyal et al. 2017's linear
# scaling), a warm-up ramps it up over the first epoch(s) (large steps on an untrained
# network diverge; here a `LambdaLR` stepped after every update), and the optimizer is LARS
# (`gc.LARS`, a small `torch.optim.Optimizer`: PyTorch ships none). Biases and BatchNorm
# parameters get plain momentum SGD at the global rate, so that rate stays on SGD's scale
# and `eta` sets how far the weight layers move. `gc.build` makes the network and loaders;
# the optimizer is built here and `gc.record` records this one. This loop is what the
# runs below measure.

# %%
def train_large(name, optimizer="sgd", scaled=False, warmup=False):
    """Train a fresh network at batch LARGE with this notebook's loop; returns the run record."""
    c = cfg.replace(name=name, batch_size=LARGE, optimizer=optimizer,
                    lr_base_batch=BASE_BATCH if scaled else None,
                    warmup_epochs=WARMUP_EPOCHS if warmup else 0.0,
                    optimizer_params=(("eta", LARS_ETA),) if optimizer == "lars" else ())
    parts = gc.build(c)
    net, train_iter, val_iter, _ = parts
    device, ran = parts.devices[0], parts.cfg
    lr = c.scaled_lr                                   # <- lr × LARGE / BASE_BATCH when scaled
    if optimizer == "lars":                            # <- the optimizer measured
        opt = gc.LARS(net.parameters(), lr=lr, momentum=c.momentum, weight_decay=c.wd, eta=LARS_ETA)
    else:
        opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=c.momentum, weight_decay=c.wd)
    warm = max(1, round(WARMUP_EPOCHS * len(train_iter))) if warmup else 0
    scheduler = torch.optim.lr_scheduler.LambdaLR(     # <- linear warm-up: lr × (k + 1) / warm
        opt, lambda k: min(1.0, (k + 1) / warm) if warm else 1.0)
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
# The large batch trained four ways, each adding one change to the one before.

# %%
ladder = {
    f"batch {LARGE}, sgd, lr {cfg.lr:g}": dict(),
    "+ scaled lr": dict(scaled=True),
    "+ warm-up": dict(scaled=True, warmup=True),
    "LARS instead of SGD": dict(optimizer="lars", scaled=True, warmup=True),
}
controls = {name: train_large(name, **kwargs) for name, kwargs in ladder.items()}
control_runs = [small_run, *controls.values()]
control_table = gc.report.ladder_table(control_runs)
display(gc.tables.show(control_table))
lars = controls["LARS instead of SGD"]
print(f"The LARS run's optimizer, as recorded: {lars.meta['ran']['optimizer']}")

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
lars_speed = say.compare(controls["+ warm-up"], lars)
say(f"LARS against SGD with the same scaled lr and warm-up, speed: {lars_speed}.")
if lars_speed.kind == "faster":
    say("LARS does more work per step than SGD (two norms per layer), so it cannot be faster: this "
        "machine's load changed between the runs (one run's steady steps understate run-to-run noise).")
if say.at_chance(control_runs):
    top = max(control_runs, key=gc.metrics.val_acc)
    say(f"Every run is within noise of chance, the best too: {say.chance(top)} At this size no change "
        "can be credited with accuracy; run at full size for the attribution.")

# %% [markdown]
# ## Which optimizer reaches the target first?
# Each optimizer trains the same network from the same start, with its own learning rate
# at batch 128, scaled linearly to the batch used and warmed up (Adam wants a much smaller
# rate; LARS runs at SGD's rate with its trust coefficient `eta`). The target is computed
# from these runs: 90 % (`TARGET`) of the best final validation accuracy. Time counts
# training epochs only, not validation. An optimizer is named first only when the best
# accuracy is clear of chance and ahead of the next best beyond their noise.
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
opt_cfg = cfg.replace(train_size=OPT_TRAIN_SIZE, batch_size=OPT_BATCH, epochs=OPT_EPOCHS, lr_base_batch=128,
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
target = TARGET * best
race = pd.DataFrame({"rung": [r.name for r in races], "lr at 128": list(OPT_LR.values()),
                     "final val acc": [gc.report.val_acc(r) for r in races],
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

# %% [markdown]
# ## Beside the reference machine
# Runs of these notebooks at full size on an NVIDIA H200, when recorded, are kept in
# `gpu_course/reference/pytorch-h200/`.

# %%
mine = sweep + list(controls.values()) + races
latest = gc.report.reference_runs("batch_size=", *ladder, "optimizer=", "large-batch")
if latest:
    display(gc.tables.show(gc.report.beside_reference(mine, latest)))
    ref = latest.get("LARS instead of SGD") or latest.get("large-batch")  # the ladder's rung
    if ref is not None:
        print(f"The H200 reference's large-batch rung (batch {ref.config['batch_size']}, LARS) trained at "
              f"{gc.report.samples_per_sec(ref):,.0f} samples/s to {gc.report.val_acc(ref):.1%}; this machine "
              f"(batch {LARGE}): {gc.report.samples_per_sec(lars):,.0f} samples/s to {gc.report.val_acc(lars):.1%}.")
else:
    print(gc.report.no_reference_line())
