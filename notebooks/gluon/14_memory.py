# %% [markdown]
# # 14. GPU memory: where it goes, and how to need less
#
# **What this lesson measures.** A training step keeps four things in memory: the
# **parameters**, their **gradients**, the **optimizer's state** (SGD with momentum: one
# buffer per parameter) and the **activations** the backward pass needs, one set per image
# of the batch. The first three are fixed by the model and can be counted (elements × bytes);
# the activations grow with the batch, and on a GPU they are what runs out first. We measure
# the step's memory per batch size, then try two ways to need less: **gradient
# accumulation** (4 micro-batches of 256 add up to one update of 1024) and a **hybridized
# graph** (`hybridize(static_alloc=True)`).
#
# **The counters.** MXNet's pip build has no memory profiler. On a GPU,
# `mx.context.gpu_memory_info(0)` gives the device's free and total memory; MXNet's pool keeps
# what it allocated, so what is used after a step is the run's high-water mark. On a CPU the
# course reads the process's own memory from Linux: its resident set between steps and its
# peak during a step (`VmHWM`, set back before each step). MXNet queues operators and
# allocates when they run, so each reading waits for the engine first (`mx.nd.waitall()`),
# after the timed epochs. `gc.MemoryMeter` runs a few more steps after training under these
# counters and notes what they read in the run's record; the parts are counted from the model.
#
# **Activation checkpointing** (keep fewer activations, recompute them in the backward pass)
# has no Gluon API. MXNet 1.x's `MXNET_BACKWARD_DO_MIRROR=1` does it in the symbolic
# executor of the Module API, not in Gluon's hybridized graphs; the PyTorch track measures
# `torch.utils.checkpoint`.
#
# **The talk** (its slide "Imperative vs Symbolic") counts `a = ones(10); b = ones(10) * 2;
# c = b * a; d = c + 1` in 8-byte numbers: imperative 4 × 10 × 8 = 320 bytes, because every
# interim value stays; symbolic 2 × 10 × 8 = 160 bytes, because a graph can reuse a buffer
# once its value is no longer needed. The lecture's advice: stay away from maximum memory.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import mxnet as mx
from mxnet import autograd, gluon
from gpu_course import gluon as gc

# %% tags=["parameters"]
SIZES = gc.sizes("14")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("14", batches=(64, 512))

# %% [markdown]
# ## The loop, with accumulation and a graph as options
# `step` is one forward and backward pass of a (micro-)batch; the update follows the last
# micro-batch of each group of `accumulate`. With `grad_req="add"` each `backward()` adds
# into the gradients instead of overwriting them; `trainer.step(batch)` divides their sum
# by the update's images, and `zero_grad()` starts the next sum. `train` builds a fresh
# network, trains it in the course's record, keeps the loss of every update (read once,
# after the epoch) and then measures `SIZES.readings` more updates with `gc.MemoryMeter`.

# %%
cfg = gc.Experiment(name="memory", **SIZES)
device = gc.try_devices(1)[0][0]
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()


