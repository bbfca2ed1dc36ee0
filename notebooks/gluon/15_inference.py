# %% [markdown]
# # 15. Inference: latency against throughput
#
# **What this lesson measures.** Training asks how many images a second go through;
# serving asks two questions. How long does one request wait (its **latency**: the
# median, p50, and the slowest one in a hundred, p99)? And how many images a second can
# the machine answer (its **throughput**)? One request at a time (batch 1) answers each
# request as soon as it comes; a large batch makes the most of the hardware, and every
# request in it waits for the whole batch. We serve a few networks from the course's zoo
# (GluonCV's CIFAR ResNets) both ways on the CPU with oneDNN (formerly MKL-DNN) off and on,
# where lesson 11 timed only throughput. The weights are untrained but seeded, the same in
# every process, so the outputs with and without oneDNN can be compared on the same probe
# images. The GPU part of this lesson (eager, compiled, CUDA graphs, bfloat16) is the
# PyTorch track's: this MXNet wheel cannot run on today's GPUs.
#
# **The talk's numbers.** Its Intel table (MXNet 1.3, a 72-vCPU c5.18xlarge), ResNet-50
# v1: batch 1 took 97.19 ms without MKL-DNN and 13.04 ms with it (×7.45); batch 128 ran
# 10.29 images/s without and 163.52 with it (×15.90); top-1 and top-5 the same both ways.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import mxnet as mx
from gpu_course.env import report as env
from gpu_course import gluon as gc

# %% tags=["parameters"]
SIZES = gc.sizes("15")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("15", requests=1000)

# %% [markdown]
# ## oneDNN off and on: one request at a time, and a batch
# MXNet reads `MXNET_MKLDNN_ENABLED` once, when it starts, so each setting is served by a
# fresh process (as in lesson 11), the network hybridized (lesson 3). Batch 1 is timed for
# `requests` requests, each on its own and ended by its own sync (`wait_to_read()`: the
# engine queues work on a CPU too); the large batch for `images` images. The table gives
# a pass's p50 and p99, the p50 of each fifth of the passes (the spread the verdicts judge
# against), p99/p50, images/s, the speed-up against oneDNN off, and the outputs against
# oneDNN off's on the same probe images.

# %%
cpu = env.cpu_facts()                      # the CPU model; logical, physical and usable cores
workload = gc.Workload(batches=(1, SIZES.batch), requests=SIZES.requests, images=SIZES.images,
                       warmup=SIZES.warmup)   # the same for every setting
served = [r for flag in (False, True)      # a fresh process a setting:
          for r in env.infer("gluon", SIZES.models, workload, onednn=flag,   # <- MXNET_MKLDNN_ENABLED=flag
                             threads=SIZES.threads)]
gc.show(served, lesson="15", chart=False)
gc.conclude("15", served, cpu=cpu)         # the sentences, checked: gpu_course/lessons/l15_inference.py

# %% [markdown]
# ## Exercise 15.1: where does throughput stop growing?
# Serve `SIZES.exercise_model` in this process (oneDNN as MXNet started: on) at a sweep of
# batch sizes of your choice (at least three, batch 1 among them), and name the **knee**:
# the smallest batch whose images/s is within 10% of the sweep's best, or within its
# noise. Write your guess down before you run; the check reads the table, accepts any knee
# the measurement supports against its noise, and says what a request at that batch
# waits. `gc.solution("15.1")` prints a solution.

# %% tags=["exercise"]
net = gc.inference_net(SIZES.exercise_model)
batches = [1]                              # >>> at least three batch sizes, e.g. [1, 4, 16, 64]
mine = gc.time_inference(net, SIZES.exercise_model, "oneDNN on", mx.cpu(), gc.Workload(
    batches=batches, requests=SIZES.requests, images=SIZES.images, warmup=SIZES.warmup))

# %% tags=["check"]
gc.show(mine, lesson="15", chart=False)
knee = None                                # >>> the batch where images/s stops growing
gc.check("15.1", mine, knee)
