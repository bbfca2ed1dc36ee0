# %% [markdown]
# # 4. Mixed precision: 16-bit arithmetic, 32-bit where it matters
#
# **What this lesson measures.** `torch.autocast` runs convolutions and matrix products in
# a 16-bit type (half the bytes to move, and the GPU's tensor cores do the arithmetic)
# while the weights, the optimizer and the loss stay in float32. Two 16-bit types:
# **float16**, whose small range lets small gradients round to zero unless the loss is
# scaled up first (`torch.amp.GradScaler`), and **bfloat16**, with float32's range and
# fewer digits, which needs no scaler. We compare float32, float16 + GradScaler and
# bfloat16 with the `channels_last` memory layout that tensor-core convolutions read directly,
# and float32 itself two ways: plain, and with **TF32** (on Ampere and newer GPUs PyTorch
# runs float32 convolutions in TF32, 10-bit-mantissa tensor-core arithmetic, unless told
# not to). This is PyTorch's counterpart of Gluon's `net.cast('float16')` with
# `multi_precision=True`.
#
# **The talk's numbers** (Apache MXNet on a V100 in 2019, 29 workers, hybridized, batch
# 64): float32 941 samples/s; **float16 3,100 samples/s, 12.0 s per epoch** on one GPU;
# 7,400 samples/s on 4 GPUs; with batch 640, 14,000 samples/s and 4.2 s per epoch.
# "Mixed precision can halve the training time." Your numbers come from your machine.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
DATASET = "synthetic"                 # "cifar10" where the real data set is in data/
MODEL = "tiny" if SMOKE else "resnet20"   # smoke: a small CNN, so that the repeats fit CI's minute
TRAIN_SIZE = 320 if SMOKE else 50_000   # smoke: 5 steps of 64 a run (bfloat16 is slow on a CPU)
TEST_SIZE = 128 if SMOKE else 10_000
EPOCHS = 1 if SMOKE else 3
REPEATS = 2                           # each precision trained this many times, interleaved (A, B, A, B)
WORKERS = 0 if SMOKE else max(2, os.cpu_count() - 3)   # smoke: CI's 2 shared cores load in-process
THREADS = 1 if SMOKE else None        # intra-op threads, held fixed for every run (None: PyTorch's default)

# %%
import pandas as pd
import torch
from torch import nn
import torch.nn.functional as F
import gpu_course
from gpu_course.tracks import torch as gc

if THREADS:
    torch.set_num_threads(THREADS)    # the same for every run compared; each record keeps it
on_gpu = gc.gpu_count() > 0
device = gc.try_devices(1)[0][0]
cfg = gc.Experiment(name="float32", engine="pytorch", dataset=DATASET, model=MODEL,
                    train_size=TRAIN_SIZE, test_size=TEST_SIZE, epochs=EPOCHS, batch_size=64,
                    num_workers=WORKERS, pin_memory=on_gpu, persistent_workers=WORKERS > 0,
                    warmup_steps=2 if SMOKE else 10, monitor_interval=0.2 if SMOKE else 0.5)
print(f"Training on {device} with {torch.get_num_threads()} intra-op thread(s).")


# %% [markdown]
# ## Why float16 needs a scaler
# float16's smallest positive number is about 6e-8 (2⁻²⁴); anything smaller rounds to 0.
# Gradients deep in a network are often that small. Scale the loss by 65,536 (2¹⁶, the
# GradScaler's starting scale) and every gradient is 65,536 times larger too, back in
# float16's range; the optimizer divides by the scale in float32 before it steps.

# %%
grad = torch.tensor([1e-8, 1e-6, 1e-3])                   # float32 gradients, tiny to ordinary
scale = 2.0 ** 16
as_half = grad.to(torch.float16)
scaled_half = (grad * scale).to(torch.float16)
print("float32 gradient:          ", grad.tolist())
print("in float16:                ", as_half.tolist())
print("scaled, in float16:        ", scaled_half.tolist())
print("scaled, float16, unscaled: ", (scaled_half.float() / scale).tolist())
print("in bfloat16:               ", grad.to(torch.bfloat16).float().tolist())

