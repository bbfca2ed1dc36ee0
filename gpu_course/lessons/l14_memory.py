"""Lesson 14: GPU memory. Where a training step's memory goes, and three ways to need less.

Every run of the notebook notes its memory in its record: after training, the adapters'
`MemoryMeter.measure` runs a few more steps under the framework's own counter and writes
`rec.note(memory=...)`; the notebook's loop notes `accumulate`, `checkpoint` and its
`loss_curve` beside it (the schema and its reader: `gpu_course.analyse.memory`).

Bytes are above what was live before the network existed. Four readings of the same
runs: the parts per batch size (`conclude(runs)`), gradient accumulation against the large
batch and another seed of it (`accumulation=`), activation checkpointing (`checkpointing=`)
and a graph against the network as written (`graph=`). No deep-learning framework here.
"""
from __future__ import annotations

import math

import pandas as pd

from ..analyse import alike, metrics, noise
from ..analyse.memory import (COMPUTED, Counter, MiB, MemoryUse, Part, accumulate_of, checkpoint_of,
                              last_loss, loss_curve, loss_gap, median, memory_of)
from ..show import report
from ..show.closing import Closing
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
TOLERANCE = 0.1   # a predicted peak this close to the measured one (or within the readings' spread)
SAME = 0.01       # memory readings this close are one amount: allocation granularity, workspace


# -- the table -------------------------------------------------------------------------------
def table(runs) -> pd.DataFrame:
    """One row a run: images an update and a forward pass, how it was trained (checkpoint
    segments; the graph, where the runs differ in it), samples/s, the parts counted from the
    model beside what the counter measured (where it sorts memory into parts), what was held
    between steps (and what the model counts for it), the peak and the activations at the
    peak (medians of the measured steps) and per image; with accumulated runs, each run's
    loss curve against the first run's."""
    runs = list(runs)
    uses = [memory_of(r) for r in runs]
    ladder = report.ladder_table(runs)
    frame = ladder[["rung"]].copy()
    frame["update_batch"] = [u.batch for u in uses]
    frame["accumulate"] = [accumulate_of(r) for r in runs]
    frame["micro_batch"] = [u.micro_batch for u in uses]
    if any(checkpoint_of(r) for r in runs):
        frame["checkpoint_segments"] = [str(checkpoint_of(r)) if checkpoint_of(r) else None
                                        for r in runs]
    for column in ("graph", "compile backend"):
        if column in ladder.columns:
            frame[column] = ladder[column]
    for column in ("samples_per_sec", "samples_per_sec_min", "samples_per_sec_max", "status"):
        if column in ladder.columns:
            frame[column] = ladder[column]
    for part, column in ((Part.PARAMETERS, "parameters_mib"), (Part.GRADIENTS, "gradients_mib"),
                         (Part.OPTIMIZER, "optimizer_state_mib")):
        frame[column] = [u.computed.get(part, math.nan) / MiB for u in uses]
        if any(u.sorted for u in uses):
            frame[column.replace("_mib", "_measured_mib")] = [
                median(u.most.get(part)) / MiB if u.sorted else math.nan for u in uses]
    frame["held_mib"] = [u.held_mib for u in uses]
    frame["held_counted_mib"] = [u.held_computed() / MiB for u in uses]
    frame["peak_mib"] = [u.peak_mib for u in uses]
    frame["activations_mib"] = [u.activations_mib for u in uses]
    frame["activations_per_image_mib"] = [u.per_image_mib for u in uses]
    frame["activations_share"] = frame["activations_mib"] / frame["peak_mib"]
    frame["held_rest_mib"] = frame["held_mib"] - frame["held_counted_mib"]
    if any(u.allocator for u in uses):
        frame["reserved_mib"] = [(u.allocator or {}).get("reserved", math.nan) / MiB for u in uses]
    if any(u.device_total for u in uses):
        frame["device_mib"] = [(u.device_total or math.nan) / MiB for u in uses]
        frame["device_share"] = frame["peak_mib"] / frame["device_mib"]
        frame["fills_device_batch"] = [_fills(u) for u in uses]
    curves = [r for r in runs if loss_curve(r)]
    if curves and any(accumulate_of(r) > 1 for r in runs):
        frame["updates"] = [len(loss_curve(r)) or None for r in runs]
        frame["last_loss"] = [last_loss(loss_curve(r)) for r in runs]
        frame["loss_gap"] = [loss_gap(curves[0], r) if r is not curves[0] else math.nan
                             for r in runs]
    return frame


