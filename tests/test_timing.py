import math
import re

import pytest

from gpu_course.measure import timing
from gpu_course.analyse import metrics
from gpu_course.measure.timing import StepTimer, summary_line


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(timing, "clock", fake)
    return fake


def slow_loader(clock, batches, wait):
    for b in range(batches):
        clock.advance(wait)  # the loader keeps the trainer waiting
        yield b


def test_data_wait_and_compute_are_split(clock):
    timer = StepTimer(warmup_steps=0)
    timer.start_epoch()
    for _ in timer.wrap(slow_loader(clock, 4, wait=0.3)):
        clock.advance(0.1)  # the step's compute
        timer.step(64)
    epoch = timer.end_epoch()
    assert epoch.steps == 4 and epoch.samples == 256
    assert epoch.data_wait_s == pytest.approx(1.2)
    assert epoch.compute_s == pytest.approx(0.4)
    n = metrics.epoch_numbers(epoch.as_row())
    assert n["samples_per_sec"] == pytest.approx(256 / 1.6)
    assert n["data_wait_share"] == pytest.approx(0.75)
    assert epoch.epoch_time_s == pytest.approx(1.6)
    assert epoch.step_rows == [(64, pytest.approx(0.3), pytest.approx(0.1))] * 4


def test_steps_add_up_to_the_epoch_with_loop_overhead_in_compute(clock):
    """A step lasts from the end of the one before it: the loop's own work between
    steps (logging, a progress bar) is compute, so the steps sum to the epoch."""
    timer = StepTimer(warmup_steps=0)
    timer.start_epoch()
    clock.advance(0.5)  # set-up before the first batch is asked for
    for _ in timer.wrap(slow_loader(clock, 3, wait=0.2)):
        clock.advance(0.1)
        timer.step(8)
        clock.advance(0.05)  # bookkeeping after the step
    epoch = timer.end_epoch(sync=lambda: clock.advance(0.3))
    total = sum(w + c for _, w, c in epoch.step_rows)
    assert total + epoch.sync_s + 0.05 == pytest.approx(epoch.epoch_time_s)
    assert epoch.step_rows[0] == (8, pytest.approx(0.2), pytest.approx(0.6))  # 0.5 set-up
    assert epoch.sync_s == pytest.approx(0.3)


def test_warmup_steps_are_left_out_of_samples_per_sec(clock):
    timer = StepTimer(warmup_steps=2)
    timer.start_epoch()
    for i in timer.wrap(range(6)):
        clock.advance(5.0 if i < 2 else 0.5)  # slow first steps: graph build, autotuning
        timer.step(10)
    epoch = timer.end_epoch()
    assert epoch.timed_samples == 40 and epoch.timed_steps == 4
    assert metrics.epoch_numbers(epoch.as_row())["samples_per_sec"] == pytest.approx(40 / 2.0)
    assert epoch.steady_offset_s == pytest.approx(10.0)  # after the two 5 s steps
    # the next epoch is timed from its first step
    timer.start_epoch()
    for _ in timer.wrap(range(2)):
        clock.advance(1.0)
        timer.step(10)
    assert timer.end_epoch().timed_samples == 20


def test_end_epoch_sync_is_charged_to_compute(clock):
    timer = StepTimer(warmup_steps=0)
    timer.start_epoch()
    for _ in timer.wrap(range(3)):
        clock.advance(0.01)  # issuing asynchronous work is quick...
        timer.step(8)
    epoch = timer.end_epoch(sync=lambda: clock.advance(2.0))  # ...the device is not
    assert epoch.compute_s == pytest.approx(2.03) and epoch.sync_s == pytest.approx(2.0)
    assert epoch.epoch_time_s == pytest.approx(2.03)
    assert metrics.epoch_numbers(epoch.as_row())["samples_per_sec"] == pytest.approx(24 / 2.03)


def test_step_outside_epoch_is_an_error():
    with pytest.raises(RuntimeError):
        StepTimer().step(1)
    with pytest.raises(ValueError, match="warmup_steps"):
        StepTimer(warmup_steps=-1)


def test_summary_line_is_the_talks_format():
    assert summary_line(1, 29, 64, "float32", 663.5, 18.59) == (
        "NUM_GPU: 1, NUM_WORKER: 29, BATCH_SIZE_PER_GPU: 64, TYPECAST: float32, "
        "Samples/Sec: 663.50, epoch time: 18.59")


def test_epochs_after_the_warm_up_are_steady_from_their_start():
    """The H200 ladder's later epochs had no steady start, so GPU-Util averaged the
    first epoch's last half second alone (76% where the samples read 100%)."""
    timer = StepTimer(warmup_steps=3)
    offsets = []
    for _ in range(3):
        timer.start_epoch()
        for _ in timer.wrap(range(2)):
            timer.step(8)
        offsets.append(timer.end_epoch().steady_offset_s)
    assert math.isnan(offsets[0])      # both steps warm-up
    assert offsets[1] >= 0             # its second step is the first steady one
    assert offsets[2] == 0.0           # steady throughout


def test_old_records_with_empty_steady_starts_use_the_epoch_start(tmp_path):
    import pandas as pd

    from gpu_course.analyse import metrics

    class Run:
        epochs = pd.DataFrame({"t_start": [0.0, 10.0, 20.0], "t_steady": [5.0, None, None],
                               "t_end": [9.0, 19.0, 29.0], "timed_steps": [4, 8, 0]})
    assert metrics.training_windows(Run()) == [(5.0, 9.0), (10.0, 19.0)]


def test_a_workload_refuses_what_it_cannot_serve_by_name():
    from gpu_course.measure.timing import Workload
    assert Workload([1, 64]).batches == (1, 64)
    assert Workload().replace(requests=5) == Workload(requests=5)
    for bad, word in ((dict(batches=()), "batches=()"), (dict(batches=(0, 4)), "batches=(0, 4)"),
                      (dict(batches=(1, 2.5)), "batches=(1, 2.5)"),
                      (dict(requests=0), "requests=0"), (dict(warmup=-1), "warmup=-1"),
                      (dict(images=True), "images=True")):
        with pytest.raises(ValueError, match=re.escape(word)):
            Workload(**bad)
