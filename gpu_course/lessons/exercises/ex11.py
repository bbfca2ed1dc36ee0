"""Lesson 11's exercise: the forward pass on another thread count than the usable cores,
its images/s predicted."""
from __future__ import annotations

import math

from ...analyse import metrics, noise
from ...show import findings
from ...show.findings import Outcome, Page, Predict
from ..l11_environment import BENCH, BUSY_LOAD, MIN_PASSES, label
from .base import MARK, NotYet, exercise
from .judge import QUIET, SPEED, expects, said

PAGE = Page.of(__name__)   # the fixed sentences: text/ex11.md
# what the two benchmarks share: threads alone change
SAME_BENCH = {"onednn": lambda b: b.get("onednn"), "batch": lambda b: b.get("batch"),
              "cpus": lambda b: b.get("cpus"),
              "framework": lambda b: (b.get("build") or {}).get("framework")}
PASSES = Predict("prediction", SPEED.answers, PAGE.text("ask"), PAGE.means("passes"))
# what the thread count did: by (more threads than cores, verdict's kind, crowded), most specific first
MORE, FEWER = (BENCH.compares[n].means for n in (2, 1))
SAYS = PAGE.means("why", str)
WHY = {
    (True, noise.Kind.SLOWER): SAYS["more_slower"] + " " + MORE[Outcome.EXPECTED],
    (True, noise.Kind.FASTER, True): MORE[Outcome.OPPOSITE],
    True: SAYS["more_even"],
    (False, noise.Kind.SLOWER): SAYS["fewer_slower"],
    (False, noise.Kind.FASTER): FEWER[Outcome.OPPOSITE],
    False: SAYS["fewer_even"]}
CROWDED = PAGE.means("crowded", str)   # who else used the machine during a benchmark


@exercise("11.1")
def _threads(records, answer) -> str:
    """Give the forward pass another thread count than the usable cores; predict its images/s."""
    base, mine = _benches(records)
    if base["threads"] == mine["threads"]:
        raise NotYet(f"both benchmarks ran {base['threads']} threads: nothing changed at {MARK}.")
    if other := [f"{key} {read(base)} against {read(mine)}" for key, read in SAME_BENCH.items()
                 if read(base) != read(mine)]:
        raise NotYet(f"the benchmarks differ in more than their threads: {'; '.join(other)}.")
    xs, ys = base.get("step_images_per_s") or [], mine.get("step_images_per_s") or []
    n = min(len(xs), len(ys))
    if n < MIN_PASSES:
        raise NotYet(f"{n} timed passes a benchmark: too few to judge (at least {MIN_PASSES}): use "
                     f"gc.sizes(\"11\", bench=dict(batch={base.get('batch', 64)}, steps={2 * MIN_PASSES})).")
    expect = expects(PASSES, answer, a=label(base), b=label(mine))
    v = noise.compare_samples(xs, ys, f"{n} timed passes each", base["images_per_s"], mine["images_per_s"])
    crowded = _crowded(base, mine)
    text = said(PASSES, findings.predicted(expect, v, math.inf if crowded else 1.0),
                answer=answer, pair=f"'{label(mine)}' against '{label(base)}'", verdict=v,
                crowded=crowded, quiet=QUIET)
    cores, threads = base["threads"], mine["threads"]
    more = threads > cores   # than the usable cores
    why = WHY.get((more, v.kind, bool(crowded))) or WHY.get((more, v.kind)) or WHY[more]
    why = why.format(threads=threads, cores=cores, idle=cores - threads)
    return f"{text} {why[:1].upper()}{why[1:]}"


def _benches(records) -> tuple[dict, dict]:
    """The first two of `records`, each a benchmark (`env.bench`'s result)."""
    records = [] if records is None else list(records) if isinstance(records, (list, tuple)) else [records]
    if bad := [r for r in records if not isinstance(r, dict) or {"step_images_per_s", "threads"} - set(r)]:
        raise NotYet(f"{bad[0]!r:.80} is not a benchmark: pass what env.bench returned")
    if len(records) < 2:
        raise NotYet(f"{len(records)} benchmark(s) so far; the exercise compares two: the usable "
                     f"cores' count and yours, set at {MARK}.")
    return records[0], records[1]


def _crowded(*benches) -> str:
    """How other programs used the machine during the benchmarks, where they kept at least
    SHARED of a core busy (else the load average before one); "" on a quiet machine."""
    cores = benches[0]["threads"]
    said = [CROWDED["others"].format(cores=b["other_cores"], name=label(b))
            if b.get("other_cores") is not None else
            CROWDED["busy"].format(load=b["load_average"], cores=cores, name=label(b))
            for b in benches if (b.get("other_cores") or 0) >= metrics.SHARED
            or b.get("other_cores") is None and b.get("load_average", 0) >= max(BUSY_LOAD, cores)]
    return said[0] if said else ""