def _fills(u: MemoryUse) -> float:
    """Images a forward pass that would fill the device: what the step holds besides its
    activations, plus activations per image times the batch, up to the device's memory."""
    per_image = median(u.activations()) / u.micro_batch if u.micro_batch else math.nan
    rest = median(u.peak) - median(u.activations())
    if not (u.device_total and per_image > 0):
        return math.nan
    return math.floor((u.device_total - rest) / per_image)


# -- the sentences ---------------------------------------------------------------------------
def conclude(runs=None, accumulation=None, checkpointing=None, graph=None) -> Closing:
    """The sentences of one of the lesson's four readings: runs (the sweep of batch sizes),
    accumulation= (the large batch, the same with another seed, and the accumulated run),
    checkpointing= (the network as is, and checkpointed) or graph= (as written, and as a
    graph: hybridized or compiled)."""
    if accumulation is not None:
        return _accumulation(list(accumulation))
    if checkpointing is not None:
        return _checkpointing(list(checkpointing))
    if graph is not None:
        return _graph(list(graph))
    if not runs:
        raise ValueError("lesson 14 concludes on the sweep's runs, accumulation=, "
                         "checkpointing= or graph= (each a list of runs); none was passed")
    return _sweep(list(runs))


def _how(*uses: MemoryUse) -> str:
    n = min(u.readings for u in uses)
    return f"{n} measured step{'s' if n != 1 else ''} each, ±{SAME:.0%}"


def _amounts(say: Closing, a: int, b: int, xs, ys, column: str) -> noise.Verdict:
    """Row b's amounts (bytes, one a measured step) against row a's: a verdict on their
    readings, each taken as ±SAME (a counter that reads the same bytes every step has no
    spread of its own, and a few KiB of workspace are no effect)."""
    def widened(values):
        values = [v for v in values if not math.isnan(v)]
        return [min(values) * (1 - SAME), max(values) * (1 + SAME)] if values else []
    return say.compare_amounts(a, b, widened(xs), widened(ys), _how(memory_of(say.runs[a]),
                                                                    memory_of(say.runs[b])), column)


def _sweep(runs) -> Closing:
    uses = [memory_of(r) for r in runs]
    say = Closing(table(runs), runs)
    order = sorted(range(len(runs)), key=lambda i: uses[i].batch)
    small, large = order[0], order[-1]
    u = uses[large]
    say(f"At batch {u.batch} the step peaked at {say.cell(large, 'peak_mib')} MiB, by "
        f"{u.counter.value}: parameters {say.cell(large, 'parameters_mib')} MiB, gradients "
        f"{say.cell(large, 'gradients_mib')} MiB, optimizer state "
        f"{say.cell(large, 'optimizer_state_mib')} MiB (counted from the model: elements × "
        f"bytes), activations {say.cell(large, 'activations_mib')} MiB, "
        f"{say.cell(large, 'activations_share', '{:.0%}')}"
        " of the peak.")
    _measured_beside_computed(say, large, u)
    if len(runs) > 1 and uses[small].batch != u.batch:
        s = uses[small]
        v = _amounts(say, small, large, _per_image(s), _per_image(u), "activations_per_image_mib")
        if v.kind == noise.Kind.NOT_MEASURED:   # a counter that saw nothing of the small batch
            say(f"From batch {s.batch} to batch {u.batch} the activations read "
                f"{say.cell(small, 'activations_mib')} and {say.cell(large, 'activations_mib')} "
                f"MiB: batch {s.batch}'s steps raised {s.counter.value} by nothing it could "
                "see (a process's peak stays where an earlier step left it), so how they grow "
                "per image is not measured here. Measure the smaller batch first, in a fresh "
                "process, or on a GPU, whose allocator counts each step.")
            _device(say, large, u, runs[large])
            return say
        fixed = all(math.isclose(s.computed.get(p, 0), u.computed.get(p, 0)) for p in COMPUTED)
        near = abs(v.ratio - 1) <= TOLERANCE
        say(f"From batch {s.batch} to batch {u.batch} ({say.ratio('update_batch', small, large)} "
            f"the images) the activations grew from {say.cell(small, 'activations_mib')} to "
            f"{say.cell(large, 'activations_mib')} MiB; per image, {noise.amount_sentence(v)}: "
            + ("they grow in proportion to the batch" if v.kind == noise.Kind.WITHIN_NOISE else
               "in proportion to the batch, to within "
               f"{say.setting('TOLERANCE', TOLERANCE, '{:.0%}')}" if near else
               "less than in proportion: a share of them is fixed (workspace, buffers) and "
               "weighs less as the batch grows" if v.kind == noise.Kind.SLOWER else
               "more than in proportion: what else a step allocates (kernels' workspace, the "
               "allocator's rounding) changes with the batch too")
            + (", while the parameters, gradients and optimizer state stay as they are. A larger "
               "batch buys speed with activation memory only." if fixed else "."))
    _device(say, large, u, runs[large])
    return say


