# %% [markdown]
# # 13. The timing trap, and the syncs that cost
#
# **What this lesson measures.** On a GPU, PyTorch is asynchronous: `net(x)` puts its
# kernels on a CUDA stream and returns while the GPU is still working through them (on a
# CPU it runs each operator before returning). A wall clock read right after the call
# times the launches, not the work; the work is timed only once the host waits for the
# GPU, at a **sync point**: `torch.cuda.synchronize()`, or any read of a GPU value on the
# host (`loss.item()`, `print(loss)`, `.cpu()`, `.tolist()`, an `if` on a GPU tensor).
# CUDA events (`torch.cuda.Event(enable_timing=True)`) time the GPU's side without
# stopping the host. We read the clock with and without a sync in the same passes, train
# one loop with `loss.item()` in every step and without it, let
# `torch.cuda.set_sync_debug_mode("warn")` name the line that syncs, and read the course's
# own timing rule back from the records.
#
# **The talk** has no numbers for this lesson: it is about how numbers are taken. Yours
# come from your machine.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import time
import warnings
import torch
import torch.nn.functional as F
from gpu_course import torch as gc

# %% tags=["parameters"]
SIZES = gc.sizes("13")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("13", trap_batch=1024)

# %% [markdown]
# ## Two clocks on one pass
# `time_both` times one pass of some work: it empties the queue, reads the clock, runs the
# work, reads the clock the moment the calls return (**without a sync**), waits for the
# device (`torch.cuda.synchronize()`; on a CPU `torch.cpu.synchronize()`, which has nothing
# to wait for) and reads the clock again (**with a sync**). On a GPU two CUDA events around
# the work give the device's own time, read only after the sync. The work: a forward pass,
# then `trap_steps` training steps, on `trap_batch` random images already on the device.
# Every run uses the same intra-op threads (`torch_threads` in the sizes).

# %%
torch.set_num_threads(SIZES.torch_threads or torch.get_num_threads())
device = gc.try_devices(1)[0][0]
on_gpu = device.type == "cuda"
sync = torch.cuda.synchronize if on_gpu else torch.cpu.synchronize   # waits for queued work
trap = []                                          # (block, timer, images, seconds) of each pass


def time_both(block, images, work):
    """One pass of work(), timed by the wall clock without and with a sync (and CUDA events)."""
    sync()                                         # start from an empty queue
    if on_gpu:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()                             # queued on the stream like a kernel: no wait
    t0 = time.perf_counter()
    work()
    if on_gpu:
        end.record()
    t1 = time.perf_counter()                       # <- the trap: the calls returned, the GPU may still be busy
    sync()                                         # <- the sync: the host waits for the device
    trap.extend([(block, "without a sync", images, t1 - t0),
                 (block, "with a sync", images, time.perf_counter() - t0)])
    if on_gpu:                                     # ms between the events, readable once synced
        trap.append((block, "CUDA events", images, start.elapsed_time(end) / 1000))


