"""Lesson 06's conclusions on fake runs: each outcome's paragraph (a schedule that wins
beyond noise, none that does, runs at chance, a speed 'effect' a schedule cannot cause),
and one-cycle's own warm-up."""
import pytest

from gpu_course.lessons import l06_schedules as l06, sizes
from gpu_course.lessons.l06_schedules import LESSON
from gpu_course.show import closing
from declared import paragraphs
from gpu_course.show.findings import Outcome

SCHEDULE = LESSON.compares[0]


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



# (accuracies, samples/s, sizes) of constant, factor, cosine -> the paragraph declared for it
OUTCOMES = [
    ((0.60, 0.61, 0.70), (600, 600, 600), {}, SCHEDULE.gained[Outcome.EXPECTED]),
    ((0.600, 0.601, 0.603), (600, 600, 600), {}, SCHEDULE.gained[Outcome.NONE]),
    ((0.70, 0.60, 0.61), (600, 600, 600), {}, SCHEDULE.gained[Outcome.OPPOSITE]),
    ((0.09, 0.12, 0.11), (600, 600, 600), {"epochs": 2, "test_size": 256},
     SCHEDULE.gained[Outcome.CANNOT_JUDGE]),
    ((0.6, 0.6, 0.6), (600, 600, 600), {}, SCHEDULE.means[Outcome.EXPECTED]),
    ((0.6, 0.6, 0.6), (600, 600, 900), {}, SCHEDULE.means[Outcome.OPPOSITE]),
]


@pytest.mark.parametrize("accs, rates, config, paragraph", OUTCOMES)
def test_each_outcome_says_the_paragraph_the_lesson_declares(make_run, accs, rates, config,
                                                             paragraph):
    say = l06.conclude(schedules(make_run, accs, rates, **config))
    assert paragraph in say.text and say.check() == []


def test_each_schedule_is_judged_against_the_constant_rate_in_accuracy_and_speed(make_run):
    say = l06.conclude(schedules(make_run, [0.60, 0.61, 0.70]))
    assert "'lr-schedule' against 'lr_scheduler=constant' in accuracy: +10.0 points, an effect" \
        in say.text
    assert "'lr_scheduler=factor' against 'lr_scheduler=constant': " in say.text
    assert SCHEDULE.gained[Outcome.OPPOSITE] not in say.text


def test_one_cycle_without_the_warm_up_is_said_to_bring_its_own(make_run):
    runs = schedules(make_run, [0.60, 0.61, 0.70], engine="pytorch", onecycle=True)
    say = l06.conclude(runs)
    assert LESSON.notes[0].text in say.text
    assert list(l06.table(runs).differs_besides_the_schedule) == ["–", "–", "warmup_epochs"]
    assert say.check() == []


def test_the_constant_run_is_found_by_its_config_wherever_it_is(make_run):
    runs = schedules(make_run, [0.60, 0.61, 0.70], rates=(600, 300, 300))
    runs = runs[1:] + runs[:1]
    table = l06.table(runs)
    assert table.speedup.iloc[-1] == pytest.approx(1.0) and table.speedup.iloc[0] < 0.6
    assert "'lr-schedule' against 'lr_scheduler=constant' in accuracy" in l06.conclude(runs).text
    with pytest.raises(ValueError, match="no run has lr_scheduler='none'"):
        l06.conclude(runs[:2])


def test_the_lessons_paragraphs_carry_no_number():
    assert all(not closing.measurements(p) for p in paragraphs(LESSON))


def test_sizes_give_the_large_batch_and_its_scaling():
    full, smoke = sizes("06", smoke=False), sizes("06", smoke=True)
    assert full["batch_size"] > full["lr_base_batch"] and smoke["epochs"] < full["epochs"]
    assert "torch_threads" not in smoke and smoke.torch_threads == 1
