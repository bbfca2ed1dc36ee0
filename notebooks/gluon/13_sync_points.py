# %% [markdown]
# # 13. The timing trap, and the syncs that cost
#
# **What this lesson measures.** MXNet's engine is asynchronous, on a CPU as on a GPU:
# `net(x)` pushes its operators onto the engine's queue and returns before any of them has
# run. A wall clock read right after the call times the *queueing*. The work is timed only
# once the host waits for it, at a **sync point**: `mx.nd.waitall()`, `out.wait_to_read()`,
# and every read of a value on the host (`loss.asnumpy()`, `loss.asscalar()`,
# `print(loss)`). We time the same passes both ways, side by side; then train one loop twice,
# reading the loss every step and reading it once an epoch, to see what a per-step sync
# costs; last, the course's own timing rule, read from those runs' records.
#
# **The talk** has no numbers for this lesson: it is about how numbers are taken. Yours
# come from your machine.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import time
import mxnet as mx
from mxnet import autograd, gluon
from gpu_course import gluon as gc

# %% tags=["parameters"]
SIZES = gc.sizes("13")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("13", passes=15)

# %% [markdown]
# ## The trap: a clock that stops before the work is done
# Each pass starts with an empty queue, reads the clock, queues the work and reads the clock
# again the moment the calls return (**without a sync**); then it waits for the result and
# reads the clock a third time (**with a sync**). Both numbers come from the same pass. The
# work is one forward pass, then `trap_steps` training steps (forward, backward, update)
# with nothing read in between, on a batch of `trap_batch` random images.

# %%
cfg = gc.Experiment(name="sync", graph="static-alloc", **SIZES)
device = gc.try_devices(1)[0][0]
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()


def train_step(net, trainer, data, label):
    """One training step of plain Gluon: each call queues operators and returns."""
    with autograd.record():
        out = net(data)
        loss = loss_fn(out, label)
    loss.backward()
    trainer.step(data.shape[0])
    return out, loss


net = gc.get_model(cfg.model)
net.initialize(mx.init.Xavier(), ctx=device)
net.hybridize(static_alloc=True, static_shape=True)                   # lesson 3
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": cfg.lr, "momentum": cfg.momentum})
x = mx.nd.random.uniform(shape=(SIZES.trap_batch, 3, cfg.image_size, cfg.image_size), ctx=device)
y = mx.nd.random.randint(0, 10, shape=(SIZES.trap_batch,), ctx=device).astype("float32")
train_step(net, trainer, x, y)
mx.nd.waitall()                                  # the graph built and memory allocated before timing
steps = f"{SIZES.trap_steps} training steps"
trap = []                                        # (block, timer, images, seconds) of each pass
for _ in range(SIZES.passes):
    mx.nd.waitall()                              # an empty queue to start from
    t0 = time.perf_counter()
    out = net(x)
    t1 = time.perf_counter()                     # <- the trap: net(x) has only queued its work
    out.wait_to_read()                           # <- the sync: wait until the output exists
    t2 = time.perf_counter()
    trap += [("forward pass", "without a sync", len(x), t1 - t0),
             ("forward pass", "with a sync", len(x), t2 - t0)]
    t0 = time.perf_counter()
    for _ in range(SIZES.trap_steps):
        train_step(net, trainer, x, y)
    t1 = time.perf_counter()                     # <- the trap again
    mx.nd.waitall()                              # <- the sync: every queued operator done
    t2 = time.perf_counter()
    trap += [(steps, "without a sync", SIZES.trap_steps * len(x), t1 - t0),
             (steps, "with a sync", SIZES.trap_steps * len(x), t2 - t0)]
gc.show(trap, lesson="13", chart=False)
gc.conclude("13", trap=trap, device=device)   # the sentences, checked: gpu_course/lessons/l13_sync_points.py

