"""What kind of "not yet" each check gives, on fake runs: a refusal that rests on what the
machine measured (a speed's direction, a data wait's share, a knee, diagnose's verdict, the
capstone's measured criteria) is Contradicted, `Result.measured`; one about how the
exercise was done (no runs, nothing changed, a second change, an answer of the wrong kind,
too few steps) is not. The tests that run the solutions for real accept the first kind
only (tests/exercise_cells.py): a machine that other programs load can turn it."""
import sys
from pathlib import Path

import pytest

from gpu_course.analyse import inference
from gpu_course.lessons import l16_capstone as capstone
from gpu_course.lessons.exercises import Contradicted, NotYet, check
from gpu_course.lessons.l13_sync_points import GUARD
from gpu_course.lessons.l16_capstone import Criterion

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fake_runs  # noqa: E402


def test_a_contradiction_is_a_not_yet_and_a_result_says_which_kind():
    assert issubclass(Contradicted, NotYet)
    assert check("01.1", []).measured is False


# -- the runs each case judges ------------------------------------------------------------------
def workers(make_run, waits=(0.1, 0.6), counts=(1, 0), rates=(600, 300), **config):
    return [make_run(f"num_workers={n}", rate=rate, data_wait_share=wait,
                     config={"num_workers": n, **config})
            for n, rate, wait in zip(counts, rates, waits)]


def graphs(make_run, rates=(900, 600), second="hybrid", **config):
    return [make_run(f"graph={g}", rate=rate, config={"graph": g, **config},
                     ran={"compile_backend": "inductor"})
            for g, rate in zip(("eager", second), rates)]


def bottleneck(make_run, wait=0.6, rate=300, compute=900, mine=None):
    """Lesson 10's four runs: the job, the changed job, its input and compute ceilings."""
    mine = {"data_format": "loose"} if mine is None else mine
    return [make_run("job", rate=600, data_wait_share=0.05, config={"data_format": "memory"}),
            make_run("changed", rate=rate, data_wait_share=wait, config=mine),
            make_run("changed: mock trainer", rate=320, data_wait_share=0.95,
                     config={**mine, "mock": "trainer"}),
            make_run("changed: mock loader", rate=compute, data_wait_share=0.0,
                     config={**mine, "mock": "loader"})]


def bench(threads, rates):
    return {"threads": threads, "onednn": True, "batch": 32, "cpus": None,
            "images_per_s": sum(rates) / len(rates), "step_images_per_s": list(rates),
            "ms_per_batch": 1000 * 32 / (sum(rates) / len(rates)), "load_average": 0.3,
            "other_cores": 0.0, "build": {"framework": "torch"}}


FAST, SLOW = [600, 610, 590, 605, 595], [300, 310, 290, 305, 295]


def profiled(make_run, change=None, **config):
    change = {"num_workers": 0} if change is None else change
    return [make_run("as profiled", data_wait_share=0.1, config={"num_workers": 1, **config}),
            make_run("changed", data_wait_share=0.6, config={"num_workers": 1, **config, **change})]


def guards(make_run, on=(False, True)):
    return [make_run(f"guard {g}", rate=rate, engine="pytorch", notes={GUARD: g},
                     config={"num_workers": 0}) for g, rate in zip(on, (600, 300))]