def _per_image(u: MemoryUse) -> list[float]:
    return [a / u.micro_batch for a in u.activations()] if u.micro_batch else []


def _measured_beside_computed(say: Closing, row: int, u: MemoryUse) -> None:
    if u.sorted:
        pairs = [(p, c) for p, c in ((Part.PARAMETERS, "parameters"), (Part.GRADIENTS, "gradients"),
                                     (Part.OPTIMIZER, "optimizer_state"))]
        same = all(math.isclose(median(u.most.get(p)), u.computed.get(p, math.nan), rel_tol=0.01)
                   for p, _ in pairs)
        listed = ", ".join(f"{p.value} {say.cell(row, c + '_measured_mib')} MiB against "
                           f"{say.cell(row, c + '_mib')} MiB" for p, c in pairs)
        say(f"The counter sorts each tensor into its part; measured against counted: {listed}"
            + (": the same, to within a percent." if same else
               ": they differ (a part the counter sorts elsewhere, or state created lazily)."))
        return
    held, computed = say.table["held_mib"].iloc[row], say.table["held_counted_mib"].iloc[row]
    parts = ", ".join(p.value for p in u.held_parts)
    lead = (f"Between steps the counter held {say.cell(row, 'held_mib')} MiB, against "
            f"{say.cell(row, 'held_counted_mib')} MiB counted ({parts})")
    if held >= computed:
        say(f"{lead}: the rest, "
            f"{say.cell(row, 'held_rest_mib')} MiB, is the "
            "framework's own (kernels' workspace and caches, " + (
                "buffers a static graph keeps between steps, the loader's batches)."
                if u.counter in (Counter.PROCESS, Counter.MXNET_GPU) else "the loader's batches)."))
    else:
        say(f"{lead}: less than counted, so a counted part was not alive between steps (freed "
            "after the update, or not yet created).")


def _device(say: Closing, row: int, u: MemoryUse, run) -> None:
    """On a GPU: the allocator's own numbers, how near the device's memory the peak came,
    the snapshot; elsewhere what waits for a GPU."""
    track = metrics.engine(run)
    if not metrics.on_gpu(run):
        say("What waits for a GPU: " + (
            "the CUDA caching allocator's own counters (torch.cuda.max_memory_allocated after "
            "reset_peak_memory_stats), a memory snapshot for the PyTorch memory viewer "
            "(torch.cuda.memory._record_memory_history and _dump_snapshot), and how close the "
            "peak comes to the device's memory." if track == "pytorch" else
            "mx.context.gpu_memory_info, the device's used memory (MXNet's pool keeps what it "
            "allocated, so the reading after the steps is the run's high-water mark), and how "
            "close the peak comes to the device's memory."))
        return
    if u.allocator:
        retries = int(u.allocator.get("retries") or 0)
        say(f"The caching allocator had reserved {say.cell(row, 'reserved_mib')} MiB from the "
            f"device for the {say.cell(row, 'peak_mib')} MiB its tensors peaked at "
            "(memory_reserved: what nvidia-smi shows, less the CUDA context); " + (
                f"it retried cudaMalloc {retries} times after freeing its cache, which is slow: "
                "this run is too near the device's limit." if retries else
                "no cudaMalloc had to be retried."))
    if "fills_device_batch" in say.table.columns and not math.isnan(
            say.table["fills_device_batch"].iloc[row]):
        say(f"The peak is {say.cell(row, 'device_share', '{:.1%}')} of the "
            f"device's {say.cell(row, 'device_mib')} MiB; at "
            f"{say.cell(row, 'activations_per_image_mib')} MiB of activations an image, about "
            f"{say.cell(row, 'fills_device_batch')} images a step would fill it. Stay well "
            "below that (the lecture: stay away from maximum memory): near the limit the "
            "allocator frees its cache and retries, the memory fragments, and the next larger "
            "batch stops with out of memory.")
    snapshot = [f for f in u.files if f.endswith(".pickle")]
    if snapshot:
        say(f"The memory snapshot of the last measured step is {snapshot[0]} in the run's "
            "folder: drop it on https://pytorch.org/memory_viz (the PyTorch memory viewer) to "
            "see every allocation over time with the line that made it.")


