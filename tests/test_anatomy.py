"""The anatomy of a step and the time to a target accuracy, on runs shaped like real ones:
every verdict a GPU gives (data-, host-, GPU-bound) and the CPU's, with no GPU here."""
import math
from types import SimpleNamespace

import pandas as pd
import pytest

from gpu_course.analyse import anatomy
from gpu_course.analyse.anatomy import Bound
from gpu_course.show import report


def run(name, wait_ms, host_ms, util=None, gpu=True, steps=40, accs=(0.3, 0.5, 0.7),
        epoch_s=(10.0, 5.0, 5.0)):
    """A run whose steps wait `wait_ms` and dispatch for `host_ms`; on a GPU its steady
    GPU-Util is `util` % (None: the monitor read none)."""
    rows = pd.DataFrame({"epoch": 0, "step": range(steps), "samples": 64,
                         "data_wait_s": wait_ms / 1e3, "compute_s": host_ms / 1e3,
                         "timed": 1, "device_s": (wait_ms + host_ms) / 1e3 if gpu else math.nan})
    epochs = pd.DataFrame({"epoch": range(len(accs)), "val_acc": accs, "epoch_time_s": epoch_s,
                           "samples": 1000, "timed_samples": 1000,
                           "timed_s": [s - 1 for s in epoch_s]})
    return SimpleNamespace(name=name, steps=rows, epochs=epochs, config={"num_gpus": 1, "test_size": 10_000}, util=util,
                           meta={"notes": {"devices": "cuda:0" if gpu else "cpu"}})


@pytest.fixture
def steady_util(monkeypatch):
    """The steady GPU-Util each fake run was given (metrics.gpu_util reads the monitor's
    samples, tested with real ones in test_report and test_metrics)."""
    monkeypatch.setattr(anatomy.metrics, "gpu_util",
                        lambda r: math.nan if r.util is None else float(r.util))


@pytest.mark.parametrize("wait, host, util, gpu, bound", [
    (5.0, 5.0, 50.0, True, Bound.DATA),        # waits half the step for the loader
    (1.0, 7.9, 31.0, True, Bound.HOST),        # the H200's naive rung: kernels run 31 % of it
    (0.0, 5.8, 92.0, True, Bound.GPU),         # its tuned rung: kernels run through the step
    (0.1, 9.9, None, True, Bound.NO_UTIL),
    (0.1, 9.9, None, False, Bound.CPU),
])
def test_what_holds_the_step(wait, host, util, gpu, bound, steady_util):
    a = anatomy.anatomy(run("r", wait, host, util, gpu))
    assert a.bound is bound
    assert a.step_ms == pytest.approx(wait + host)
    assert a.host_ms == pytest.approx(host)
    if util is not None:
        assert a.gpu_busy_ms == pytest.approx((wait + host) * util / 100)
    else:
        assert math.isnan(a.gpu_busy_ms)


def test_a_run_with_too_few_steady_steps_is_not_ruled_on(steady_util):
    assert anatomy.anatomy(run("r", 0.1, 9.9, 95.0, steps=5)).bound is Bound.TOO_FEW


def test_time_to_accuracy_counts_training_to_the_first_epoch_that_reached_it(steady_util):
    r = run("r", 0.1, 9.9, accs=(0.3, 0.72, 0.71), epoch_s=(10.0, 5.0, 5.0))
    assert anatomy.time_to_accuracy(r, 0.70) == pytest.approx(15.0)   # warm-up epoch included
    assert math.isnan(anatomy.time_to_accuracy(r, 0.80))


def test_the_h200_reference_shows_why_compile_read_as_a_slow_down():
    """The committed reference (real records): batch-64 rungs are host-bound, with their
    kernels a small part of the step, and the whole-step CUDA graph is GPU-bound."""
    from gpu_course.lessons import l08_summary
    runs = l08_summary.latest_ladder("pytorch", report.REFERENCE_ROOT / "pytorch-h200")
    rows = anatomy.table(runs).set_index("rung")
    assert rows.loc["naive", "bound"] == rows.loc["compile", "bound"] == "host-bound"
    assert rows.loc["compile", "gpu_busy_ms"] < rows.loc["naive", "gpu_busy_ms"]   # fused
    assert rows.loc["compile", "host_ms"] > rows.loc["naive", "host_ms"]         # not lighter
    assert rows.loc["cuda-graphs", "bound"] == "GPU-bound"
    assert rows.loc["naive", "next_rung"].startswith("workers: not aimed")     # the ladder's order
    assert rows.loc["workers", "next_rung"] == "compile: aimed (graph)"      # against the anatomy


def test_the_table_heads_each_rung_with_its_time_to_the_baselines_accuracy(steady_util):
    naive = run("naive", 5.0, 5.0, 30.0, accs=(0.4, 0.6, 0.7), epoch_s=(30.0, 20.0, 20.0))
    tuned = run("tuned", 0.1, 2.0, 95.0, accs=(0.5, 0.7, 0.8), epoch_s=(8.0, 2.0, 2.0))
    large = run("large batch", 0.1, 2.0, 95.0, accs=(0.2, 0.3, 0.4), epoch_s=(5.0, 1.0, 1.0))
    frame = anatomy.table([naive, tuned, large])
    rows = frame.set_index("rung")
    assert frame.attrs["target"] == pytest.approx(0.7)
    assert rows.loc["tuned", "to_target_s"] == pytest.approx(10.0)
    assert rows.loc["tuned", "to_target_speedup"] == pytest.approx(70.0 / 10.0)
    assert math.isnan(rows.loc["large batch", "to_target_s"])          # never got there
    assert list(rows["bound"]) == ["data-bound", "GPU-bound", "GPU-bound"]
    text = report.anatomy_text([naive, tuned, large])
    assert "70.0% validation accuracy, as 'naive' ended" in text and "×7.00" in text
