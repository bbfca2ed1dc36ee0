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

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import os
import torch
from gpu_course import torch as gc

# %% tags=["parameters"]
SIZES = gc.sizes("03")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("03", epochs=5)
# inductor generates kernels (minutes on a CPU); smoke mode uses aot_eager, which only traces
os.environ[gc.COMPILE_BACKEND_ENV] = SIZES.compile_backend

# %% [markdown]
# ## The one change: `torch.compile(net)`
# The network code does not change: the same module runs either way, and `gc.train` sees
# that it was compiled. Each variant starts from a fresh, untrained network; the first
# steps of a compiled one pay for tracing and code generation, so they are left out of
# samples/s (`warmup_steps`) but not out of the epoch time. CUDA graphs exist only on an
# NVIDIA GPU, so the third variant runs only there.

# %%
on_gpu = gc.gpu_count() > 0
cfg = gc.Experiment(name="graph", batch_size=64, num_workers=gc.workers(), pin_memory=on_gpu,
                    persistent_workers=True, **SIZES)
train_iter, val_iter = gc.load_data(cfg)
runs = []
for model in ("resnet20", "tiny"):
    variants = {"eager": (gc.get_model(model), "eager"),
                "compile": (torch.compile(gc.get_model(model), backend=SIZES.compile_backend), "compile")}  # <-
    if on_gpu and SIZES.compile_backend == "inductor":                    # CUDA graphs: one launch a step
        variants["reduce-overhead"] = (torch.compile(gc.get_model(model), mode="reduce-overhead"), "cuda-graphs")  # <-
    for label, (net, graph) in variants.items():
        runs.append(gc.train(cfg.replace(name=f"{model} {label}", model=model, graph=graph), net=net,
                             train_iter=train_iter, val_iter=val_iter, verbose=False))

# %% [markdown]
# ## Who gained more?
# Each compiled variant against the same network run eagerly (the speed-up column has each
# network's eager run as its base), judged against the runs' noise; the first epoch
# includes the compilation.

# %%
gc.show(runs, lesson="03")
gc.conclude("03", runs)   # the sentences, checked against the table: gpu_course/lessons/l03_graph.py

# %% [markdown]
# ## CUDA graphs by hand: the whole step, one launch
# `mode="reduce-overhead"` records the compiled step as a CUDA graph for you. Here is the
# same idea written out on the notebook's own loop, as the PyTorch docs' "whole network
# capture" does it. A graph replays fixed kernels on fixed addresses, so:
# - the step reads **static buffers** `x`, `y`; each batch is copied into them;
# - it is **warmed up on a side stream** first (memory allocated, cuDNN's algorithms
#   chosen, the optimizer's momentum created), because capture records, it does not run;
# - the gradients are set to `None` before **capture**, so the graph's backward writes
#   them in its own memory; SGD keeps its state on the GPU (Adam needs `capturable=True`);
# - **replay** runs forward, backward and the update with one launch; the learning rate
#   is baked in, so the loop keeps it constant;
# - the graph overwrites `loss` at each replay, so the record keeps a copy (on the GPU).
#
# CUDA graphs exist only on an NVIDIA GPU: on a CPU the cell says so and trains nothing.

# %%
import torch.nn.functional as F


def step(net, optimizer, x, y):                   # what the graph records
    loss = F.cross_entropy(net(x), y)
    loss.backward()
    optimizer.step()
    return loss


def train_by_hand(graph):
    parts = gc.build(cfg.replace(name=f"resnet20 by hand, {graph}", model="resnet20", graph=graph))
    net, train_iter, _, optimizer = parts
    if graph == "cuda-graphs":
        x, y = gc.to_device(*next(iter(train_iter)), parts.devices[0])   # <- the static buffers
        side = torch.cuda.Stream()                                    # <- warm up on a side stream
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                optimizer.zero_grad(set_to_none=True)
                step(net, optimizer, x, y)
        torch.cuda.current_stream().wait_stream(side)
        optimizer.zero_grad(set_to_none=True)                         # <- grads from the graph's memory
        captured = torch.cuda.CUDAGraph()
        with torch.cuda.graph(captured):                              # <- capture: recorded, not run
            loss = step(net, optimizer, x, y)
    with gc.record(parts, verbose=False) as rec:
        for epoch in rec.epochs():
            for xb, yb in rec.batches(train_iter):
                if graph == "cuda-graphs":
                    x.copy_(xb, non_blocking=True)                    # <- the batch into the buffers
                    y.copy_(yb, non_blocking=True)
                    captured.replay()                                 # <- the whole step: one launch
                    rec.step(len(yb), loss=loss.detach().clone())     # <- the next replay overwrites loss
                else:
                    xb, yb = gc.to_device(xb, yb, parts.devices[0])
                    optimizer.zero_grad(set_to_none=True)
                    rec.step(len(yb), loss=step(net, optimizer, xb, yb).detach())
            rec.end_epoch(sync=torch.cuda.synchronize)                # the epoch's one sync
    return rec.run


hand = [train_by_hand(graph) for graph in ("eager", "cuda-graphs")] if on_gpu else []
if hand:
    gc.show(hand, lesson="03", chart=False)
gc.conclude("03", by_hand=hand)   # checked: gpu_course/lessons/l03_graph.py

# %% [markdown]
# ## Exercise 03.1: compile a network the lesson did not
# `SIZES.exercise_model` (ResNet-56 at full size: the same blocks as ResNet-20, nearly three
# times as many) trains on `SIZES.exercise_size` images as written, then compiled. At the
# line marked `# >>>` compile the second copy (`torch.compile(..., backend=SIZES.compile_backend)`,
# as above), and **before you run** predict its samples/s against eager: `"faster"`,
# `"slower"` or `"same"` (mind the backend: smoke mode's `aot_eager` only traces, and
# the check then reports the runs without testing your prediction). Then compare its gain with the two networks above, and say why
# from the step time: compiling removes Python's work around each operator, not the
# operators' own.
#
# The check wants the two runs to differ in the graph alone, enough steady steps for a
# verdict against noise, and a prediction the runs do not contradict.
# `gc.solution("03.1")` shows an answer, after you have tried.

# %% tags=["exercise"]
ex_cfg = gc.Experiment(name="exercise", model=SIZES.exercise_model, batch_size=64,
                       num_workers=gc.workers(), **SIZES.replace(train_size=SIZES.exercise_size))
ex_train, ex_val = gc.load_data(ex_cfg)
eager = gc.get_model(ex_cfg)
compiled = None              # >>> the same network, compiled
prediction = None            # >>> before you run: "faster", "slower" or "same" against eager
mine = [gc.train(ex_cfg.replace(name=f"exercise: {ex_cfg.model} {label}"), net=net,
                 train_iter=ex_train, val_iter=ex_val, verbose=False)
        for label, net in (("eager", eager), ("compiled", compiled)) if net is not None]

# %% tags=["check"]
gc.check("03.1", mine, prediction)
