"""The capstone's grading on fake runs (lesson 16): the job as given found beside the final
run, each criterion met and not met on a CPU and on a GPU, with what it says, and the
check (exercise 16.1) that puts them together."""
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from gpu_course.analyse import diagnose, metrics
from gpu_course.lessons import l16_capstone as capstone, sizes
from gpu_course.lessons.exercises import check
from gpu_course.lessons.l16_capstone import Criterion
from gpu_course import rungs
from gpu_course.rungs import GRAPH, RungName

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fake_runs  # noqa: E402

JOB = {"dataset": "folder", "data_dir": "/data/photos", "model": "wrn16_10", "image_size": 32,
       "train_size": 2400, "test_size": 500, "augment": "standard", "batch_size": 64,
       "epochs": 3, "num_workers": 1, "data_format": "loose", "data_on_gpu": False,
       "graph": "eager", "dtype": "float32", "mock": "none"}
STEADY = {"num_workers": 0, "data_on_gpu": True}   # a fix: the data on the device


# the monitor's period: the fixed job's epochs last 0.8 s, and a GPU-Util reading averages
# the period before it, so only a period that lies wholly in training describes it
INTERVAL = 0.25


def given(make_run, gpus=1, rate=300.0, wait=0.6, busy=40.0, epochs=3, **config):
    return make_run("capstone", rate=rate, gpus=gpus, engine="pytorch", epochs=epochs,
                    config={**JOB, "epochs": epochs, **config}, data_wait_share=wait, busy=busy,
                    interval=INTERVAL)


def mine(make_run, gpus=1, rate=3000.0, wait=0.02, busy=97.0, epochs=3, **config):
    return make_run("capstone", rate=rate, gpus=gpus, engine="pytorch", epochs=epochs,
                    config={**JOB, **STEADY, "epochs": epochs, **config}, data_wait_share=wait,
                    busy=busy, interval=INTERVAL)


def rewrite(run, epochs=None, meta=None):
    """The run's epochs.csv and run.json changed on disk (the check reads the job as given
    from disk), read back."""
    if epochs is not None:
        frame = pd.read_csv(run.path / "epochs.csv")
        for column, values in epochs.items():
            frame[column] = values
        frame.to_csv(run.path / "epochs.csv", index=False)
    if meta is not None:
        data = json.loads((run.path / "run.json").read_text())
        data.update(meta)
        (run.path / "run.json").write_text(json.dumps(data))
    return fake_runs.load(run.path)


def mark(marks, criterion):
    return next(m for m in marks if m.criterion == criterion)


@pytest.mark.parametrize("mode", ["full", "smoke", "check"])
def test_each_size_gives_diagnose_and_the_blocks_enough_steady_steps(mode):
    size = sizes("16", mode=mode)
    steady = size.train_size // size.batch_size * size.epochs - size.warmup_steps
    assert steady >= metrics.MIN_STEADY_STEPS, (mode, steady)


# -- the job as given -------------------------------------------------------------------------
def test_the_job_as_given_is_the_earliest_finished_run_of_the_same_job_that_ran_as_given(make_run):
    failed = given(make_run)
    rewrite(failed, meta={"status": "failed"})
    first, again = given(make_run), given(make_run)
    other = given(make_run, model="resnet20")                  # another job, as given
    changed = given(make_run, num_workers=4)                   # the job, not as given
    final = mine(make_run)
    assert capstone.given_run(final).path == first.path != again.path
    assert capstone.given_run(changed).path == first.path      # the same job
    assert capstone.given_run(other).path == other.path        # only itself is that job
    assert capstone.job_differences(first, other) == {"model": ("wrn16_10", "resnet20")}
    assert capstone.is_given(first) and not capstone.is_given(changed)


def test_a_record_that_lacks_a_setting_had_the_experiment_s_default(make_run):
    older = make_run("capstone", engine="pytorch", gpus=1, config={
        **{k: v for k, v in JOB.items() if k not in capstone.GIVEN}, "num_workers": 1})
    assert not {"data_format", "data_on_gpu", "mock"} & set(older.config)
    assert capstone.is_given(older)
    assert capstone.GIVEN == {"num_workers": 1, "data_format": "loose", "data_on_gpu": False,
                              "graph": "eager", "dtype": "float32", "mock": "none"}


# -- diagnose: what it names, and whether the course can fix it there ---------------------------------
def diagnosis(verdict, rung, cpus=16, cpu_percent=40.0):
    return diagnose.Diagnosis("capstone", verdict, [], rung, "advice",
                              {"cpu_count": cpus, "cpu_percent": cpu_percent})


