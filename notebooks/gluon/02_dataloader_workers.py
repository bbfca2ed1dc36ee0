# %% [markdown]
# # 2. More DataLoader workers: feed the GPU
#
# **What this lesson measures.** The same job as the baseline while the number of loader
# processes (`num_workers`) grows from 1 to `cpu_count() - 3`, the talk's advice (leave a
# few cores for the training loop and the system). For each count: samples/s, how spiky
# the GPU's utilisation is (its standard deviation; on a CPU-only machine the spread of the
# per-step times), where the curve stops paying (the knee) and what each worker costs in memory.
#
# **The talk's numbers** (a V100 in 2019): 1 worker 306 samples/s, 40.97 s per epoch;
# **29 workers 663 samples/s, 18.59 s per epoch**. An AWS sample on the same kind of GPU
# (ResNet-50, Caltech-256): 1 worker 100 images/s with the GPU peaking at 50 %, 7 workers
# 300 images/s with the GPU at about 95 %. Your numbers come from your machine.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
from mxnet import gluon
from gpu_course import gluon as gc
from gpu_course.lessons.l02_workers import worker_memory

# %% tags=["parameters"]
SIZES = gc.sizes("02")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("02", epochs=3)

# %% [markdown]
# ## The one change: `num_workers`
# A worker is a process of its own: it takes batch indices, reads and augments those
# images and passes the finished batch back through shared memory. Several workers make
# several batches at once, so one is waiting when the GPU is done with the last.
#
# Every step's data wait and compute are recorded with the run, so the spikiness shows on
# any machine, with or without a GPU. The counts swept: `SIZES.worker_counts` below the
# talk's advice, then the advice, `gc.workers()` (`cpu_count() - 3`, at least 2), whose
# run is named "workers": the ladder's rung, which lesson 08 sums up.

# %%
cfg = gc.Experiment(name="workers", model="resnet20", batch_size=64, **SIZES)
train_set, val_set = gc.load_datasets(cfg)
val_iter = gc.make_loader(val_set, cfg, train=False)
counts = [n for n in SIZES.worker_counts if n < gc.workers()] + [gc.workers()]
runs = []
for n in counts:
    loader = gluon.data.DataLoader(train_set, batch_size=64, shuffle=True,
                                   last_batch="discard", num_workers=n)   # <- the lesson
    name = "workers" if n == gc.workers() else f"num_workers={n}"
    runs.append(gc.train(cfg.replace(name=name, num_workers=n), net=gc.get_model("resnet20"),
                         train_iter=loader, val_iter=val_iter, verbose=False))

# %%
gc.plots.sweep(runs, x="num_workers")

# %% [markdown]
# The fewest workers' steps, then the most workers': with too few, the slow steps are
# the ones that waited for their batch.

# %%
display(gc.plots.step_times(runs[0]), gc.plots.step_times(runs[-1]))

# %% [markdown]
# ## What a worker costs in memory
# Each worker is a forked process. Its resident set (RSS) includes the pages it still
# shares with the notebook; its unique set (USS) is what it adds by itself.
# `worker_memory` builds each loader, takes one batch from it and reads the processes
# that appeared (psutil).

# %%
memory = worker_memory(lambda n: gluon.data.DataLoader(train_set, batch_size=64, num_workers=n),
                       counts)
gc.tables.show(memory)

# %% [markdown]
# ## Spikiness and the knee
# A GPU that waits for data swings between 100 % and 0 %, so its utilisation has a large
# standard deviation; fed well, it stays flat near the top (on a CPU, the spread of the
# step times stands in). The knee is the fewest workers within 10 % of the best
# samples/s; past it, workers cost memory and cores and buy little. More workers can save
# at most the data wait: a gain beyond that, or one read across runs of which only one
# shared the machine with other programs, is not the workers', and the closing says so
# rather than credit them (`gpu_course/lessons/l02_workers.py`).

# %%
gc.show(runs, lesson="02", chart=False)
gc.conclude("02", runs, memory=memory)

# %% [markdown]
# ## A large batch with one worker
# From the talk's slide (not measured here): its 4-GPU job, batch 640 on each GPU, ran at
# 50,000 samples/s (4.0 s an epoch) with 29 workers and fell to about 1,500 samples/s (60+
# s an epoch) with **one**. A large batch asks for many images a step, and a single
# worker makes them one by one. Here: batch `SIZES.large_batch`, one worker against the
# talk's advice.

# %%
large = []
for n in (1, gc.workers()):
    loader = gluon.data.DataLoader(train_set, batch_size=SIZES.large_batch, shuffle=True,
                                   last_batch="discard", num_workers=n)   # <- many images a step
    large.append(gc.train(cfg.replace(name=f"batch {SIZES.large_batch}, num_workers={n}",
                                      batch_size=SIZES.large_batch, num_workers=n),
                          net=gc.get_model("resnet20"), train_iter=loader, val_iter=val_iter,
                          verbose=False))
gc.show(large, lesson="02", chart=False)
gc.conclude("02", large)

# %% [markdown]
# ## Exercise 02.1: where does the curve bend on your machine?
# Your own sweep, on `SIZES.exercise_size` images. At the line marked `# >>>`, give three
# or more numbers of loader processes (none, a couple, the talk's advice `gc.workers()`,
# and more where the cores allow). Guess first, from lesson 01's data wait, where the
# knee will be; run; then read the table shown under the check and name the knee: the
# fewest processes within 10 % of the fastest (or within its noise). Say why from the
# data wait: extra processes can only take away waiting for batches.
#
# Any knee the runs support against their noise passes; anything else gets an
# explanation. `gc.solution("02.1")` prints one worked answer once you have tried.

# %% tags=["exercise"]
few = SIZES.replace(train_size=SIZES.exercise_size)   # fewer images than the lesson
ex = gc.Experiment(name="exercise", model=SIZES.exercise_model, batch_size=64, **few)
images, _ = gc.load_datasets(ex)
processes = [1]              # >>> three or more numbers of loader processes
tried = []
for n in processes:
    batches = gluon.data.DataLoader(images, batch_size=64, shuffle=True, last_batch="discard",
                                    num_workers=n)                       # <-
    tried.append(gc.train(ex.replace(name=f"exercise: {n} loader process(es)", num_workers=n),
                          net=gc.get_model(ex), train_iter=batches, verbose=False))

# %% tags=["check"]
gc.show(tried, lesson="02", chart=False)
knee = None                  # >>> your knee, from the table
gc.check("02.1", tried, knee)
