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
TRAIN_SIZE = 256 if SMOKE else 50_000
TEST_SIZE = 128 if SMOKE else 10_000
EPOCHS = 2 if SMOKE else 12
BATCH_SIZE = 32 if SMOKE else 640     # per device: the large batch of lesson 5
WORKERS = max(2, os.cpu_count() - 3)

# %%
import mxnet as mx
from gpu_course import gluon as gc

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
# ## Training with each
# The lesson's change is one field, `lr_scheduler`; `gc.train` builds the MXNet scheduler
# from it (counting epochs in updates) and passes it to the optimizer. All runs use the
# large-batch setup of lesson 5: learning rate scaled with the batch and one warm-up epoch.
# The schedules they get, in updates of this run:

# %%
on_gpu = gc.gpu_count() > 0
cfg = gc.Experiment(name="lr", dataset=DATASET, train_size=TRAIN_SIZE, test_size=TEST_SIZE,
                    epochs=EPOCHS, batch_size=BATCH_SIZE, num_workers=WORKERS, graph="static",
                    dtype="float16" if on_gpu else "float32", lr_base_batch=128,
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