def train(name, batch, accumulate=1, hybridize=False, seed=0, steps=None):
    """A fresh network trained on `batch` images an update, in `accumulate` micro-batches;
    its memory measured after training, into its record."""
    net = gc.get_model(cfg.model)
    if hybridize:
        net.hybridize(static_alloc=True, static_shape=True)          # <- one graph, its buffers planned once
    parts = gc.build(cfg.replace(name=name, batch_size=batch // accumulate, seed=seed, max_steps=steps), net=net)
    net, train_iter, _, trainer = parts
    learning = [p for p in net.collect_params().values() if p.grad_req != "null"]
    if accumulate > 1:
        for p in learning:
            p.grad_req = "add"                                         # <- backward() adds up

    def step(data, label, update):
        """Forward and backward of one (micro-)batch; the trainer's update where `update`."""
        with autograd.record():
            out = net(data)
            loss = loss_fn(out, label)
        loss.backward()
        if update:
            trainer.step(batch)                                        # <- the update's mean: all its images
            if accumulate > 1:
                for p in learning:
                    p.zero_grad()                                      # <- the next sum starts at zero
        return out, loss

    memory = gc.MemoryMeter(parts)                 # what is live before the first step
    curve, loss_sum = [], 0
    with gc.record(parts, verbose=False) as rec:
        rec.note(accumulate=accumulate)
        for epoch in rec.epochs():
            for i, (data, label) in enumerate(rec.batches(train_iter)):
                data, label = data.as_in_context(device), label.as_in_context(device)
                update = (i + 1) % accumulate == 0
                out, loss = step(data, label, update)
                loss_sum = loss_sum + loss.sum()                       # stays on the device
                if update:
                    curve.append(loss_sum / batch)
                    loss_sum = 0
                rec.step(data.shape[0], loss_sum=loss.sum(),
                         correct=(out.argmax(axis=1) == label.astype(out.dtype)).sum())
            rec.end_epoch(sync=mx.nd.waitall)                          # the epoch's one sync
        rec.note(loss_curve=mx.nd.concat(*curve, dim=0).asnumpy().tolist())   # read once, after the sync
        memory.measure(rec, lambda: [step(data, label, j == accumulate - 1) for j in range(accumulate)],
                       inputs=(data, label), readings=SIZES.readings)
    return rec.run


# %% [markdown]
# ## Where the memory goes, per batch size
# A few updates at each batch size: enough for the counters, which measure the steps after
# training. The table gives each part counted from the model, what stayed alive between
# steps (`held`, measured, beside what the model counts for it), the step's peak and the
# activations: the peak less what was held.

# %%
sweep = [train(f"batch {b}", b, steps=SIZES.sweep_steps) for b in SIZES.batches]
gc.show(sweep, lesson="14", chart=False)
gc.conclude("14", sweep)   # the sentences, checked: gpu_course/lessons/l14_memory.py

# %% [markdown]
# ## Gradient accumulation: the large batch's update in micro-batches
# The largest batch again, for a whole epoch, and beside it the same images in
# `SIZES.accumulate` micro-batches an update, with the same seed: the same initial weights
# and the same images in the same order. Does the loss follow the large batch's, update by
# update? The noise to judge that by is what another seed changes: the large batch once
# more with `seed=1`.

# %%
large, k = SIZES.batches[-1], SIZES.accumulate
accumulation = [train(f"batch {large}", large),
                train(f"batch {large}, seed 1", large, seed=1),
                train(f"{k} micro-batches of {large // k}", large, accumulate=k)]   # <- accumulate
gc.show(accumulation, lesson="14", chart=False)
gc.conclude("14", accumulation=accumulation)

# %% [markdown]
# ## A graph: does it need less memory?
# The talk's point, on a training step: the large batch hybridized with
# `static_alloc=True, static_shape=True`. The graph plans its buffers once, shares one
# between values whose lifetimes do not overlap, and keeps them between steps.

# %%
graph = [accumulation[0], train(f"batch {large}, hybridized", large, hybridize=True)]
gc.show(graph, lesson="14", chart=False)
gc.conclude("14", graph=graph)

# %% [markdown]
# ## Exercise 14.1: predict the peak of a batch size you have not measured
# `gc.memory_run` is the loop above without its options: it trains a few steps and measures
# the memory of more. It measures the largest batch of the sweep; then choose another batch
# size at the line marked `# >>>` (twice the first, say: on a GPU, try the largest you
# expect to fit) and, **before you run**, predict its peak in MiB from the first run's row:
# what does not change with the batch, and what grows with each image? The check accepts a
# prediction within 10 % of the measured peak (or within its steps' spread).
# `gc.solution("14.1")` shows an answer, after you have tried.

# %% tags=["exercise"]
ex = gc.Experiment(name="exercise", max_steps=SIZES.sweep_steps, **SIZES)
measured = SIZES.batches[-1]
first = gc.memory_run(ex.replace(name=f"exercise: batch {measured}", batch_size=measured), SIZES.readings)
gc.show([first], lesson="14", chart=False)
batch = measured               # >>> another batch size (twice the one above, say)
prediction = None              # >>> before you run: its peak in MiB, from the row above
mine = gc.memory_run(ex.replace(name=f"exercise: batch {batch}", batch_size=batch), SIZES.readings)

# %% tags=["check"]
gc.check("14.1", [first, mine], prediction)
