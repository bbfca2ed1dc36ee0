"""Lesson 14: where a training step's memory goes, and three ways to need less.

Each run notes its memory in its record (read by `analyse.memory`), in bytes above what was
live before the network existed. Four readings: batch sizes (`SWEEP`), gradient accumulation
(`ACCUMULATION`), activation checkpointing (`CHECKPOINTING`) and a graph (`GRAPH`).
"""
from __future__ import annotations

from ..analyse import alike
from ..analyse.memory import accumulation_runs, memory_of
from ..analyse.memory_table import table
from ..show.closing import Closing
from ..show.findings import Compare, Expect, Lesson, Metric, Note, Outcome, Quote, Sign, judge
from . import talk, workers

SIZES = {
    "full": dict(model="resnet20", train_size=24_576, test_size=64, epochs=1,
                 batches=(64, 256, 1024),   # the sweep's batch sizes; the last is "the large batch"
                 accumulate=4,              # micro-batches an update: 4 x 256 against 1024
                 sweep_steps=6,             # steps of each sweep run (memory needs few)
                 readings=3,                # measured steps after training, each read alone
                 segments=7,                # checkpointed pieces of the network's features: each its own
                 compile_backend="inductor",
                 warmup_steps=3, num_workers=workers(), torch_threads=None),
    # a small CNN and 24 updates of 16 images (22 steady: enough for a speed verdict)
    "smoke": dict(model="tiny", train_size=384, test_size=64, epochs=1, batches=(4, 16),
                  accumulate=4, sweep_steps=3, readings=2, segments=3,
                  compile_backend="aot_eager",   # inductor compiles for minutes on 2 cores
                  warmup_steps=2, num_workers=0, torch_threads=1),
    # the GPU check (GPU_COURSE_SIZE=check): full settings, one update fewer
    "check": dict(train_size=23_552),    # 23 updates of 1024: 20 steady, the least a speed verdict takes
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("accumulate", "batches", "compile_backend", "readings", "segments", "sweep_steps",
             "torch_threads")


AMOUNTS = dict(gpu=Expect.LESS, cpu=Expect.LESS)
ON_A_GPU = {  # said where no run had a GPU: what the lesson reads on one
    "pytorch": "No GPU here. On one the lesson also reads the CUDA caching allocator's own peak "
               "(torch.cuda.max_memory_allocated), saves a snapshot for the PyTorch memory "
               "viewer (torch.cuda.memory._record_memory_history) and says how close the peak "
               "comes to the device's memory.",
    "gluon": "No GPU here. On one the lesson reads the device's used memory "
             "(mx.context.gpu_memory_info: MXNet's pool keeps what it allocated, so the reading "
             "is the high-water mark) and says how close the peak comes to the device's memory."}
HELD_MORE = ("Between steps the counter held more than the model counts: the rest is the "
             "framework's (kernels' workspace and caches, the loader's batches")
SWEEP = Lesson(
    compares=(Compare(
        varies=("batch_size",), metric=Metric.ACTIVATIONS_PER_IMAGE,
        gpu=Expect.SAME, cpu=Expect.SAME,
        means={Outcome.EXPECTED: "Per image the activations stayed the same: they grow with "
                                 "the batch, so a larger batch buys its speed with activation "
                                 "memory.",
               Outcome.OPPOSITE: "Per image the activations changed with the batch: what else "
                                 "a step allocates (workspace, buffers, the allocator's "
                                 "rounding) does not grow with it.",
               Outcome.CANNOT_JUDGE: "The smaller batch raised the counter by nothing it could "
                                     "see (a process's peak stays where an earlier step left "
                                     "it): measure it first, in a fresh process, or on a GPU, "
                                     "whose allocator counts each step."}),),
    columns={"activations_mib": "Activations at the peak, MiB"},
    last_row={"peak_mib": "peak {} MiB", "counter": "by {}", "parameters_mib": "parameters {} MiB",
              "gradients_mib": "gradients {} MiB",
              "optimizer_state_mib": "optimizer state {} MiB (these three counted from the "
                                     "model: elements × bytes)",
              "activations_mib": "activations {} MiB", "activations_share": "{} of the peak",
              "held_mib": "held between steps {} MiB",
              "held_counted_mib": "of which the model counts {} MiB",
              "reserved_mib": "reserved by the caching allocator {} MiB (what nvidia-smi "
                              "shows, less the CUDA context)",
              "device_mib": "the device's memory {} MiB", "device_share": "the peak {} of it",
              "activations_per_image_mib": "activations an image {} MiB",
              "fills_device_batch": "about {} images a step would fill the device",
              "snapshot": "the last step's memory snapshot {} in the run's folder (open it in "
                          "https://pytorch.org/memory_viz to see each allocation's line)"},
    by_sign={"counted_gap": {
                 Sign.OTHER: "The counter's parts are those counted from the model, to within "
                             "a percent.",
                 Sign.POSITIVE: "The counter's parts differ from those counted from the model: "
                                "a part it sorts elsewhere, or state created lazily."},
             "held_rest_mib": {
                 Sign.POSITIVE: {"gluon": HELD_MORE + ", a static graph's buffers).",
                                 "pytorch": HELD_MORE + ")."},
                 Sign.OTHER: "Between steps the counter held no more than the model counts: a "
                             "counted part was freed after the update, or not yet created."},
             "allocator_retries": {
                 Sign.POSITIVE: "The caching allocator freed its cache and retried cudaMalloc, "
                                "which is slow: this run is too near the device's limit.",
                 Sign.OTHER: "No cudaMalloc had to be retried."},
             "fills_device_batch": {
                 Sign.POSITIVE: "Stay well below the batch that fills the device (the "
                                "lecture): near it the allocator retries, memory fragments and "
                                "the next larger batch runs out of memory."}},
    cpu=ON_A_GPU,
)
ACCUMULATION = Lesson(
    compares=(
        Compare(varies=("batch_size", "accumulate"), metric=Metric.PEAK, **AMOUNTS,
                means={Outcome.EXPECTED: "One micro-batch's activations are alive at a time, "
                                         "the gradients across all of them: the peak falls "
                                         "with the micro-batch.",
                       Outcome.NONE: "The peak did not fall beyond noise: what the model "
                                     "holds outweighs one batch's activations here."}),
        Compare(varies=("batch_size", "accumulate"), metric=Metric.ACTIVATIONS, **AMOUNTS,
                means={}),
        Compare(varies=("batch_size", "accumulate"), gpu=Expect.SLOWER, cpu=Expect.SLOWER,
                means={Outcome.EXPECTED: "The cost: smaller forward passes use the device (or "
                                         "cores) less well, and each update's fixed work stays.",
                       Outcome.NONE: "No cost in speed beyond noise here."})),
    last_row={"accumulate": "{} micro-batches", "micro_batch": "of {} images",
              "update_batch": "added up into one update of {}", "updates": "over {} updates",
              "loss_gap": "its loss {} from the large batch's (mean absolute difference, "
                          "update by update)",
              "seed_loss_gap": "another seed of the large batch {} from it"},
    by_sign={"loss_gap_beyond_seed": {
        Sign.OTHER: "The loss followed the large batch's within a seed's noise: the same images "
                    "make each update and the gradients add up to the large batch's, but for "
                    "BatchNorm's statistics, computed per micro-batch.",
        Sign.POSITIVE: "The loss strayed from the large batch's beyond another seed's noise: "
                       "BatchNorm's statistics come from each micro-batch, which shows with few "
                       "images; without BatchNorm (or with GroupNorm) it would match.",
        Sign.EMPTY: "The loss curves cannot be compared: a run noted none, or they have "
                    "different numbers of updates."}},
)
CHECKPOINTING = Lesson(
    compares=(
        Compare(varies=("checkpoint",), metric=Metric.ACTIVATIONS, **AMOUNTS,
                means={Outcome.EXPECTED: "Each checkpointed segment keeps only its input and "
                                         "runs its forward pass again in the backward pass.",
                       Outcome.NONE: "The activations did not shrink beyond noise: the "
                                     "segments' inputs weigh as much as what they free, or the "
                                     "largest segment, recomputed, sets the peak anyway."}),
        Compare(varies=("checkpoint",), metric=Metric.PEAK, **AMOUNTS,
                means={Outcome.EXPECTED: "The largest segment sets a floor under the peak "
                                         "(recomputed, its activations are all alive again); "
                                         "more segments lower it."}),
        Compare(varies=("checkpoint",), gpu=Expect.SLOWER, cpu=Expect.SLOWER,
                means={Outcome.EXPECTED: "Memory for time: each segment runs forward twice, "
                                         "worth it where the memory buys a batch or a network "
                                         "that did not fit.",
                       Outcome.NONE: "The recomputation's time is within the runs' noise here "
                                     "(more images, or a quiet machine, would tell)."})),
    baseline={"checkpoint": 0},
    last_row={"checkpoint_segments": "checkpointed in {} segments"},
)
GRAPH_VARIES = ("graph", alike.Aspect.COMPILE_BACKEND)
GRAPH = Lesson(
    compares=(
        Compare(varies=GRAPH_VARIES, metric=Metric.PEAK, **AMOUNTS,
                means={Outcome.EXPECTED: {
                           "gluon": "The graph plans its buffers once and reuses one for "
                                    "values whose lifetimes do not overlap.",
                           "pytorch": "The compiler fuses operators, so their intermediates "
                                      "never reach memory, and saves fewer activations for "
                                      "the backward pass, recomputing cheap ones."},
                       Outcome.NONE: "A training step keeps the activations its backward pass "
                                     "needs, graph or not: less is left to save than in the "
                                     "talk's example."}),
        Compare(varies=GRAPH_VARIES, metric=Metric.HELD, gpu=Expect.SAME, cpu=Expect.SAME,
                means={Outcome.OPPOSITE: {
                    "gluon": "A static graph keeps its planned buffers between steps "
                             "(static_alloc), so they are not planned again.",
                    "pytorch": "The compiled step keeps other buffers between steps than the "
                               "eager one: its kernels' workspace and caches."}}),
        Compare(varies=GRAPH_VARIES, gpu=Expect.FASTER, cpu=Expect.SAME, means={})),
    baseline={"graph": "eager"},
    notes=(Note("compile_backend", ("aot_eager", "eager"),
                "The tracing backend runs the same operators: expect no saving from it; "
                "inductor (full size) shows the compiler's.", judged=False),),
    quotes=(Quote("imperative, each interim value kept", talk.MEMORY_EXAMPLE["imperative_bytes"],
                  "{} bytes"),
            Quote("symbolic, one buffer reused", talk.MEMORY_EXAMPLE["symbolic_bytes"],
                  "{} bytes")),
    hardware=f"its example ({talk.MEMORY_EXAMPLE['code']})",
)


def conclude(runs=None, accumulation=None, checkpointing=None, graph=None) -> Closing:
    """One of the four readings: runs (the batch sweep, judged largest last), accumulation=
    (the large batch, another seed of it, the accumulated run), checkpointing= or graph=."""
    if accumulation is not None:
        big, _, acc = accumulation_runs(accumulation)
        frame = table(accumulation).iloc[[accumulation.index(big), accumulation.index(acc)]]
        return judge(ACCUMULATION, [big, acc], frame)
    lesson, runs = next(((lesson, list(rs)) for lesson, rs in (
        (CHECKPOINTING, checkpointing), (GRAPH, graph), (SWEEP, runs)) if rs), (None, None))
    if lesson is None:
        raise ValueError("lesson 14 concludes on the sweep's runs, accumulation=, "
                         "checkpointing= or graph= (each a list of runs); none was passed")
    runs = sorted(runs, key=lambda r: memory_of(r).batch) if lesson is SWEEP else runs
    return judge(lesson, runs, table(runs))
