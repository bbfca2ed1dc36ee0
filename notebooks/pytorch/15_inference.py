# %% [markdown]
# # 15. Inference: latency against throughput
#
# **What this lesson measures.** Training asks how many images a second go through;
# serving asks two questions. How long does one request wait (its **latency**: the
# median, p50, and the slowest one in a hundred, p99)? And how many images a second can
# the machine answer (its **throughput**)? One request at a time (batch 1) answers each
# request as soon as it comes; a large batch makes the most of the hardware, and every
# request in it waits for the whole batch. We serve a few networks from the course's zoo
# both ways on the CPU with oneDNN off and on (lesson 11 timed only throughput), then with
# ONNX Runtime, and on a GPU eager against `torch.compile`, CUDA graphs and bfloat16. The
# weights are untrained but seeded, the same in every process, so the outputs of every
# variant can be compared on the same probe images.
#
# **The talk's numbers.** Its Intel table (MXNet 1.3, a 72-vCPU c5.18xlarge), ResNet-50
# v1: batch 1 took 97.19 ms without MKL-DNN and 13.04 ms with it (×7.45); batch 128 ran
# 10.29 images/s without and 163.52 with it (×15.90); top-1 and top-5 the same both ways.
# Its TensorRT table: ×1.21 for cifar_resnet20_v2 on a Titan V.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import copy
import io
import warnings
import torch
from gpu_course.env import report as env
from gpu_course import torch as gc

# %% tags=["parameters"]
SIZES = gc.sizes("15")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("15", requests=1000)

# %% [markdown]
# ## oneDNN off and on: one request at a time, and a batch
# Each network is served with oneDNN's kernels and without
# (`torch.backends.mkldnn.flags(enabled=False)`), each setting in a fresh process as in
# lesson 11. Batch 1 is timed for `requests` requests, each on its own; the large batch
# for `images` images. The table gives a pass's p50 and p99, the p50 of each fifth of the
# passes (the spread the verdicts judge against), p99/p50, images/s, the speed-up against
# oneDNN off, and the outputs against oneDNN off's on the same probe images.

# %%
cpu = env.cpu_facts()                      # the CPU model; logical, physical and usable cores
torch.set_num_threads(SIZES.threads or cpu["usable"])   # this kernel's threads, as the processes'
workload = gc.Workload(batches=(1, SIZES.batch), requests=SIZES.requests, images=SIZES.images,
                       warmup=SIZES.warmup)   # the same for every setting below
served = [r for flag in (False, True)      # a fresh process a setting:
          for r in env.infer("pytorch", SIZES.models, workload, onednn=flag,   # <- mkldnn.flags(enabled=flag)
                             threads=SIZES.threads)]
gc.show(served, lesson="15", chart=False)
gc.conclude("15", served, cpu=cpu)         # the sentences, checked: gpu_course/lessons/l15_inference.py

# %% [markdown]
# ## ONNX Runtime
# `torch.onnx.export` writes the network as an ONNX graph; ONNX Runtime, another engine,
# runs that graph with kernels of its own. Same weights, same probe images, as many
# threads as PyTorch had; the verdicts set it against PyTorch with oneDNN. The package is
# optional: where it is not installed the lesson says so and goes on.

# %%
try:
    import onnxruntime as ort             # pyproject.toml's torch extra pins it
except ImportError:
    ort = None
warnings.filterwarnings("ignore", "You are using the legacy TorchScript")   # dynamo=False needs onnx alone
onednn = [r for r in served if r["variant"] == "oneDNN on"]
onnx = []
if ort:
    options = ort.SessionOptions()
    options.intra_op_num_threads = SIZES.threads or cpu["usable"]
    for model in SIZES.models:
        graph = io.BytesIO()
        torch.onnx.export(gc.inference_net(model), (torch.zeros(1, 3, 32, 32),), graph,  # <- the graph, written
                          dynamo=False, input_names=["x"], dynamic_axes={"x": {0: "batch"}})
        session = ort.InferenceSession(graph.getvalue(), options)                    # <- another engine runs it
        onnx += gc.time_inference(lambda x: session.run(None, {"x": x.numpy()})[0], model,
                                  "ONNX Runtime", "cpu", workload)
gc.show(onednn + onnx, lesson="15", chart=False)
gc.conclude("15", onednn + onnx, not_installed=[] if ort else ["onnxruntime"])

# %% [markdown]
# ## On a GPU: eager, compiled, CUDA graphs, bfloat16
# A GPU call returns before its kernels have run (lesson 13), so each request is timed by
# two CUDA events around it and ended by one sync on the second; the large batch runs its
# passes back to back, an event between each, and one sync after the last. `warmup`
# untimed passes first: `torch.compile` compiles on the first call, and
# `mode="reduce-overhead"` records its CUDA graph on the second. At batch 1 a pass is
# short enough that launching its kernels can take longer than running them; a CUDA
# graph replays the whole pass with one launch. bfloat16 halves the bytes of every value.
# torch-tensorrt, where installed, adds a TensorRT row. Without a GPU the cell says what
# waits for one.

# %%
try:
    import torch_tensorrt                  # optional: needs the CUDA build of PyTorch it was made for
except ImportError:
    torch_tensorrt = None
device = gc.try_devices(1)[0][0]
on_gpu = []                                # stays empty without a GPU
if device.type == "cuda":
    for model in SIZES.gpu_models:
        torch.compiler.reset()             # each network compiles afresh
        net = gc.inference_net(model, device)
        variants = {"eager": (net, torch.float32),
                    "compiled": (torch.compile(net, dynamic=False), torch.float32),        # <- fused kernels
                    "CUDA graphs": (torch.compile(net, mode="reduce-overhead", dynamic=False),
                                    torch.float32),                                        # <- one launch a pass
                    "bfloat16": (copy.deepcopy(net).to(torch.bfloat16), torch.bfloat16)}  # <- half the bytes
        if torch_tensorrt:
            variants["TensorRT"] = (torch.compile(net, backend="tensorrt", dynamic=False), torch.float32)
        for name, (predict, dtype) in variants.items():
            on_gpu += gc.time_inference(predict, model, name, device,
                                        workload.replace(batches=(1, SIZES.gpu_batch)), dtype=dtype)
    gc.show(on_gpu, lesson="15", chart=False)
gc.conclude("15", gpu=on_gpu, not_installed=[] if torch_tensorrt else ["torch_tensorrt"])

# %% [markdown]
# ## Exercise 15.1: where does throughput stop growing?
# Serve `SIZES.exercise_model` on the CPU at a sweep of batch sizes of your choice (at
# least three, batch 1 among them), and name the **knee**: the smallest batch whose
# images/s is within 10% of the sweep's best, or within its noise. Write your guess down
# before you run; the check reads the table, accepts any knee the measurement supports
# against its noise, and says what a request at that batch waits.
# `gc.solution("15.1")` prints a solution.

# %% tags=["exercise"]
torch.set_num_threads(SIZES.threads or torch.get_num_threads())   # as the lesson's processes
net = gc.inference_net(SIZES.exercise_model)
batches = [1]                              # >>> at least three batch sizes, e.g. [1, 4, 16, 64]
mine = gc.time_inference(net, SIZES.exercise_model, "oneDNN on", "cpu", gc.Workload(
    batches=batches, requests=SIZES.requests, images=SIZES.images, warmup=SIZES.warmup))

# %% tags=["check"]
gc.show(mine, lesson="15", chart=False)
knee = None                                # >>> the batch where images/s stops growing
gc.check("15.1", mine, knee)