# %% [markdown]
# 1e-8 is lost in float16 and comes back intact when scaled; 1e-6 survives, but as a
# *subnormal* number (below 6.1e-5, float16's smallest full-precision value) it keeps only a
# few digits. bfloat16 keeps all three. The same with ResNet-20's real gradients: one
# backward pass in float32 on a batch, then count what float16 would do to them.

# %%
train_set, val_set = gc.load_datasets(cfg)
x, y = next(iter(torch.utils.data.DataLoader(train_set, batch_size=64)))
probe = gc.get_model("resnet20")            # the real network, whatever MODEL is
nn.functional.cross_entropy(probe(x), y).backward()
grads = torch.cat([p.grad.flatten() for p in probe.parameters()])
nonzero = grads != 0
tiny = torch.finfo(torch.float16).tiny                      # 6.1e-5: smallest full-precision float16
for label, g in (("as they are", grads), (f"scaled by {scale:,.0f}", grads * scale)):
    zeros = int(((g.half() == 0) & nonzero).sum())
    subnormal = int(((g.abs() < tiny) & nonzero).sum()) - zeros
    print(f"{label:>16}: {zeros:,} of {int(nonzero.sum()):,} values become 0 in float16, "
          f"{subnormal:,} ({subnormal / nonzero.sum():.1%}) keep only a few digits (subnormal)")
print(f"Smallest gradient magnitude: {grads[nonzero].abs().min():.1e}. These are the first step's "
      "gradients; they shrink as the loss falls, and more of them drop out of float16's range.")


# %% [markdown]
# ## Can this machine compute in 16 bits, or in TF32?
# TF32 exists on NVIDIA GPUs from Ampere on (compute capability 8.0); float16 and bfloat16
# run fast on tensor cores (V100 and newer; bfloat16 from Ampere). On a CPU `gc.build`
# runs a float16 request as bfloat16 (PyTorch's float16 CPU kernels are slow) and the
# record says so.

# %%
capability = torch.cuda.get_device_capability(device) if device.type == "cuda" else None
has_tf32 = capability is not None and capability >= (8, 0)
print(f"Device: {device}" + (f", compute capability {capability[0]}.{capability[1]}" if capability else "")
      + f"; TF32: {'available' if has_tf32 else 'not applicable (needs an Ampere or newer GPU)'}.")

# %% [markdown]
# ## The training step, in plain PyTorch
# The whole change lives in these lines: `torch.autocast` around the forward pass and the
# loss (convolutions and matrix products in 16 bits, the rest in float32), a `GradScaler`
# for float16 only, `channels_last` for the NHWC layout, and the two TF32 switches for
# float32. `gc.build` makes the network, the loaders and the SGD optimizer (and says what
# runs on this device); `gc.record` times the loop below step by step and writes the run
# record, with whether TF32 was on. This loop is what the table measures.

# %%
def train_in(name, dtype="float32", channels_last=False, tf32=False):
    """Train a fresh network with this notebook's loop; returns the run record."""
    torch.backends.cudnn.allow_tf32 = tf32            # <- TF32 convolutions (Ampere and newer)
    torch.backends.cuda.matmul.allow_tf32 = tf32      # <- TF32 matrix products
    parts = gc.build(cfg.replace(name=name, dtype=dtype, channels_last=channels_last))
    net, train_iter, val_iter, optimizer = parts
    ran = parts.cfg.dtype                             # what runs: bfloat16 for float16 on a CPU
    amp = {"float32": None, "float16": torch.float16, "bfloat16": torch.bfloat16}[ran]
    if channels_last:
        net = net.to(memory_format=torch.channels_last)   # <- NHWC weights
    scaler = torch.amp.GradScaler(device.type, enabled=amp is torch.float16)   # <- float16 only
    with gc.record(parts, verbose=False) as rec:
        for epoch in rec.epochs():
            net.train()
            for x, y in rec.batches(train_iter):
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                if channels_last:
                    x = x.contiguous(memory_format=torch.channels_last)   # <- NHWC batch
                with torch.autocast(device.type, dtype=amp, enabled=amp is not None):  # <- 16 bits
                    out = net(x)
                    loss = F.cross_entropy(out, y)
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()   # loss × scale for float16; unchanged otherwise
                scaler.step(optimizer)          # unscales; skips a step whose gradients overflowed
                scaler.update()                 # (float16: reads one flag per step, a sync point)
                rec.step(len(y), loss=loss.detach(), correct=(out.argmax(1) == y).sum())
            rec.end_epoch(sync=torch.cuda.synchronize if device.type == "cuda" else None,
                          evaluate=lambda: gc.evaluate(net, val_iter, parts.devices, ran, channels_last))
    return rec.run