@pytest.mark.parametrize("verdict, rung, gpus, config, lesson", [
    ("input-bound", "workers", 1, {}, "02"),                        # 1 worker, 16 cores
    ("input-bound", "workers", 1, {"num_workers": 13}, None),       # more cores than it has
    ("input-bound", "workers", 1, {"num_workers": 0, "data_on_gpu": True}, None),   # no loader
    ("input-bound", "data-format", 1, {"num_workers": 13}, "09"),
    ("input-bound", "data-on-gpu", 1, {"data_format": "memory"}, "09"),
    ("input-bound", "data-on-gpu", 0, {"data_format": "memory"}, None),   # no GPU to hold it
    ("compute-bound", "compile", 1, {}, None),                      # the GPU is the limit
    ("compute-bound", "compile", 0, {}, None),                      # the CPU is the device
    ("overhead-bound", "compile", 0, {}, None),
    ("overhead-bound", "compile", 1, {}, "03"),                     # eager, then static
    ("overhead-bound", "hybridize", 1, {"graph": "hybrid"}, "03"),  # either track's graph
    ("overhead-bound", "large-batch", 1, {"graph": "static"}, "05"),
    ("overhead-bound", "large-batch", 1, {"graph": "static", "batch_size": 512}, None),
    ("overhead-bound", "all-gpus", 1, {"graph": "static", "batch_size": 512}, None),
])
def test_the_course_fixes_what_diagnose_names_where_a_lesson_s_change_applies(
        make_run, verdict, rung, gpus, config, lesson):
    run = make_run("capstone", engine="pytorch", gpus=gpus, config={**JOB, **config})
    assert capstone.fix(diagnosis(verdict, rung), run) == lesson


def test_every_rung_the_course_can_still_take_names_a_lesson_of_the_capstone():
    fixable = {RungName.WORKERS, RungName.DATA_FORMAT, RungName.DATA_ON_GPU,
               RungName.LARGE_BATCH, *GRAPH.values()}
    assert {rungs.LESSON[r] for r in fixable} <= set(capstone.LESSONS)
    assert set(rungs.LESSON) == set(RungName) - {RungName.LONGER}   # every rung, a lesson


def test_an_input_bound_run_is_told_the_lesson_whose_change_it_has_not_made(make_run):
    marks = capstone.grade(given(make_run), given(make_run))
    said = mark(marks, Criterion.DIAGNOSIS)
    assert not said.met
    assert "diagnose calls 'capstone' input-bound: the next rung, workers (num_workers 1 -> 13" \
           in said.says and "is lesson 02 (DataLoader workers)." in said.says


def test_a_busy_gpu_is_the_limit_and_further_rungs_are_offered_not_asked(make_run):
    said = mark(capstone.grade(given(make_run), mine(make_run)), Criterion.DIAGNOSIS)
    assert said.met and "compute-bound: the GPU is the limit." in said.says
    assert "Further speed, not asked for: compile, graph='compile', torch.compile(net)" \
        in said.says   # the PyTorch track's words


def test_an_idle_gpu_fed_in_time_is_sent_to_the_graph(make_run):
    said = mark(capstone.grade(given(make_run), mine(make_run, busy=45.0)), Criterion.DIAGNOSIS)
    assert not said.met and "overhead-bound" in said.says
    assert "is lesson 03 (a graph: hybridize or torch.compile)" in said.says


def test_on_a_cpu_the_device_is_the_limit_once_the_input_is_not(make_run):
    said = mark(capstone.grade(given(make_run, gpus=0), mine(make_run, gpus=0, wait=0.05)),
                Criterion.DIAGNOSIS)
    assert said.met and "without a GPU the CPU both computes and dispatches" in said.says


def test_an_input_bound_run_with_no_rung_left_is_not_the_course_s_to_fix(make_run):
    final = mine(make_run, wait=0.5, busy=40.0, data_format="memory", num_workers=13)
    said = mark(capstone.grade(given(make_run), final), Criterion.DIAGNOSIS)
    assert said.met and "its next rung, workers, asks more of this machine than it has" in said.says


def test_a_run_too_short_to_rule_on_is_sent_to_measure_again(make_run):
    short = mine(make_run, train_size=640, epochs=2)    # 10 steady steps
    said = mark(capstone.grade(given(make_run), short), Criterion.DIAGNOSIS)
    assert not said.met and "diagnose calls 'capstone' unreliable: it cannot rule (the run has " \
                            "10 steady steps, fewer than 20)" in said.says
    assert "lesson 10 (diagnose)" in said.says


