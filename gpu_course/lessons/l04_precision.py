"""Lesson 04: 16-bit arithmetic, `net.cast('float16')` + `multi_precision` (Gluon) /
`torch.autocast` + `GradScaler`, bfloat16, channels_last and TF32 (PyTorch).

Each precision is trained `repeats` times, interleaved, and every variant is judged
against float32 over those repeats. What a variant is comes from its record, not its
name: the dtype it asked for and the dtype that ran (`metrics.ran_as`: float16 runs as
float32 on a Gluon CPU and as bfloat16 on a PyTorch one), its layout, whether TF32 ran
and whether the optimizer kept a float32 master copy. A dtype that did not run is never
credited with a speed-up or an accuracy.
"""
from __future__ import annotations

import pandas as pd

from ..analyse import metrics, noise
from ..env import cpu
from ..show import report
from ..show.closing import Closing
from . import talk, workers
from .l05_large_batch import config_changes

SIZES = {
    "full": dict(model="resnet20", train_size=50_000, test_size=10_000, epochs=3, warmup_steps=10,
                 num_workers=workers(),
                 repeats=2,                    # each precision trained this many times, interleaved
                 torch_threads=None,           # PyTorch's intra-op threads (None: its default)
                 exercise_size=20_480,         # images of each exercise run: 30 steady steps an epoch
                 exercise_batch=512),          # large enough for 16 bits to show on a GPU
    # a small network, 6 steps of 64 a run and one in-process loader: the repeats fit CI's
    # minute on 2 cores (bfloat16 is slow on a CPU)
    "smoke": dict(model="tiny", train_size=384, test_size=256, epochs=1, warmup_steps=2,
                  num_workers=0, repeats=2, torch_threads=1,
                  exercise_size=192, exercise_batch=8),    # 22 steady steps: a noise verdict
    "check": dict(train_size=10_240, test_size=2_048, epochs=2, exercise_size=15_360),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("exercise_batch", "exercise_size", "repeats", "torch_threads")
DATA_BOUND = 0.5      # a float32 run that waits for data more than this share of its steady time
SIXTEEN_BITS = ("float16", "bfloat16")
VARIES = ("dtype", "channels_last")   # what the lesson changes between its variants


def groups(runs) -> dict:
    """The runs by name (the repeats of one variant), in order of first appearance."""
    out: dict = {}
    for run in runs:
        out.setdefault(run.name, []).append(run)
    return out


def asked(run, field: str):
    """What the run asked for: the request where it did not run as asked, else what ran."""
    change = metrics.ran_as(run).get(field)
    return change[0] if change else (run.config or {}).get(field)


def tf32_on(run) -> bool:
    """Whether the run's float32 convolutions ran in TF32 (its record says so)."""
    return bool(((run.meta.get("ran") or {}).get("tf32") or {}).get("convolutions"))


def master_copy(run):
    """Whether the optimizer kept float32 master weights (Gluon's multi_precision, as the
    record read it from the Trainer); None where the record does not say."""
    return ((run.meta.get("ran") or {}).get("optimizer") or {}).get("multi_precision")


def baseline(runs) -> str:
    """The name of the float32 variant the others are judged against: asked and ran
    float32, without TF32."""
    for name, rs in groups(runs).items():
        if asked(rs[-1], "dtype") == "float32" and rs[-1].config.get("dtype") == "float32" \
                and not tf32_on(rs[-1]):
            return name
    raise ValueError(f"no variant asked for and ran float32 without TF32; the variants: "
                     f"{list(groups(runs))}")


def table(runs) -> pd.DataFrame:
    """Every run (each repeat a row) with the dtype that ran and what it changed from the
    float32 baseline, as its record says."""
    runs = list(runs)
    base = groups(runs)[baseline(runs)][-1]
    frame = report.ladder_table(runs)
    report.put(frame, 1, "dtype", [r.config.get("dtype") for r in runs])
    frame.insert(2, "differs_from_float32", [_differs(base, r) for r in runs])
    return frame


def conclude(runs) -> Closing:
    runs = list(runs)
    say = Closing(table(runs), runs, varies=VARIES)
    gs = groups(runs)
    base_name = baseline(runs)
    base = gs[base_name]
    track = metrics.engine(runs[0])
    gpu = any(metrics.on_gpu(r) for r in runs)
    speeds = {}
    for name, rs in gs.items():
        if name == base_name:
            continue
        last = rs[-1]
        want, ran = asked(last, "dtype"), last.config.get("dtype")
        verdict = speeds[name] = say.compare(base, rs)
        if want == ran:
            say(f"{metrics.label(last)!r} against {base_name!r}: {verdict}.")
            continue
        why = metrics.ran_as(last)["dtype"][2]
        say(f"{name!r} asked for {want} and ran {ran}." + (f" The record says why: {why}" if why else ""))
        if ran == base[-1].config.get("dtype"):
            say(f"{name!r} against {base_name!r}: {verdict}; both ran {ran}, two identical jobs, so "
                + ("the difference is this machine's speed changing between the runs, not "
                   f"{want}'s: {len(rs)} repeats could not bound it." if verdict.is_effect else
                   "it is within their noise, as it should be."))
        else:
            say(f"{name!r} against {base_name!r}: {verdict}: a {ran} result, not {want}'s.")
    for a, b in _layout_pairs(gs):
        say(f"channels_last against NCHW, both {gs[b][-1].config.get('dtype')}: "
            f"{say.compare(gs[a], gs[b])}.")
    if track == "pytorch":
        on = [name for name, rs in gs.items() if tf32_on(rs[-1])]
        say("TF32 for float32 convolutions: " + (
            (f"on in {', '.join(map(repr, on))}, off in {base_name!r}." if on else
             f"off in every run ({base_name!r} is plain float32).") if gpu else
            "not applicable here (no CUDA device; TF32 needs an Ampere or newer GPU)."))
    ran16 = {name: v for name, v in speeds.items()
             if gs[name][-1].config.get("dtype") in SIXTEEN_BITS and asked(gs[name][-1], "dtype")
             == gs[name][-1].config.get("dtype")}
    if metrics.data_wait_share(base[-1]) > DATA_BOUND:
        say(f"The float32 run waited for data {say.cell(base[-1], 'data_wait_share')} of its steady "
            "time: a faster step cannot show until the input pipeline keeps up (lessons 2 and 9).")
    quote = (f"the talk's float16 on {talk.HARDWARE} ran at "
             f"{say.quote(talk.SOURCE, talk.FLOAT16_SAMPLES_PER_SEC, '{:,} samples/s')} against "
             f"{say.quote(talk.SOURCE, talk.FLOAT32_SAMPLES_PER_SEC, '{:,}')} in float32 "
             f"({say.quote(talk.SOURCE, talk.FLOAT16_SAMPLES_PER_SEC / talk.FLOAT32_SAMPLES_PER_SEC, '×{:.1f}')})")
    if gpu:
        faster = [name for name, v in ran16.items() if v.kind == noise.Kind.FASTER]
        slower = [name for name, v in ran16.items() if v.kind == noise.Kind.SLOWER]
        if faster:
            say(f"Faster than float32 beyond noise on this GPU: {', '.join(map(repr, faster))}; {quote}.")
        if slower:
            say(f"{', '.join(map(repr, slower))} was a slow-down here: check that the GPU has tensor "
                "cores (V100 or newer; bfloat16 from Ampere) and that the input pipeline keeps "
                "up (lessons 2 and 9).")
        if not faster and not slower and ran16:
            say(f"No 16-bit variant differs from float32 beyond noise here; {quote}.")
    elif track == "gluon":
        say(f"No GPU here: float16's speed-up and the master copy's accuracy need one (tensor "
            f"cores: V100 and newer); {quote}.")
    else:
        faster = [_called(gs[name][-1]) for name, v in speeds.items() if v.kind == noise.Kind.FASTER]
        say("No GPU here: the verdicts above are this CPU's own ("
            + (f"{_listed(faster)} faster than float32 here" if faster else
               "no 16-bit variant faster than float32 beyond noise")
            + f"). What tensor cores add needs a GPU to show: {quote}.")
        flags = (base[-1].meta.get("hardware") or {}).get("cpu_features")
        if flags is not None and any(gs[n][-1].config.get("dtype") == "bfloat16" for n in ran16):
            has = cpu.supports(cpu.Capability.BFLOAT16_INSTRUCTIONS, flags)
            say(("This CPU has instructions for bfloat16, so it can pay here: " if has else
                 "This CPU has no instructions for bfloat16, so expect it to cost here, not to "
                 "pay: ") + has.why + ".")
    for rs in gs.values():
        say(say.chance(rs[-1]))
    bare = [n for n, rs in gs.items() if master_copy(rs[-1]) is False and n in ran16]
    kept = [n for n, rs in gs.items() if master_copy(rs[-1]) and n in ran16]
    if bare and kept:
        say(f"The master copy's worth: {kept[0]!r} against {bare[0]!r}: "
            f"{say.accuracy(gs[bare[0]][-1], gs[kept[0]][-1])[1]}.")
    for name in ran16:
        if master_copy(gs[name][-1]) is False:
            continue
        say(f"{name!r} against {base_name!r} in accuracy: "
            f"{say.accuracy(base[-1], gs[name][-1])[1]}.")
    return say


def _listed(items) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _called(run) -> str:
    """The variant's name, with the dtype that ran where it is not the one asked for."""
    want, ran = asked(run, "dtype"), run.config.get("dtype")
    return f"{run.name!r}" + (f" (ran {ran})" if want != ran else "")


def _layout_pairs(gs) -> list:
    """(NCHW variant, channels_last variant) pairs that differ in the layout alone."""
    names = list(gs)
    return [(a, b) for a in names for b in names
            if set(config_changes(gs[a][-1], gs[b][-1])) == {"channels_last"}
            and asked(gs[a][-1], "dtype") == asked(gs[b][-1], "dtype")
            and gs[b][-1].config.get("channels_last")]


def _differs(base, run) -> str:
    changes = [f"{k} {a} → {b}" for k, (a, b) in config_changes(base, run).items()]
    if tf32_on(run) != tf32_on(base):
        changes.append("TF32 convolutions")
    if master_copy(run) is not None and master_copy(run) != master_copy(base):
        changes.append("no master copy" if master_copy(run) is False else "a master copy")
    return "; ".join(changes) or "–"