def served(per_image_ms, passes=10):
    out = []
    for batch, ms in per_image_ms.items():
        n = 40 if batch == 1 else passes
        times = [batch * ms / 1000 * (1 + 0.02 * ((i * 5 // n) - 2) / 2) for i in range(n)]
        out.append(inference.record(inference.Served("tiny", "oneDNN on", "cpu"), batch, "alone", times))
    return out


SWEEP = {1: 2.0, 4: 1.0, 16: 0.5, 64: 0.49}


# -- each check: its measured refusals, then its refusals about the exercise --------------------
CASES = {
    # judge_prediction: a speed's direction against the prediction
    "03.1 slower, predicted faster": (True, "03.1", lambda m: graphs(m), "faster"),
    "03.1 a prediction of no kind": (False, "03.1", lambda m: graphs(m), "quicker"),
    "03.1 the graph unchanged": (False, "03.1", lambda m: graphs(m, second="eager"), "same"),
    "03.1 too few steps": (False, "03.1", lambda m: graphs(m, train_size=1024), "slower"),
    "05.1 on a GPU, slower": (True, "05.1", lambda m: [
        m(f"batch {b}", rate=r, gpus=1, config={"batch_size": b})
        for b, r in ((64, 600), (512, 300))], "faster"),
    "13.1 the guard's cost, predicted none": (True, "13.1", lambda m: guards(m), "same"),
    "13.1 the guard not switched": (False, "13.1", lambda m: guards(m, on=(True, True)), "slower"),
    # wait_prediction: the data wait's share against the prediction
    "01.1 more wait, predicted less": (True, "01.1", lambda m: workers(m), "less"),
    "01.1 a prediction of no kind": (False, "01.1", lambda m: workers(m), "faster"),
    "01.1 the workers unchanged": (False, "01.1", lambda m: workers(m, counts=(1, 1)), "same"),
    "01.1 too few steps": (False, "01.1", lambda m: workers(m, train_size=1024), "more"),
    "01.1 one run": (False, "01.1", lambda m: workers(m)[:1], "more"),
    "09.1 more wait, predicted less": (True, "09.1", lambda m: [
        m(f"data_format={f}", rate=r, data_wait_share=w, config={"data_format": f})
        for f, r, w in (("loose", 600, 0.1), ("memory", 300, 0.6))], "less"),
    # a knee placed where samples/s still grows
    "02.1 a knee before the best": (True, "02.1", lambda m: workers(
        m, waits=(0.6, 0.15, 0.05), counts=(0, 1, 2), rates=(300, 600, 640)), 0),
    "02.1 a knee not tried": (False, "02.1", lambda m: workers(
        m, waits=(0.6, 0.15, 0.05), counts=(0, 1, 2), rates=(300, 600, 640)), 3),
    "15.1 a knee before the best": (True, "15.1", lambda m: served(SWEEP), 4),
    "15.1 a knee not served": (False, "15.1", lambda m: served(SWEEP), 8),
    "15.1 too few passes": (False, "15.1", lambda m: served(SWEEP, passes=3), 4),
    # diagnose's verdict, from the timings
    "10.1 a verdict diagnose contradicts": (True, "10.1", lambda m: bottleneck(m), "compute-bound"),
    "10.1 diagnose does not rule": (True, "10.1", lambda m: bottleneck(
        m, wait=0.05, rate=600, compute=300), "compute-bound"),
    "10.1 a verdict of no kind": (False, "10.1", lambda m: bottleneck(m), "io-bound"),
    "10.1 two changes": (False, "10.1", lambda m: bottleneck(
        m, mine={"data_format": "loose", "model": "tiny"}), "input-bound"),
    "12.1 a verdict the blocks contradict": (True, "12.1", lambda m: profiled(m),
                                             "not input-bound"),
    "12.1 nothing changed": (False, "12.1", lambda m: profiled(m, change={}), "input-bound"),
    "12.1 too few steps": (False, "12.1", lambda m: profiled(m, train_size=1024), "input-bound"),
    # judged on accuracy or memory, which the machine's load does not move
    "06.1 another schedule first": (False, "06.1", lambda m: race(m), "poly"),
}


def race(make_run):
    runs = []
    for name, accs in {"none": [0.40, 0.55, 0.60], "cosine": [0.45, 0.62, 0.70],
                       "poly": [0.42, 0.50, 0.61]}.items():
        run = make_run(f"lr_scheduler={name}", epochs=3, config={"lr_scheduler": name})
        run.epochs["val_acc"] = accs
        runs.append(run)
    return runs


@pytest.mark.parametrize("case", CASES)
def test_each_refusal_says_whether_it_rests_on_what_the_machine_measured(make_run, case):
    measured, id, runs, answer = CASES[case]
    result = check(id, runs(make_run), answer)
    assert not result.passed and result.message
    assert result.measured is measured, result.message


@pytest.mark.parametrize("threads, answer, measured", [(8, "faster", True), (2, "slower", False),
                                                       (8, "more", False)])
def test_11_a_thread_count_contradicted_by_its_passes_is_measured(threads, answer, measured):
    result = check("11.1", [bench(2, FAST), bench(threads, SLOW)], answer)
    assert not result.passed and result.measured is measured, result.message


# -- the capstone: measured only where every criterion missed is measured ----------------------
JOB = {"dataset": "folder", "data_dir": "/data/photos", "model": "wrn16_10", "image_size": 32,
       "train_size": 2400, "test_size": 500, "augment": "standard", "batch_size": 64,
       "epochs": 3, "num_workers": 1, "data_format": "loose", "data_on_gpu": False,
       "graph": "eager", "dtype": "float32", "mock": "none"}
STEADY = {"num_workers": 0, "data_on_gpu": True}


def job(make_run, steady=False, rate=300.0, wait=0.6, busy=40.0, accs=None, gpus=1, **config):
    run = make_run("capstone", rate=rate, gpus=gpus, engine="pytorch",
                   config={**JOB, **(STEADY if steady else {}), **config},
                   data_wait_share=wait, busy=busy, interval=0.25)
    if accs is not None:   # the check reads the job as given from disk
        frame = run.epochs
        frame["val_acc"] = accs
        frame.to_csv(run.path / "epochs.csv", index=False)
    return run


def final(make_run, **options):
    return job(make_run, steady=True, **{"rate": 3000.0, "wait": 0.02, "busy": 97.0, **options})


def test_the_capstone_s_measured_criteria_are_marked_measured(make_run):
    given = job(make_run)
    idle = capstone.grade(given, final(make_run, busy=50.0))      # overhead-bound, GPU-Util low
    assert {m.criterion for m in idle if not m.met} == {Criterion.DIAGNOSIS, Criterion.TARGET}
    assert all(m.measured for m in idle if not m.met)
    same = next(m for m in capstone.grade(given, final(make_run, rate=300.0))
                if m.criterion == Criterion.TIME)                 # no shorter beyond noise
    assert not same.met and same.measured
    assert all(m.met for m in capstone.grade(given, final(make_run)))
    waits = capstone.grade(job(make_run, gpus=0), final(make_run, gpus=0, wait=0.4,
                                                         num_workers=1, data_on_gpu=False))
    target = next(m for m in waits if m.criterion == Criterion.TARGET)   # on a CPU: the data wait
    assert not target.met and target.measured and "the target is below 25%" in target.says


def test_the_capstone_s_criteria_about_the_run_itself_are_not(make_run):
    given = job(make_run)
    itself = capstone.grade(given, given)
    assert not next(m for m in itself if m.criterion == Criterion.TIME).measured
    unread = final(make_run)
    (unread.path / "steps.csv").write_text(",".join(fake_runs.STEP_COLUMNS) + "\n")
    (unread.path / "gpu.csv").write_text(",".join(fake_runs.GPU_COLUMNS) + "\n")
    marks = {m.criterion: m for m in capstone.grade(given, fake_runs.load(unread.path))}
    assert "too few steady steps to tell" in marks[Criterion.TIME].says
    assert "no GPU-Util was recorded" in marks[Criterion.TARGET].says
    assert not any(marks[c].met or marks[c].measured for c in (Criterion.TIME, Criterion.TARGET))
    never = next(m for m in capstone.grade(job(make_run, accs=[0.5, 0.65, 0.75]),
                                           final(make_run, accs=[0.3, 0.5, 0.6]))
                 if m.criterion == Criterion.TIME)
    assert not never.met and not never.measured and "never reached it" in never.says


def test_the_capstone_refused_by_its_measured_criteria_alone_is_measured(make_run):
    job(make_run)
    result = check("16.1", final(make_run, busy=50.0))
    assert not result.passed and result.message.startswith("2 of 3 criteria not met")
    assert result.measured
    raced = check("16.1", final(make_run, rate=300.0))
    assert not raced.passed and "1 of 3 criteria not met" in raced.message and raced.measured


def test_the_capstone_refused_for_how_it_was_done_is_not(make_run):
    given = job(make_run)
    as_given = check("16.1", given)
    assert not as_given.passed and "is the job as given" in as_given.message
    assert not as_given.measured
    assert not check("16.1", final(make_run, mock="loader")).measured
    assert not check("16.1", []).measured


def test_a_capstone_that_never_learned_enough_is_not_measured_beside_measured_misses(make_run):
    job(make_run, accs=[0.5, 0.65, 0.75])
    result = check("16.1", final(make_run, busy=50.0, accs=[0.3, 0.5, 0.6]))
    assert not result.passed and "3 of 3 criteria not met" in result.message
    assert not result.measured    # one criterion missed is the run's own: the refusal is too