# -- the target the device calls for ------------------------------------------------------------------
def test_on_a_cpu_the_target_is_a_data_wait_below_diagnose_s_line(make_run):
    job = given(make_run, gpus=0)
    met = mark(capstone.grade(job, mine(make_run, gpus=0, wait=0.05)), Criterion.TARGET)
    assert met.met and met.says.startswith("data wait 5% of the steady step time (blocks ")
    assert "against 60% as given: the target, below 25%, is met." in met.says
    missed = mark(capstone.grade(job, mine(make_run, gpus=0, wait=0.4, num_workers=1,
                                           data_on_gpu=False)), Criterion.TARGET)
    assert not missed.met and "the target is below 25%" in missed.says
    assert "lesson 02 (DataLoader workers); lesson 09 (the input pipeline)." in missed.says


def test_on_a_cpu_a_job_that_already_waited_little_is_its_own_bar(make_run):
    job = given(make_run, gpus=0, wait=0.1)
    same = mark(capstone.grade(job, mine(make_run, gpus=0, wait=0.1)), Criterion.TARGET)
    assert same.met and "no more than the job as given (its blocks up to 1" in same.says
    more = mark(capstone.grade(job, mine(make_run, gpus=0, wait=0.22)), Criterion.TARGET)
    assert not more.met and "the target is no more than the job as given" in more.says


def test_on_a_cpu_with_every_core_busy_the_wait_has_no_lesson_left(make_run):
    final = mine(make_run, gpus=0, wait=0.5, data_format="memory", data_on_gpu=False,
                 num_workers=13)
    said = mark(capstone.grade(given(make_run, gpus=0), final), Criterion.TARGET)
    assert not said.met and "every core is busy: use a machine with more cores" in said.says


def test_on_a_cpu_too_few_steps_cannot_show_the_wait(make_run):
    said = mark(capstone.grade(given(make_run, gpus=0),
                               mine(make_run, gpus=0, train_size=640, epochs=2)), Criterion.TARGET)
    assert not said.met and "too few steady steps to measure its data wait: train longer" in said.says


def test_on_a_gpu_the_target_is_the_lecture_s_gpu_util(make_run):
    said = mark(capstone.grade(given(make_run), mine(make_run)), Criterion.TARGET)
    assert said.met and said.says.startswith("GPU-Util 9")
    assert "the target is 90%, the lecture's share of a GPU kept busy (diagnose's GPU_BUSY): " \
           "met." in said.says


def test_on_a_gpu_a_starved_step_is_sent_to_the_loader(make_run):
    final = mine(make_run, wait=0.5, busy=60.0, num_workers=1, data_on_gpu=False)
    said = mark(capstone.grade(given(make_run), final), Criterion.TARGET)
    assert not said.met and "not met: the GPU waits for data (" in said.says
    assert "lesson 02 (DataLoader workers)" in said.says and "lesson 09" in said.says


def test_on_a_gpu_an_idle_step_fed_in_time_is_sent_to_syncs_graphs_and_batches(make_run):
    said = mark(capstone.grade(given(make_run), mine(make_run, busy=50.0)), Criterion.TARGET)
    assert not said.met and "the GPU idles while the host issues kernels: no " \
        "loss.item() every step, lesson 13 (sync points); a graph, lesson 03" in said.says and "a larger batch, lesson 05" in said.says


def test_on_a_gpu_a_job_already_busy_is_its_own_bar(make_run):
    job = given(make_run, busy=96.0, wait=0.0)
    said = mark(capstone.grade(job, mine(make_run, busy=93.0)), Criterion.TARGET)
    assert not said.met and "the target is 9" in said.says and "what the job as given " \
                                                                "already had" in said.says


def test_on_a_gpu_without_a_reading_the_target_cannot_be_judged(make_run):
    final = mine(make_run)
    (final.path / "gpu.csv").write_text(",".join(fake_runs.GPU_COLUMNS) + "\n")
    said = mark(capstone.grade(given(make_run), fake_runs.load(final.path)), Criterion.TARGET)
    assert not said.met and "no GPU-Util was recorded for 'capstone'" in said.says


# -- the time to the job as given's accuracy ---------------------------------------------------------
ACCS = [0.5, 0.65, 0.75]


def race(make_run, given_accs=ACCS, mine_accs=ACCS, **mine_options):
    job = rewrite(given(make_run), epochs={"val_acc": given_accs})
    final = rewrite(mine(make_run, **mine_options), epochs={"val_acc": mine_accs})
    return mark(capstone.grade(job, final), Criterion.TIME)


def test_reaching_the_accuracy_sooner_beyond_noise_meets_the_time(make_run):
    said = race(make_run)
    assert said.met and said.says.startswith(
        "the target accuracy is 71.1%: the job as given's final 75.0% less 2 standard errors "
        "(500 images); 'capstone' reached it after")
    assert ", faster (×" in said.says and "over 5 blocks of steady steps" in said.says


