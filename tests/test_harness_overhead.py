"""The overhead benchmark in a short form: a loose bound on what the harness adds to a step
without work (best of repeats, catching a gross regression: a sync or a file write added
to every step), and the comparisons with a plain loop checked for what they report, not for
their direction: on a shared CPU two short runs swing by x0.7 to x2 whatever the harness
does. The real figure comes from `python -m tools.harness_overhead` on a quiet machine
(see the issue notes)."""
import importlib.util
import math
import statistics

import pytest

from tools.harness_overhead import compare, harness_cost_per_step
from gpu_course.config import Experiment

ENGINES = [e for e, module in (("gluon", "mxnet"), ("pytorch", "torch"))
           if importlib.util.find_spec(module)]


def test_the_harness_adds_microseconds_to_a_step():
    assert harness_cost_per_step(steps=5000, repeats=3, progress=True) < 200e-6


def measured(result: dict, pairs: int) -> None:
    """A comparison's report: each side's median samples/s, a ratio for each pair, their
    median, and the machine's load meanwhile."""
    assert len(result["ratios"]) == pairs, result
    assert all(math.isfinite(r) and r > 0 for r in result["ratios"]), result
    assert result["ratio"] == pytest.approx(statistics.median(result["ratios"])), result
    assert result["plain"] > 0 and result["harness"] > 0 and result["load_max"] >= 0, result


@pytest.mark.parametrize("engine", ENGINES)
def test_gc_train_and_a_plain_loop_are_compared_in_alternated_pairs(engine):
    cfg = Experiment(name="overhead", model="tiny", train_size=128, test_size=32,
                     batch_size=32, num_workers=0)
    lines = []
    result = compare(engine, cfg, pairs=2, log=lines.append, threads=1)
    assert [line.split()[2] for line in lines] == ["plain", "harness", "harness", "plain"]
    measured(result, pairs=2)


@pytest.mark.skipif("gluon" not in ENGINES, reason="needs MXNet")
def test_epochs_of_one_network_alternate_between_the_plain_loop_and_the_harness():
    from tools.harness_overhead import interleaved_epochs
    cfg = Experiment(name="overhead", model="tiny", train_size=128, test_size=32,
                     batch_size=32, num_workers=0)
    lines = []
    result = interleaved_epochs(cfg, rounds=2, log=lines.append)
    assert [line.split()[2] for line in lines] == ["plain", "harness", "harness", "plain"]
    measured(result, pairs=2)
