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

# -- lesson 08 ------------------------------------------------------------------------------

# -- lesson 09 ------------------------------------------------------------------------------

# -- lesson 10 ------------------------------------------------------------------------------

# -- lesson 11 ------------------------------------------------------------------------------
MKLDNN_HARDWARE = "a 72-vCPU c5.18xlarge"   # the talk's Intel table: MXNet 1.3, ResNet-50 v1
MKLDNN_SPEEDUP = {1: 7.5, 128: 15.9}         # batch -> images/s with MKL-DNN over without
LECTURE = "the lecture"                      # the profiling lecture's table of bandwidths
LECTURE_DISK_GB_S = 0.15                     # "a disk: about 150 MB/s"
LECTURE_NVME_GB_S = 3.0                      # "NVMe: about 3,000 MB/s"
LECTURE_PCIE_X8_GB_S = 5.0                   # a GPU on 8 PCIe lanes

# -- lesson 12 ------------------------------------------------------------------------------
