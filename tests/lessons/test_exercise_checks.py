"""The exercises' checks on fake runs: every way a check says "not yet", and every way it
passes, each judged against the runs' noise (tests/fake_runs.py)."""
import pytest
from fake_runs import busy

from gpu_course.lessons.exercises import check


def workers(make_run, rates, counts=(1, 0), waits=None, **config):
    waits = waits or [0.3] * len(rates)
    return [make_run(f"num_workers={n}", rate=rate, data_wait_share=wait,
                     config={"num_workers": n, **config})
            for n, rate, wait in zip(counts, rates, waits)]




def test_an_unknown_exercise_is_refused_by_name():
    with pytest.raises(ValueError, match=r"exercise='99.9' is not an exercise; allowed: 01.1"):
        check("99.9", [])


@pytest.mark.parametrize("runs, says", [
    ([], "0 run(s) so far; the exercise compares two runs"),
    (None, "0 run(s) so far"),
    ("a run", "'a run' is not a run record: pass what gc.train or gc.record returned"),
])
def test_no_runs_yet_is_not_yet(runs, says):
    result = check("01.1", runs, "faster")
    assert not result and not result.passed and says in result.message
    assert str(result).startswith("Exercise 01.1, not yet: ")


def test_one_run_only_asks_for_the_change(make_run):
    result = check("01.1", workers(make_run, [600])[:1], "faster")
    assert "1 run(s) so far" in result.message and "lines marked # >>>" in result.message


def test_a_run_that_did_not_finish_is_named(make_run):
    runs = workers(make_run, [600, 300])
    runs[1].meta["status"] = "failed"
    assert "'num_workers=0' did not finish (status failed)" in check("01.1", runs, "slower").message


def test_the_unchanged_run_is_rejected(make_run):
    runs = workers(make_run, [600, 610], counts=(1, 1))
    result = check("01.1", runs, "same")
    assert not result and "have the same num_workers (1): nothing was changed" in result.message


def test_a_second_change_is_named(make_run):
    runs = [make_run("a", config={"num_workers": 1}),
            make_run("b", config={"num_workers": 0, "batch_size": 256})]
    result = check("01.1", runs, "more")
    assert not result and "differ in more than num_workers: batch_size" in result.message


def test_too_few_steps_ask_for_more_images(make_run):
    runs = workers(make_run, [600, 300], train_size=1024)
    result = check("01.1", runs, "more")
    assert not result and "too few steady steps to judge the data wait" in result.message
    assert 'gc.sizes("01", exercise_size=...)' in result.message


@pytest.mark.parametrize("prediction", [None, "faster", 1, ["more"]])
def test_a_missing_prediction_asks_for_one(make_run, prediction):
    result = check("01.1", workers(make_run, [600, 300]), prediction)
    assert not result and f"prediction={prediction!r}: write down, before you run" in result.message
    assert "'more', 'less', 'same'" in result.message


def test_a_prediction_the_data_wait_contradicts_beyond_noise_fails(make_run):
    result = check("01.1", workers(make_run, [600, 300], waits=[0.1, 0.6]), "less")
    assert not result
    assert ("you predicted less of each step waiting; beyond noise the runs say more of each step "
            "waiting for data: data wait 10% of each step with 1 "
            "worker(s) (blocks ") in result.message
    assert "60% with 0 (blocks" in result.message and "Where does the loading run" in result.message


def test_a_prediction_the_data_wait_shows_passes_and_says_what_samples_per_sec_did(make_run):
    result = check("01.1", workers(make_run, [600, 300], waits=[0.1, 0.6]), "more")
    assert result.passed and "as you predicted, more of each step waiting for data" in result.message
    assert "Samples/s, 'num_workers=0' against 'num_workers=1': ×0.4" in result.message
    assert "a slow-down" in result.message


def test_less_wait_without_a_gain_on_a_cpu_is_explained(make_run):
    runs = workers(make_run, [600, 601], counts=(0, 2), waits=[0.6, 0.1])
    result = check("01.1", runs, "less")
    assert result.passed and "as you predicted, less of each step waiting" in result.message
    assert "waiting less need not mean training faster" in result.message


