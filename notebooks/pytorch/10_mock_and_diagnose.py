# %% [markdown]
# # 10. Mock components and an automatic diagnosis
#
# **What this lesson measures.** Before fixing anything, find out what the GPU waits for.
# The profiling lecture's method: time each step's wait for data against its compute, then
# replace one side with a mock to measure the other alone. A **mock loader** keeps one batch
# on the device and serves it forever: the *compute ceiling*. A **mock trainer** fetches
# batches and throws them away: the *input ceiling*. In gpu_course each is one flag
# (`mock="loader"`, `mock="trainer"`) on any experiment, and `gpu_course.analyse.diagnose` turns
# the numbers into a verdict (input-bound, compute-bound or overhead-bound) and the next
# rung to try. We run a deliberately input-bound job (loose JPEGs with heavy augmentation
# for a tiny network, one worker), follow the advice, and look at a deliberately
# compute-bound one (the mock loader).
#
# **The numbers to compare with** (a V100 in 2019, "The Steady State"): 1 worker 306
# samples/s; 29 workers 663; hybridized 941; float16 on 4 GPUs 7,400. The AWS Caltech-256
# sample: 1 worker 100 images/s with the GPU peaking at 50 %, 7 workers 300 images/s at
# about 95 %. Those came from 2019 machines; your numbers come from yours.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import time
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from gpu_course import torch as gc
from gpu_course.lessons import l09_input, l10_mocks as lesson

# %% tags=["parameters"]
FOLDER = None            # an image folder of your own, or None: lesson 9's generated one (written if missing)
SIZES = gc.sizes("10")   # GPU_COURSE_SMOKE=1 (what CI sets) makes every size small; override any: gc.sizes("10", epochs=3)

# %% [markdown]
# What we diagnose: one loader worker decoding loose JPEGs and augmenting each heavily
# (colour jitter and rotation on top of crop and flip) for a network too small to wait on.

# %%
cfg = gc.Experiment(name="heavy augmentation, tiny net", num_workers=1, augment="heavy",
                    model="tiny", data_dir=str(l09_input.photo_folder(SIZES.images, FOLDER)),
                    **SIZES)
train_set, val_set = gc.load_datasets(cfg)    # every image decoded and augmented in __getitem__
val_iter = gc.make_loader(val_set, cfg, train=False)

# %% [markdown]
# ## Timing the loop by hand
# Three clocks, as in the lecture: `t1` as the loop asks the DataLoader for a batch, `t2` once
# it has it, `t3` after the step. While the workers keep up, `t2 - t1` is small beside
# `t3 - t2`. Five steps in plain PyTorch; `loss.item()` waits for the step, so `t3` is honest.

# %%
device = gc.try_devices(1)[0][0]
net = gc.get_model(cfg).to(device)
optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
train_iter = DataLoader(train_set, batch_size=cfg.batch_size, shuffle=True, drop_last=True,
                        num_workers=cfg.num_workers)
batches = iter(train_iter)                # starts the worker
times = []                                # (t1, t2, t3) of each step
for _ in range(5):
    t1 = time.perf_counter()
    inputs, targets = next(batches)
    t2 = time.perf_counter()
    inputs, targets = inputs.to(device), targets.to(device)
    optimizer.zero_grad()
    loss = F.cross_entropy(net(inputs), targets)
    loss.backward()
    optimizer.step()
    loss.item()                           # sync point: waits for the step to finish
    times.append((t1, t2, time.perf_counter()))   # t3: the step is done
del batches
gc.tables.show(lesson.step_table(times))

# %% [markdown]
# The course's `StepTimer` takes these three times on every step of `gc.train`, beside a
# monitor and a run record. The job, then its ceilings: the same experiment with
# `mock="trainer"` (the input alone) and `mock="loader"` (the model alone). A ceiling bounds
# the job rather than improving on it, so no speed-up is shown for it.

# %%
run = gc.train(cfg, train_iter=train_iter, val_iter=val_iter, verbose=False)
ceilings = {mock: gc.train(cfg.replace(name=f"{cfg.name}: mock {mock}", epochs=1, mock=mock,  # <- one flag
                                       max_steps=SIZES.ceiling_steps),
                           train_iter=train_iter, val_iter=val_iter, verbose=False)
            for mock in ("trainer", "loader")}