# %% [markdown]
# ## A sync in every step: reading the loss
# `loss.mean().asscalar()` copies one number to the host, so the host waits until the step
# that computes it has run: a sync per step, the kind a loop that logs its running loss
# makes without meaning to. Below is the course's Gluon loop with that one line switched on
# or off. With it off, the loop reads nothing back: `rec.step` keeps the losses and the
# right answers on the device, and the record adds them up and reads them once, after the
# epoch's sync. `rec.note` keeps which loop a run was. Each loop is trained `repeats` times,
# interleaved, so the spread of the repeats is the noise the difference must beat.
#
# **The course's own rule**, the fix for the trap: an epoch ends at a sync,
# `rec.end_epoch(sync=mx.nd.waitall)`, the only one the record makes, so the epoch's time
# holds all of its work and the record holds no step up. A step's host time is what it took to issue the step; what
# the engine still had queued at the end is the closing sync's time (`sync_s` in the table).

# %%
def train_reading_loss(each_step):
    """Train a fresh network with this notebook's loop, reading the loss each step or not."""
    read = "each step" if each_step else "at the end"
    net = gc.get_model(cfg.model)
    net.hybridize(static_alloc=True, static_shape=True)
    parts = gc.build(cfg.replace(name=f"loss read {read}"), net=net)
    net, train_iter, _, trainer = parts
    logged = []
    with gc.record(parts, verbose=False) as rec:
        rec.note(loss_read=read)
        for epoch in rec.epochs():
            for data, label in rec.batches(train_iter):
                data, label = data.as_in_context(device), label.as_in_context(device)
                out, loss = train_step(net, trainer, data, label)
                if each_step:
                    logged.append(loss.mean().asscalar())   # <- a sync: the host waits for the step
                rec.step(data.shape[0], loss_sum=loss.sum(),   # stays on the device
                         correct=(out.argmax(axis=1) == label.astype(out.dtype)).sum())
            rec.end_epoch(sync=mx.nd.waitall)                 # the epoch's one sync
    return rec.run


runs = [train_reading_loss(each_step) for _ in range(SIZES.repeats) for each_step in (False, True)]
gc.show(runs, lesson="13", chart=False)
gc.conclude("13", runs)   # the sentences, checked: gpu_course/lessons/l13_sync_points.py

# %% [markdown]
# ## Exercise 13.1: a guard that syncs
# Predict, then measure. Training scripts often guard each step against a loss that has
# turned NaN or infinite: `if not mx.nd.contrib.isfinite(loss.mean()): raise ...`. Below,
# the lesson's loop trained without that guard and with it, `repeats` times each,
# interleaved as above: switch it on at the line marked `# >>>` and, **before you run**, write down the guarded loop's samples/s against
# the loop without: `"faster"`, `"slower"` or `"same"`. What does the `if` need from the
# engine, and when?
#
# The check wants the two runs to differ in the guard alone, enough steady steps for a
# verdict against noise, and a prediction the runs do not contradict; it says why, for
# the device they ran on. `gc.solution("13.1")` shows an answer, after you have tried.

# %% tags=["exercise"]
device = gc.try_devices(1)[0][0]
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
guard = False                # >>> True: stop when the loss is not finite, checked every step
prediction = None            # >>> before you run: with the guard, samples/s "faster", "slower" or "same"
mine = []
for checked in (False, True) * SIZES.repeats if guard else ():    # interleaved (nothing until you choose)
    net = gc.get_model(SIZES.model)
    net.hybridize(static_alloc=True, static_shape=True)
    parts = gc.build(gc.Experiment(name=f"exercise: guard {'on' if checked else 'off'}",
                                   graph="static-alloc", **SIZES), net=net)
    net, train_iter, _, trainer = parts
    with gc.record(parts, verbose=False) as rec:
        rec.note(loss_guard=checked)
        for epoch in rec.epochs():
            for data, label in rec.batches(train_iter):
                data, label = data.as_in_context(device), label.as_in_context(device)
                with autograd.record():
                    out = net(data)
                    loss = loss_fn(out, label)
                loss.backward()
                trainer.step(data.shape[0])
                if checked and not mx.nd.contrib.isfinite(loss.mean()):    # <- an if on an NDArray
                    raise FloatingPointError("the loss is not finite")
                rec.step(data.shape[0], loss_sum=loss.sum(),
                         correct=(out.argmax(axis=1) == label.astype(out.dtype)).sum())
            rec.end_epoch(sync=mx.nd.waitall)
    mine.append(rec.run)

# %% tags=["check"]
gc.check("13.1", mine, prediction)
