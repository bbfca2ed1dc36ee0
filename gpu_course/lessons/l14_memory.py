"""Lesson 14: where a step's memory goes (`SWEEP`); ACCUMULATION, CHECKPOINTING, GRAPH need less."""
from __future__ import annotations

from ..analyse import alike
from ..analyse.memory import accumulation_runs, memory_of
from ..analyse.memory_table import table
from ..show.closing import Closing
from ..show.findings import Compare, Expect, Lesson, Metric, Note, Page, Quote, Sign, judge
from . import talk, workers

SIZES = {
    "full": dict(model="resnet20", train_size=24_576, test_size=64, epochs=1,
                 batches=(64, 256, 1024),   # the sweep's batch sizes; the last is "the large batch"
                 accumulate=4,              # micro-batches an update: 4 x 256 against 1024
                 sweep_steps=6,             # steps of each sweep run (memory needs few)
                 readings=3,                # measured steps after training, each read alone
                 segments=7,                # checkpointed pieces of the network's features
                 compile_backend="inductor", warmup_steps=3, num_workers=workers(),
                 torch_threads=None),
    "smoke": dict(model="tiny", train_size=384, test_size=64, epochs=1, batches=(4, 16),
                  accumulate=4, sweep_steps=3, readings=2, segments=3,
                  compile_backend="aot_eager",   # inductor compiles for minutes on 2 cores
                  warmup_steps=2, num_workers=0, torch_threads=1),
    "check": dict(train_size=23_552),    # 23 updates of 1024: 20 steady, the least a speed verdict takes
}
OWN_SIZES = ("accumulate", "batches", "compile_backend", "readings", "segments", "sweep_steps",
             "torch_threads")

AMOUNTS = dict(gpu=Expect.LESS, cpu=Expect.LESS)
PAGE = Page.of(__name__)   # the paragraphs: text/l14_memory.md
ON_A_GPU = PAGE.means("on_a_gpu", str)   # said where no run had a GPU
SWEEP = Lesson(
    compares=(Compare(
        varies=("batch_size",), metric=Metric.ACTIVATIONS_PER_IMAGE,
        gpu=Expect.SAME, cpu=Expect.SAME,
        means=PAGE.means("activations_per_image")),),
    columns=PAGE.means("sweep_columns", str),
    last_row={"peak_mib": "peak {} MiB", "counter": "by {}", "parameters_mib": "parameters {} MiB",
              "gradients_mib": "gradients {} MiB",
              "optimizer_state_mib": "optimizer state {} MiB (these three counted from the model)",
              "activations_mib": "activations {} MiB", "activations_share": "{} of the peak",
              "held_mib": "held between steps {} MiB",
              "held_counted_mib": "of which the model counts {} MiB",
              "reserved_mib": "reserved by the caching allocator {} MiB (nvidia-smi, less context)",
              "device_mib": "the device's memory {} MiB", "device_share": "the peak {} of it",
              "activations_per_image_mib": "activations an image {} MiB",
              "fills_device_batch": "about {} images a step would fill the device",
              "snapshot": "snapshot {} in the run's folder (open in https://pytorch.org/memory_viz)"},
    by_sign={"counted_gap": PAGE.means("counted_gap", Sign),
             "held_rest_mib": PAGE.means("held_rest", Sign),
             "allocator_retries": PAGE.means("allocator_retries", Sign),
             "fills_device_batch": PAGE.means("fills_device", Sign)},
    cpu=ON_A_GPU,
)
ACCUMULATION = Lesson(
    compares=(
        Compare(varies=("batch_size", "accumulate"), metric=Metric.PEAK, **AMOUNTS,
                means=PAGE.means("accumulation_peak")),
        Compare(varies=("batch_size", "accumulate"), metric=Metric.ACTIVATIONS, **AMOUNTS,
                means={}),
        Compare(varies=("batch_size", "accumulate"), gpu=Expect.SLOWER, cpu=Expect.SLOWER,
                means=PAGE.means("accumulation_speed"))),
    last_row={"accumulate": "{} micro-batches", "micro_batch": "of {} images",
              "update_batch": "added up into one update of {}", "updates": "over {} updates",
              "loss_gap": "its loss {} from the large batch's (mean absolute difference)",
              "seed_loss_gap": "another seed of the large batch {} from it"},
    by_sign={"loss_gap_beyond_seed": PAGE.means("accumulation_loss", Sign)},
)
CHECKPOINTING = Lesson(
    compares=(
        Compare(varies=("checkpoint",), metric=Metric.ACTIVATIONS, **AMOUNTS,
                means=PAGE.means("checkpointing_activations")),
        Compare(varies=("checkpoint",), metric=Metric.PEAK, **AMOUNTS,
                means=PAGE.means("checkpointing_peak")),
        Compare(varies=("checkpoint",), gpu=Expect.SLOWER, cpu=Expect.SLOWER,
                means=PAGE.means("checkpointing_speed"))),
    baseline={"checkpoint": 0},
    last_row={"checkpoint_segments": "checkpointed in {} segments"},
)
GRAPH_VARIES = ("graph", alike.Aspect.COMPILE_BACKEND)
GRAPH = Lesson(
    compares=(
        Compare(varies=GRAPH_VARIES, metric=Metric.PEAK, **AMOUNTS,
                means=PAGE.means("graph_peak")),
        Compare(varies=GRAPH_VARIES, metric=Metric.HELD, gpu=Expect.SAME, cpu=Expect.SAME,
                means=PAGE.means("graph_held")),
        Compare(varies=GRAPH_VARIES, gpu=Expect.FASTER, cpu=Expect.SAME, means={})),
    baseline={"graph": "eager"},
    notes=(Note("compile_backend", ("aot_eager", "eager"), PAGE.text("tracing_backend"),
                judged=False),),
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
        raise ValueError("no runs: pass the sweep's, accumulation=, checkpointing= or graph=")
    runs = sorted(runs, key=lambda r: memory_of(r).batch) if lesson is SWEEP else runs
    return judge(lesson, runs, table(runs))