gc.show([run, *ceilings.values()], lesson="10", chart=False)
gc.conclude("10", [run, *ceilings.values()])

# %% [markdown]
# ## What holds the job back
# `gc.diagnose.diagnose` reads the record: the data wait against the compute time, the
# ceilings recorded beside the run (the same settings with `mock` set), GPU utilisation and
# CPU load; its verdict comes with the numbers behind it and the rung to climb next. From a
# terminal: `gpu-course diagnose RUN`.

# %%
advice = gc.diagnose.diagnose(run)
print(advice)

# %% [markdown]
# ## Take the advice, then diagnose again
# `follow` turns the advice into the experiment: more DataLoader workers, or the photos
# resized or packed once; a compute rung is not this lesson's, so a cheaper augmentation
# stands in for it. A diagnosis that would not rule (too few steps, a run above its ceiling)
# asks for the same run again, and gets it.

# %%
fixed_cfg = lesson.follow(advice, cfg)           # the job with the next rung applied
fixed_set, _ = gc.load_datasets(fixed_cfg)       # its data format
fixed = gc.train(fixed_cfg, val_iter=val_iter, verbose=False,
                 train_iter=DataLoader(fixed_set, batch_size=cfg.batch_size, shuffle=True,
                                       drop_last=True, num_workers=fixed_cfg.num_workers))  # <- its workers
print(gc.diagnose.explain(fixed))

# %% [markdown]
# ## The mock loader, diagnosed
# Serving one batch forever, it never waits for data: compute-bound by construction, or
# overhead-bound where a GPU idles while Python launches the work. The diagnosis tells the
# two apart and names the compute rungs (compile, bfloat16, large-batch, all-gpus).

# %%
print(gc.diagnose.explain(ceilings["loader"]))

# %% [markdown]
# ## All of this lesson's runs
# Each run's verdict beside its numbers; whether taking the advice paid off is read against
# the noise of both runs, not off a single ratio.

# %%
gc.show([run, *ceilings.values(), fixed], lesson="10", chart=False)
gc.conclude("10", [run, *ceilings.values(), fixed], advice=advice)

# %% [markdown]
# ## Exercise 10.1: make the loader the bottleneck, on purpose
# Below, a job whose input is not its limit: this lesson's job (heavy augmentation, one
# worker, the tiny network) with its photos decoded once into memory, on
# `SIZES.exercise_size` images.
# At the line marked `# >>>` make **one** change to it that should make the loader the
# bottleneck (any setting of the Experiment: the data format, the augmentation, the
# workers...), and **before running** write down what `diagnose` will call your job:
# `"input-bound"`, `"compute-bound"` or `"overhead-bound"`. Once you have changed it, the
# cell trains the job as it is, then yours and its two ceilings; the check runs `diagnose`
# on them and rules on your verdict, accepting one that the runs' noise cannot rule out.
# After trying, `gc.solution("10.1")` shows one way.

# %% tags=["exercise"]
job = gc.Experiment(name="exercise", model="tiny", augment="heavy", data_format="memory", num_workers=1,
                    threads=SIZES.torch_threads,
                    data_dir=str(l09_input.photo_folder(SIZES.images, FOLDER)),
                    **SIZES.replace(train_size=SIZES.exercise_size, batch_size=SIZES.exercise_batch))
mine = job.replace()         # >>> one change that should make the loader the bottleneck: job.replace(...=...)
verdict = None               # >>> written before running: "input-bound", "compute-bound" or "overhead-bound"
tried = []
if mine != job:                                         # the job as it is, yours, and its two ceilings
    yours = mine.replace(name="exercise, changed")
    tried += [gc.train(job, verbose=False), gc.train(yours, verbose=False)]
    for mock in ("trainer", "loader"):
        tried.append(gc.train(yours.replace(name=f"{yours.name}: mock {mock}", mock=mock),   # <- one flag
                              verbose=False))

# %% tags=["check"]
gc.check("10.1", tried, verdict)
