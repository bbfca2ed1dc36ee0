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

# %%
import mxnet as mx
from mxnet import autograd, gluon
from gpu_course import gluon as gc

# %% tags=["parameters"]
SIZES = gc.sizes("06")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("06", epochs=20)

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
cfg = gc.Experiment(name="lr", graph="static-alloc", warmup_epochs=1.0, **SIZES,
                    dtype="float16" if gc.gpu_count() else "float32")   # float16 needs a GPU (lesson 4)
E = cfg.epochs
variants = {"constant": cfg.replace(lr_scheduler="none"),
            "factor": cfg.replace(lr_scheduler="factor", lr_steps=(max(1, E // 4),)),
            "multifactor": cfg.replace(lr_scheduler="multifactor",
                                       lr_steps=tuple(sorted({max(1, round(E * f)) for f in (0.5, 0.75)}))),
            "cosine": cfg.replace(lr_scheduler="cosine"),
            "poly": cfg.replace(lr_scheduler="poly")}
updates = cfg.train_size // cfg.global_batch
gc.plots.lr_schedule({name: gc.lr_scheduler(c, updates) or (lambda step, c=c: c.scaled_lr)
                      for name, c in variants.items()}, steps=E * updates)

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


runs = [train_with(c.replace(name="lr-schedule" if name == "cosine" else f"lr_scheduler={name}"))  # cosine: the ladder's rung
        for name, c in variants.items()]

# %% [markdown]
# ## What the runs say
# Each schedule's accuracy against the constant rate, judged against its binomial noise on
# the validation images, and its speed against the constant rate's, judged against the
# spread of their steady steps (a schedule is one number per update: it should cost nothing).

# %%
gc.show(runs, lesson="06", chart=False)
gc.conclude("06", runs)   # the sentences, checked against the table: gpu_course/lessons/l06_schedules.py

# %%
gc.plots.curves(runs)

# %% [markdown]
# ## Exercise 06.1: a race to the constant rate's accuracy
# All for the same epochs: the constant rate (`"none"`) and the schedulers you list at the
# line marked `# >>>` (`"cosine"`, `"poly"`, `"factor"`). The finish line
# is the validation accuracy the constant rate ends with. **Guess first** which schedule
# crosses it earliest; then read the curves shown with the check and write the one that
# did. Any schedule no other beat to that line by more than the validation set's noise
# (2 standard errors) passes; if another did, the check names it and the epoch. After
# trying, `gc.solution("06.1")`.

# %% tags=["exercise"]
ex = gc.Experiment(name="exercise", graph="static-alloc", warmup_epochs=1.0, **SIZES,
                   dtype="float16" if gc.gpu_count() else "float32")
raced = ["none"]             # >>> the constant rate first, then the schedulers racing it
tried = []
for name in raced:
    tried.append(gc.train(ex.replace(name=f"exercise: {name}", lr_scheduler=name), verbose=False))   # <-

# %% tags=["check"]
display(gc.plots.curves(tried))
first = None                 # >>> which schedule got to the constant rate's final accuracy first
gc.check("06.1", tried, first)
