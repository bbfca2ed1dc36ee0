# %% [markdown]
# # 3. Hybridize: from imperative to symbolic
#
# **What this lesson measures.** A Gluon network runs *imperatively*: Python calls one
# operator after another. `net.hybridize()` traces it once into a symbolic graph that
# MXNet's engine runs without Python in the loop, can fold operators together and plan
# memory for; `hybridize(static_alloc=True, static_shape=True)` also keeps the memory and
# the execution plan from one step to the next. We train three ways (imperative, hybridized,
# hybridized with static memory and shapes) and do it for two networks: ResNet-20 and a
# four-layer "tiny" convnet.
#
# **The talk's numbers** (a V100 in 2019, 29 workers, batch 64): imperative 663 samples/s,
# **hybridized 941 samples/s, 13.25 s per epoch** (×1.4); with 4 GPUs 950 → 1,266. The talk
# adds that symbolic graphs help most for *small networks and small batches*, where Python's
# per-operator overhead is a large part of each step. The second network checks that claim
# on your machine.

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

# %%
from gpu_course import gluon as gc

cfg = gc.Experiment(name="hybridize", dataset=DATASET, train_size=TRAIN_SIZE, test_size=TEST_SIZE,
                    epochs=EPOCHS, batch_size=64, num_workers=WORKERS,
                    warmup_steps=3 if SMOKE else 10,   # the first hybridized step builds the graph
                    monitor_interval=0.2 if SMOKE else 0.5)
train_iter, val_iter = gc.load_data(cfg)

# %% [markdown]
# ## The one change: `net.hybridize(...)`
# The network code does not change: GluonCV's ResNet is built from `HybridBlock`s, so the
# same object can run either way. Each variant starts from a fresh, untrained network.

# %%
def three_ways(model):
    """Train `model` imperatively, hybridized, and hybridized with static memory/shapes."""
    imperative = gc.get_model(model)                       # runs op by op from Python
    hybrid = gc.get_model(model)
    hybrid.hybridize()                                     # traced once into a graph
    static = gc.get_model(model)
    static.hybridize(static_alloc=True, static_shape=True) # graph + memory plan kept between steps
    runs = []
    for label, net in (("imperative", imperative), ("hybridize()", hybrid), ("static", static)):
        name = "hybridize" if (model, label) == ("resnet20", "static") else f"{model} {label}"
        runs.append(gc.train(cfg.replace(name=name, model=model), net=net,
                             train_iter=train_iter, val_iter=val_iter, verbose=False))
        print(f"{model:8s} {label:12s} {gc.report.samples_per_sec(runs[-1]):9,.1f} samples/s")
    return runs

resnet_runs = three_ways("resnet20")
tiny_runs = three_ways("tiny")

# %%
gc.plots.throughput(resnet_runs + tiny_runs)

# %% [markdown]
# ## Who gained more?
# Each variant against the same network run imperatively (the speed-up column has each
# network's imperative run as its base), judged against the runs' noise.

# %%
import pandas as pd
table = pd.concat([gc.report.ladder_table(resnet_runs), gc.report.ladder_table(tiny_runs)],
                  ignore_index=True)
gc.tables.show(table)

# %%
say = gc.closing.Closing(table, resnet_runs + tiny_runs)   # prints a line only when its numbers are the table's
best = {}
for model, runs in (("ResNet-20", resnet_runs), ("tiny net", tiny_runs)):
    verdicts = {run.name: say.compare(runs[0], run) for run in runs[1:]}
    for name, verdict in verdicts.items():
        say(f"{model}, '{name}' against imperative: {verdict}.")
    best[model] = max(verdicts.values(), key=lambda v: v.ratio)   # its better hybridized variant
ops = {m: len(gc.get_model(m).collect_params().keys()) for m in ("resnet20", "tiny")}
order = gc.noise.ranked(best["tiny net"], best["ResNet-20"])
if not any(v.is_effect for v in best.values()):
    say("Neither network's better hybridized variant differs from its imperative run beyond noise.")
elif order == "within noise":
    say("Which network gained more is within noise: the ranges of their better variants overlap.")
elif order == "higher":
    say(f"The tiny net gained more, beyond both ranges, as the talk says: with {ops['tiny']} parameter "
        f"arrays against ResNet-20's {ops['resnet20']} it does little work per operator, so Python's "
        "per-operator overhead, which hybridize removes, is a larger share of each step.")
else:
    say("ResNet-20 gained more, beyond both ranges: unlike the talk's rule of thumb (small networks "
        "and small batches gain most).")
if not gc.gpu_count():
    say("(Measured on the CPU, where there are no kernel launches to save; the talk's numbers are a "
        "V100's.)")