def test_the_same_speed_is_not_shorter_beyond_noise(make_run):
    said = race(make_run, rate=300.0)
    assert not said.met and "not shorter beyond the runs' noise" in said.says


def test_a_slower_race_says_what_the_changes_cost(make_run):
    said = race(make_run, rate=100.0)
    assert not said.met and "a slow-down" in said.says and "is not paid back" in said.says


def test_a_run_that_never_reaches_the_accuracy_is_sent_to_batch_and_schedule(make_run):
    said = race(make_run, mine_accs=[0.3, 0.5, 0.6])
    assert not said.met and "'capstone' never reached it (60.0% after 3 epochs)" \
        in said.says
    assert "lesson 05 (a larger batch), lesson 06 (learning-rate schedules)" in said.says


def test_a_job_that_learned_nothing_races_to_an_epoch_s_end_and_says_so(make_run):
    said = race(make_run, given_accs=[0.1, 0.1, 0.11], mine_accs=[0.1, 0.1, 0.1])
    assert said.met and "The job as given ended within noise of chance" in said.says


def test_the_job_as_given_is_not_raced_against_itself(make_run):
    job = given(make_run)
    said = mark(capstone.grade(job, job), Criterion.TIME)
    assert not said.met and "'capstone' is the job as given: the race is against it" in said.says


def test_without_steady_steps_the_race_cannot_be_told(make_run):
    job = given(make_run)
    final = mine(make_run)
    (final.path / "steps.csv").write_text(",".join(fake_runs.STEP_COLUMNS) + "\n")
    said = mark(capstone.grade(job, fake_runs.load(final.path)), Criterion.TIME)
    assert not said.met and "too few steady steps to tell" in said.says


# -- the check, exercise 16.1 -------------------------------------------------------------------------
def test_the_steady_job_passes_with_every_criterion_said(make_run):
    job = given(make_run)
    result = check("16.1", [job, mine(make_run)])
    assert result.passed, result.message
    assert result.message.startswith(f"steady, against 'capstone' as given ({job.path.name}). "
                                     "Diagnosis: diagnose calls 'capstone' compute-bound")
    assert "Target: GPU-Util" in result.message and "Time to target: " in result.message


def test_the_job_as_given_is_not_yet_and_says_what_holds_it(make_run):
    result = check("16.1", given(make_run))
    assert not result.passed
    assert result.message.startswith("'capstone' is the job as given, the run yours is graded "
                                     "against: make it steady at # >>>, then rerun.")
    assert "Diagnosis: diagnose calls 'capstone' input-bound" in result.message
    assert "Target: GPU-Util" in result.message


def test_a_criterion_missed_is_named_with_the_others_left_out(make_run):
    given(make_run)
    result = check("16.1", mine(make_run, busy=50.0))
    assert not result.passed and result.message.startswith("2 of 3 criteria not met")
    assert "Diagnosis: " in result.message and "Time to target" not in result.message


def test_a_final_run_with_no_job_as_given_beside_it_asks_for_that_run_first(make_run):
    result = check("16.1", mine(make_run))
    assert not result.passed and "no finished run of the job as given (num_workers=1, " \
        "data_format=loose, data_on_gpu=False, graph=eager, dtype=float32, mock=none)" \
        in result.message
    assert "Run the exercise cell as shipped once" in result.message


def test_another_job_as_given_is_named_by_what_differs(make_run):
    given(make_run, model="resnet20")
    result = check("16.1", mine(make_run))
    assert not result.passed and "ran as given but is another job: model resnet20 against " \
                                 "wrn16_10" in result.message


def test_a_ceiling_is_not_graded(make_run):
    given(make_run)
    result = check("16.1", mine(make_run, mock="loader"))
    assert not result.passed and "is a ceiling (mock=loader), not training: grade the job." in result.message


@pytest.mark.parametrize("runs, says", [([], "0 run(s) so far"),
                                        ("a run", "is not a run record")])
def test_no_run_is_not_yet(runs, says):
    assert says in check("16.1", runs).message


def test_a_machine_shared_for_one_run_only_leaves_the_race_untested(make_run):
    def shared(run, other_cores):
        return rewrite(run, meta={"load": {
            "start": {"wall": 0.0, "cpu_busy_s": 0.0, "process_cpu_s": 0.0},
            "end": {"wall": 10.0, "process_cpu_s": 10.0,
                    "cpu_busy_s": 10.0 * (1 + run.config["num_workers"] + other_cores)}}})
    shared(given(make_run), 3)
    result = check("16.1", shared(mine(make_run), 0))
    assert result.passed and "the race is untested; run both again on a quiet machine" \
        in result.message
