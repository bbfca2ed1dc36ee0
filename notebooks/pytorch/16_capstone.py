# %% [markdown]
# # 16. Capstone: make a job you have not seen steady
#
# **The job.** Below is a training job the course has not run: a wide ResNet (WRN-16-10,
# ten times ResNet-20's width; without a GPU, the tiny convnet stands in, as in lesson 9)
# on lesson 9's folder of photos, loose JPEGs decoded one by one, with one loader worker,
# float32, the running loss read on the host in every step, and an eager loop. Its loop is
# written out in plain PyTorch; the lines marked `# >>>` are yours to change, and you may
# add lines beside them.
#
# **Your task.** Run it as given once: that run is the one yours is graded against. Then
# make it steady with what the lessons taught, and run the cell again. Find what holds it
# with `gc.diagnose` (lesson 10), then reach for the fixes: loader workers (lesson 2), a
# graph (lesson 3), lower precision (lesson 4), a larger batch (lesson 5), the input
# pipeline's formats (lesson 9), the process's threads (lesson 11), syncs (lesson 13).
# The network, the photos, their sizes and augmentation, and the machine are the job's:
# keep them.
#
# **The grading**, by the course's own tools on your last run against the job as given,
# both from their records (`gpu_course/lessons/l16_capstone.py`):
# 1. `diagnose` names no bottleneck the course can fix on your machine: the device is the
#    limit, or no rung is left;
# 2. a target chosen by the device the run trained on: without a GPU, the data wait below
#    the share from which `diagnose` calls the loader the limit; on a GPU, GPU-Util at the
#    lecture's 90 %;
# 3. it reaches the final validation accuracy of the job as given in a shorter training
#    time (warm-up and compilation included), beyond the runs' noise.
#
# Each criterion not met says what is wrong and which lesson's fix applies.
# `gc.solution("16.1")` shows one answer, once you have tried.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import torch
import torch.nn.functional as F
from gpu_course import torch as gc
from gpu_course.lessons import l09_input

# %% tags=["parameters"]
FOLDER = None            # your own image folder, or None: lesson 9's generated one (written if missing)
SIZES = gc.sizes("16")   # GPU_COURSE_SMOKE=1 (what CI sets) makes every size small; override any: gc.sizes("16", epochs=5)

# %% [markdown]
# ## Exercise 16.1: the job
# `gc.build(cfg)` makes what the Experiment describes (the network on the device, the
# loaders, SGD), `gc.record` keeps the run's record; the rest is the loop.

# %% tags=["exercise"]
torch.set_num_threads(SIZES.torch_threads or torch.get_num_threads())   # >>> the process's threads
cfg = gc.Experiment(name="capstone", model=SIZES.network if gc.gpu_count() else SIZES.cpu_network,
                    data_dir=str(l09_input.photo_folder(SIZES.images, FOLDER)),
                    num_workers=1, data_format="loose", **SIZES)      # >>> loader, data format, batch...
net, train_iter, val_iter, optimizer = parts = gc.build(cfg)
device = parts.devices[0]
model = net                                        # >>> what runs the forward pass
losses = []
with gc.record(parts, net=model, verbose=False) as rec:
    for epoch in rec.epochs():
        net.train()
        for x, y in rec.batches(train_iter):
            x, y = x.to(device), y.to(device)      # >>> the batch to the device
            out = model(x)                         # >>>
            loss = F.cross_entropy(out, y)         # >>>
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())             # >>> the running loss, read on the host
            rec.step(len(y), loss=loss.detach(), correct=(out.argmax(1) == y).sum())
        rec.end_epoch(sync=torch.cuda.synchronize if device.type == "cuda" else None,
                      evaluate=lambda: gc.evaluate(net, val_iter, parts.devices))
run = rec.run

# %% tags=["check"]
gc.check("16.1", run)

# %% [markdown]
# ## The evidence
# What `diagnose` reads in your last run (lesson 10): the data wait against the compute,
# the GPU's and the CPU's load, the ceilings where you measured them (the same experiment
# with `mock="loader"` or `mock="trainer"`, named after the run), and the rung it would
# climb next. From a terminal: `gpu-course diagnose RUN`.

# %%
print(gc.diagnose.explain(run))
