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

# %%
import torch
import torch.nn.functional as F
from torch.optim import lr_scheduler as sched
from gpu_course import torch as gc

# %% tags=["parameters"]
SIZES = gc.sizes("06")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("06", epochs=20)

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
# with the batch and a warm-up (one-cycle brings its own, and the conclusion says so).
# Every run uses the same intra-op threads (`torch_threads` in the sizes). The schedules
# they get, in updates of this run:

# %%
torch.set_num_threads(SIZES.torch_threads or torch.get_num_threads())
on_gpu = gc.gpu_count() > 0
cfg = gc.Experiment(name="lr", pin_memory=on_gpu, persistent_workers=SIZES["num_workers"] > 0,
                    dtype="bfloat16" if on_gpu else "float32", channels_last=on_gpu,   # lesson 4
                    warmup_epochs=1.0, **SIZES)
milestones = {"step": (max(1, cfg.epochs // 4),),
              "multistep": tuple(sorted({max(1, round(cfg.epochs * f)) for f in (0.5, 0.75)}))}
variants = {"constant": cfg.replace(lr_scheduler="none"),
            "step": cfg.replace(lr_scheduler="factor", lr_steps=milestones["step"]),
            "multistep": cfg.replace(lr_scheduler="multifactor", lr_steps=milestones["multistep"]),
            "cosine": cfg.replace(lr_scheduler="cosine"),
            "onecycle": cfg.replace(lr_scheduler="onecycle", warmup_epochs=0)}   # brings its own warm-up
gc.plots.lr_schedule({name: gc.lr_curve(c, cfg.train_size // cfg.global_batch) for name, c in variants.items()})

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


# one-cycle is the ladder's "lr-schedule" rung
runs = [train_with(c.replace(name="lr-schedule" if name == "onecycle" else f"lr_scheduler={name}"))
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
# ## Exercise 06.1: which schedule gets there first?
# A race for the same epochs: the constant rate (`"none"`) and the schedules you choose at
# the line marked `# >>>` (`"cosine"`, `"poly"`, `"factor"`...; `"onecycle"` needs
# `warmup_epochs=0`). The target is the accuracy the constant rate ends with. **Before you
# run**, predict which schedule reaches it first; then read the curves in the check cell
# and write down the one that did. The check accepts any schedule that no other beat to the
# target by more than the validation set's noise (2 standard errors), and names the one
# that did when yours was beaten. `gc.solution("06.1")` shows an answer, after you have tried.

# %% tags=["exercise"]
race_cfg = gc.Experiment(name="exercise", warmup_epochs=1.0, **SIZES)
schedules = ["none"]         # >>> the constant rate "none", then the schedules that race it
mine = [gc.train(race_cfg.replace(name=f"exercise: lr_scheduler={s}", lr_scheduler=s), verbose=False)   # <-
        for s in schedules]

# %% tags=["check"]
display(gc.plots.curves(mine))
first = None                 # >>> the schedule whose val acc reached the constant rate's final one first
gc.check("06.1", mine, first)
