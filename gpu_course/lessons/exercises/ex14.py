"""Lesson 14's exercise: the peak memory of a batch not yet measured, predicted from one that was."""
from __future__ import annotations

import math
import numbers

from ...analyse.memory import memory_of
from ...page import Page
from .base import MARK, NotYet, exercise
from .judge import finished_runs, only_change

PAGE = Page.of(__name__)   # the fixed sentences: text/ex14.md
RUNS, AS_SHIPPED, FIRST, PASSED = (PAGE.text(n) for n in ("runs", "as_shipped", "first", "passed"))
TOLERANCE = 0.1   # a prediction this close to the measured peak (or its spread) passes


@exercise("14.1", shipped_first=True)
def _predict_peak(runs, answer) -> str:
    """Predict the peak memory of a batch size you have not measured, from one you have."""
    first, mine = finished_runs(runs, 2, RUNS)[:2]
    try:
        a, b = memory_of(first), memory_of(mine)
    except ValueError as err:
        raise NotYet(f"{err}. {AS_SHIPPED}") from None
    if a.batch == b.batch:
        raise NotYet(f"'{mine.name}' has the first run's batch ({a.batch}): change it at {MARK}.")
    only_change(first, mine, "batch_size")
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real) or not answer > 0 \
            or not math.isfinite(answer):
        raise NotYet(f"prediction={answer!r}: before you run, write the peak you expect for "
                     f"'{mine.name}' in MiB (a finite number above 0).")
    peak, spread = b.peak_mib, (max(b.peak) - min(b.peak)) / 2**20
    off = answer / peak - 1
    first_words = FIRST.format(name=first.name, a=a)
    if not abs(answer - peak) <= max(TOLERANCE * peak, spread) or math.isnan(peak):
        raise NotYet(f"you predicted {answer:.3g} MiB; '{mine.name}' peaked at {peak:.3g} MiB "
                     f"({off:+.0%}), more than {TOLERANCE:.0%} off. {first_words}: which grows?")
    return PASSED.format(name=mine.name, peak=peak, answer=answer, off=off, tolerance=TOLERANCE,
                         first=first_words, b=b)
