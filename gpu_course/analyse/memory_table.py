"""Lesson 14's table: one row a run of what its memory notes say (`memory_of`)."""
from __future__ import annotations

import math

import pandas as pd

from ..show import report
from .memory import (COMPUTED, SAME, MiB, Part, accumulate_of, checkpoint_of, fills_device,
                     last_loss, loss_curve, loss_gap, median, memory_of)


def table(runs) -> pd.DataFrame:
    """One row a run: how it trained, its memory by part, held, peak and activations (medians)."""
    runs = list(runs)
    uses = [memory_of(r) for r in runs]
    ladder = report.ladder_table(runs)
    frame = ladder[["rung"]].copy()
    frame["update_batch"] = [u.batch for u in uses]
    frame["accumulate"] = [accumulate_of(r) for r in runs]
    frame["micro_batch"] = [u.micro_batch for u in uses]
    frame["counter"] = [u.counter.value for u in uses]
    if any(checkpoint_of(r) for r in runs):
        frame["checkpoint_segments"] = [str(checkpoint_of(r)) if checkpoint_of(r) else None
                                        for r in runs]
    for column in ("graph", "compile backend", "samples_per_sec", "samples_per_sec_min",
                   "samples_per_sec_max", "status"):
        if column in ladder.columns:
            frame[column] = ladder[column]
    for part, column in ((Part.PARAMETERS, "parameters_mib"), (Part.GRADIENTS, "gradients_mib"),
                         (Part.OPTIMIZER, "optimizer_state_mib")):
        frame[column] = [u.computed.get(part, math.nan) / MiB for u in uses]
        if any(u.sorted for u in uses):
            frame[column.replace("_mib", "_measured_mib")] = [
                median(u.most.get(part)) / MiB if u.sorted else math.nan for u in uses]
    if any(u.sorted for u in uses):   # 0 where the counter's parts are the model's, to a percent
        frame["counted_gap"] = [max(abs(median(u.most.get(p)) / u.computed.get(p, math.nan) - 1)
                                    for p in COMPUTED[:3]) // SAME * SAME if u.sorted else math.nan
                                for u in uses]
    frame["held_mib"] = [u.held_mib for u in uses]
    frame["held_counted_mib"] = [u.held_computed() / MiB for u in uses]
    frame["peak_mib"] = [u.peak_mib for u in uses]
    frame["activations_mib"] = [u.activations_mib for u in uses]
    frame["activations_per_image_mib"] = [u.per_image_mib for u in uses]
    frame["activations_share"] = frame["activations_mib"] / frame["peak_mib"]
    frame["held_rest_mib"] = frame["held_mib"] - frame["held_counted_mib"]
    if any(u.allocator for u in uses):
        frame["reserved_mib"] = [(u.allocator or {}).get("reserved", math.nan) / MiB for u in uses]
        frame["allocator_retries"] = [int((u.allocator or {}).get("retries") or 0) for u in uses]
    if any(u.device_total for u in uses):
        frame["device_mib"] = [(u.device_total or math.nan) / MiB for u in uses]
        frame["device_share"] = frame["peak_mib"] / frame["device_mib"]
        frame["fills_device_batch"] = [fills_device(u) for u in uses]
    if any(f.endswith(".pickle") for u in uses for f in u.files):
        frame["snapshot"] = [next((f for f in u.files if f.endswith(".pickle")), None) for u in uses]
    curves = [r for r in runs if loss_curve(r)]
    if curves and any(accumulate_of(r) > 1 for r in runs):
        frame["updates"] = [len(loss_curve(r)) or None for r in runs]
        frame["last_loss"] = [last_loss(loss_curve(r)) for r in runs]
        frame["loss_gap"] = [loss_gap(curves[0], r) if r is not curves[0] else math.nan
                             for r in runs]
        seeds = [r for r in curves if r.config.get("seed") != curves[0].config.get("seed")]
        frame["seed_loss_gap"] = loss_gap(curves[0], seeds[0]) if seeds else math.nan
        frame["loss_gap_beyond_seed"] = [gap - frame["seed_loss_gap"].iloc[0]
                                         if accumulate_of(r) > 1 else math.nan
                                         for r, gap in zip(runs, frame["loss_gap"])]
    return frame
