"""The talk's numbers, once for every lesson: "The Steady State: reduce spikiness from GPU
utilization with Apache MXNet" (2019), ResNet on CIFAR-10, MXNet on V100s (p3 instances).

A closing sentence prints one with `say.quote(talk.SOURCE, value, fmt)`, and must name
the talk in the same line (`closing.Closing` refuses it otherwise). These are another
machine's numbers on another data set and budget: a lesson sets them beside the
attendee's run, never in its table's speed-up column.
"""
from __future__ import annotations

SOURCE = "the talk"
HARDWARE = "a V100"

# -- the ladder (one V100, batch 64 unless said) ----------------------------------------
NAIVE_SAMPLES_PER_SEC = 306          # 1 loader worker, imperative, float32
NAIVE_EPOCH_S = 40.97
NAIVE_4GPU_SAMPLES_PER_SEC = 392     # the same job on 4 GPUs: +28 %, starved by its one worker
WORKERS = 29                         # loader workers once the input was fixed
WORKERS_SAMPLES_PER_SEC = 663
HYBRID_SAMPLES_PER_SEC = 941         # net.hybridize()
HYBRID_EPOCH_S = 13.25
HYBRID_4GPU = (950, 1_266)           # 4 GPUs, imperative -> hybridized (samples/s)

# -- lesson 01 ------------------------------------------------------------------------------

# -- lesson 02 ------------------------------------------------------------------------------

# -- lesson 03 ------------------------------------------------------------------------------

# -- lesson 04 ------------------------------------------------------------------------------

# -- lesson 05 ------------------------------------------------------------------------------

# -- lesson 06 ------------------------------------------------------------------------------

# -- lesson 07 ------------------------------------------------------------------------------
# 1 GPU -> 4 GPUs at each rung of the ladder (samples/s, V100s)
SCALING = {"naive": (NAIVE_SAMPLES_PER_SEC, NAIVE_4GPU_SAMPLES_PER_SEC),
           "29 workers": (WORKERS_SAMPLES_PER_SEC, HYBRID_4GPU[0]),
           "hybridize": (HYBRID_SAMPLES_PER_SEC, HYBRID_4GPU[1]),
           "float16": (3_100, 7_400),
           "batch 640": (17_000, 50_000)}
SCALING_GPUS = 4
SCALING_BATCH = 640                  # per GPU, the rung that scaled best
WISELY = ((1, 3_200), (4, 3_400))    # "choose the number of GPUs wisely": (GPUs, samples/s)
# The course's anchor for a large network (not the talk's): ResNet-50 on an A100, PyTorch AMP
RESNET50_SOURCE = "the course's A100 anchor"
RESNET50_A100_SAMPLES_PER_SEC = 2_470
RESNET50_BATCH = 256
RESNET50_PARAMETERS = 25.6e6

# -- lesson 08 ------------------------------------------------------------------------------
# the talk's ladder, by the rung names of both tracks (one V100; "num-gpus": 4 V100s)
LADDER = {"naive": NAIVE_SAMPLES_PER_SEC, "workers": WORKERS_SAMPLES_PER_SEC,
          "hybridize": HYBRID_SAMPLES_PER_SEC, "compile": HYBRID_SAMPLES_PER_SEC,
          "float16": SCALING["float16"][0], "bfloat16": SCALING["float16"][0],
          "large-batch": SCALING["batch 640"][0],
          "num-gpus": SCALING["batch 640"][1], "all-gpus": SCALING["batch 640"][1]}

# -- lesson 09 ------------------------------------------------------------------------------

# -- lesson 10 ------------------------------------------------------------------------------

# -- lesson 11 ------------------------------------------------------------------------------

# -- lesson 12 ------------------------------------------------------------------------------
