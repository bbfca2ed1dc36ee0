"""Lesson 13: the timing trap and sync points.

Three measurements, each read from what the notebook recorded:

* the trap: a block of work (one forward pass, a few training steps) timed with a wall
  clock that stops when the calls return ("without a sync") and, in the same pass, once
  the device has finished ("with a sync"), plus CUDA events on a GPU. The notebook hands
  the passes over as (block, timer, images, seconds) tuples;
* a sync in every step: the same loop trained with the loss read each step (`.item()`,
  `.asscalar()`) and with the loss read once, after the epoch's sync (the course's
  record does that), repeated and interleaved; the runs' notes say which they are
  (`rec.note(loss_read=...)`);
* on a GPU, `torch.cuda.set_sync_debug_mode("warn")`'s warnings: the lines that synced.

The course's own rule is read from the same runs: the time the epoch's closing sync waited
(`sync_s`), and on a GPU the steps' device times from CUDA events (`device_s`). No
deep-learning framework here.
"""
from __future__ import annotations

import linecache
import math
import statistics
from collections import Counter
from pathlib import Path

import pandas as pd

from ..analyse import metrics, noise
from ..show import report
from ..show.closing import Closing
from . import workers

SIZES = {
    "full": dict(model="resnet20", train_size=6_400, test_size=64, epochs=1, batch_size=64,
                 warmup_steps=5, num_workers=workers(),
                 repeats=2,             # each way of reading the loss trained this often, interleaved
                 trap_batch=512,        # images in the trap's blocks: enough that a GPU, not the
                                        # host issuing the work, is the slower side
                 trap_steps=2,          # training steps in the trap's second block
                 passes=5,              # timed passes of each block
                 torch_threads=None),   # PyTorch's intra-op threads (None: its default)
    # a small CNN, 24 steps a run, one in-process loader: the whole lesson in CI's budget
    "smoke": dict(model="tiny", train_size=768, test_size=64, epochs=1, batch_size=32,
                  warmup_steps=2, num_workers=0, repeats=2, trap_batch=64, trap_steps=2,
                  passes=5, torch_threads=1),
    # the GPU check (GPU_COURSE_SIZE=check): full settings, half the images
    "check": dict(train_size=3_200),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("passes", "repeats", "torch_threads", "trap_batch", "trap_steps")
WITHOUT, WITH, EVENTS = "without a sync", "with a sync", "CUDA events"
TIMERS = (WITHOUT, WITH, EVENTS)
EACH_STEP, AT_THE_END = "each step", "at the end"   # the runs' notes: loss_read
GUARD = "loss_guard"   # exercise 13.1's note: whether the loop checked its loss on the host each step
SYNC_WARNING = "synchronizing"   # torch's words: "called a synchronizing CUDA operation"
MOVED = 0.2   # a loop without the per-step read that waits for data this share of its time or more


# -- the tables ----------------------------------------------------------------------------
def table(measured) -> pd.DataFrame:
    """The table of what the notebook measured: the trap's timed passes (a list of
    (block, timer, images, seconds) tuples), one row a block and timer; or the runs, one
    row a run, with how each read its loss and what the epoch's closing sync waited."""
    measured = list(measured)
    if measured and isinstance(measured[0], tuple):
        return trap_table(measured)
    return runs_table(measured)


def trap_table(passes) -> pd.DataFrame:
    """One row per block and timer ("forward pass, without a sync"), in the order measured:
    the images a pass handles, the passes, the median time of a pass in ms with the
    fastest and slowest, and the images per second that median gives."""
    rows: dict = {}
    for block, timer, images, seconds in _checked(passes):
        rows.setdefault((block, timer), (images, []))[1].append(seconds)
    return pd.DataFrame([{"rung": _rung(block, timer), "images": images, "passes": len(s),
                          "pass_ms": 1000 * statistics.median(s), "pass_ms_min": 1000 * min(s),
                          "pass_ms_max": 1000 * max(s),
                          "images_per_sec": metrics.rate(images, statistics.median(s))}
                         for (block, timer), (images, s) in rows.items()])


def _rung(block: str, timer: str) -> str:
    return f"{block}, {timer}"


def runs_table(runs) -> pd.DataFrame:
    """Every run (each repeat a row): how it read its loss, the seconds its epochs' closing
    sync waited for queued work and their share of the epoch time, and on a GPU the median
    steady step by CUDA events (`device_s`) beside the host's clock."""
    runs = list(runs)
    frame = report.ladder_table(runs)
    report.put(frame, 1, "loss_read", [loss_read(r) for r in runs])
    frame["sync_s"] = [_sum(r.epochs, "sync_s") for r in runs]
    frame["sync_share"] = [metrics.share(_sum(r.epochs, "sync_s"), _sum(r.epochs, "epoch_time_s"))
                           for r in runs]
    frame["host_step_ms"] = [_step_ms(r, device=False) for r in runs]
    frame["device_step_ms"] = [_step_ms(r, device=True) for r in runs]
    return frame


def loss_read(run) -> str | None:
    """How the run's loop read its loss, as its notes say (EACH_STEP or AT_THE_END)."""
    return (run.meta.get("notes") or {}).get("loss_read")


# -- the sentences ---------------------------------------------------------------------------
_UNSET = object()   # syncs not passed at all (None: passed, with no GPU to watch)


def conclude(runs=None, trap=None, device=None, syncs=_UNSET, mode: str = "warn") -> Closing:
    """trap (the timed passes) on `device` (the device they ran on, or its name: "cpu",
    "cuda:0", "cpu(0)", "gpu(0)"): the wrong number beside the right one. syncs (the
    warnings `set_sync_debug_mode(mode)` raised; None where there is no GPU to watch): the
    lines that synced. Otherwise the runs: the per-step read against the read at the end,
    and the course's own rule read from their records."""
    if trap is not None:
        return _trap(list(trap), device)
    if syncs is not _UNSET:
        return _syncs(syncs, mode)
    if runs is None:
        raise ValueError("lesson 13 concludes on runs, trap= (the timed passes, with device=) "
                         "or syncs= (the caught warnings; None without a GPU); none was passed")
    return _runs(list(runs))


def where(device) -> tuple[str, bool]:
    """(track, on a GPU) of a device as the framework names it: PyTorch's "cpu", "cuda:0";
    MXNet's "cpu(0)", "gpu(0)"."""
    name = str(device).strip()
    if not name:
        raise ValueError("device= is needed: the device the trap ran on (e.g. 'cpu', 'cuda:0', "
                         "'cpu(0)', 'gpu(0)')")
    track = "gluon" if name.endswith(")") else "pytorch"
    return track, name.startswith(("cuda", "gpu"))


def _trap(passes, device) -> Closing:
    track, gpu = where(device)
    say = Closing(trap_table(passes))
    timers: dict = {}
    for block, timer, _, _ in passes:
        timers.setdefault(block, set()).add(timer)
    for block, have in timers.items():
        if not {WITHOUT, WITH} <= have:
            raise ValueError(f"block {block!r} needs both timers, {WITHOUT!r} and {WITH!r}; "
                             f"it has {sorted(have)}")
        wrong, right = _rung(block, WITHOUT), _rung(block, WITH)
        how = f"{say.table.set_index('rung').loc[right, 'passes']} timed passes each"
        v = say.compare_samples(right, wrong, _rates(passes, block, WITH),
                                _rates(passes, block, WITHOUT), how, "images_per_sec")
        numbers = (f"without a sync the clock read {say.cell(wrong, 'pass_ms')} ms, with one "
                   f"{say.cell(right, 'pass_ms')} ms (medians)")
        if v.kind == noise.Kind.FASTER:
            say(f"{block.capitalize()}: {numbers}. The number without the sync claims "
                f"{say.cell(wrong, 'images_per_sec')} images/s against the "
                f"{say.cell(right, 'images_per_sec')} images/s the work really ran at, {v}: the "
                "clock stopped when the work was queued, not when it was done"
                + (" (MXNet's engine queues operators on a CPU too)." if track == "gluon"
                   and not gpu else "."))
        elif v.kind == noise.Kind.WITHIN_NOISE:
            say(f"{block.capitalize()}: {numbers}: {v}. The two agree: " + _agree(track, gpu))
        else:
            say(f"{block.capitalize()}: {numbers}: {v}.")
        if EVENTS in have:
            events = _rung(block, EVENTS)
            e = say.compare_samples(right, events, _rates(passes, block, WITH),
                                    _rates(passes, block, EVENTS), how, "images_per_sec")
            say(f"CUDA events around the {block} put it at {say.cell(events, 'pass_ms')} ms on "
                f"the device, {e} against the clock with a sync: events are recorded in the "
                "stream without stopping the host, and read once, after a sync.")
    if not gpu:
        say("What waits for a GPU: " + (
            "the same two clocks where the host queues work for a GPU rather than for the "
            "engine's CPU threads, and the per-step read's cost below."
            if track == "gluon" else
            "the gap between the two clocks (a CUDA call returns once its kernels are queued), "
            "and CUDA events (torch.cuda.Event(enable_timing=True)) that time the device's side."))
    return say


def _agree(track: str, gpu: bool) -> str:
    if gpu:
        return ("the host took as long to issue the work as the GPU took to run it, so nothing "
                "was left in the queue when the calls returned (launch-bound: a larger trap_batch "
                "gives each launch more work, lesson 3's CUDA graphs fewer launches).")
    if track == "pytorch":
        return ("on a CPU PyTorch runs each operator before the call returns, so a sync finds "
                "nothing left to wait for; on a GPU the call returns once its kernels are "
                "queued.")
    return ("MXNet's engine finished the work about as soon as it was queued here; with more "
            "work per call (a larger trap_batch) the queue shows.")


def _runs(runs) -> Closing:
    if not runs:
        raise ValueError("runs is empty: pass the runs of both loops (rec.note(loss_read=...))")
    ways = {loss_read(r) for r in runs}
    if not {EACH_STEP, AT_THE_END} <= ways:
        raise ValueError(f"the runs' notes say loss_read={sorted(map(str, ways))}; lesson 13 "
                         f"compares {EACH_STEP!r} with {AT_THE_END!r}: note each loop's way with "
                         "rec.note(loss_read=...)")
    say = Closing(runs_table(runs), runs)
    each = [r for r in runs if loss_read(r) == EACH_STEP]
    end = [r for r in runs if loss_read(r) == AT_THE_END]
    track, gpu = metrics.engine(runs[0]), any(metrics.on_gpu(r) for r in runs)
    read = "loss.mean().asscalar()" if track == "gluon" else "loss.item()"
    v = say.compare(end, each)
    lead = (f"Reading the loss each step ({read}) against reading it once, after the epoch's "
            f"sync: {v}")
    why = cost_words(v.kind, track, gpu, "read", ".item()")
    say(f"{lead}. {why}" if v.kind == noise.Kind.SLOWER else f"{lead}: {why}" if why else f"{lead}.")
    if track == "gluon":
        _moved(say, end, each)
    _rule(say, end, gpu, track, v)
    return say


def cost_words(kind: noise.Kind, track: str, gpu: bool, each: str, call: str) -> str:
    """Why reading a device value on the host every step (each: what one is called, "read";
    call: the code that reads, ".item()") cost what the noise verdict `kind` says; "" for a
    verdict that says nothing (too few steps, unlike runs)."""
    if kind == noise.Kind.SLOWER:
        return (f"Each {each} stops the host until " + (
            "MXNet's engine threads have finished the step, and they then wait"
            if track == "gluon" and not gpu else "the device has finished the step, and it "
            "then waits") + " while the host fetches the next batch and issues its work: the two "
            "take turns instead of overlapping.")
    if kind == noise.Kind.WITHIN_NOISE and gpu:
        return ("no cost beyond noise here. The device finished each step before the host "
                "had issued the next one (launch- or input-bound), so waiting for it cost "
                f"nothing; with more work per step (a larger batch) the {each}s cost.")
    if kind in (noise.Kind.WITHIN_NOISE, noise.Kind.FASTER):
        return "no cost here. " + (
            "On a CPU the host and MXNet's engine share the same cores: while the host waits, "
            "the engine's threads have them to themselves, so there is little overlap to lose."
            if track == "gluon" else
            f"On a CPU PyTorch has finished the step when the call returns, so {call} has "
            "nothing to wait for.")
    return ""


def _moved(say: Closing, end: list, each: list) -> None:
    """Where a Gluon loop without the per-step read waited instead: when every run of it
    waited for data longer (as a share of its steady time) than every run with the read."""
    least = min(end, key=metrics.data_wait_share)
    most = max(each, key=metrics.data_wait_share)
    if not metrics.data_wait_share(least) > max(MOVED, metrics.data_wait_share(most)):
        return
    in_process = all(int(r.config.get("num_workers") or 0) == 0 for r in end + each)
    say(f"The waiting did not vanish, it moved: without the per-step read each run spent at "
        f"least {say.cell(say.runs.index(least), 'data_wait_share')} of its steady time waiting "
        f"for a batch, with it at most {say.cell(say.runs.index(most), 'data_wait_share')}" + (
            ". The loader runs in this process (num_workers=0) and its transforms are MXNet "
            "operators too: fetching a batch waited for the engine, busy with the queued steps."
            if in_process else "."))


def _rule(say: Closing, end: list, gpu: bool, track: str, read: noise.Verdict) -> None:
    """The course's own rule, in this run's numbers: an epoch ends at a sync; per-step
    device times come from CUDA events read after it."""
    run = max(end, key=lambda r: _sum(r.epochs, "sync_s"))
    row = say.runs.index(run)
    if not gpu and track == "pytorch":
        say("The course's record ends each epoch at a sync on a GPU "
            "(rec.end_epoch(sync=torch.cuda.synchronize)); on a CPU the loop passes sync=None, "
            f"as every step is done when it returns: '{run.name}' waited "
            f"{say.cell(row, 'sync_s')} s at the end of its epochs.")
    elif _sum(run.epochs, "sync_s") > 0:
        share = say.table["sync_share"].iloc[row]
        say(f"The course's record ends each epoch at a sync (rec.end_epoch(sync=...)): in "
            f"'{run.name}' it waited {say.cell(row, 'sync_s')} s for work still queued when the "
            "last step returned" + (f", {say.cell(row, 'sync_share')} of the epoch" if share >= 0.001
                                   else "") + ", which a timer stopped without it would have "
            "missed. It is the only sync the record makes: nothing the course adds holds a step up.")
    else:
        say(f"The course's record ends each epoch at a sync (rec.end_epoch(sync=...)); in "
            f"'{run.name}' it found nothing still queued: {say.cell(row, 'sync_s')} s.")
    if gpu and not math.isnan(say.table["device_step_ms"].iloc[row]):
        say(f"Each step's own time comes from CUDA events recorded after it and read after the "
            f"epoch's sync: a median steady step of {say.cell(row, 'device_step_ms')} ms on the "
            f"device, where the host's clock saw {say.cell(row, 'host_step_ms')} ms (issuing "
            "the step, and waiting for room in the queue).")
    elif not gpu:
        say("What waits for a GPU: the per-step read's cost " + (
            "against a GPU" if read.kind == noise.Kind.SLOWER else "beyond noise") + " (the host "
            "stops until the GPU finishes the step); the steps' device times from CUDA events (the "
            "record's device_s)" + ("; and torch.cuda.set_sync_debug_mode('warn') naming the "
                                    "line that syncs." if track == "pytorch" else "."))


def _syncs(caught, mode: str) -> Closing:
    sites = sync_sites(caught or [])
    say = Closing(pd.DataFrame(sites or [dict.fromkeys(SITE_COLUMNS, "")],
                               columns=list(SITE_COLUMNS)), key="code")
    if caught is None:
        say(f"torch.cuda.set_sync_debug_mode({mode!r}) watches CUDA syncs; no GPU here, so it has "
            "nothing to watch (it needs a CUDA build and device). On a GPU it warns at every "
            "call that makes the host wait, naming the line.")
    elif not sites:
        say(f"torch.cuda.set_sync_debug_mode({mode!r}) caught no syncing call in these steps: "
            "the loop never made the host wait for the GPU.")
    else:
        named = "; ".join(f"`{s['code']}` ({s['where']}, line {s['line']}, {s['calls']} "
                          f"call{'s' if s['calls'] != 1 else ''})" for s in sites)
        say(f"torch.cuda.set_sync_debug_mode({mode!r}) named {len(sites)} line"
            f"{'s' if len(sites) != 1 else ''} that made the host wait for the GPU: {named}.")
    return say


SITE_COLUMNS = ("code", "where", "line", "calls")


def sync_sites(caught) -> list[dict]:
    """The lines a sync-debug mode warned at, most calls first: the line's code, where it
    is ("this notebook" for a cell, else the file's name), its number and how many calls
    warned there. Other warnings are left out."""
    counts = Counter((w.filename, w.lineno) for w in caught
                     if SYNC_WARNING in str(w.message))
    sites = []
    for (filename, lineno), calls in counts.most_common():
        code = linecache.getline(filename, lineno).strip() or "(source not available)"
        sites.append({"code": code, "where": _place(filename), "line": lineno, "calls": calls})
    return sites


def _place(filename: str) -> str:
    path = Path(filename)
    if filename.startswith("<") or path.parent.name.startswith("ipykernel_"):
        return "this notebook"
    return path.name


# -- helpers ----------------------------------------------------------------------------------
def _checked(passes):
    for item in passes:
        if len(item) != 4:
            raise ValueError(f"a timed pass is (block, timer, images, seconds); got {item!r}")
        block, timer, images, seconds = item
        if timer not in TIMERS:
            raise ValueError(f"timer={timer!r}; allowed: {', '.join(TIMERS)}")
        if not (isinstance(seconds, (int, float)) and seconds >= 0 and math.isfinite(seconds)):
            raise ValueError(f"{block}, {timer}: seconds={seconds!r} must be a time >= 0")
        yield item


def _rates(passes, block: str, timer: str) -> list[float]:
    return [metrics.rate(n, s) for b, t, n, s in passes if b == block and t == timer]


def _sum(frame, column: str) -> float:
    if column not in frame.columns:
        return math.nan
    return float(pd.to_numeric(frame[column], errors="coerce").fillna(0).sum())


def _step_ms(run, device: bool) -> float:
    steps = getattr(run, "steps", None)
    if steps is None or not len(steps) or "timed" not in steps.columns:
        return math.nan
    steady = steps[pd.to_numeric(steps["timed"], errors="coerce") == 1]
    if device:
        values = pd.to_numeric(steady.get("device_s", pd.Series(dtype=float)), errors="coerce")
        if not len(values) or values.isna().any():
            return math.nan
    else:
        values = (pd.to_numeric(steady["data_wait_s"], errors="coerce")
                  + pd.to_numeric(steady["compute_s"], errors="coerce"))
    return 1000 * float(values.median()) if len(values) else math.nan
