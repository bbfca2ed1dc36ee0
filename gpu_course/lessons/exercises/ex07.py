"""Lesson 07's exercise: the same batch split over more devices, its samples/s predicted."""
from __future__ import annotations

from ...analyse import alike, metrics
from ...show.findings import Note
from ..l07_devices import devices
from .base import MARK, NotYet, exercise
from .judge import finished_runs, judge_prediction, only_change, speed_verdict

SPLIT = ("batch_size", "kvstore", alike.Aspect.THREADS)   # what splitting a batch may change besides the devices
# CPU devices that other programs' load held up cannot test a prediction of the split
UNTESTED = (Note(lambda run: not metrics.on_gpu(run) and metrics.machine_load(run)["shared"],
                 (True,), "other programs shared the cores while {names} ran (by the records), "
                 "and devices that meet every step to add up gradients wait for the slowest of "
                 "them: the split measured those programs too. Run it again while nothing else "
                 "runs to test it."),)
# what the devices were, and what a speed-up then means
DEVICES = {
    True: "On GPUs a device's share of the step shrinks while the gradient exchange (every "
          "weight, every step) and the per-step launches stay: splitting pays while each share "
          "still keeps its GPU busy (lesson 05: the larger the batch, the busier).",
    False: "These devices were CPU {unit} sharing the same {cores} cores{threads}: a speed-up "
           "here is more of those cores put to work at once, a slow-down the exchange's cost, "
           "never another device's arithmetic. Run it on a machine with two or more GPUs to "
           "measure scaling."}
UNITS = {"pytorch": "processes"}   # a Gluon device on a CPU is a context


@exercise("07.1")
def _split_batch(runs, answer) -> str:
    """Split the same batch over more devices and predict its samples/s."""
    one, many = finished_runs(runs, 2, "the exercise compares two runs: fewer devices, then more, "
                              "with the same batch a step")[:2]
    k1, k2 = devices(one), devices(many)
    if k2 <= k1:
        raise NotYet(f"'{one.name}' trained on {k1} device(s) and '{many.name}' on {k2}: the "
                     "second run splits the batch over more devices than the first. Set the "
                     f"device count at the line marked {MARK}.")
    b1, b2 = int(one.config.get("batch_size") or 0), int(many.config.get("batch_size") or 0)
    if b1 * k1 != b2 * k2:
        raise NotYet(f"the batch a step differs: {b1 * k1} images for '{one.name}' ({b1} a device "
                     f"× {k1}), {b2 * k2} for '{many.name}' ({b2} × {k2}). Split the same batch: "
                     f"batch_size = {b1 * k1} // devices, so that only its split changes.")
    only_change(one, many, "num_gpus", also=SPLIT)
    said = judge_prediction(answer, speed_verdict(one, many, "num_gpus", "07", also=SPLIT), one,
                            many, UNTESTED)
    ratio = metrics.samples_per_sec(many) / metrics.samples_per_sec(one)
    unit = UNITS.get(metrics.engine(many), "contexts")
    threads = alike.value(many, alike.Aspect.THREADS)
    return (f"{said} Scaling efficiency {ratio / (k2 / k1):.0%} (the speed-up ÷ {k2 / k1:g} times "
            f"the devices): each of {k2} devices computed {b2} images a step where each of {k1} "
            f"computed {b1}. " + DEVICES[metrics.on_gpu(many)].format(
                unit=unit, cores=(many.meta.get("hardware") or {}).get("cpu_count") or "?",
                threads=f" ({threads} compute thread(s) each)" * bool(threads and unit == "processes")))
