# %% [markdown]
# # 3. torch.compile: from eager to a compiled graph
#
# **What this lesson measures.** A PyTorch network runs *eagerly*: Python calls one
# operator after another and each launches its own kernel. `torch.compile(net)` traces it
# into a graph once, fuses operators (a convolution's BatchNorm and ReLU into fewer
# kernels, fewer trips through memory) and generates the code; `mode="reduce-overhead"`
# also records the whole step as a CUDA graph and replays it with one launch. This is
# PyTorch's counterpart of Gluon's `hybridize()` and `hybridize(static_alloc=True,
# static_shape=True)`. We train eager, compiled and (on a GPU) CUDA-graph variants of two
# networks: ResNet-20 and a four-layer "tiny" convnet.
#
# **The talk's numbers** (Apache MXNet on a V100 in 2019, 29 workers, batch 64): imperative
# 663 samples/s, **hybridized 941 samples/s, 13.25 s per epoch** (×1.4); with 4 GPUs 950 →
# 1,266. The talk adds that symbolic graphs help most for *small networks and small
# batches*, where Python's per-operator overhead is a large part of each step. The second
# network checks that claim on your machine.

# %%
# Makes gpu_course importable in this kernel; a fresh kernel gets its track installed.
import importlib.util, pathlib, subprocess, sys  # later cells use these too
here = pathlib.Path.cwd()
sys.path.insert(0, str(next(p for p in (here, *here.parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
DATASET = "synthetic"                 # "cifar10" where the real data set is in data/
TRAIN_SIZE = 768 if SMOKE else 50_000
TEST_SIZE = 256 if SMOKE else 10_000
EPOCHS = 1 if SMOKE else 2
WORKERS = max(2, os.cpu_count() - 3)  # the previous lesson's advice
# inductor generates and compiles kernels (about a minute per network on a CPU); aot_eager
# only traces the graph (seconds): the code path of the lesson without its speed-up
COMPILE_BACKEND = "aot_eager" if SMOKE else "inductor"

# %%
import pandas as pd
import torch
import gpu_course
from gpu_course import torch as gc

os.environ[gc.COMPILE_BACKEND_ENV] = COMPILE_BACKEND   # what gc.train compiles with, and records
on_gpu = gc.gpu_count() > 0
cfg = gc.Experiment(name="compile", engine="pytorch", dataset=DATASET, train_size=TRAIN_SIZE,
                    test_size=TEST_SIZE, epochs=EPOCHS, batch_size=64, num_workers=WORKERS,
                    pin_memory=on_gpu, persistent_workers=True,
                    warmup_steps=3 if SMOKE else 10,   # the first compiled steps build the graph
                    monitor_interval=0.2 if SMOKE else 0.5)
train_iter, val_iter = gc.load_data(cfg)

# %% [markdown]
# ## The one change: `torch.compile(net)`
# The network code does not change: the same module runs either way, and `gc.train` sees
# that it was compiled. Each variant starts from a fresh, untrained network; the first
# steps of a compiled one pay for tracing and code generation, so they are left out of
# samples/s (`warmup_steps`) but not out of the epoch time. CUDA graphs exist only on an
# NVIDIA GPU, so the third variant runs only there.

# %%
def variants(model):
    """Train `model` eagerly, compiled, and compiled with CUDA graphs (on a GPU)."""
    ways = {"eager": (gc.get_model(model), "eager"),
            "compile": (torch.compile(gc.get_model(model), backend=COMPILE_BACKEND), "hybrid")}
    if on_gpu and COMPILE_BACKEND == "inductor":
        ways["reduce-overhead"] = (torch.compile(gc.get_model(model), mode="reduce-overhead"), "static")
    runs = []
    for label, (net, graph) in ways.items():
        name = "compile" if (model, label) == ("resnet20", "compile") else f"{model} {label}"
        runs.append(gc.train(cfg.replace(name=name, model=model, graph=graph), net=net,
                             train_iter=train_iter, val_iter=val_iter, verbose=False))
        print(f"{model:8s} {label:16s} {gc.report.samples_per_sec(runs[-1]):9,.1f} samples/s, "
              f"first epoch {runs[-1].epochs.epoch_time_s.iloc[0]:.1f} s")
    return runs

resnet_runs = variants("resnet20")
tiny_runs = variants("tiny")

# %%
gc.plots.throughput(resnet_runs + tiny_runs)

# %% [markdown]
# ## Who gained more?
# Each compiled variant against the same network run eagerly (the speed-up column has each
# network's eager run as its base), judged against the runs' noise; the first epoch
# includes the compilation.

# %%
runs = resnet_runs + tiny_runs
table = pd.concat([gc.report.ladder_table(resnet_runs), gc.report.ladder_table(tiny_runs)],
                  ignore_index=True)
table["first epoch (s)"] = [r.epochs.epoch_time_s.iloc[0] for r in runs]
gc.tables.show(table)

# %%
say = gc.closing.Closing(table, runs)   # prints a line only when its numbers are the table's
best = {}
for model, rs in (("ResNet-20", resnet_runs), ("tiny net", tiny_runs)):
    verdicts = {run.name: say.compare(rs[0], run) for run in rs[1:]}
    for name, verdict in verdicts.items():
        say(f"{model}, '{name}' against eager: {verdict}.")
    best[model] = max(verdicts.values(), key=lambda v: v.ratio)   # its better compiled variant
layers = {m: sum(1 for _ in gc.get_model(m).modules()) for m in ("resnet20", "tiny")}
order = gc.noise.ranked(best["tiny net"], best["ResNet-20"])
if COMPILE_BACKEND != "inductor":
    say(f"The '{COMPILE_BACKEND}' backend traces the graph but generates no fused kernels: the code "
        "path ran, and whatever the verdicts above say is not compiling's speed-up. Run at full size "
        "(inductor) to see it.")
elif not any(v.is_effect for v in best.values()):
    say("Neither network's compiled variant differs from its eager run beyond noise.")
elif order == "within noise":
    say("Which network gained more is within noise: the ranges of their better variants overlap.")
elif order == "higher":
    say(f"The tiny net gained more, beyond both ranges, as the talk says: it ({layers['tiny']} modules "
        f"against ResNet-20's {layers['resnet20']}) does so little work per operator that Python's and "
        "the launches' overhead is a large share of its step, and that is what compiling removes.")
else:
    say("ResNet-20 gained more, beyond both ranges: unlike the talk's rule of thumb (small networks "
        "gain most).")
say(f"Compiling ResNet-20 ({COMPILE_BACKEND}): its first epoch took {say.cell(1, 'first epoch (s)', '{:.1f} s')} "
    f"against {say.cell(0, 'first epoch (s)', '{:.1f} s')} eager; a compilation pays back only over a "
    "long enough run.")
if not on_gpu:
    say("Measured on the CPU: no kernel launches to save there; CUDA graphs (mode=\"reduce-overhead\") "
        "need a GPU and were skipped.")

# %% [markdown]
# ## Beside the reference machine
# Runs of these notebooks at full size on an NVIDIA H200, when recorded, are kept in
# `gpu_course/reference/pytorch-h200/`.

# %%
mine = resnet_runs + tiny_runs
latest = gc.report.reference_runs("compile", "resnet20 ", "tiny ")
if latest:
    display(gc.tables.show(gc.report.beside_reference(mine, latest)))
    ref = latest.get("compile")
    if ref is not None:
        print(f"The H200 reference's compiled ResNet-20 trained at {gc.report.samples_per_sec(ref):,.0f} "
              f"samples/s; this machine: {gc.report.samples_per_sec(resnet_runs[1]):,.0f} samples/s.")
else:
    print(gc.report.no_reference_line())
