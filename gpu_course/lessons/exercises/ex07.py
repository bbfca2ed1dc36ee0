"""Lesson 07's exercise: the same batch split over more devices, its samples/s predicted."""
from __future__ import annotations

from ...analyse import alike, metrics
from ...show.findings import Note, Page
from ..l07_devices import devices
from .base import MARK, NotYet, exercise
from .judge import QUIET, finished_runs, judge_prediction, only_change, speed_verdict

PAGE = Page.of(__name__)   # the fixed sentences: text/ex07.md
SPLIT = ("batch_size", "kvstore", alike.Aspect.THREADS)   # what splitting a batch may change besides the devices
# CPU devices that other programs' load held up cannot test a prediction of the split
UNTESTED = (Note(lambda run: not metrics.on_gpu(run) and metrics.machine_load(run)["shared"],
                 (True,), PAGE.text("shared") + " " + QUIET),)
# what the devices were, and what a speed-up then means
DEVICES = {True: PAGE.text("gpus"), False: PAGE.text("cpus")}
RUNS, PASSED = PAGE.text("runs"), PAGE.text("passed")
UNITS = {"pytorch": "processes"}   # a Gluon device on a CPU is a context


@exercise("07.1")
def _split_batch(runs, answer) -> str:
    """Split the same batch over more devices and predict its samples/s."""
    one, many = finished_runs(runs, 2, RUNS)[:2]
    k1, k2 = devices(one), devices(many)
    if k2 <= k1:
        raise NotYet(f"'{one.name}' trained on {k1} device(s) and '{many.name}' on {k2}: give the "
                     f"second more devices at {MARK}.")
    b1, b2 = int(one.config.get("batch_size") or 0), int(many.config.get("batch_size") or 0)
    if b1 * k1 != b2 * k2:
        raise NotYet(f"the batch a step differs: '{one.name}' {b1} × {k1} device(s), "
                     f"'{many.name}' {b2} × {k2}. Split one batch: batch_size = {b1 * k1} // devices.")
    only_change(one, many, "num_gpus", also=SPLIT)
    verdict = speed_verdict(one, many, "num_gpus", "07", also=SPLIT)
    said = judge_prediction(answer, verdict, one, many, UNTESTED)
    ratio = metrics.samples_per_sec(many) / metrics.samples_per_sec(one)
    unit = UNITS.get(metrics.engine(many), "contexts")
    threads = alike.value(many, alike.Aspect.THREADS)
    on_devices = DEVICES[metrics.on_gpu(many)].format(
        unit=unit, cores=(many.meta.get("hardware") or {}).get("cpu_count") or "?",
        threads=f" ({threads} compute thread(s) each)" * bool(threads and unit == "processes"))
    return PASSED.format(said=said, efficiency=ratio / (k2 / k1), times=k2 / k1, k1=k1, k2=k2,
                         b1=b1, b2=b2, devices=on_devices)
