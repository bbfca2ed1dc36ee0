"""Lesson 05's conclusions on fake runs: the sweep, the changes down the ladder and the
optimizer race, each branch (a GPU, out of memory, effect or noise, at chance) included."""
import math
import re

import pytest

from gpu_course.lessons import l05_large_batch as l05, sizes

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
             dict(batch_size=1280, lr_base_batch=128, warmup_epochs=1.0),
             last or dict(batch_size=1280, lr_base_batch=128, warmup_epochs=1.0, optimizer="lbsgd")]
    names = ["batch_size=64", "batch 1280, sgd, lr 0.1", "+ scaled lr", "+ warm-up", "optimizer change"]
    return [acc(make_run(n, rate=r, engine=engine, config={**s, **config}), a)
            for n, s, r, a in zip(names, steps, rates, accs)]


def race(make_run, finals, rates=None, **config):
    names = ["sgd", "nag", "lars", "adam"][:len(finals)]
    rates = rates or [600] * len(finals)
    return [acc(make_run(f"optimizer={n}", rate=r, config={"optimizer": n, "batch_size": 256,
                                                           "lr": 0.1 if n != "adam" else 0.002,
                                                           **config}), *f)
            for n, f, r in zip(names, finals, rates)]


# -- which experiment -----------------------------------------------------------------------
def test_the_part_is_read_from_what_the_configs_vary_not_from_the_names(make_run):
    assert l05.part(sweep(make_run)) is l05.Part.SWEEP
    assert l05.part(ladder(make_run, [0.6] * 5)) is l05.Part.CHANGES
    assert l05.part(race(make_run, [(0.5, 0.6, 0.7)] * 3)) is l05.Part.RACE
    # the ladder without its small run still changes the scaling and warm-up: not a race
    assert l05.part(ladder(make_run, [0.6] * 5)[1:]) is l05.Part.CHANGES


# -- the sweep ----------------------------------------------------------------------------------
def test_the_sweep_names_what_ran_and_sets_the_talk_beside_it_as_another_job(make_run, capsys):
    runs = sweep(make_run, **SMALL)
    say = l05.conclude(runs)
    assert re.search(r"Batch 64 → 1280 \(tiny on 512 synthetic images, 1 epoch\(s\)\), samples/s: "
                     r"×1\.\d\d, too few steps to judge \(16 and 2 steady steps", say.text)   # 512 images
    assert "ResNet on CIFAR-10 after 3 epochs on a V100: another job" in say.text
    assert "No run here trained on a GPU" in say.text and "the talk's 27.5 s → 6.4 s" in say.text
    assert "sets its pace" not in say.text   # 10 % data wait: the loader keeps up
    table = l05.table(runs)
    assert list(table.talk_val_acc_pct.round(1)) == [71.3, 68.8, 60.8]
    assert say.check() == []
    assert "17,000 samples/s" in capsys.readouterr().out


def test_a_gpu_sweep_reads_gpu_util_and_an_oom_is_said(make_run):
    runs = sweep(make_run, gpus=1, engine="pytorch")
    runs.append(make_run("batch_size=4096", gpus=1, engine="pytorch", epochs=0, status="oom",
                         config={"batch_size": 4096}))
    say = l05.conclude(runs)
    assert "On the GPU, GPU util went" in say.text and "No run here" not in say.text
    assert "Out of memory at batch 4096: the sweep recorded it" in say.text
    assert say.check() == []


def test_a_loader_bound_large_batch_is_sent_to_the_input_pipeline(make_run):
    runs = [make_run(f"batch_size={b}", rate=600, data_wait_share=w, config={"batch_size": b})
            for b, w in ((64, 0.2), (1280, 0.8))]
    say = l05.conclude(runs)
    assert "the input pipeline, not the batch, sets its pace" in say.text


# -- one change at a time ------------------------------------------------------------------------
def test_a_change_that_buys_accuracy_beyond_noise_is_credited_and_named(make_run):
    runs = ladder(make_run, [0.70, 0.60, 0.61, 0.68, 0.68])
    say = l05.conclude(runs)
    assert "'+ warm-up' (changes warmup_epochs): val acc 68.0%, +7.0 points, an effect" in say.text
    assert "Beyond noise: accuracy bought by '+ warm-up'; lost by 'batch 1280, sgd, lr 0.1'" \
        in say.text
    assert "'+ scaled lr' (changes lr_base_batch)" in say.text
    table = l05.table(runs)
    assert list(table.lr) == pytest.approx([0.1, 0.1, 1.0, 1.0, 1.0])
    assert table.changed_from_the_row_above[4] == "optimizer sgd → lbsgd"
    assert say.check() == []