def test_within_noise_any_prediction_stands_untested_and_same_is_shown(make_run):
    runs = workers(make_run, [600, 601])
    untested = check("01.1", runs, "more")
    assert untested.passed and "cannot tell it from the same share" in untested.message
    assert "Not contradicted, not shown" in untested.message
    shown = check("01.1", runs, "same")
    assert shown.passed and "as you predicted, the same share waiting, within noise" in shown.message


def test_a_machine_shared_for_one_run_is_named_beside_the_speed(make_run):
    runs = workers(make_run, [600, 300], waits=[0.1, 0.6])
    busy(runs[0], 0.0), busy(runs[1], 3.0)
    result = check("01.1", runs, "more")
    assert result.passed and "no verdict: the runs also differ in machine load" in result.message


# -- 02.1: the knee ---------------------------------------------------------------------------

def sweep(make_run, rates, counts=(0, 1, 2), waits=(0.6, 0.15, 0.05)):
    return workers(make_run, rates, counts=counts, waits=list(waits))


def test_a_knee_needs_three_counts(make_run):
    result = check("02.1", sweep(make_run, (300, 600), counts=(0, 1)), 1)
    assert not result and "at least three worker counts" in result.message
    same = sweep(make_run, (300, 600, 610), counts=(0, 1, 1))
    assert "tried 2 worker count(s) (0, 1)" in check("02.1", same, 1).message


@pytest.mark.parametrize("knee", [None, 3, "1", True, 1.5, float("nan")])
def test_the_knee_must_be_a_count_tried(make_run, knee):
    result = check("02.1", sweep(make_run, (300, 600, 640)), knee)
    assert not result and f"knee={knee!r}: name one of the counts tried (0, 1, 2)" \
        in result.message


def test_a_knee_before_the_curve_stops_growing_fails(make_run):
    result = check("02.1", sweep(make_run, (300, 600, 640)), 0)
    assert not result and "0 worker(s) against the best (2): ×0." in result.message
    assert "below 90% of it: samples/s still grows" in result.message
    assert "Data wait by workers: 0 worker(s) 60%, 1 worker(s) 15%, 2 worker(s) 5%" in result.message


def test_a_knee_within_ten_percent_of_the_best_passes(make_run):
    result = check("02.1", sweep(make_run, (300, 600, 640)), 1)
    assert result.passed and "knee at 1 worker(s): against the best (2 workers), ×0.94" in result.message
    assert "More workers can remove no more than that." in result.message


def test_a_later_knee_is_not_the_knee_and_names_the_earlier_one(make_run):
    result = check("02.1", sweep(make_run, (300, 600, 640)), 2)
    assert not result and result.measured
    assert "2 worker(s) reach the best, but so do 1 (×0.94" in result.message
    assert "against 2): the knee is the fewest that reach it" in result.message


def test_a_knee_past_a_sweep_whose_fewest_workers_are_the_fastest_fails(make_run):
    """1 worker is already the fastest: naming 2 is not the knee (it passed before)."""
    result = check("02.1", sweep(make_run, (700, 690, 640), counts=(1, 2, 4)), 2)
    assert not result and result.measured
    assert "so do 1 (the fastest)" in result.message
    assert check("02.1", sweep(make_run, (700, 690, 640), counts=(1, 2, 4)), 1).passed


def test_an_integral_float_names_a_count(make_run):
    assert check("02.1", sweep(make_run, (300, 600, 640)), 1.0).passed


def test_a_sweep_that_changes_more_than_workers_is_refused(make_run):
    runs = sweep(make_run, (300, 600, 640))
    runs[2].config["batch_size"] = 512
    result = check("02.1", runs, 1)
    assert not result and "differ in more than num_workers: batch_size" in result.message


