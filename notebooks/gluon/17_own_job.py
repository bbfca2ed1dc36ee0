# %% [markdown]
# # 17. Your own job: why is my GPU idle?
#
# **What this lesson measures.** A job the course did not write: sentiment of short
# reviews, a bag of words and bigrams into a small MLP, on generated text
# ([jobs/gluon/text_job.py](../jobs/gluon/text_job.py), a plain script). It is
# diagnosed twice, the two ways you can use on your own scripts after the workshop:
#
# 1. unchanged, from the command line: `gpu-course watch -- python text_job.py`;
# 2. with two lines in its loop: `from gpu_course import gluon as gc` and
#    `for x, y in gc.watch(loader):`, then `gpu-course diagnose RUN`.
#
# Then one fix, the one the diagnosis names, against the job as written.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
from mxnet import autograd, gluon
from gpu_course import gluon as gc

JOBS = course_setup.repo_root() / "notebooks" / "jobs" / "gluon"
sys.path.insert(0, str(JOBS))
import text_job  # noqa: E402  (the plain script: its dataset and model)

# %% tags=["parameters"]
SIZES = gc.sizes("17")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("17", train_size=50_000)

# %% [markdown]
# ## 1. Unchanged: `gpu-course watch`
# The command runs as it is. Around it the course records GPU utilisation (SM activity
# where the GPU has it), memory and power, and the CPU time of the command's whole process
# tree, into a run folder with the utilisation timeline (`timeline.png`, lesson 01's
# picture). For a Python command it also times the DataLoader from inside (an import hook
# on the command's path): the data wait of each step, which utilisation alone cannot tell
# from a slow step on the CPU. Ctrl-C reaches the command, and its exit status is
# `gpu-course watch`'s.

# %%
!{sys.executable} -m gpu_course.cli watch -- {sys.executable} {JOBS / "text_job.py"} --examples {SIZES.train_size} --epochs {SIZES.epochs}

# %% [markdown]
# ## 2. Two lines in the loop: `gc.watch(loader)`
# The same dataset, model and loop, with the loader wrapped (`# <-`). Every pass over it is
# an epoch of one course run record: data wait and time of every step, the GPU monitor,
# and what can be read from the loader and the model. `gc.watch(loader).run` closes it
# (a script's closes when it ends); `gpu-course diagnose RUN` reads it like any run.

# %%
def train(num_workers, name):
    data = text_job.Reviews(SIZES.train_size)
    net = text_job.Model()
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 1e-3})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    loader = gluon.data.DataLoader(data, batch_size=64, shuffle=True, num_workers=num_workers)
    for epoch in range(SIZES.epochs):
        for ids, labels in gc.watch(loader, net=net, name=name):      # <- the one line
            with autograd.record():
                loss = loss_fn(net(ids), labels)
            loss.backward()
            trainer.step(ids.shape[0])
    return gc.watch(loader).run


as_written = train(num_workers=0, name="as written")
print(gc.diagnose.explain(as_written))

# %% [markdown]
# ## 3. One fix: loader workers (lesson 02)
# The tokenizer runs in `__getitem__`, in Python, every epoch; with `num_workers=0` the
# step waits for it. Workers tokenize the next batches while the step runs. Where every
# core is already busy, the diagnosis names the other fix: tokenize once, before training
# (lesson 09).

# %%
fixed = train(num_workers=gc.workers(), name="num_workers")       # <- the fix
gc.show([as_written, fixed], lesson="17", chart=False)
gc.conclude("17", [as_written, fixed])

# %% [markdown]
# ## On the command line
# The same two ways on your own job, after the workshop:
#
# ```bash
# gpu-course watch -- python train.py --your --flags     # unchanged; prints the view, exits with its status
# gpu-course diagnose RUN                                # a gc.watch run (RUN: its folder or id, `gpu-course runs`)
# ```