def _accumulation(runs) -> Closing:
    plain = [r for r in runs if accumulate_of(r) == 1]
    added = [r for r in runs if accumulate_of(r) > 1]
    if len(plain) < 2 or not added:
        raise ValueError("accumulation= needs the large batch, the large batch again with another "
                         "seed (its distance is the noise) and the accumulated run (noted "
                         f"accumulate > 1); got {len(plain)} plain and {len(added)} accumulated")
    big, again, acc = plain[0], plain[1], added[0]
    if big.config.get("seed") == again.config.get("seed"):
        raise ValueError(f"'{again.name}' has the same seed as '{big.name}': the noise is what "
                         "another seed changes; run the large batch again with seed=1")
    ub, ua = memory_of(big), memory_of(acc)
    if ub.batch != ua.batch:
        raise ValueError(f"'{acc.name}' updates on {ua.batch} images and '{big.name}' on "
                         f"{ub.batch}: accumulation compares the same images an update")
    say = Closing(table(runs), runs)
    i, j, k = runs.index(big), runs.index(again), runs.index(acc)
    gap, seeds = say.table["loss_gap"].iloc[k], say.table["loss_gap"].iloc[j]
    steps = f"{accumulate_of(acc)} micro-batches of {ua.micro_batch} images"
    if math.isnan(gap) or math.isnan(seeds):
        say(f"{steps} against batch {ub.batch}: the loss curves cannot be compared (a run noted "
            "no curve, or they have different numbers of updates).")
    else:
        within = gap <= seeds
        say(f"{steps}, added up into one update of {ua.batch}: over "
            f"{say.cell(k, 'updates')} updates its loss stayed "
            f"{say.cell(k, 'loss_gap')} from batch {ub.batch}'s (mean absolute difference, "
            f"update by update), where another seed of batch {ub.batch} differs by "
            f"{say.cell(j, 'loss_gap')}: " + (
                "within noise. The same images make each update and the gradients add up to "
                "the large batch's, up to BatchNorm's statistics, which are computed on each "
                "micro-batch." if within else
                "beyond the noise of another seed. BatchNorm's statistics come from each "
                "micro-batch, not the large batch, and with few images a micro-batch that "
                "shows; a network without BatchNorm (or with GroupNorm) would match."))
    v = _amounts(say, i, k, ub.peak, ua.peak, "peak_mib")
    w = _amounts(say, i, k, ub.activations(), ua.activations(), "activations_mib")
    say(f"Its peak: {say.cell(k, 'peak_mib')} MiB against {say.cell(i, 'peak_mib')} MiB, "
        f"{noise.amount_sentence(v)}; its activations {say.cell(k, 'activations_mib')} MiB "
        f"against {say.cell(i, 'activations_mib')} MiB, {noise.amount_sentence(w)}: one "
        f"micro-batch's activations at a time, while the gradients "
        f"({say.cell(k, 'gradients_mib')} MiB) stay alive across the micro-batches.")
    speed = say.compare(i, k, varies=("batch_size",))
    say(f"What it costs in speed: samples/s {speed}" + (
        ": the smaller forward passes use the device (or the cores) less well, and the "
        "update's fixed work is the same." if speed.kind == noise.Kind.SLOWER else
        ": no cost beyond noise here." if speed.kind == noise.Kind.WITHIN_NOISE else "."))
    return say