def test_a_knee_judged_across_a_shared_machine_says_so(make_run):
    runs = sweep(make_run, (300, 600, 640))
    busy(runs[0], 0.0), busy(runs[1], 3.0), busy(runs[2], 0.0)
    result = check("02.1", runs, 1)
    assert result.passed and "cannot place the knee for sure" in result.message


# -- 03.1: a network as a graph ---------------------------------------------------------------

def graphs(make_run, rates, first="eager", second="hybrid", ran=None):
    return [make_run("resnet56 eager", rate=rates[0], config={"graph": first, "model": "resnet56"}),
            make_run("resnet56 graph", rate=rates[1], config={"graph": second, "model": "resnet56"},
                     ran=ran)]


def test_the_graph_unchanged_is_rejected(make_run):
    result = check("03.1", graphs(make_run, (600, 610), second="eager"), "same")
    assert not result and "have the same graph (imperative): nothing was changed" in result.message


def test_the_first_run_is_the_network_as_written(make_run):
    result = check("03.1", graphs(make_run, (600, 900), first="static"), "faster")
    assert not result and "'resnet56 eager' ran with graph=static-alloc: the first run is" \
        in result.message   # the Gluon track's words


def test_a_graph_that_is_faster_passes_and_says_why(make_run):
    result = check("03.1", graphs(make_run, (600, 900)), "faster")
    assert result.passed and "as you predicted (faster)" in result.message
    assert "resnet56's median step as written:" in result.message and "aot_eager" not in result.message


def test_the_tracing_only_backend_leaves_the_prediction_untested(make_run):
    # aot_eager compiles nothing: eager against it measured x0.74 to x1.36 over repeated
    # runs of one machine, beyond the blocks' noise both ways, so no prediction is tested
    for rates in ((600, 900), (900, 600)):
        runs = graphs(make_run, rates, ran={"compile_backend": "aot_eager"})
        for answer in ("faster", "slower", "same"):
            result = check("03.1", runs, answer)
            assert result.passed, result.message
            assert f"your prediction, {answer}, is untested: the compile backend aot_eager " \
                   "traces the graph" in result.message
            assert "Compile with inductor" in result.message
    assert not check("03.1", graphs(make_run, (600, 900), ran={"compile_backend": "aot_eager"}),
                     "quicker")


def test_a_graph_slower_beyond_noise_contradicts_faster(make_run):
    result = check("03.1", graphs(make_run, (900, 600), ran={"compile_backend": "inductor"}),
                   "faster")
    assert not result and "you predicted faster, but" in result.message


# -- 05.1: a larger batch ---------------------------------------------------------------------

def batches(make_run, rates, sizes=(64, 512), status="finished", gpus=1):
    runs = [make_run(f"batch {b}", rate=rate, gpus=gpus, config={"batch_size": b})
            for b, rate in zip(sizes, rates)]
    runs[-1].meta["status"] = status
    return runs


def test_a_batch_that_does_not_fit_is_named_as_the_limit(make_run):
    result = check("05.1", batches(make_run, (600, 900), status="oom"), "faster")
    assert not result and "'batch 512' ran out of device memory: choose a smaller batch" in result.message


def test_the_second_batch_must_be_the_larger(make_run):
    result = check("05.1", batches(make_run, (600, 500), sizes=(512, 64)), "slower")
    assert not result and "'batch 64' has the smaller batch" in result.message


def test_a_larger_batch_reports_its_accuracy_after_the_same_epochs(make_run):
    result = check("05.1", batches(make_run, (600, 900)), "faster")
    assert result.passed and "as you predicted (faster)" in result.message
    assert "Validation accuracy after the same epochs, the larger batch against the smaller: " \
        in result.message and " points, " in result.message
    assert "steady steps against " in result.message
    assert not check("05.1", batches(make_run, (600, 900)), "slower")


