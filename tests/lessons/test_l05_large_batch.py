"""Lesson 05's conclusions on fake runs: each part's outcomes (the sweep, the changes down
the ladder, the optimizer race) say the paragraph the lesson declares, GPU branches included."""
import math

import pytest

from gpu_course.show import findings
from declared import paragraphs

from gpu_course.lessons import l05_large_batch as l05, sizes
from gpu_course.lessons.l05_large_batch import CHANGES, RACE, SWEEP
from gpu_course.show import closing, findings
from gpu_course.show.findings import Outcome, Where

BATCH, SCALED, WARMUP, DECAY, SAME_UPDATE, PER_LAYER = CHANGES.compares
LARS = dict(batch_size=1280, lr_base_batch=128, warmup_epochs=1.0, lr_scheduler="cosine",
            optimizer="lars", optimizer_params=[["eta", 0.1]])

SMALL = {"model": "tiny", "train_size": 512, "test_size": 256, "epochs": 1}


def acc(run, *values):
    """Give the run these validation accuracies, one an epoch from the last back."""
    col = list(run.epochs["val_acc"])
    col[len(col) - len(values):] = values
    run.epochs["val_acc"] = col
    return run


def sweep(make_run, rates=(600, 900, 1200), gpus=0, engine="gluon", **config):
    return [make_run(f"batch_size={b}", rate=r, gpus=gpus, engine=engine, data_wait_share=0.1,
                     config={"batch_size": b, **config})
            for b, r in zip((64, 256, 1280), rates)]


def ladder(make_run, accs, rates=(600, 600, 600, 600, 600), engine="gluon", last=None, **config):
    """The sweep's small run, then the large batch one change at a time."""
    steps = [dict(batch_size=64), dict(batch_size=1280), dict(batch_size=1280, lr_base_batch=128),
             dict(batch_size=1280, lr_base_batch=128, warmup_epochs=1.0, lr_scheduler="cosine"),
             last or dict(batch_size=1280, lr_base_batch=128, warmup_epochs=1.0,
                          lr_scheduler="cosine", optimizer="lbsgd")]
    names = ["batch_size=64", "batch 1280, sgd, lr 0.1", "+ scaled lr", "+ warm-up, then decay",
             "optimizer change"]
    return [acc(make_run(n, rate=r, engine=engine, config={**s, **config}), a)
            for n, s, r, a in zip(names, steps, rates, accs)]


def race(make_run, finals, rates=None, **config):
    names = ["sgd", "nag", "lars", "adam"][:len(finals)]
    rates = rates or [600] * len(finals)
    return [acc(make_run(f"optimizer={n}", rate=r, config={"optimizer": n, "batch_size": 256,
                                                           "lr": 0.1 if n != "adam" else 0.002,
                                                           **config}), *f)
            for n, f, r in zip(names, finals, rates)]



def test_the_part_is_read_from_what_the_configs_vary_not_from_the_names(make_run):
    assert l05.part(sweep(make_run)) is l05.Part.SWEEP
    assert l05.part(ladder(make_run, [0.6] * 5)) is l05.Part.CHANGES
    assert l05.part(race(make_run, [(0.5, 0.6, 0.7)] * 3)) is l05.Part.RACE
    # the ladder without its small run still changes the scaling and warm-up: not a race
    assert l05.part(ladder(make_run, [0.6] * 5)[1:]) is l05.Part.CHANGES


# (samples/s of the sweep's batches, GPUs) -> the paragraph the lesson declares for it
SWEEPS = [((600, 1800, 2400), 1, BATCH.means[Outcome.EXPECTED][Where.GPU]),
          ((600, 601, 602), 1, BATCH.means[Outcome.NONE][Where.GPU]),
          ((600, 300, 200), 1, BATCH.means[Outcome.OPPOSITE][Where.GPU]),
          ((600, 900, 1200), 0, BATCH.means[Outcome.OPPOSITE][Where.CPU]),
          ((600, 601, 602), 0, SWEEP.cpu)]


@pytest.mark.parametrize("rates, gpus, paragraph", SWEEPS)
def test_each_sweep_outcome_says_the_paragraph_the_lesson_declares(make_run, rates, gpus,
                                                                   paragraph):
    say = l05.conclude(sweep(make_run, rates, gpus=gpus))
    assert paragraph in say.text and say.check() == []
    assert "'batch_size=1280' against 'batch_size=64': ×" in say.text
    assert "The talk, on a V100: batch 640 with 29 loader workers 17,000 samples/s" in say.text
    assert SWEEP.notes[0].text in say.text   # 64, 256 and 1280 are in the talk's table
    assert "Epoch time in seconds: 'batch_size=64' " in say.text


def test_an_out_of_memory_batch_is_said_and_the_sweep_goes_on(make_run):
    runs = sweep(make_run)
    runs[-1] = make_run("batch_size=1280", epochs=0, status="oom", config={"batch_size": 1280})
    say = l05.conclude(runs)
    assert "'batch_size=256' against 'batch_size=64': ×" in say.text and say.check() == []
    assert l05.table(runs).status.iloc[-1] == "oom"


# accuracies down the ladder (the last row: lbsgd) -> the paragraph declared for them
LADDERS = [((0.70, 0.55, 0.56, 0.56, 0.56), BATCH.gained[Outcome.EXPECTED]),
           ((0.70, 0.55, 0.65, 0.65, 0.65), SCALED.gained[Outcome.EXPECTED]),
           ((0.70, 0.55, 0.65, 0.75, 0.75), DECAY.gained[Outcome.EXPECTED]),
           ((0.70, 0.55, 0.65, 0.651, 0.65), DECAY.gained[Outcome.NONE]),
           ((0.11, 0.10, 0.12, 0.11, 0.10), BATCH.gained[Outcome.CANNOT_JUDGE])]


