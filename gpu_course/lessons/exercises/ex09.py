"""Lesson 09's exercise: the photos read in another format, the data wait predicted."""
from __future__ import annotations

from ...analyse import alike, metrics, noise
from ...page import Page
from .base import NotYet, exercise
from .judge import finished_runs, only_change, wait_prediction

PAGE = Page.of(__name__)   # the fixed sentences: text/ex09.md
LOOSE = "loose"   # JPEGs opened, decoded and resized per sample: the ladder's first rung
# less waiting and no faster: what now sets the pace, on a GPU and on a CPU
PACE = {True: ": " + PAGE.text("pace"),
        False: ": " + PAGE.text("pace") + ", and on a CPU it shares the cores with the loader"}
RUNS, SAYS = PAGE.text("runs"), PAGE.means("says", str)


@exercise("09.1")
def _data_format(runs, answer) -> str:
    """Read the photos in another format than loose JPEGs and predict the data wait."""
    loose, other = finished_runs(runs, 2, RUNS)[:2]
    only_change(loose, other, "data_format")
    formats = alike.value(loose, "data_format"), alike.value(other, "data_format")
    if formats[0] != LOOSE:
        raise NotYet(f"'{loose.name}' read data_format={formats[0]!r}: the first run reads loose JPEGs.")
    measured, said = wait_prediction(
        answer, loose, other, "09", (f"reading {formats[0]}", f"reading {formats[1]}"),
        SAYS["why"].format(format=formats[1]))
    speed = noise.compare(loose, other, varies=("data_format",))
    paced = measured == "less" and speed.kind in (noise.Kind.WITHIN_NOISE, noise.Kind.SLOWER)
    pace = PACE[metrics.on_gpu(loose)] * paced
    return SAYS["passed"].format(said=said, other=other.name, loose=loose.name, speed=speed,
                                 pace=pace)