def test_on_a_cpu_a_larger_batch_s_speed_is_reported_untested_whatever_it_measured(make_run):
    """CI's Gluon pair of batches 32 and 64 read x0.78 to x1.71 over nine repeats: a CPU
    cannot test the lesson's effect, so the check reports the verdict, untested."""
    for rates, answer in (((600, 1026), "same"), ((600, 300), "faster")):
        result = check("05.1", batches(make_run, rates, gpus=0), answer)
        assert result.passed, result.message
        assert (f"your prediction, {answer}, is untested: 'batch 64' and 'batch 512' trained "
                "on a CPU" in result.message and "On a GPU it can." in result.message)
    assert not check("05.1", batches(make_run, (600, 300)), "faster")   # on a GPU: wrong


def test_a_small_contradiction_on_a_shared_machine_is_untested_not_wrong(make_run):
    # both runs shared the machine: x0.82 against "faster" is within what the load's drift
    # between two runs moves (judge.DRIFT), so the prediction is reported untested
    runs = [busy(r, 1.0) for r in batches(make_run, (600, 492))]
    result = check("05.1", runs, "faster")
    assert result.passed, result.message
    assert ("your prediction, faster, is untested: 'batch 512' against 'batch 64' is ×0.8"
            in result.message and "other programs shared the machine while 'batch 64' and "
            "'batch 512' ran" in result.message and "up to ×1.5" in result.message)


def test_a_contradiction_beyond_the_drift_or_on_a_quiet_machine_still_fails(make_run):
    far = [busy(r, 1.0) for r in batches(make_run, (600, 300))]   # x0.50: beyond the drift
    result = check("05.1", far, "faster")
    assert not result and "you predicted faster, but 'batch 512' against 'batch 64' is ×0." \
        in result.message
    quiet = [busy(r, 0.0) for r in batches(make_run, (600, 492))]
    result = check("05.1", quiet, "faster")
    assert not result and "you predicted faster, but" in result.message


# -- 06.1: a race of schedules ----------------------------------------------------------------

def race(make_run, curves, test_size=10_000, **config):
    """One run a schedule, its validation accuracy after each epoch as given."""
    runs = []
    for name, accs in curves.items():
        run = make_run(f"lr_scheduler={name}", epochs=len(accs),
                       config={"lr_scheduler": name, "test_size": test_size,
                               **(config if name != "none" else {})})
        run.epochs["val_acc"] = accs
        runs.append(run)
    return runs


def test_a_race_needs_the_constant_rate_and_distinct_schedules(make_run):
    no_constant = race(make_run, {"cosine": [0.5, 0.7], "poly": [0.5, 0.6]})
    assert "no run has the constant rate, lr_scheduler='none'" in check("06.1", no_constant, "cosine").message
    twice = race(make_run, {"none": [0.5, 0.6], "cosine": [0.5, 0.7]})
    twice[1].config["lr_scheduler"] = "none"
    assert "a schedule ran twice (none, none)" in check("06.1", twice, "none").message


def test_a_race_that_changes_more_than_the_schedule_is_refused(make_run):
    runs = race(make_run, {"none": [0.5, 0.6], "cosine": [0.5, 0.7]}, batch_size=512)
    assert "differ in more than their schedule: batch_size" in check("06.1", runs, "cosine").message


def test_the_answer_names_a_schedule_raced(make_run):
    runs = race(make_run, {"none": [0.5, 0.6], "cosine": [0.5, 0.7]})
    assert "first='poly': name the schedule ('none', 'cosine')" in \
        check("06.1", runs, "poly").message


def test_the_first_to_reach_the_constant_rates_accuracy_passes(make_run):
    runs = race(make_run, {"none": [0.40, 0.55, 0.60], "cosine": [0.45, 0.62, 0.70],
                           "poly": [0.42, 0.50, 0.61]})
    result = check("06.1", runs, "cosine")
    assert result.passed and "'cosine' reached 60.0%, the constant rate's final val acc, at epoch 2" \
        in result.message
    assert "Reached: none epoch 3; cosine epoch 2; poly epoch 3" in result.message
    assert "untested" not in result.message