def test_no_change_is_credited_within_noise_and_none_at_chance(make_run):
    say = l05.conclude(ladder(make_run, [0.600, 0.601, 0.602, 0.600, 0.601]))
    assert "No change moved accuracy beyond noise of the row above: none is credited" in say.text
    say = l05.conclude(ladder(make_run, [0.11, 0.10, 0.12, 0.11, 0.10], **SMALL))
    assert "Every run is within noise of chance, the best too" in say.text
    assert "credited with accuracy; run at full size" in say.text and say.check() == []


def test_lbsgd_with_batch_scale_1_is_sgd_so_a_speed_effect_is_the_machines_load(make_run):
    say = l05.conclude(ladder(make_run, [0.6] * 5, rates=(600, 600, 600, 600, 900)))
    assert re.search(r"'optimizer change' against '\+ warm-up' \(the same learning rate and "
                     r"warm-up\), speed: ×1\.\d\d, faster", say.text)
    assert "MXNet runs the same sgd_mom_update for both" in say.text
    assert "this machine's load changing between the runs" in say.text
    say = l05.conclude(ladder(make_run, [0.6] * 5, rates=(600, 600, 600, 600, 601)))
    assert "as expected, no difference beyond noise" in say.text


def test_lars_faster_than_sgd_is_read_as_load_and_lbsgd_with_a_larger_scale_is_not_sgd(make_run):
    lars = dict(batch_size=1280, lr_base_batch=128, warmup_epochs=1.0, optimizer="lars",
                optimizer_params=[["eta", 0.1]])
    say = l05.conclude(ladder(make_run, [0.6] * 5, rates=(600, 600, 600, 600, 900),
                              engine="pytorch", last=lars))
    assert "(changes optimizer, optimizer_params)" in say.text
    assert "'optimizer change' does more work per step (a norm per layer), so it cannot be faster" \
        in say.text and "sgd_mom_update" not in say.text
    scaled = dict(batch_size=1280, lr_base_batch=128, warmup_epochs=1.0, optimizer="lbsgd",
                  optimizer_params=[["batch_scale", 4]])
    say = l05.conclude(ladder(make_run, [0.6] * 5, last=scaled))
    assert "speed: " in say.text and "sgd_mom_update" not in say.text and say.check() == []


# -- the optimizer race -----------------------------------------------------------------------------
def test_the_race_names_the_first_optimizer_only_when_the_best_is_ahead_beyond_noise(make_run):
    runs = race(make_run, [(0.40, 0.50, 0.55), (0.45, 0.60, 0.62), (0.60, 0.70, 0.71)])
    say = l05.conclude(runs)
    assert "Target: 90% of the best final accuracy, 71.0% (optimizer=lars;" in say.text
    assert "First there: optimizer=lars after" in say.text
    assert "Not reached in 3 epoch(s): optimizer=sgd, optimizer=nag." in say.text
    assert say.check() == []


def test_a_race_within_noise_or_at_chance_names_no_optimizer(make_run):
    say = l05.conclude(race(make_run, [(0.5, 0.6, 0.700), (0.5, 0.6, 0.702)]))
    assert "no optimizer is named first" in say.text and "First there" not in say.text
    say = l05.conclude(race(make_run, [(0.10,), (0.12,)], epochs=1, test_size=256))
    assert "So reaching the target says nothing: no optimizer is named first" in say.text
    assert say.check() == []


def test_a_failed_optimizer_stays_in_the_race_table_without_a_time(make_run):
    runs = race(make_run, [(0.5, 0.6, 0.7)])
    runs.append(make_run("optimizer=lamb", epochs=0, status="failed",
                         config={"optimizer": "lamb", "batch_size": 256, "lr": 0.01}))
    table = l05.table(runs)
    assert table.status[1] == "failed" and math.isnan(table.time_to_target_s[1])
    say = l05.conclude(runs)
    assert "No other optimizer finished: none to rank it against" in say.text
    assert "Not reached in 3 epoch(s): optimizer=lamb." in say.text and say.check() == []


def test_time_to_target_counts_training_epochs_until_the_first_that_reaches_it(make_run):
    run = acc(make_run("optimizer=sgd"), 0.3, 0.6, 0.7)
    seconds = run.epochs.epoch_time_s
    assert l05.time_to(run, 0.55) == pytest.approx(seconds[0] + seconds[1])
    assert math.isnan(l05.time_to(run, 0.8))


def test_sizes_keep_the_lesson_sizes_out_of_the_experiment():
    smoke, full = sizes("05", smoke=True), sizes("05", smoke=False)
    assert smoke.batches[-1] < full.batches[-1] and full.batches[-1] in l05.talk.BATCH_TABLE
    for name in ("batches", "base_batch", "large_warmup_epochs", "race_batch", "torch_threads"):
        assert name not in smoke   # not an Experiment field: the sweep's cfg must not get it
    assert "warmup_epochs" not in full and smoke["model"] == "tiny"
