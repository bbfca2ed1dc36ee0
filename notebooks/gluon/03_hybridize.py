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

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
from gpu_course import gluon as gc

# %% tags=["parameters"]
SIZES = gc.sizes("03")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("03", epochs=5)

# %% [markdown]
# ## The one change: `net.hybridize(...)`
# The network code does not change: GluonCV's ResNet is built from `HybridBlock`s, so the
# same object runs either way. Each variant starts from a fresh, untrained network and
# reads the same loaders; the first hybridized steps build the graph, so they are left out
# of samples/s (`warmup_steps`) but not out of the epoch time.

# %%
cfg = gc.Experiment(name="graph", batch_size=64, num_workers=gc.workers(), **SIZES)
train_iter, val_iter = gc.load_data(cfg)
runs = []
for model in ("resnet20", "tiny"):
    imperative = gc.get_model(model)                          # runs op by op from Python
    hybrid = gc.get_model(model)
    hybrid.hybridize()                                        # <- traced once into a graph
    static = gc.get_model(model)
    static.hybridize(static_alloc=True, static_shape=True)    # <- graph + memory plan kept between steps
    for label, net in (("imperative", imperative), ("hybridize()", hybrid), ("static", static)):
        runs.append(gc.train(cfg.replace(name=f"{model} {label}", model=model), net=net,
                             train_iter=train_iter, val_iter=val_iter, verbose=False))

# %% [markdown]
# ## Who gained more?
# Each variant against the same network run imperatively (the speed-up column has each
# network's imperative run as its base), judged against the runs' noise.

# %%
gc.show(runs, lesson="03")
gc.conclude("03", runs)   # the sentences, checked against the table: gpu_course/lessons/l03_graph.py

# %% [markdown]
# ## Exercise 03.1: hybridize a third network
# The network `SIZES.exercise_model` (ResNet-56 at full size: ResNet-20's blocks, close to
# three times as many of them) trains on `SIZES.exercise_size` images imperatively and
# then as a graph. Hybridize the second copy at the line marked `# >>>` (with
# `static_alloc=True, static_shape=True`, as above), and **before running** guess its
# samples/s against the imperative copy: `"faster"`, `"slower"` or `"same"`. Afterwards
# set its gain beside ResNet-20's and the tiny network's and explain it from the step
# time: a graph saves the Python work around each operator, never the operator itself.
#
# The check asks for two runs that differ only in the graph, steps enough for a noise
# verdict, and a guess the runs do not contradict. After trying, `gc.solution("03.1")`.

# %% tags=["exercise"]
few = SIZES.replace(train_size=SIZES.exercise_size)   # fewer images than the lesson
ex = gc.Experiment(name="exercise", model=SIZES.exercise_model, batch_size=64,
                   num_workers=gc.workers(), **few)
ex_train, ex_val = gc.load_data(ex)
imperative = gc.get_model(ex)
graph = gc.get_model(ex)     # >>> hybridize this copy
guess = None                 # >>> written before running: "faster", "slower" or "same"
tried = [gc.train(ex.replace(name=f"exercise: {ex.model} {label}"), net=net, train_iter=ex_train,
                  val_iter=ex_val, verbose=False)
         for label, net in (("imperative", imperative), ("hybridized", graph))]

# %% tags=["check"]
gc.check("03.1", tried, guess)