def test_a_later_schedule_is_told_who_was_first_beyond_noise(make_run):
    runs = race(make_run, {"none": [0.40, 0.55, 0.60], "cosine": [0.45, 0.62, 0.70],
                           "poly": [0.42, 0.50, 0.61]})
    result = check("06.1", runs, "poly")
    assert not result and "'cosine' reached the target, 60.0%, at epoch 2, when 'poly' was at 50.0%, more" \
        in result.message and "more than 2 standard errors" in result.message


def test_a_tie_within_noise_is_accepted(make_run):
    runs = race(make_run, {"none": [0.40, 0.55, 0.60], "cosine": [0.45, 0.61, 0.70],
                           "poly": [0.42, 0.595, 0.61]}, test_size=1_000)
    assert check("06.1", runs, "poly").passed   # 59.5% at epoch 2: within noise of 60% on 1,000 images


def test_a_schedule_that_never_reaches_the_target_fails(make_run):
    runs = race(make_run, {"none": [0.40, 0.55, 0.60], "poly": [0.42, 0.50, 0.55]})
    result = check("06.1", runs, "poly")
    assert not result and "'poly' never reached the target, 60.0%" in result.message


def test_a_race_at_chance_is_untested(make_run):
    runs = race(make_run, {"none": [0.10, 0.11], "cosine": [0.12, 0.10]}, test_size=256)
    result = check("06.1", runs, "cosine")
    assert result.passed and "the race is untested at this size" in result.message


# -- 14.1: a peak predicted from another batch's ------------------------------------------------
def measured(make_run, name, batch, peak, held=1.0, spread=0.0, memory=True, **config):
    """A run of lesson 14's gc.memory_run: notes["memory"] in MiB (two measured steps)."""
    MiB = 2**20
    notes = {"memory": {"counter": "torch.profiler's memory timeline", "device": "cpu",
                        "computed": {"parameters": 0.4 * MiB}, "held_parts": ["parameters"],
                        "held": [held * MiB] * 2, "peak": [peak * MiB, peak * (1 + spread) * MiB],
                        "at_peak": {}, "most": {}}} if memory else {}
    return make_run(name, engine="pytorch", epochs=2,
                    config={"batch_size": batch, "train_size": 6_400, **config}, notes=notes)


def test_a_peak_predicted_within_the_tolerance_passes(make_run):
    runs = [measured(make_run, "batch 16", 16, 11.0), measured(make_run, "batch 32", 32, 21.0)]
    result = check("14.1", runs, 20.0)
    assert result, result.message
    assert "as you predicted: 'batch 32' peaked at 21 MiB, your 20 MiB is -4.8% off (within " \
        "10%). 'batch 16' held 1 MiB between steps and kept 10 MiB of activations, 0.625 MiB " \
        "an image; at batch 32, 20 MiB of activations, 0.625 MiB an image" in result.message


@pytest.mark.parametrize("answer, says", [
    (None, "prediction=None: before you run, write the peak you expect for 'batch 32' in MiB"),
    ("20", "prediction='20'"),
    (True, "prediction=True"),
    (-3.0, "prediction=-3.0"),
    (float("inf"), "prediction=inf: before you run, write the peak you expect for 'batch 32' "
                   "in MiB (a finite number above 0)"),
    (11.0, "you predicted 11 MiB; 'batch 32' peaked at 21 MiB (-48%), more than 10% off. "
           "'batch 16' held 1 MiB between steps and kept 10 MiB of activations"),
])
def test_a_missing_or_wrong_prediction_is_not_yet(make_run, answer, says):
    runs = [measured(make_run, "batch 16", 16, 11.0), measured(make_run, "batch 32", 32, 21.0)]
    result = check("14.1", runs, answer)
    assert not result and says in result.message


def test_a_noisy_counter_widens_what_is_accepted(make_run):
    runs = [measured(make_run, "batch 16", 16, 11.0),
            measured(make_run, "batch 32", 32, 20.0, spread=0.5)]
    assert check("14.1", runs, 27.0)            # 35% off, inside the readings' spread
    assert not check("14.1", runs[:1] + [measured(make_run, "b", 32, 20.0)], 27.0)