def _checkpointing(runs) -> Closing:
    plain = [r for r in runs if not checkpoint_of(r)]
    saved = [r for r in runs if checkpoint_of(r)]
    if not plain or not saved:
        raise ValueError("checkpointing= needs the network as is and checkpointed (noted "
                         f"checkpoint=segments); got {len(plain)} plain and {len(saved)} "
                         "checkpointed")
    a, b = plain[0], saved[0]
    ua, ub = memory_of(a), memory_of(b)
    say = Closing(table(runs), runs)
    i, k = runs.index(a), runs.index(b)
    v = _amounts(say, i, k, ua.activations(), ub.activations(), "activations_mib")
    p = _amounts(say, i, k, ua.peak, ub.peak, "peak_mib")
    speed = say.compare(i, k)
    say(f"Checkpointed in {checkpoint_of(b)} segments, the step kept "
        f"{say.cell(k, 'activations_mib')} MiB of activations at its peak against "
        f"{say.cell(i, 'activations_mib')} MiB, {noise.amount_sentence(v)}; its peak "
        f"{say.cell(k, 'peak_mib')} MiB against {say.cell(i, 'peak_mib')} MiB, "
        f"{noise.amount_sentence(p)}. The price, samples/s: {speed}.")
    if v.kind != noise.Kind.SLOWER:
        say("The activations did not shrink beyond noise: the segments' inputs weigh as much as "
            "what they let go, or the largest segment, recomputed in the backward pass, sets the "
            "peak anyway.")
        return say
    kept = say.ratio("activations_mib", i, k, percent=True)
    if speed.kind == noise.Kind.SLOWER:
        say(f"Memory for time: {kept} of the activations kept, for "
            f"{say.ratio('samples_per_sec', k, i)} the time an image: each checkpointed segment "
            "runs its forward pass twice. Worth it where the memory buys something, a batch or "
            "a network that did not fit.")
    else:
        say(f"{kept} of the activations kept; the recomputation's time is within the runs' "
            "noise here (a shared machine widens it: more images, or a quiet machine, would "
            "tell).")
    if say.table["peak_mib"].iloc[k] > 0 and p.ratio > v.ratio:
        say("The peak fell less than the activations: in the backward pass the segment being "
            "recomputed holds its activations again, so the largest segment sets the floor; "
            "more segments lower it.")
    return say


def _graph(runs) -> Closing:
    graphs = [str(alike.value(r, "graph") or "eager") for r in runs]
    plain = [r for r, g in zip(runs, graphs) if g == "eager"]
    made = [r for r, g in zip(runs, graphs) if g != "eager"]
    if not plain or not made:
        raise ValueError(f"graph= needs the network as written (graph eager) and as a graph; "
                         f"the runs have graph={graphs}")
    a, b = plain[0], made[0]
    ua, ub = memory_of(a), memory_of(b)
    say = Closing(table(runs), runs, varies=("graph",))
    i, k = runs.index(a), runs.index(b)
    track = metrics.engine(b)
    words = {"gluon": ("imperative", "hybridized (static_alloc)"),
             "pytorch": ("eager", "compiled")}.get(track, ("as written", "as a graph"))
    p = _amounts(say, i, k, ua.peak, ub.peak, "peak_mib")
    h = _amounts(say, i, k, ua.held, ub.held, "held_mib")
    backend = alike.value(b, alike.Aspect.COMPILE_BACKEND)
    say(f"The step's peak {words[1]}: {say.cell(k, 'peak_mib')} MiB against "
        f"{say.cell(i, 'peak_mib')} MiB {words[0]}, {noise.amount_sentence(p)}; held between "
        f"steps {say.cell(k, 'held_mib')} MiB against {say.cell(i, 'held_mib')} MiB, "
        f"{noise.amount_sentence(h)}" + (
            ": the graph plans its buffers once, reuses one for values whose lifetimes do not "
            "overlap, and keeps them between steps (static_alloc)." if track == "gluon" else
            f" (backend {backend}: it traces the graph and runs the same operators, so expect "
            "no saving from it)." if backend == "aot_eager" else
            ": the compiler fuses operators, so their intermediate values never reach memory, "
            "and its partitioner saves fewer activations for the backward pass, recomputing "
            "cheap ones." if p.kind == noise.Kind.SLOWER else "."))
    say(f"The talk's example ({talk.MEMORY_EXAMPLE['code']}): imperative "
        f"{say.quote('the talk', talk.MEMORY_EXAMPLE['imperative_bytes'])} bytes (four arrays "
        f"of ten 8-byte numbers, each interim value kept), symbolic "
        f"{say.quote('the talk', talk.MEMORY_EXAMPLE['symbolic_bytes'])} bytes (two), "
        f"{say.quote('the talk', talk.MEMORY_EXAMPLE['symbolic_bytes'] / talk.MEMORY_EXAMPLE['imperative_bytes'], '×{:.2f}')}"
        f"; a training step on your machine, {say.ratio('peak_mib', i, k)} at its peak"
        + (" (a step must keep the activations its backward pass needs, as or not as a graph)."
           if p.ratio > 0.5 else "."))
    speed = say.compare(i, k)
    say(f"Samples/s {words[1]} against {words[0]}: {speed}.")
    return say
