"""Lesson 06's conclusions on fake runs: a schedule that wins beyond noise, none that
does, runs at chance, a speed 'effect' a schedule cannot cause, and a run that differs
from the constant one in more than its schedule."""
import pytest

from gpu_course.lessons import l06_schedules as l06, sizes


def acc(run, *values):
    col = list(run.epochs["val_acc"])
    col[len(col) - len(values):] = values
    run.epochs["val_acc"] = col
    return run


def schedules(make_run, accs, rates=(600, 600, 600), engine="gluon", onecycle=False, **config):
    """A constant rate and two schedules (PyTorch: the last is one-cycle, without warm-up)."""
    specs = [("lr_scheduler=constant", {"lr_scheduler": "none"}),
             ("lr_scheduler=factor", {"lr_scheduler": "factor", "lr_steps": [3]}),
             ("lr-schedule", {"lr_scheduler": "onecycle", "warmup_epochs": 0.0} if onecycle
              else {"lr_scheduler": "cosine", "warmup_epochs": 1.0})]
    return [acc(make_run(name, rate=r, engine=engine,
                         config={"warmup_epochs": 1.0, "epochs": 12, **spec, **config}), a)
            for (name, spec), r, a in zip(specs, rates, accs)]


def test_a_schedule_beyond_noise_of_the_constant_rate_is_named_best(make_run, capsys):
    say = l06.conclude(schedules(make_run, [0.60, 0.61, 0.70]))
    assert "Best after 12 epoch(s): lr-schedule (cosine) at 70.0%, beyond noise of the constant " \
        "rate" in say.text
    assert "lr_scheduler=factor: val acc 61.0% against the constant rate's 60.0%" in say.text
    assert "No schedule changed the speed beyond noise" in say.text
    assert say.check() == []
    assert "+10.0 points, an effect" in capsys.readouterr().out


def test_within_noise_or_a_best_constant_rate_names_no_winner(make_run):
    say = l06.conclude(schedules(make_run, [0.600, 0.601, 0.603]))
    assert "is the constant rate or within noise of it: no schedule is named the winner after " \
        "12 epoch(s)" in say.text
    say = l06.conclude(schedules(make_run, [0.70, 0.60, 0.61]))
    assert "The best, lr_scheduler=constant (none) at 70.0%, is the constant rate" in say.text
    assert say.check() == []


def test_runs_at_chance_name_no_schedule(make_run):
    say = l06.conclude(schedules(make_run, [0.09, 0.12, 0.11], epochs=2, test_size=256))
    assert "Every run is within noise of chance, the best too" in say.text
    assert "No schedule is named best at this size" in say.text and say.check() == []


def test_a_speed_effect_is_read_as_the_machines_load(make_run):
    say = l06.conclude(schedules(make_run, [0.6, 0.6, 0.6], rates=(600, 600, 900)))
    assert "1 of 2 differ in speed beyond their steady-step spread, which a schedule cannot " \
        "cost" in say.text and say.check() == []


def test_one_cycle_without_the_warm_up_is_said_to_differ_in_more_than_its_schedule(make_run):
    runs = schedules(make_run, [0.60, 0.61, 0.70], engine="pytorch", onecycle=True)
    say = l06.conclude(runs)
    assert "lr-schedule (onecycle): val acc 70.0%" in say.text
    assert "it differs from the constant run in warmup_epochs too, so this is not the " \
        "schedule's alone" in say.text
    assert list(l06.table(runs).differs_besides_the_schedule) == ["–", "–", "warmup_epochs"]
    assert say.check() == []


def test_the_constant_run_is_found_by_its_config_wherever_it_is(make_run):
    runs = schedules(make_run, [0.60, 0.61, 0.70], rates=(600, 300, 300))
    runs = runs[1:] + runs[:1]
    table = l06.table(runs)
    assert table.speedup.iloc[-1] == pytest.approx(1.0) and table.speedup.iloc[0] < 0.6
    assert "Best after 12 epoch(s): lr-schedule (cosine)" in l06.conclude(runs).text
    with pytest.raises(ValueError, match="no run has lr_scheduler='none'"):
        l06.conclude(runs[:2])


def test_sizes_give_the_large_batch_and_its_scaling():
    full, smoke = sizes("06", smoke=False), sizes("06", smoke=True)
    assert full["batch_size"] > full["lr_base_batch"] and smoke["epochs"] < full["epochs"]
    assert "torch_threads" not in smoke and smoke.torch_threads == 1