# %% [markdown]
# ## Each precision, repeated
# Each variant is trained `REPEATS` times, interleaved (float32, float16, bfloat16, ...,
# then again), so that a machine that speeds up or slows down hits all alike; the spread of
# the repeats is the noise a difference must beat. The TF32 variant runs only where TF32
# exists.

# %%
variants = {"float32": dict(dtype="float32")}
if has_tf32:
    variants["tf32"] = dict(dtype="float32", tf32=True)
variants.update({"float16": dict(dtype="float16"), "bfloat16 NCHW": dict(dtype="bfloat16"),
                 "bfloat16": dict(dtype="bfloat16", channels_last=True)})
tf32_default = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
runs = {name: [] for name in variants}
for _ in range(REPEATS):
    for name, kwargs in variants.items():
        runs[name].append(train_in(name, **kwargs))
torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32_default
every = [r for pair in zip(*runs.values()) for r in pair]
table = gc.report.ladder_table(every)
display(gc.tables.show(table))

# %%
gc.plots.curves([rs[-1] for rs in runs.values()])

# %% [markdown]
# ## What the runs say
# Each sentence below is computed from the runs above: the speed ratio against float32 with
# the range the repeats allow, the accuracy against its binomial noise on the validation
# images.

# %%
say = gc.closing.Closing(table, every)   # prints a line only when its numbers are the table's
r32 = runs["float32"][-1]
say(f"float32 rung: TF32 convolutions: "
    f"{r32.meta['ran'].get('tf32', 'not applicable here (no CUDA device)')}.")
speeds = {name: say.compare(runs["float32"], rs) for name, rs in runs.items() if name != "float32"}
for name, verdict in speeds.items():
    say(f"'{gc.metrics.label(runs[name][-1])}' against float32: {verdict}.")
say(f"channels_last against NCHW, both bfloat16: {say.compare(runs['bfloat16 NCHW'], runs['bfloat16'])}.")
if gc.metrics.data_wait_share(r32) > 0.5:
    say(f"The float32 run waited for data {say.cell(r32, 'data_wait_share')} of its steady time: a "
        "faster step cannot show until the input pipeline keeps up (lessons 2 and 9).")
if not on_gpu:
    faster = [name for name, v in speeds.items() if v.kind == "faster"]
    say(f"No GPU here ({gc.gpu_count()}): the verdicts above are this CPU's own "
        + (f"({', '.join(faster)} faster than float32 here)" if faster else
           "(no 16-bit variant faster than float32 beyond noise)")
        + f". What tensor cores add needs a GPU to show: the talk's float16 on a V100 ran at "
        f"{say.quote('the talk', 3100, '{:,} samples/s')} against {say.quote('the talk', 941, '{:,}')} "
        f"in float32 ({say.quote('the talk', 3100 / 941, '×{:.1f}')}); TF32 needs an Ampere or newer GPU.")
for rs in runs.values():
    say(say.chance(rs[-1]))

# %% [markdown]
# ## Beside the reference machine
# Runs of these notebooks at full size on an NVIDIA H200, when recorded, are kept in
# `gpu_course/reference/pytorch-h200/`.

# %%
latest = gc.report.reference_runs(*runs)
if latest:
    last = gc.report.ladder_table([rs[-1] for rs in runs.values()])
    display(gc.tables.show(pd.concat({"this machine": last.set_index("rung"),
                       "H200 reference": gc.report.ladder_table(list(latest.values())).set_index("rung")})))
    ref32, ref16 = latest.get("float32"), latest.get("bfloat16")
    if ref32 is not None and ref16 is not None:
        print(f"On the H200 reference bfloat16 + channels_last against float32: "
              f"{gc.noise.compare(ref32, ref16)}; here: {speeds['bfloat16']}.")
else:
    print(gc.report.no_reference_line())