@pytest.mark.parametrize("accs, paragraph", LADDERS)
def test_each_change_is_credited_against_the_row_above(make_run, accs, paragraph):
    config = SMALL if accs[0] < 0.2 else {}
    say = l05.conclude(ladder(make_run, accs, **config))
    assert paragraph in say.text and say.check() == []
    if accs[0] < 0.2:   # every run at chance: said once, not pair by pair
        assert findings.CHANCE in say.text and " in accuracy: " not in say.text
    else:
        assert "'+ scaled lr' against 'batch 1280, sgd, lr 0.1' in accuracy: " in say.text
    assert "'+ scaled lr' against 'batch_size=64'" not in say.text
    assert "The course's own records, on a CPU (ResNet-20, batch 512, LARS, three epochs): " \
        "warm-up then constant (seed 0) 21.5%" in say.text
    assert "Learning rate each row stepped with" in say.text


def test_a_warm_up_then_a_constant_rate_is_not_the_recipe(make_run):
    runs = ladder(make_run, [0.70, 0.55, 0.65, 0.651, 0.65])
    for run in runs[3:]:
        run.config["lr_scheduler"] = "none"
    say = l05.conclude(runs)
    assert WARMUP.gained[Outcome.NONE] in say.text and "lesson 06" in say.text


@pytest.mark.parametrize("rate, engine, last, paragraph", [
    (600, "gluon", None, SAME_UPDATE.means[Outcome.EXPECTED]["gluon"]),
    (900, "gluon", None, SAME_UPDATE.means[Outcome.OPPOSITE]["gluon"]),
    (900, "pytorch", LARS, PER_LAYER.means[Outcome.OPPOSITE]),
    (300, "pytorch", LARS, PER_LAYER.means[Outcome.EXPECTED])])
def test_an_optimizers_speed_is_judged_against_the_work_of_its_update(make_run, rate, engine,
                                                                      last, paragraph):
    say = l05.conclude(ladder(make_run, [0.6] * 5, rates=(600, 600, 600, 600, rate),
                              engine=engine, last=last))
    assert paragraph in say.text and say.check() == []


# final accuracies of sgd, nag, lars -> the paragraph declared for them
RACES = [([(0.40, 0.50, 0.55), (0.45, 0.60, 0.62), (0.60, 0.70, 0.71)],
          RACE.compares[0].gained[Outcome.EXPECTED]),
         ([(0.5, 0.6, 0.700), (0.5, 0.6, 0.702)], RACE.compares[0].gained[Outcome.NONE]),
         ([(0.5, 0.6, 0.70), (0.3, 0.4, 0.45)], RACE.compares[0].gained[Outcome.OPPOSITE])]


@pytest.mark.parametrize("finals, paragraph", RACES)
def test_each_race_outcome_says_the_paragraph_the_lesson_declares(make_run, finals, paragraph):
    runs = race(make_run, finals)
    say = l05.conclude(runs)
    assert paragraph in say.text and say.check() == []
    assert "Seconds until the validation accuracy first reached the target" \
        in say.text


def test_a_race_at_chance_names_no_optimizer(make_run):
    say = l05.conclude(race(make_run, [(0.10,), (0.12,)], epochs=1, test_size=256))
    assert RACE.compares[0].gained[Outcome.CANNOT_JUDGE] in say.text and say.check() == []


def test_a_failed_optimizer_stays_in_the_race_table_without_a_time(make_run):
    runs = race(make_run, [(0.5, 0.6, 0.7)])
    runs.append(make_run("optimizer=lamb", epochs=0, status="failed",
                         config={"optimizer": "lamb", "batch_size": 256, "lr": 0.01}))
    table = l05.table(runs)
    assert table.status[1] == "failed" and math.isnan(table.time_to_target_s[1])
    assert l05.conclude(runs).check() == []


def test_time_to_target_counts_training_epochs_until_the_first_that_reaches_it(make_run):
    runs = [acc(make_run("optimizer=sgd", config={"optimizer": "sgd"}), 0.3, 0.6, 0.7),
            acc(make_run("optimizer=nag", config={"optimizer": "nag"}), 0.3, 0.5, 0.6)]
    seconds = runs[0].epochs.epoch_time_s
    table = l05.table(runs, target=0.8)   # 0.8 of the best, 70%: 56%
    assert table.time_to_target_s[0] == pytest.approx(seconds[0] + seconds[1])
    assert table.time_to_target_s[1] == pytest.approx(runs[1].epochs.epoch_time_s.sum())
    assert math.isnan(l05.table(runs, target=1.01).time_to_target_s[1])


def test_the_lessons_paragraphs_carry_no_number():
    for lesson in (SWEEP, CHANGES, RACE):
        assert all(not closing.measurements(p) for p in paragraphs(lesson))


def test_sizes_keep_the_lesson_sizes_out_of_the_experiment():
    smoke, full = sizes("05", smoke=True), sizes("05", smoke=False)
    assert smoke.batches[-1] < full.batches[-1] and full.batches[-1] in l05.talk.BATCH_TABLE
    for name in ("batches", "base_batch", "large_warmup_epochs", "race_batch", "torch_threads"):
        assert name not in smoke   # not an Experiment field: the sweep's cfg must not get it
    assert "warmup_epochs" not in full and smoke["model"] == "tiny"
