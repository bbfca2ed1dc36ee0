"""The talk's numbers, once for every lesson: "The Steady State" (2019), ResNet on CIFAR-10,
MXNet on V100s. Another machine's numbers: quoted, never in a speed-up column."""
from __future__ import annotations

from ..rungs import GRAPH, PRECISION, RungName

SOURCE = "the talk"
HARDWARE = "a V100"

# -- the ladder (one V100, batch 64 unless said) ----------------------------------------
NAIVE_SAMPLES_PER_SEC = 306          # 1 loader worker, imperative, float32
NAIVE_4GPU_SAMPLES_PER_SEC = 392     # the same job on 4 GPUs: +28 %, starved by its one worker
WORKERS = 29                         # loader workers once the input was fixed
WORKERS_SAMPLES_PER_SEC = 663
HYBRID_SAMPLES_PER_SEC = 941         # net.hybridize()
HYBRID_4GPU = (950, 1_266)           # 4 GPUs, imperative -> hybridized (samples/s)

# -- lesson 04 ------------------------------------------------------------------------------
FLOAT32_SAMPLES_PER_SEC = HYBRID_SAMPLES_PER_SEC   # hybridized, float32, batch 64
FLOAT16_SAMPLES_PER_SEC = 3_100      # net.cast('float16') + multi_precision, one V100

# -- lesson 05 ------------------------------------------------------------------------------
WORKLOAD = "ResNet on CIFAR-10"      # what the talk trained (the lessons may train another)
# batch per GPU -> (val acc, epoch seconds) after 3 epochs of plain SGD on one V100
BATCH_TABLE = {64: (0.7131, 27.5), 128: (0.7139, 14.5), 256: (0.6882, 8.3),
               512: (0.6588, 6.4), 1280: (0.6082, 6.5)}
LARGE_BATCH = 640                    # every earlier fix in place, one V100:
LARGE_BATCH_SAMPLES_PER_SEC = 17_000  # with 29 loader workers
LARGE_BATCH_ONE_WORKER = 1_500       # with one worker (60+ s per epoch)

# -- lesson 07 ------------------------------------------------------------------------------
# 1 GPU -> 4 GPUs at each rung of the talk's ladder (samples/s, V100s): its workers rung
# had WORKERS loader workers, its large-batch rung LARGE_BATCH images a GPU
SCALING = {RungName.NAIVE: (NAIVE_SAMPLES_PER_SEC, NAIVE_4GPU_SAMPLES_PER_SEC),
           RungName.WORKERS: (WORKERS_SAMPLES_PER_SEC, HYBRID_4GPU[0]),
           RungName.HYBRIDIZE: (HYBRID_SAMPLES_PER_SEC, HYBRID_4GPU[1]),
           RungName.FLOAT16: (FLOAT16_SAMPLES_PER_SEC, 7_400),
           RungName.LARGE_BATCH: (LARGE_BATCH_SAMPLES_PER_SEC, 50_000)}
SCALING_GPUS = 4
SCALING_BATCH = 640                  # per GPU, the rung that scaled best
# The course's anchor for a large network (not the talk's): ResNet-50 on an A100, PyTorch AMP
RESNET50_A100_SAMPLES_PER_SEC = 2_470
RESNET50_BATCH = 256
RESNET50_PARAMETERS = 25.6e6

# -- lesson 08 ------------------------------------------------------------------------------
# the talk's ladder (samples/s, one V100; all-gpus: SCALING_GPUS V100s), each rung under
# both tracks' names for it (Gluon's hybridize is PyTorch's compile, ...)
LADDER = {**{rung: one for rung, (one, _) in SCALING.items()},
          GRAPH["pytorch"]: SCALING[GRAPH["gluon"]][0],
          PRECISION["pytorch"]: SCALING[PRECISION["gluon"]][0],
          RungName.ALL_GPUS: SCALING[RungName.LARGE_BATCH][1]}

# -- lesson 09 ------------------------------------------------------------------------------
LECTURE = "the profiling lecture"    # its rule of thumb for read bandwidth
LECTURE_DISK_MB_S = 150              # a disk
LECTURE_NVME_MB_S = 3_000            # NVMe

# -- lesson 11 ------------------------------------------------------------------------------
MKLDNN_HARDWARE = "a 72-vCPU c5.18xlarge"   # the talk's Intel table: MXNet 1.3, ResNet-50 v1
MKLDNN_SPEEDUP = {1: 7.45, 128: 15.90}       # batch -> images/s with MKL-DNN over without
LECTURE_DISK_GB_S = LECTURE_DISK_MB_S / 1000   # the lecture's disk and NVMe (lesson 09's), in GB/s
LECTURE_NVME_GB_S = LECTURE_NVME_MB_S / 1000
LECTURE_PCIE_X8_GB_S = 5.0                   # a GPU on 8 PCIe lanes

# -- lesson 14 ------------------------------------------------------------------------------
# the slide "Imperative vs Symbolic": a = ones(10); b = ones(10) * 2; c = b * a; d = c + 1,
# numbers of 8 bytes: imperative 4 * 10 * 8 bytes (every interim value kept), symbolic 2 * 10 * 8
MEMORY_EXAMPLE = {"code": "c = b * a; d = c + 1", "imperative_bytes": 320,
                  "symbolic_bytes": 160}

# -- lesson 15 ------------------------------------------------------------------------------
# The talk's "Intel CPU - Speed" table (MXNet 1.3 with and without MKL-DNN, a 72-vCPU
# c5.18xlarge), its ResNet-50 v1 row; and its accuracy table (gluon model zoo weights)
MKLDNN_NETWORK = "ResNet-50 v1"
MKLDNN_MXNET = "1.3"
MKLDNN_LATENCY_MS = (97.19, 13.04)        # batch 1, ms: without, with MKL-DNN
MKLDNN_THROUGHPUT = (10.29, 163.52)       # batch 128, images/s: without, with MKL-DNN
MKLDNN_BATCH = 128
MKLDNN_TOP1 = 0.76062500                  # ResNet-50 V1 top-1, the same with and without
MKLDNN_TOP5 = 0.93046875                  # ... and top-5
# The talk's TensorRT table: speed-up over MXNet without it, one network a row
TENSORRT_HARDWARE = "a Titan V"
TENSORRT_SPEEDUP = {"cifar_resnet20_v2": 1.21}
