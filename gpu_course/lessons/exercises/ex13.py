"""Lesson 13's exercise: a guard against a loss that is not finite, checked on the host
every step, and what it costs in samples/s predicted."""
from __future__ import annotations

import statistics

from ...analyse import metrics, noise
from ..l13_sync_points import GUARD
from .base import MARK, NotYet, exercise
from .judge import alike_but, finished_runs, judge_prediction

CALL = {"pytorch": "the `if` on torch.isfinite(loss)", "gluon": "the `if` on an NDArray"}
# why a host that reads a device value every step paid what it paid: by the verdict's kind
# and whether a GPU ran it (the CPU's words by track)
WAITS = {("gluon", False): "MXNet's engine threads have finished the step, and they then wait"}
TURNS = ("Each check stops the host until {waits} while the host fetches the next batch and "
         "issues its work: the two take turns instead of overlapping.")
COST = {
    (noise.Kind.SLOWER, True): TURNS, (noise.Kind.SLOWER, False): TURNS,
    (noise.Kind.WITHIN_NOISE, True): "no cost beyond noise here. The device finished each step "
        "before the host had issued the next one (launch- or input-bound), so waiting for it "
        "cost nothing; with more work per step (a larger batch) the checks cost.",
    (noise.Kind.WITHIN_NOISE, False): "no cost here. {cpu}",
    (noise.Kind.FASTER, False): "no cost here. {cpu}",
    (noise.Kind.FASTER, True): "no cost here. {cpu}"}
CPU = {"gluon": "On a CPU the host and MXNet's engine share the same cores: while the host "
                "waits, the engine's threads have them to themselves, so there is little "
                "overlap to lose.",
       "pytorch": "On a CPU PyTorch has finished the step when the call returns, so {call} has "
                  "nothing to wait for."}
SYNC = ("{said} The guard's `if` needs the loss's value on the host: a sync, as .item() is, "
        "hidden in a condition{debug}. Checking every hundredth step, or keeping the check on "
        "the device and reading it once an epoch, costs next to nothing.")
DEBUG = {"pytorch": " (torch.cuda.set_sync_debug_mode('warn') names its line on a GPU)"}


@exercise("13.1")
def _guard(runs, answer) -> str:
    """Guard every step against a loss that is not finite, and predict what the guard costs in samples/s."""
    runs = finished_runs(runs, 2, "the exercise compares two runs: the loop without the guard "
                         "and with it")
    unnoted = [r.name for r in runs if (r.meta.get("notes") or {}).get(GUARD) is None]
    if unnoted:
        raise NotYet(f"'{unnoted[0]}' does not say whether its loop guarded the loss "
                     f"(rec.note({GUARD}=...)): pass the runs the exercise cell trained.")
    plain = [r for r in runs if not r.meta["notes"][GUARD]]
    guarded = [r for r in runs if r.meta["notes"][GUARD]]
    if not plain or not guarded:
        raise NotYet(f"every run had the guard {'on' if guarded else 'off'}: nothing was changed. "
                     f"Switch it on at the line marked {MARK}, so that one loop checks its loss "
                     "and the other not.")
    alike_but(plain, guarded, (), "the guard")
    short = [r for r in runs if metrics.steady_steps(r) < noise.BLOCKS * noise.MIN_STEPS]
    if short:
        raise NotYet(f"'{short[0].name}' has {metrics.steady_steps(short[0])} steady steps: too "
                     f"few to judge (a verdict needs {noise.BLOCKS * noise.MIN_STEPS} a run). Give "
                     "each run more: gc.sizes(\"13\", train_size=...), then run the exercise again.")
    verdict = pooled_verdict(plain, guarded)
    said = judge_prediction(answer, verdict, plain[0], guarded[0])
    why = cost_words(verdict.kind, metrics.engine(plain[0]), metrics.on_gpu(plain[0]))
    said += f" {why[:1].upper()}{why[1:]}" * bool(why)
    return SYNC.format(said=said, debug=DEBUG.get(metrics.engine(plain[0]), ""))


def cost_words(kind: noise.Kind, track: str, gpu: bool) -> str:
    """Why checking the loss on the host every step cost what the noise verdict `kind`
    says; "" for a verdict that says nothing (too few steps, unlike runs)."""
    waits = WAITS.get((track, gpu), "the device has finished the step, and it then waits")
    return COST.get((kind, gpu), "").format(
        waits=waits, cpu=CPU.get(track, CPU["pytorch"]).format(call=CALL.get(track, "the `if`")))


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
