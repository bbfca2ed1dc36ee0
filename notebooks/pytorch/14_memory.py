# %% [markdown]
# # 14. GPU memory: where it goes, and how to need less
#
# **What this lesson measures.** A training step keeps four things in memory: the
# **parameters**, their **gradients**, the **optimizer's state** (SGD with momentum: one
# buffer per parameter) and the **activations** the backward pass needs, one set per image
# of the batch. The first three are fixed by the model and can be counted (elements × bytes);
# the activations grow with the batch, and on a GPU they are what runs out first. We read
# each part from PyTorch's own counters, per batch size, and then try three ways to need
# less: **gradient accumulation** (4 micro-batches of 256 add up to one update of 1024),
# **activation checkpointing** (`torch.utils.checkpoint`: keep less, recompute in the
# backward pass) and a **compiled graph** (`torch.compile`).
#
# **The counters.** On a GPU, the CUDA caching allocator counts every tensor:
# `torch.cuda.reset_peak_memory_stats()` before a step and `torch.cuda.max_memory_allocated()`
# after it give the step's peak, read on the host without a sync; and
# `torch.cuda.memory._record_memory_history()` / `_dump_snapshot()` write a snapshot for the
# PyTorch memory viewer (https://pytorch.org/memory_viz). On a CPU there is no allocator
# counter; the profiler with `profile_memory=True` sees every tensor a step creates and frees
# and sorts it into parameters, gradients, optimizer state, inputs and activations (its
# memory timeline). `gc.MemoryMeter` runs a few more steps after training under these
# counters and notes what they read in the run's record.
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
import os
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint_sequential
from gpu_course import torch as gc

# %% tags=["parameters"]
SIZES = gc.sizes("14")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("14", batches=(64, 512))
# inductor generates kernels (minutes on a CPU); smoke mode uses aot_eager, which only traces
os.environ[gc.COMPILE_BACKEND_ENV] = SIZES.compile_backend

# %% [markdown]
# ## The loop, with accumulation, checkpointing and a graph as options
# `step` is one forward and backward pass of a (micro-)batch; the update follows the last
# micro-batch of each group of `accumulate`. Dividing each micro-batch's loss by
# `accumulate` makes the gradients, which `backward()` adds into `.grad`, the large batch's
# mean; `zero_grad(set_to_none=True)` after the update frees them until the next backward.
# `Checkpointed` runs the network's layers in `segments` pieces and keeps only each piece's
# input; the backward pass runs the piece again to get the rest. `train` builds a fresh
# network, trains it in the course's record, keeps the loss of every update (read once,
# after the epoch) and then measures `SIZES.readings` more updates with `gc.MemoryMeter`.

# %%
torch.set_num_threads(SIZES.torch_threads or torch.get_num_threads())
device = gc.try_devices(1)[0][0]
on_gpu = device.type == "cuda"
cfg = gc.Experiment(name="memory", pin_memory=on_gpu, **SIZES)


def step(net, optimizer, x, y, accumulate, update):
    """Forward and backward of one (micro-)batch; the optimizer's update where `update`."""
    out = net(x)
    loss = F.cross_entropy(out, y) / accumulate      # <- each micro-batch's share of the update's mean
    loss.backward()                                  # <- .grad adds up until the update
    if update:
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)        # gradients freed until the next backward
    return out, loss


class Checkpointed(torch.nn.Sequential):
    """The same layers, run in `segments` pieces that keep only their input for the backward pass."""

    def __init__(self, layers, segments):
        super().__init__(*layers)
        self.segments = segments

    def forward(self, x):
        return checkpoint_sequential(self, self.segments, x, use_reentrant=False)   # <- recomputed in the backward


def train(name, batch, accumulate=1, segments=0, compiled=False, seed=0, steps=None):
    """A fresh network trained on `batch` images an update, in `accumulate` micro-batches;
    its memory measured after training, into its record."""
    parts = gc.build(cfg.replace(name=name, batch_size=batch // accumulate, seed=seed, max_steps=steps,
                                 graph="compile" if compiled else "eager"))
    net, train_iter, _, optimizer = parts
    if segments:
        net.features = Checkpointed(net.features, segments)                         # <- checkpointing
    model = torch.compile(net, backend=SIZES.compile_backend) if compiled else net   # <- a graph
    memory = gc.MemoryMeter(parts)                 # what is live before the first step
    curve, loss_sum = [], 0
    with gc.record(parts, net=model, verbose=False) as rec:
        rec.note(accumulate=accumulate, checkpoint=segments)
        for epoch in rec.epochs():
            for i, (x, y) in enumerate(rec.batches(train_iter)):
                x, y = gc.to_device(x, y, device)
                update = (i + 1) % accumulate == 0
                out, loss = step(model, optimizer, x, y, accumulate, update)
                loss_sum = loss_sum + loss.detach()                  # stays on the device
                if update:
                    curve.append(loss_sum)
                    loss_sum = 0
                rec.step(len(y), loss=loss.detach() * accumulate, correct=(out.argmax(1) == y).sum())
            rec.end_epoch(sync=torch.cuda.synchronize if on_gpu else None)   # the epoch's one sync
        rec.note(loss_curve=torch.stack(curve).tolist())             # read once, after the sync
        memory.measure(rec, lambda: [step(model, optimizer, x, y, accumulate, j == accumulate - 1)
                                     for j in range(accumulate)], inputs=(x, y), readings=SIZES.readings)
    return rec.run


# %% [markdown]
# ## Where the memory goes, per batch size
# A few updates at each batch size: enough for the counters, which measure the steps after
# training. The table gives each part counted from the model beside what the counter
# measured, what stayed alive between steps (`held`), the step's peak and the activations
# at that peak.

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
# ## Activation checkpointing: memory for time
# The large batch with its layers checkpointed in `SIZES.segments` pieces: each piece keeps
# its input and nothing else; in the backward pass it runs its forward again to get the
# activations back. Less memory, more arithmetic. While a piece is recomputed its
# activations are all in memory again, so the largest piece sets a floor. (A piece must not
# begin with an in-place layer such as `ReLU(inplace=True)`: it would overwrite the input
# the piece keeps, and the backward pass stops with an error saying so.)

# %%
checkpointing = [accumulation[0], train(f"batch {large}, checkpointed", large, segments=SIZES.segments)]
gc.show(checkpointing, lesson="14", chart=False)
gc.conclude("14", checkpointing=checkpointing)

# %% [markdown]
# ## A graph: does it need less memory?
# The talk's point, on a training step: the large batch with `torch.compile` (smoke mode's
# `aot_eager` backend only traces the graph; the full lesson's `inductor` fuses operators and
# lets its partitioner choose what the backward pass keeps).

# %%
graph = [accumulation[0], train(f"batch {large}, compiled", large, compiled=True)]
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
ex = gc.Experiment(name="exercise", max_steps=SIZES.sweep_steps, pin_memory=gc.gpu_count() > 0, **SIZES)
measured = SIZES.batches[-1]
first = gc.memory_run(ex.replace(name=f"exercise: batch {measured}", batch_size=measured), SIZES.readings)
gc.show([first], lesson="14", chart=False)
batch = measured               # >>> another batch size (twice the one above, say)
prediction = None              # >>> before you run: its peak in MiB, from the row above
mine = gc.memory_run(ex.replace(name=f"exercise: batch {batch}", batch_size=batch), SIZES.readings)

# %% tags=["check"]
gc.check("14.1", [first, mine], prediction)