def train_step(net, optimizer, x, y):
    """One step of plain PyTorch; on a GPU every call queues kernels and returns."""
    out = net(x)
    loss = F.cross_entropy(out, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return out, loss


cfg = gc.Experiment(name="sync", pin_memory=on_gpu, **SIZES)
net = gc.get_model(cfg.model).to(device)
optimizer = torch.optim.SGD(net.parameters(), lr=cfg.lr, momentum=cfg.momentum)
x = torch.rand(SIZES.trap_batch, 3, cfg.image_size, cfg.image_size, device=device)
y = torch.randint(0, 10, (SIZES.trap_batch,), device=device)
train_step(net, optimizer, x, y)                   # warm-up: memory and kernels chosen before timing
for _ in range(SIZES.passes):
    time_both("forward pass", len(x), lambda: net(x))
    time_both(f"{SIZES.trap_steps} training steps", SIZES.trap_steps * len(x),
              lambda: [train_step(net, optimizer, x, y) for _ in range(SIZES.trap_steps)])
gc.show(trap, lesson="13", chart=False)
gc.conclude("13", trap=trap, device=device)   # the sentences, checked: gpu_course/lessons/l13_sync_points.py

# %% [markdown]
# ## `loss.item()` in every step
# `.item()` copies one number from the GPU, so the host stops until the step that computes
# it has run: a sync in every step, the kind a loop that prints or logs its running loss
# makes without meaning to. While the host waits, it cannot fetch and queue the next step,
# so the GPU then waits for the host. The loop below is the course's PyTorch loop with that
# one line switched on or off; off, nothing in a step waits, because `rec.step` keeps the
# loss and the right answers as GPU tensors and the record reads their sums once, after
# the epoch's sync. `rec.note` keeps which loop a run was. Each loop is trained `repeats`
# times, interleaved: the repeats' spread is the noise the difference has to beat.
#
# **The course's own rule**, the fix for the trap: an epoch ends at a sync,
# `rec.end_epoch(sync=torch.cuda.synchronize)` (on a CPU `sync=None`: nothing is queued),
# and it is the epoch's only one. Each step's own time on a GPU comes from a CUDA event the
# record places after it; the gaps between the events are read after that sync
# (`device step` in the table).

# %%
def train_reading_loss(each_step):
    """Train a fresh network with this notebook's loop, with loss.item() in every step or not."""
    read = "each step" if each_step else "at the end"
    parts = gc.build(cfg.replace(name=f"loss read {read}"))
    net, train_iter, _, optimizer = parts
    running = []
    with gc.record(parts, verbose=False) as rec:
        rec.note(loss_read=read)
        for epoch in rec.epochs():
            net.train()
            for x, y in rec.batches(train_iter):
                x, y = gc.to_device(x, y, device)        # non_blocking from pinned memory: no wait
                out, loss = train_step(net, optimizer, x, y)
                if each_step:
                    running.append(loss.item())          # <- a sync on a GPU: the host waits for the step
                rec.step(len(y), loss=loss.detach(), correct=(out.argmax(1) == y).sum())
            rec.end_epoch(sync=torch.cuda.synchronize if on_gpu else None)   # the epoch's one sync
    return rec.run


runs = [train_reading_loss(each_step=flag) for _ in range(SIZES.repeats) for flag in (False, True)]
gc.show(runs, lesson="13", chart=False)
gc.conclude("13", runs)   # the sentences, checked: gpu_course/lessons/l13_sync_points.py

# %% [markdown]
# ## Which line syncs? `torch.cuda.set_sync_debug_mode("warn")`
# In "warn" mode PyTorch raises a warning at every call that makes the host wait for the
# GPU, from the line that made it ("error" raises an exception instead). A few calls of
# `train_step`, each printing its loss with `loss.item()`, run under it; the warnings are
# caught and counted by line. It watches CUDA only: on a CPU there is nothing to watch, and the cell says so.

# %%
caught = None                                      # stays None without a GPU
if on_gpu:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")     # <- every syncing call warns from its line
        try:
            for _ in range(3):
                out, loss = train_step(net, optimizer, x, y)
                print(f"loss {loss.item():.3f}")   # a sync: the host waits for the step
        finally:
            torch.cuda.set_sync_debug_mode("default")
gc.conclude("13", syncs=caught)

# %% [markdown]
# ## Exercise 13.1: a guard that syncs
# Predict, then measure. Training scripts often guard each step against a loss that has
# turned NaN or infinite: `if not torch.isfinite(loss): raise ...`. Below, the lesson's
# loop trained without that guard and with it, `repeats` times each, interleaved as
# above: switch it on at the line marked `# >>>` and, **before you run**, write down the guarded loop's samples/s against the
# loop without: `"faster"`, `"slower"` or `"same"`. What does the `if` need from the
# device, and when?
#
# The check wants the two runs to differ in the guard alone, enough steady steps for a
# verdict against noise, and a prediction the runs do not contradict; it says why, for
# the device they ran on. `gc.solution("13.1")` shows an answer, after you have tried.

# %% tags=["exercise"]
torch.set_num_threads(SIZES.torch_threads or torch.get_num_threads())   # as above
device = gc.try_devices(1)[0][0]
guard = False                # >>> True: stop when the loss is not finite, checked every step
prediction = None            # >>> before you run: with the guard, samples/s "faster", "slower" or "same"
mine = []
for checked in (False, True) * SIZES.repeats if guard else ():    # interleaved (nothing until you choose)
    parts = gc.build(gc.Experiment(name=f"exercise: guard {'on' if checked else 'off'}",
                                   pin_memory=device.type == "cuda", **SIZES))
    net, train_iter, _, optimizer = parts
    with gc.record(parts, verbose=False) as rec:
        rec.note(loss_guard=checked)
        for epoch in rec.epochs():
            net.train()
            for x, y in rec.batches(train_iter):
                x, y = gc.to_device(x, y, device)
                out = net(x)
                loss = F.cross_entropy(out, y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                if checked and not torch.isfinite(loss):                 # <- an if on a device value
                    raise FloatingPointError(f"the loss is {loss.item()}")
                rec.step(len(y), loss=loss.detach(), correct=(out.argmax(1) == y).sum())
            rec.end_epoch(sync=torch.cuda.synchronize if device.type == "cuda" else None)
    mine.append(rec.run)

# %% tags=["check"]
gc.check("13.1", mine, prediction)
