"""Lesson 02's exercise: a sweep of worker counts, and its knee named."""
from __future__ import annotations

import math
import numbers

from ...analyse import alike, metrics, noise
from ..l02_workers import KNEE
from ...page import Page
from .base import Contradicted, NotYet, exercise
from .judge import alike_but, finished_runs, reaching, speed_verdict, wait_words

PAGE = Page.of(__name__)   # the fixed sentences: text/ex02.md
RUNS, UNSURE, SAYS = PAGE.text("runs"), PAGE.text("unsure"), PAGE.means("says", str)


@exercise("02.1")
def _knee(runs, answer) -> str:
    """Sweep the worker count and name the knee: where samples/s stops growing."""
    runs = finished_runs(runs, 3, RUNS)
    for run in runs[1:]:
        alike_but(runs[0], run, ("num_workers",), "num_workers")
    counts = [int(alike.value(r, "num_workers") or 0) for r in runs]
    tried = ", ".join(map(str, sorted(set(counts))))
    if len(set(counts)) < 3:
        raise NotYet(f"the sweep tried {len(set(counts))} worker count(s) ({tried}); "
                     "a knee needs at least three.")
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real) \
            or not float(answer).is_integer() or int(answer) not in counts:
        raise NotYet(f"knee={answer!r}: name one of the counts tried ({tried}): the fewest workers "
                     f"within {1 - KNEE:.0%} of the best samples/s, or within noise.")
    rates = {n: metrics.samples_per_sec(r) for n, r in zip(counts, runs)}
    best_n = max(rates, key=lambda n: rates[n] if math.isfinite(rates[n]) else -1)
    best = runs[counts.index(best_n)]
    waits = ", ".join(f"{n} worker(s) {wait_words(r)}" for n, r in sorted(zip(counts, runs), key=lambda p: p[0]))
    judged = {n: speed_verdict(best, r, "num_workers", "02") for n, r in zip(counts, runs) if r is not best}
    knee, reach = int(answer), reaching(rates, judged, best_n)
    fields = dict(knee=knee, best=best_n, waits=waits, verdict=judged.get(knee), share=KNEE)
    if knee not in reach:
        raise Contradicted(SAYS["below"].format(**fields))
    fewest = reach[0]
    if fewest < knee:   # the knee is where samples/s stops growing: the fewest that reach the best
        than = "the fastest" if fewest == best_n else f"{judged[fewest]} against {best_n}"
        raise Contradicted(SAYS["fewer"].format(**fields, fewest=fewest, than=than))
    said = SAYS["fastest" if knee == best_n else "reached"].format(**fields)
    unsure = f" {UNSURE}" * any(v.kind == noise.Kind.UNLIKE for v in judged.values())
    return SAYS["passed"].format(said=said, unsure=unsure, waits=waits)
