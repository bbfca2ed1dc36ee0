# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

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
import importlib.util, pathlib, subprocess, sys
if importlib.util.find_spec("gpu_course") is None:  # e.g. a fresh SageMaker kernel
    repo = next(p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "pyproject.toml").exists())
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "-e", str(repo)])

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes, runs on a CPU in about a minute
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
# Speed-up of each compiled variant over the same network run eagerly.

# %%
labels = ["eager", "compile", "reduce-overhead"][:len(resnet_runs)]
speedups = pd.DataFrame({
    model: gc.report.ladder_table(runs)["speedup"].to_numpy()
    for model, runs in (("resnet20", resnet_runs), ("tiny", tiny_runs))}, index=labels)
speedups.round(2)

# %%
gain = speedups.loc[labels[-1]]
winner = "tiny" if gain["tiny"] > gain["resnet20"] else "resnet20"
layers = {m: sum(1 for _ in gc.get_model(m).modules()) for m in ("resnet20", "tiny")}
print(f"'{labels[-1]}' sped ResNet-20 up ×{gain['resnet20']:.2f} and the tiny net ×{gain['tiny']:.2f}: "
      f"the {winner} network gained more.")
compile_cost = resnet_runs[1].epochs.epoch_time_s.iloc[0] - resnet_runs[0].epochs.epoch_time_s.iloc[0]
if COMPILE_BACKEND != "inductor":
    print(f"The '{COMPILE_BACKEND}' backend traces the graph but generates no fused kernels, so these "
          "differences are noise: the code path ran, the speed-up cannot show. Run at full size "
          "(inductor) on a GPU to see it.")
elif winner == "tiny":
    print(f"As the talk says: the tiny net ({layers['tiny']} modules against ResNet-20's {layers['resnet20']}) "
          "does so little work per operator that Python's and the launches' overhead is a large share "
          "of its step, and that is what compiling removes.")
else:
    print("Here the larger network gained more than the small one, unlike the talk's rule of thumb: "
          "on this machine and batch size fusing its many operators (fewer trips through memory) "
          "outweighed the per-operator overhead that compiling removes from the tiny net.")
print(f"Compiling ResNet-20 ({COMPILE_BACKEND}) added {compile_cost:+.1f} s to its first epoch: "
      "it pays back only over a long enough run.")
if not on_gpu:
    print("Measured on the CPU: no kernel launches to save there, so the gains are smaller than on a "
          "GPU; CUDA graphs (mode=\"reduce-overhead\") need a GPU and were skipped.")

# %% [markdown]
# ## Beside the reference machine
# Runs of these notebooks at full size on an NVIDIA H200, when recorded, are kept in
# `gpu_course/reference/pytorch-h200/`.

# %%
mine = resnet_runs + tiny_runs
latest = gc.report.reference_runs("compile", "resnet20 ", "tiny ")
if latest:
    display(gc.report.beside_reference(mine, latest))
    ref = latest.get("compile")
    if ref is not None:
        print(f"The H200 reference's compiled ResNet-20 trained at {gc.report.samples_per_sec(ref):,.0f} "
              f"samples/s; this machine: {gc.report.samples_per_sec(resnet_runs[1]):,.0f} samples/s.")
else:
    print(gc.report.no_reference_line())