def test_the_same_batch_another_change_or_no_measurement_is_not_yet(make_run):
    first = measured(make_run, "batch 16", 16, 11.0)
    same = check("14.1", [first, measured(make_run, "again", 16, 11.0)], 11.0)
    assert not same and "has the first run's batch (16): change it at # >>>" in same.message
    other = check("14.1", [first, measured(make_run, "b", 32, 21.0, model="tiny")], 21.0)
    assert not other and "differ in more than batch_size: model" in other.message
    bare = check("14.1", [first, measured(make_run, "b", 32, 21.0, memory=False)], 21.0)
    assert not bare and "run 'b' has no memory measurement in its record" in bare.message


# -- 15.1: the knee of a batch sweep of a served network ---------------------------------------
def batch_sweep(per_image_ms, model="tiny", variant="oneDNN on", spread=0.02, passes=10):
    """Records of one network served at each batch of `per_image_ms` ({batch: ms an image})."""
    from gpu_course.analyse import inference as served
    out = []
    for batch, ms in per_image_ms.items():
        n = 40 if batch == 1 else passes
        times = [batch * ms / 1000 * (1 + spread * ((i * 5 // n) - 2) / 2) for i in range(n)]
        out.append(served.record(served.Served(model, variant, "cpu"), batch, "alone", times))
    return out


@pytest.mark.parametrize("records, says", [
    ([], "0 batch size(s) so far (none); a knee needs at least three"),
    (None, "0 batch size(s) so far"),
    ([{"images_per_s": 3.0}], "is not a record of lesson 15"),
    (5, "records=5: pass a list of lesson 15's records"),
])
def test_15_1_without_a_sweep_is_not_yet(records, says):
    result = check("15.1", records, 4)
    assert not result and says in result.message


def test_15_1_refuses_two_batches_a_mixed_sweep_and_too_few_passes():
    assert "2 batch size(s) so far (1, 4)" in check("15.1", batch_sweep({1: 2.0, 4: 1.0}), 4).message
    mixed = batch_sweep({1: 2.0, 4: 1.0}) + batch_sweep({16: 0.5}, variant="oneDNN off")
    assert "the sweep varies more than the batch (" in check("15.1", mixed, 4).message
    few = batch_sweep({1: 2.0, 4: 1.0, 16: 0.5}, passes=3)
    assert "batch 4 has fewer than 5 passes to judge" in check("15.1", few, 4).message


def test_15_1_a_knee_outside_the_sweep_or_below_it_is_not_yet():
    records = batch_sweep({1: 2.0, 4: 1.0, 16: 0.5, 64: 0.49})
    assert "knee=8: name one of the batches served (1, 4, 16, 64)" in \
        check("15.1", records, 8).message
    result = check("15.1", records, 4)
    assert not result and "batch 4 served 1,000.0 images/s, below 90% of batch 64's" \
        in result.message and "Images/s still grows past it." in result.message


def test_15_1_the_knee_passes_with_what_a_request_then_waits():
    records = batch_sweep({1: 2.0, 4: 1.0, 16: 0.5, 64: 0.49})
    result = check("15.1", records, 16)
    assert result and "knee at batch 16: 2,000.0 images/s against batch 64's 2,040.8, ×0.98" in \
        result.message
    assert "A request waits 8.00 ms at batch 16, 2.00 ms at 1." in result.message
    later = check("15.1", records, 64)
    assert later and "the most images/s of the sweep" in later.message
    assert "Batch 16 comes as close to the best: the knee may lie lower." in later.message


def test_15_1_a_sweep_that_never_grows_says_batching_buys_nothing():
    records = batch_sweep({1: 0.5, 4: 1.0, 16: 2.0})
    result = check("15.1", records, 1)
    assert result and "Images/s never grew with the batch: batch 1 served the most" in \
        result.message and "waits" not in result.message
