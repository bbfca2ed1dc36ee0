"""Lesson 13's exercise: a guard against a loss that is not finite, checked on the host
every step, and what it costs in samples/s predicted."""
from __future__ import annotations

import statistics

from ...analyse import alike, metrics, noise
from ..l13_sync_points import GUARD
from .base import MARK, NotYet, exercise
from .judge import finished_runs, judge_prediction

CALL = {"pytorch": "the `if` on torch.isfinite(loss)", "gluon": "the `if` on an NDArray"}


@exercise("13.1", "Guard every step against a loss that is not finite, and predict what the "
                  "guard costs in samples/s.")
def _guard(runs, answer) -> str:
    runs = finished_runs(runs, 2, "the exercise compares two runs: the loop without the guard "
                         "and with it")
    unnoted = [r.name for r in runs if (r.meta.get("notes") or {}).get(GUARD) is None]
    if unnoted:
        raise NotYet(f"'{unnoted[0]}' does not say whether its loop guarded the loss "
                     f"(rec.note({GUARD}=...)): pass the runs the exercise cell trained.")
    plain = [r for r in runs if not r.meta["notes"][GUARD]]
    guarded = [r for r in runs if r.meta["notes"][GUARD]]
    if not plain or not guarded:
        state = "on" if not plain else "off"
        raise NotYet(f"every run had the guard {state}: nothing was changed. Switch it on at the "
                     f"line marked {MARK}, so that one loop checks its loss and the other not.")
    first, second = plain[0], guarded[0]
    other = alike.differences(plain, guarded)
    other.pop(alike.Aspect.LOAD, None)
    if other:
        raise NotYet(f"the runs differ in more than the guard: "
                     f"{alike.words(other, first.name, second.name)}. Change the guard alone.")
    short = [r for r in runs if metrics.steady_steps(r) < noise.BLOCKS * noise.MIN_STEPS]
    if short:
        raise NotYet(f"'{short[0].name}' has {metrics.steady_steps(short[0])} steady steps: too "
                     f"few to judge (a verdict needs {noise.BLOCKS * noise.MIN_STEPS} a run). Give "
                     "each run more: gc.sizes(\"13\", train_size=...), then run the exercise again.")
    verdict = pooled_verdict(plain, guarded)
    said = judge_prediction(answer, verdict, first, second)
    track, gpu = metrics.engine(first), metrics.on_gpu(first)
    why = cost_words(verdict.kind, track, gpu, "check", CALL.get(track, "the `if`"))
    said += f" {why[:1].upper()}{why[1:]}" if why else ""
    return (f"{said} The guard's `if` needs the loss's value on the "
            "host: a sync, as .item() is, hidden in a condition"
            + (" (torch.cuda.set_sync_debug_mode('warn') names its line on a GPU)" if track ==
               "pytorch" else "") + ". Checking every hundredth step, or keeping the check on "
            "the device and reading it once an epoch, costs next to nothing.")


def cost_words(kind: noise.Kind, track: str, gpu: bool, each: str, call: str) -> str:
    """Why reading a device value on the host every step (each: what one is called, "check";
    call: the code that reads) cost what the noise verdict `kind` says; "" for a verdict
    that says nothing (too few steps, unlike runs)."""
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


def pooled_verdict(a: list, b: list) -> noise.Verdict:
    """b's samples/s against a's (each a list of interleaved repeats), judged on the blocks
    of steady steps of all their runs together: with two runs a side and no effect, the
    runs' own ranges part by chance one time in three; the blocks part only where every
    block of one side beats every block of the other. One run a side is `noise.compare`'s
    (which leaves runs that the machine's load parts too untested)."""
    if len(a) == len(b) == 1:
        return noise.compare(a[0], b[0])
    xs = [x for r in a for x in noise.block_rates(r)]
    ys = [y for r in b for y in noise.block_rates(r)]
    rate = lambda runs: statistics.median(metrics.samples_per_sec(r) for r in runs)  # noqa: E731
    return noise.compare_samples(xs, ys, f"{len(xs)} / {len(ys)} blocks of steady steps over "
                                 f"{len(a)} / {len(b)} runs", rate(a), rate(b))
