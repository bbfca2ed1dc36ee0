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

# %%
import torch
import torch.nn.functional as F
from gpu_course import torch as gc

# %% tags=["parameters"]
SIZES = gc.sizes("04")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("04", repeats=3)

# %% [markdown]
# ## Why float16 needs a scaler
# float16's smallest positive number is about 6e-8 (2⁻²⁴); anything smaller rounds to 0.
# Gradients deep in a network are often that small. Scale the loss by 65,536 (2¹⁶, the
# GradScaler's starting scale) and every gradient is 65,536 times larger too, back in
# float16's range; the optimizer divides by the scale in float32 before it steps.

# %%
torch.set_printoptions(precision=3)                        # 1.000e-08, not 9.99999993922529e-09
grad = torch.tensor([1e-8, 1e-6, 1e-3])                    # float32 gradients, tiny to ordinary
scale = 2.0 ** 16
print("float32 gradient:         ", grad)
print("in float16:               ", grad.half())
print("scaled, in float16:       ", (grad * scale).half())
print("scaled, float16, unscaled:", (grad * scale).half().float() / scale)
print("in bfloat16:              ", grad.bfloat16())

# %% [markdown]
# 1e-8 is lost in float16 and comes back intact when scaled; 1e-6 survives, but as a
# *subnormal* number (below 6.1e-5, float16's smallest full-precision value) it keeps only a
# few digits. bfloat16 keeps all three. The same with ResNet-20's real gradients: one
# backward pass in float32 on a batch, then count what float16 would do to them. Every
# run uses the same intra-op threads (`torch_threads` in the sizes; each record keeps it).

# %%
torch.set_num_threads(SIZES.torch_threads or torch.get_num_threads())
device = gc.try_devices(1)[0][0]
cfg = gc.Experiment(name="float32", batch_size=64, pin_memory=device.type == "cuda",
                    persistent_workers=SIZES["num_workers"] > 0, **SIZES)
train_set, _ = gc.load_datasets(cfg)
x, y = next(iter(torch.utils.data.DataLoader(train_set, batch_size=64)))
probe = gc.get_model("resnet20")            # the real network, whatever the sizes train
F.cross_entropy(probe(x), y).backward()
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
# record says so; the conclusion compares what ran, not what was asked for.

# %%
capability = torch.cuda.get_device_capability(device) if device.type == "cuda" else None
has_tf32 = capability is not None and capability >= (8, 0)   # Ampere and newer

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
# Each variant is trained `repeats` times, interleaved (float32, float16, bfloat16, ...,
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
runs = [train_in(name, **kwargs) for _ in range(SIZES.repeats) for name, kwargs in variants.items()]
torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32_default
gc.show(runs, lesson="04", chart=False)
gc.conclude("04", runs)   # the sentences, checked against the table: gpu_course/lessons/l04_precision.py

# %%
gc.plots.curves(runs[-len(variants):])

# %% [markdown]
# ## Exercise 04.1: 16 bits, on this device
# Below, float32 and one 16-bit type on `SIZES.exercise_size` images at a batch of
# `SIZES.exercise_batch`, each trained by `gc.train` (autocast around the forward pass, a
# GradScaler for float16, as in the loop above). At the line marked `# >>>` choose the type:
# `"bfloat16"` or `"float16"` (a CPU runs float16 as bfloat16, and the record says so).
# **Before running**, write your guess of its samples/s against float32 *on this device*:
# `"faster"`, `"slower"` or `"same"`. What does it have for 16-bit arithmetic: tensor cores,
# or CPU instructions for bfloat16 (`amx_bf16`, `avx512_bf16` among the flags in
# `/proc/cpuinfo`)? The check rules on your guess against the runs' noise, names the device
# they ran on and why that decides it, and reads the accuracy against two standard errors.
# After trying, `gc.solution("04.1")` shows one way.

# %% tags=["exercise"]
ex_cfg = gc.Experiment(name="exercise", batch_size=SIZES.exercise_batch, threads=SIZES.torch_threads,
                       pin_memory=gc.gpu_count() > 0, **SIZES.replace(train_size=SIZES.exercise_size))
low = "float32"              # >>> a 16-bit type: "bfloat16" or "float16"
prediction = None            # >>> before you run: "faster", "slower" or "same" than float32
mine = [gc.train(ex_cfg.replace(name=f"exercise: {dtype}", dtype=dtype), verbose=False)   # <- the precision
        for dtype in dict.fromkeys(("float32", low))]

# %% tags=["check"]
gc.check("04.1", mine, prediction)
