"""Lesson 15's exercise: a batch sweep of a served network, where its images/s stops growing named."""
from __future__ import annotations

import numbers

from ...analyse import inference, noise
from ..l02_workers import KNEE
from ...page import Page
from .base import MARK, Contradicted, NotYet, exercise
from .judge import reaching

PAGE = Page.of(__name__)   # the fixed sentences: text/ex15.md
# what else a knee that passed says, where it holds ({knee}, {best}, {fewest}, {first}, ...)
AFTER, KNEE_SAYS = PAGE.means("after", str), PAGE.means("knee", str)
GUESS, MORE_IMAGES = PAGE.text("guess"), PAGE.text("more_images")


@exercise("15.1")
def _knee(records, answer) -> str:
    """Sweep the batch of a served network; name where images/s stops growing."""
    records = _sweep(records)
    frame = inference.table(records).set_index("rung")
    by_batch = {r["batch"]: r for r in records}
    rate = {b: frame.loc[inference.rung(r), "images_per_sec"] for b, r in by_batch.items()}
    p50 = {b: frame.loc[inference.rung(r), "p50_ms"] for b, r in by_batch.items()}
    tried = ", ".join(map(str, sorted(by_batch)))
    if isinstance(answer, bool) or not isinstance(answer, numbers.Integral) or int(answer) not in by_batch:
        raise NotYet(f"knee={answer!r}: name one of the batches served ({tried}): the smallest "
                     f"within {1 - KNEE:.0%} of the best's images/s, or within noise. {GUESS}")
    best = max(by_batch, key=rate.get)
    judged = {b: noise.compare_samples(inference.block_rates(by_batch[best]),
                                       inference.block_rates(r), f"{inference.BLOCKS} blocks of passes each",
                                       rate[best], rate[b])
              for b, r in by_batch.items() if b != best}
    knee, reach, first = int(answer), reaching(rate, judged, best), min(by_batch)
    fields = dict(knee=knee, best=best, rate=rate[knee], best_rate=rate[best], share=KNEE,
                  verdict=judged.get(knee))
    if knee not in reach:
        raise Contradicted(KNEE_SAYS["below"].format(**fields))
    said = KNEE_SAYS["best" if knee == best else "reached"].format(**fields)
    holds = {"lower": reach[0] < knee, "flat": best == first, "waits": knee != first}
    return said + "".join(" " + text.format(knee=knee, best=best, fewest=reach[0], first=first,
                                            wait=p50[knee], first_wait=p50[first])
                          for name, text in AFTER.items() if holds[name])


def _sweep(records) -> list[dict]:
    """The sweep's records: one network, variant and device, three batches or more, enough passes."""
    try:
        records = inference.checked([] if records is None else records, allow_empty=True)
    except ValueError as err:
        raise NotYet(f"{err}. Pass what gc.time_inference returned.") from None
    batches = sorted({r["batch"] for r in records})
    if len(batches) < 3:
        raise NotYet(f"{len(batches)} batch size(s) so far ({', '.join(map(str, batches)) or 'none'}); "
                     f"a knee needs at least three: list them at {MARK}.")
    if len(kinds := {(r["model"], r["variant"], r["device"]) for r in records}) > 1:
        named = "; ".join(", ".join(k) for k in sorted(kinds))
        raise NotYet(f"the sweep varies more than the batch ({named}): change the batch alone.")
    if few := [r["batch"] for r in records if len(r["pass_s"]) < inference.MIN_PASSES]:
        raise NotYet(f"batch {few[0]} has fewer than {inference.MIN_PASSES} passes to judge. {MORE_IMAGES}")
    return records
