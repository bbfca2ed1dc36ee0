# %% [markdown]
# # 4. Mixed precision: 16-bit arithmetic, 32-bit where it matters
#
# **What this lesson measures.** `torch.autocast` runs convolutions and matrix products in
# a 16-bit type (half the bytes to move, and the GPU's tensor cores do the arithmetic)
# while the weights, the optimizer and the loss stay in float32. Two 16-bit types:
# **float16**, whose small range lets small gradients round to zero unless the loss is
# scaled up first (`torch.amp.GradScaler`), and **bfloat16**, with float32's range and
# fewer digits, which needs no scaler. We compare float32, float16 + GradScaler and
# bfloat16 with the `channels_last` memory layout that tensor-core convolutions read directly.
# This is PyTorch's counterpart of Gluon's `net.cast('float16')` with `multi_precision=True`.
#
# **The talk's numbers** (Apache MXNet on a V100 in 2019, 29 workers, hybridized, batch
# 64): float32 941 samples/s; **float16 3,100 samples/s, 12.0 s per epoch** on one GPU;
# 7,400 samples/s on 4 GPUs; with batch 640, 14,000 samples/s and 4.2 s per epoch.
# "Mixed precision can halve the training time." Your numbers come from your machine.

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
TRAIN_SIZE = 320 if SMOKE else 50_000   # smoke: 5 steps a run (bfloat16 is slow on a CPU)
TEST_SIZE = 128 if SMOKE else 10_000
EPOCHS = 1 if SMOKE else 3
WORKERS = max(2, os.cpu_count() - 3)

# %%
import pandas as pd
import torch
from torch import nn
import gpu_course
from gpu_course import torch as gc

on_gpu = gc.gpu_count() > 0
device = gc.try_devices(1)[0][0]
cfg = gc.Experiment(name="float32", engine="pytorch", dataset=DATASET, train_size=TRAIN_SIZE,
                    test_size=TEST_SIZE, epochs=EPOCHS, batch_size=64, num_workers=WORKERS,
                    pin_memory=on_gpu, persistent_workers=True,
                    graph="hybrid" if on_gpu else "eager",   # lesson 3; on a CPU compiling costs more than it saves
                    warmup_steps=3 if SMOKE else 10, monitor_interval=0.2 if SMOKE else 0.5)
print(f"Training on {device}; compiled: {cfg.graph != 'eager'}")

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
probe = gc.get_model("resnet20")
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
# ## The one change, in plain PyTorch
# One training step in each precision. This is what `gc.train` does in every step for
# `dtype="float16"` / `"bfloat16"` (`channels_last=True` also puts the network and every
# batch in the NHWC layout):

# %%
net = gc.get_model("resnet20").to(device)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
scaler = torch.amp.GradScaler(device.type)                       # float16 only
xb, yb = x.to(device), y.to(device)

with torch.autocast(device.type, dtype=torch.float16):           # <- float16
    out = net(xb)
    loss = nn.functional.cross_entropy(out, yb)
scaler.scale(loss).backward()          # gradients of loss * scale: no underflow
scaler.step(optimizer)                 # unscales in float32; skips the step if one overflowed
scaler.update()                        # grows the scale slowly, halves it after an overflow
optimizer.zero_grad()
print(f"float16 step: activations in {out.dtype}, loss {loss.item():.3f} in {loss.dtype} (autocast keeps "
      f"softmax in float32), scale now {scaler.get_scale():,.0f}")

net = net.to(memory_format=torch.channels_last)                  # <- NHWC layout
with torch.autocast(device.type, dtype=torch.bfloat16):          # <- bfloat16: no scaler
    out = net(xb.contiguous(memory_format=torch.channels_last))
    loss = nn.functional.cross_entropy(out, yb)
loss.backward()
optimizer.step()
print(f"bfloat16 step: activations in {out.dtype}, weights stay {next(net.parameters()).dtype}")

# %% [markdown]
# ## Training in each precision
# On a CPU PyTorch's float16 convolutions are slow, so `gc.train` runs a float16 request
# as bfloat16 there and says so; the record keeps what really ran.

# %%
runs = [gc.train(cfg, verbose=False),
        gc.train(cfg.replace(name="float16", dtype="float16")),
        gc.train(cfg.replace(name="bfloat16 NCHW", dtype="bfloat16"), verbose=False),
        gc.train(cfg.replace(name="bfloat16", dtype="bfloat16", channels_last=True), verbose=False)]
table = gc.report.ladder_table(runs)
table.insert(1, "ran as", [f"{r.config['dtype']}{', channels_last' if r.config['channels_last'] else ''}"
                           for r in runs])
gc.tables.show(table)

# %%
gc.plots.curves(runs)

# %%
fastest = table.loc[table.samples_per_sec.idxmax()]
print(f"float32: {table.samples_per_sec[0]:,.0f} samples/s, val acc {table.val_acc[0]:.1%}. "
      f"Fastest: '{fastest.rung}' ({fastest['ran as']}) at {fastest.samples_per_sec:,.0f} samples/s "
      f"(×{fastest.speedup:.2f}), val acc {fastest.val_acc:.1%}.")
layout = table.samples_per_sec[3] / table.samples_per_sec[2]
print(f"channels_last changed bfloat16's speed ×{layout:.2f}.")
if not on_gpu:
    print(f"No GPU here: the CPU has no tensor cores, and the '{runs[1].name}' run ran as "
          f"{runs[1].config['dtype']}; what ran was the code path. On a GPU with tensor cores "
          "(V100 and newer) the 16-bit runs are where the talk's ×3 comes from.")

# %% [markdown]
# ## Beside the reference machine
# Runs of these notebooks at full size on an NVIDIA H200, when recorded, are kept in
# `gpu_course/reference/pytorch-h200/`.

# %%
latest = gc.report.reference_runs(*{r.name for r in runs})
if latest:
    display(gc.tables.show(pd.concat({"this machine": table.drop(columns="ran as").set_index("rung"),
                       "H200 reference": gc.report.ladder_table(list(latest.values())).set_index("rung")})))
    ref32, ref16 = latest.get("float32"), latest.get("bfloat16")
    if ref32 is not None and ref16 is not None:
        print(f"On the H200 reference bfloat16 + channels_last ran ×"
              f"{gc.report.samples_per_sec(ref16) / gc.report.samples_per_sec(ref32):.2f} float32; "
              f"here ×{table.samples_per_sec[3] / table.samples_per_sec[0]:.2f}.")
else:
    print(gc.report.no_reference_line())
