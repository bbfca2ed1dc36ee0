"""Lesson 05: large batches, and the changes that keep their accuracy.

Three experiments, each judged here from its runs' records:

* the batch-size sweep (plain SGD, one learning rate, the same epochs): samples/s and
  accuracy against the batch, beside the talk's table;
* one change at a time at the large batch (scaled learning rate, warm-up, a large-batch
  optimizer): each change's accuracy credited against the row above, judged against noise;
* the optimizer race: which optimizer reaches a target accuracy first.

`part(runs)` tells the three apart by what their configs vary (never by their names), so
`gc.show(runs, lesson="05")` and `gc.conclude("05", runs)` serve each. Sentences name
what ran (the network, images and epochs), since the smoke sizes train a small network.
"""
from __future__ import annotations

import enum
import json
import math

import pandas as pd

from ..analyse import alike, metrics, noise
from ..show import report
from ..show.closing import Closing
from . import talk, workers

SIZES = {
    "full": dict(model="resnet20", train_size=50_000, test_size=10_000, epochs=3,   # the talk's table: 3 epochs
                 warmup_steps=10, num_workers=workers(),
                 batches=(64, 128, 256, 640, 1280),   # per device; the last is "large"
                 base_batch=128,                      # lr = 0.1 at this batch, scaled linearly above it
                 large_warmup_epochs=1.0,            # the large batch's warm-up
                 race_epochs=6, race_train_size=50_000, race_batch=256,
                 torch_threads=None,                  # PyTorch's intra-op threads (None: its default)
                 exercise_size=10_240),               # each exercise run: 20+ steady steps at 128
    # a small network and one in-process loader, so that a dozen runs fit CI's minute on 2 cores
    "smoke": dict(model="tiny", train_size=512, test_size=256, epochs=1, warmup_steps=2,
                  num_workers=0, batches=(32, 64, 128), base_batch=32, large_warmup_epochs=0.5,
                  race_epochs=2, race_train_size=256, race_batch=64, torch_threads=1,
                  exercise_size=1_536),               # 22 steady steps at batch 64: a noise verdict
    "check": dict(train_size=10_240, test_size=2_048, epochs=2, batches=(64, 256, 1280),
                  race_epochs=3, race_train_size=10_240, exercise_size=5_120),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("base_batch", "batches", "exercise_size", "large_warmup_epochs", "race_batch",
             "race_epochs", "race_train_size", "torch_threads")
TARGET = 0.9          # the race's target: this share of the best final accuracy
DATA_BOUND = 0.5      # a run that waits for data more than this share of its steady time
PER_LAYER = {"lars", "lamb"}   # optimizers that compute norms per layer every step


class Part(enum.Enum):
    SWEEP = "the batch-size sweep"
    CHANGES = "one change at a time"
    RACE = "the optimizer race"


# the recipe a large batch changes; the batch itself is the sweep's variable
_RECIPE = ("optimizer", "lr", "momentum", "lr_base_batch", "warmup_epochs", "optimizer_params")
# fields that name, seed or time a run, not the work it does
def part(runs) -> Part:
    """Which experiment the runs are, from what their configs vary: only the batch (the
    sweep); the optimizer at one batch with one scaling and warm-up (the race); else the
    changes down the ladder."""
    runs = list(runs)

    def varies(field):
        return len({_key(r.config.get(field)) for r in runs}) > 1

    if not any(varies(f) for f in _RECIPE):
        return Part.SWEEP
    if varies("optimizer") and not any(varies(f) for f in ("batch_size", "lr_base_batch",
                                                            "warmup_epochs")):
        return Part.RACE
    return Part.CHANGES


def config_changes(a, b, ignore=()) -> dict:
    """{field: (a's value, b's value)} for every setting the two runs ran with differently
    (`alike.differences` less `ignore`, its settings only): what a comparison of them
    compares."""
    return alike.settings(a, b, ignore)


def lr_used(run) -> float:
    """The learning rate the run stepped with: lr, scaled linearly by the global batch
    over lr_base_batch when that is set (before any warm-up or schedule)."""
    c = run.config or {}
    base = c.get("lr_base_batch")
    lr = float(c.get("lr") or math.nan)
    return lr * int(c.get("batch_size") or 0) * max(int(c.get("num_gpus") or 1), 1) / base \
        if base else lr


def time_to(run, target: float) -> float:
    """Training seconds (epoch times, validation left out) until the first epoch whose
    val acc reaches `target`; NaN if none did."""
    epochs = run.epochs
    if not len(epochs) or "val_acc" not in epochs.columns:
        return math.nan
    acc = pd.to_numeric(epochs["val_acc"], errors="coerce")
    seconds = pd.to_numeric(epochs["epoch_time_s"], errors="coerce").cumsum()
    hit = acc.index[acc >= target]
    return float(seconds[hit[0]]) if len(hit) else math.nan


# -- tables -------------------------------------------------------------------------------
def table(runs, target: float = TARGET) -> pd.DataFrame:
    """The table the part's sentences cite: the sweep's with the talk's numbers beside
    each batch; the ladder's with what each row changed from the row above and the
    learning rate used; the race's with each optimizer's time to the target."""
    runs = list(runs)
    which = part(runs)
    if which is Part.RACE:
        return _race_table(runs, target)
    frame = report.ladder_table(runs)
    if which is Part.SWEEP:
        batches = [int(r.config.get("batch_size") or 0) for r in runs]
        report.put(frame, 1, "batch_size", batches)
        frame["talk_val_acc_pct"] = [100 * talk.BATCH_TABLE[b][0] if b in talk.BATCH_TABLE
                                     else math.nan for b in batches]
        frame["talk_epoch_s"] = [talk.BATCH_TABLE[b][1] if b in talk.BATCH_TABLE else math.nan
                                 for b in batches]
        return frame
    frame.insert(1, "changed_from_the_row_above",
                 ["–"] + [_changes_text(config_changes(a, b)) for a, b in zip(runs, runs[1:])])
    report.put(frame, 2, "lr", [lr_used(r) for r in runs])
    return frame


def _race_table(runs, target: float) -> pd.DataFrame:
    final = [metrics.val_acc(r) for r in runs]
    goal = target * max((a for a in final if a == a), default=math.nan)
    return pd.DataFrame({
        "rung": [r.name for r in runs], "lr": [lr_used(r) for r in runs],
        "status": [metrics.status(r) for r in runs],
        "best_val_acc_pct": [100 * pd.to_numeric(r.epochs.get("val_acc", pd.Series(dtype=float)),
                                                 errors="coerce").max() for r in runs],
        "val_acc": final, "samples_per_sec": [metrics.samples_per_sec(r) for r in runs],
        "time_to_target_s": [time_to(r, goal) for r in runs]})


# -- the sentences --------------------------------------------------------------------------
def conclude(runs, target: float = TARGET) -> Closing:
    """The part's checked sentences (see `part`)."""
    runs = list(runs)
    which = part(runs)
    if which is Part.SWEEP:
        return _sweep(runs)
    if which is Part.RACE:
        return _race(runs, target)
    return _changes(runs)


def _sweep(runs) -> Closing:
    say = Closing(table(runs), runs, varies=("batch_size", "lr"))
    done = sorted((r for r in runs if metrics.status(r) not in metrics.FAILED),
                  key=lambda r: r.config["batch_size"])
    if not done:
        say("No batch size finished: nothing to compare.")
        return say
    small, large = done[0], done[-1]
    b_small, b_large = small.config["batch_size"], large.config["batch_size"]
    if large is not small:
        say(f"Batch {b_small} → {b_large} ({_what(say, large)}), samples/s: "
            f"{say.compare(small, large)}; epoch time {say.cell(small, 'epoch_time_s')} s → "
            f"{say.cell(large, 'epoch_time_s')} s.")
        say(f"Val acc after {large.config['epochs']} epoch(s): {say.cell(small, 'val_acc')} → "
            f"{say.cell(large, 'val_acc')}, {say.accuracy(small, large)[1]}.")
    oom = [str(r.config["batch_size"]) for r in runs if metrics.status(r) == "oom"]
    if oom:
        say(f"Out of memory at batch {', '.join(oom)}: the sweep recorded it and went on.")
    say(f"The talk's columns are {talk.WORKLOAD} after {talk.BATCH_TABLE_EPOCHS} epochs on "
        f"{talk.HARDWARE}: another job than this sweep's, set beside it for its shape, not "
        "for a speed-up.")
    wait = metrics.data_wait_share(large)
    say(f"The talk, batch {talk.LARGE_BATCH} on {talk.HARDWARE}: "
        f"{say.quote(talk.SOURCE, talk.LARGE_BATCH_SAMPLES_PER_SEC, '{:,} samples/s')} with "
        f"{talk.WORKERS} workers, ≈{say.quote(talk.SOURCE, talk.LARGE_BATCH_ONE_WORKER, '{:,}')} "
        f"with one worker: a large batch needs lesson 2's input pipeline. Here batch {b_large} "
        f"with {large.config.get('num_workers', 0)} loader worker(s) waited for data "
        f"{say.cell(large, 'data_wait_share')} of its steady time"
        + (": the input pipeline, not the batch, sets its pace (lessons 2 and 9)."
           if wait > DATA_BOUND else "."))
    if any(metrics.on_gpu(r) for r in done):
        say(f"On the GPU, GPU util went {say.cell(small, 'gpu_util')} → "
            f"{say.cell(large, 'gpu_util')} from batch {b_small} to {b_large}: a larger batch "
            "gives each kernel more work, and the Python loop fewer steps to launch.")
    else:
        lo, hi = talk.BATCH_TABLE[64][1], talk.BATCH_TABLE[512][1]
        say(f"No run here trained on a GPU: what a large batch buys by filling a GPU's cores "
            f"(the talk's {say.quote(talk.SOURCE, lo, '{} s')} → {say.quote(talk.SOURCE, hi, '{} s')} "
            "per epoch from batch 64 to 512) needs one to show.")
    return say


def _changes(runs) -> Closing:
    say = Closing(table(runs), runs)
    first = runs[0]
    say(f"From {first.name!r} ({_what(say, first)}; val acc {say.cell(first, 'val_acc')}, lr "
        f"{say.cell(first, 'lr', '{:g}')}), each change against the row above:")
    verdicts = []
    for before, run in zip(runs, runs[1:]):
        changed = ", ".join(config_changes(before, run)) or "nothing"
        verdict = noise.accuracy_verdict(before, run)
        say(f"{run.name!r} (changes {changed}): val acc {say.cell(run, 'val_acc')}, "
            f"{say.accuracy(before, run)[1]}.")
        verdicts.append((run, verdict))
    if say.at_chance(runs):
        top = max(runs, key=metrics.val_acc)
        say(f"Every run is within noise of chance, the best too: {say.chance(top)} At this size "
            "no change can be credited with accuracy; run at full size for the attribution.")
    else:
        gained = [repr(r.name) for r, v in verdicts if v.is_effect and v.points > 0]
        lost = [repr(r.name) for r, v in verdicts if v.is_effect and v.points < 0]
        if gained or lost:
            say("Beyond noise: " + "; ".join(
                words for words in (f"accuracy bought by {', '.join(gained)}" if gained else "",
                                    f"lost by {', '.join(lost)}" if lost else "") if words)
                + " (their verdicts above); every other change is within noise of the row above.")
        else:
            say("No change moved accuracy beyond noise of the row above: none is credited. More "
                "epochs or validation images narrow the noise.")
    for before, run in zip(runs, runs[1:]):
        if set(config_changes(before, run)) - {"optimizer", "optimizer_params"} \
                or not config_changes(before, run):
            continue
        speed = say.compare(before, run, varies=("optimizer", "optimizer_params"))
        say(f"{run.name!r} against {before.name!r} (the same learning rate and warm-up), "
            f"speed: {speed}.")
        if _same_update(before, run):
            say("MXNet runs the same sgd_mom_update for both (lbsgd with batch_scale=1): "
                + ("a speed difference the spread calls an effect is this machine's load "
                   "changing between the runs; the steady steps of one run understate "
                   "run-to-run noise." if speed.is_effect else
                   "as expected, no difference beyond noise."))
        elif _more_work(before, run) and speed.kind == noise.Kind.FASTER:
            say(f"{run.name!r} does more work per step (a norm per layer), so it cannot be "
                "faster: this machine's load changed between the runs (one run's steady "
                "steps understate run-to-run noise).")
    return say


def _race(runs, target: float) -> Closing:
    frame = table(runs, target)
    say = Closing(frame, runs)
    acc = frame["val_acc"]
    if acc.isna().all():
        say("No optimizer finished with a validation accuracy: no race to judge.")
        return say
    lead = int(acc.idxmax())
    reached = [i for i in range(len(frame)) if not math.isnan(frame["time_to_target_s"][i])]
    say(f"Target: {say.setting('TARGET', target, '{:.0%}')} of the best final accuracy, "
        f"{say.cell(lead, 'val_acc')} ({frame.rung[lead]}; {_what(say, runs[lead])}). "
        "Reached by " + (", ".join(f"{frame.rung[i]} ({say.cell(i, 'time_to_target_s', '{:.1f} s')})"
                                   for i in reached) or "none") + ".")
    rest = acc.drop(index=lead)
    if say.at_chance(lead):
        say(f"{say.chance(lead)} So reaching the target says nothing: no optimizer is named "
            "first. Run at full size for the race.")
    elif rest.isna().all():
        say("No other optimizer finished: none to rank it against.")
    else:
        second = int(rest.idxmax())
        ahead = noise.accuracy_verdict(runs[second], runs[lead])
        text = say.accuracy(second, lead)[1]
        if ahead.is_effect:
            first = min(reached, key=lambda i: frame["time_to_target_s"][i])
            say(f"First there: {frame.rung[first]} after "
                f"{say.cell(first, 'time_to_target_s', '{:.1f} s')} of training; the best "
                f"accuracy against the next best ({frame.rung[second]}): {text}.")
        else:
            say(f"The best accuracy against the next best ({frame.rung[second]}): {text}: no "
                "optimizer is named first.")
    missed = [frame.rung[i] for i in range(len(frame)) if i not in reached]
    say(f"Not reached in {runs[lead].config['epochs']} epoch(s): "
        f"{', '.join(missed) if missed else 'none'}.")
    return say


# -- helpers ----------------------------------------------------------------------------------
def _what(say: Closing, run) -> str:
    """What ran, e.g. "tiny on 512 synthetic images, 1 epoch(s)", its numbers cited."""
    c = run.config or {}
    return (f"{c.get('model', '?')} on {say.setting('train_size', int(c.get('train_size') or 0), '{:,}')} "
            f"{c.get('dataset', '')} images, {c.get('epochs', '?')} epoch(s)")


def _params(run) -> dict:
    return {k: v for k, v in (run.config.get("optimizer_params") or ())}


def _same_update(before, run) -> bool:
    """MXNet's lbsgd with batch_scale=1 and its linear warm-up strategy steps exactly as
    momentum SGD does (its multiplier stays 1)."""
    p = _params(run)
    return (before.config.get("optimizer") == "sgd" and run.config.get("optimizer") == "lbsgd"
            and p.get("batch_scale", 1) == 1 and p.get("warmup_strategy", "linear") == "linear")


def _more_work(before, run) -> bool:
    """Whether run's optimizer computes per-layer norms that before's does not."""
    def per_layer(r):
        return r.config.get("optimizer") in PER_LAYER or _params(r).get("warmup_strategy") == "lars"
    return per_layer(run) and not per_layer(before)


def _changes_text(changes: dict) -> str:
    return "; ".join(f"{k} {_shown(a)} → {_shown(b)}" for k, (a, b) in changes.items()) or "–"


def _shown(value) -> str:
    if value is None or value == [] or value == ():
        return "–"
    if isinstance(value, (list, tuple)):
        return ", ".join("=".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
                         for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def _key(value) -> str:
    """A config value in a form that compares equal however it was stored (tuples are
    lists once written to JSON)."""
    return json.dumps(value, sort_keys=True, default=str)
