"""Lesson 13's exercise: a guard on the loss checked on the host every step, its cost predicted."""
from __future__ import annotations

import statistics

from ...analyse import metrics, noise
from ...page import Page
from ..l13_sync_points import GUARD
from .base import MARK, NotYet, exercise
from .judge import alike_but, finished_runs, judge_prediction

PAGE = Page.of(__name__)   # the fixed sentences: text/ex13.md
# why reading a device value every step cost what it did: by (verdict's kind, on a GPU)
WAITS = PAGE.means("waits", str)   # what the host waits for: the device, or MXNet's engine
TURNS = PAGE.text("turns")
COST = {
    (noise.Kind.SLOWER, True): TURNS, (noise.Kind.SLOWER, False): TURNS,
    (noise.Kind.WITHIN_NOISE, True): PAGE.text("within_noise_gpu"),
    **dict.fromkeys([(noise.Kind.WITHIN_NOISE, False), (noise.Kind.FASTER, False),
                     (noise.Kind.FASTER, True)], "no cost here. {cpu}")}
CPU = PAGE.means("cpu", str)
SYNC = PAGE.text("sync")
DEBUG = PAGE.means("debug", str)
RUNS = PAGE.text("runs")


@exercise("13.1")
def _guard(runs, answer) -> str:
    """Guard every step against a loss that is not finite; predict what it costs in samples/s."""
    runs = finished_runs(runs, 2, RUNS)
    if unnoted := [r.name for r in runs if (r.meta.get("notes") or {}).get(GUARD) is None]:
        raise NotYet(f"'{unnoted[0]}' does not say whether its loop guarded the loss "
                     f"(rec.note({GUARD}=...)).")
    plain = [r for r in runs if not r.meta["notes"][GUARD]]
    guarded = [r for r in runs if r.meta["notes"][GUARD]]
    if not plain or not guarded:
        raise NotYet(f"every run had the guard {'on' if guarded else 'off'}: nothing was changed at {MARK}.")
    alike_but(plain, guarded, (), "the guard")
    need = noise.BLOCKS * noise.MIN_STEPS
    if short := [r for r in runs if metrics.steady_steps(r) < need]:
        raise NotYet(f"'{short[0].name}' has {metrics.steady_steps(short[0])} steady steps: too "
                     f"few to judge ({need} needed): raise gc.sizes(\"13\", train_size=...).")
    verdict = pooled_verdict(plain, guarded)
    said = judge_prediction(answer, verdict, plain[0], guarded[0])
    track, gpu = metrics.engine(plain[0]), metrics.on_gpu(plain[0])
    waits = WAITS["engine" if (track, gpu) == ("gluon", False) else "device"]
    # why checking every step cost what the verdict says ("" for one that says nothing)
    why = COST.get((verdict.kind, gpu), "").format(waits=waits,
                                                   cpu=CPU.get(track, CPU["pytorch"]))
    said += f" {why[:1].upper()}{why[1:]}" * bool(why)
    debug = DEBUG.get(track)
    return SYNC.format(said=said, debug=f" ({debug})" if debug else "")


def pooled_verdict(a: list, b: list) -> noise.Verdict:
    """b's samples/s against a's (lists of interleaved repeats), on the blocks of all their runs
    together: two runs' own ranges part by chance one time in three. One run a side: `noise.compare`."""
    if len(a) == len(b) == 1:
        return noise.compare(a[0], b[0])
    xs = [x for r in a for x in noise.block_rates(r)]
    ys = [y for r in b for y in noise.block_rates(r)]
    rate = lambda runs: statistics.median(metrics.samples_per_sec(r) for r in runs)  # noqa: E731
    return noise.compare_samples(xs, ys, f"{len(xs)} / {len(ys)} blocks of steady steps over "
                                 f"{len(a)} / {len(b)} runs", rate(a), rate(b))
