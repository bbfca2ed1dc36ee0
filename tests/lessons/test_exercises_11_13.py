"""The checks of exercises 11.1, 12.1 and 13.1 on fake records: every way each says "not
yet", and every way it passes, judged against the records' noise (tests/fake_runs.py for
the runs; lesson 11's benchmarks are the dicts env.bench returns)."""
import pytest

from gpu_course.analyse import noise
from gpu_course.env import report as env
from gpu_course.lessons.exercises import check
from gpu_course.lessons.l13_sync_points import GUARD


# -- 11.1: another thread count ---------------------------------------------------------------

def bench(threads, rates, other=0.0, load=0.3, framework="torch", **settings):
    """A benchmark as env.bench returns it: the timed passes' images/s, and how busy the
    machine was (other programs' cores while it ran, the load average before it)."""
    return {"threads": threads, "onednn": True, "batch": 32, "cpus": None,
            "images_per_s": sum(rates) / len(rates), "step_images_per_s": list(rates),
            "ms_per_batch": 1000 * 32 / (sum(rates) / len(rates)), "load_average": load,
            "other_cores": other, "build": {"framework": framework}, **settings}


BASE = [600, 610, 590, 605, 595]    # the usable cores' passes
SLOWER = [300, 310, 290, 305, 295]
SAME = [598, 612, 596, 603, 600]


@pytest.mark.parametrize("records, says", [
    (None, "0 benchmark(s) so far; the exercise compares two"),
    ([bench(2, BASE)], "1 benchmark(s) so far"),
    (["a run"], "'a run' is not a benchmark: pass what env.bench returned"),
])
def test_11_without_two_benchmarks_asks_for_them(records, says):
    result = check("11.1", records, "slower")
    assert not result and says in result.message


def test_11_the_same_thread_count_is_nothing_changed():
    result = check("11.1", [bench(2, BASE), bench(2, SAME)], "same")
    assert not result and "both benchmarks ran 2 threads: nothing changed at # >>>" in result.message


@pytest.mark.parametrize("settings, named", [
    (dict(onednn=False), "onednn True against False"),
    (dict(batch=64), "batch 32 against 64"),
    (dict(cpus=[0]), "cpus None against [0]"),
    (dict(framework="mxnet"), "framework torch against mxnet"),
])
def test_11_a_second_change_is_named(settings, named):
    result = check("11.1", [bench(2, BASE), bench(8, SLOWER, **settings)], "slower")
    assert not result and f"differ in more than their threads: {named}" in result.message


def test_11_too_few_passes_ask_for_more_steps():
    result = check("11.1", [bench(2, BASE[:3]), bench(8, SLOWER[:3])], "slower")
    assert not result and "3 timed passes a benchmark: too few to judge (at least 5" in result.message
    assert 'gc.sizes("11", bench=dict(batch=32, steps=10))' in result.message


@pytest.mark.parametrize("prediction", [None, "more", 1])
def test_11_a_missing_prediction_asks_for_one(prediction):
    result = check("11.1", [bench(2, BASE), bench(8, SLOWER)], prediction)
    assert not result and f"prediction={prediction!r}: write down, before you run" in result.message
    assert "'8 threads, oneDNN on' against '2 threads, oneDNN on'" in result.message


def test_11_more_threads_than_cores_slower_as_predicted_says_why():
    result = check("11.1", [bench(2, BASE), bench(8, SLOWER)], "slower")
    assert result.passed and "as you predicted (slower): '8 threads, oneDNN on' against" in result.message
    assert "×0.50, a slow-down" in result.message
    assert "8 threads take turns on 2 cores, and an OpenMP region ends only when" in result.message


def test_11_a_prediction_contradicted_on_a_quiet_machine_fails():
    result = check("11.1", [bench(2, BASE), bench(8, SLOWER)], "faster")
    assert not result and "you predicted faster, but '8 threads, oneDNN on' against" in result.message
    assert "beyond the passes' spread" in result.message


def test_11_a_contradiction_while_other_programs_ran_is_untested():
    result = check("11.1", [bench(2, BASE, other=1.0), bench(8, SLOWER)], "faster")
    assert result.passed and "your prediction, faster, is untested" in result.message
    assert "other programs kept 1.0 cores busy while '2 threads, oneDNN on' ran" in result.message


def test_11_without_a_reading_of_its_own_the_load_average_says_busy():
    busy = bench(2, BASE, other=None, load=3.5)
    result = check("11.1", [busy, bench(8, SLOWER, other=None)], "faster")
    assert result.passed and "the machine was busy (load average 3.5, 2 cores) before" in result.message
    quiet = bench(2, BASE, other=None, load=0.5)
    assert not check("11.1", [quiet, bench(8, SLOWER, other=None)], "faster")


def test_11_within_noise_any_prediction_stands_untested():
    result = check("11.1", [bench(2, BASE), bench(8, SAME)], "slower")
    assert result.passed and "cannot tell it from the same speed" in result.message
    assert "cost nothing beyond the passes' spread here" in result.message
    shown = check("11.1", [bench(2, BASE), bench(1, SAME)], "same")
    assert shown.passed and "as you predicted (same)" in shown.message
    assert "1 thread(s) did as well as 2 within the passes' spread" in shown.message


def test_11_fewer_threads_are_explained_by_what_they_did():
    slower = check("11.1", [bench(2, BASE), bench(1, SLOWER)], "slower")
    assert slower.passed and "1 thread(s) leave 1 of the 2 cores idle" in slower.message
    faster = [x * 2 for x in BASE]
    quiet = check("11.1", [bench(2, BASE), bench(1, faster)], "faster")
    assert quiet.passed and "cost more to synchronise than they add" in quiet.message
    crowded = check("11.1", [bench(2, BASE, other=0.9), bench(1, faster)], "faster")
    assert crowded.passed and "one sharing its core (with other programs, or as a hyperthread) holds up the rest" in crowded.message


def test_11_more_threads_faster_among_other_programs_is_no_setting_to_keep():
    result = check("11.1", [bench(2, SLOWER, other=1.0), bench(8, BASE)], "faster")
    assert result.passed and "won time slices from other programs" in result.message


def test_11_a_benchmark_records_what_other_programs_used_meanwhile(monkeypatch):
    monkeypatch.setattr(env, "hook", lambda *a, **k: {"images_per_s": 1.0, "step_images_per_s": [1.0]})
    out = env.bench("pytorch", 1)
    assert out["other_cores"] is None or out["other_cores"] >= 0
    before = {"wall": 0.0, "cpu_busy_s": 10.0, "process_cpu_s": 1.0, "children_cpu_s": 0.0}
    after = {"wall": 2.0, "cpu_busy_s": 14.0, "process_cpu_s": 1.5, "children_cpu_s": 1.5}
    assert env.other_cores(before, after) == pytest.approx(1.0)   # 4 s busy, 2 of them ours
    assert env.other_cores(before, {**after, "cpu_busy_s": None}) is None


# -- 12.1: the step timers' verdict after one change -------------------------------------------

def profiled(make_run, waits=(0.1, 0.6), change=None, engine="pytorch", **config):
    change = {"num_workers": 0} if change is None else change
    return [make_run("as profiled", data_wait_share=waits[0], engine=engine,
                     config={"num_workers": 1, **config}),
            make_run("changed", data_wait_share=waits[1], engine=engine,
                     config={"num_workers": 1, **config, **change})]


def set_blocks(run, shares):
    """Give the run's steady steps these data-wait shares, one a block of noise.BLOCKS."""
    steps = run.steps
    steady = steps.index[steps["timed"] == 1]
    total = steps.loc[steady, "data_wait_s"] + steps.loc[steady, "compute_s"]
    for i, share in enumerate(shares):
        part = steady[i * len(steady) // len(shares):(i + 1) * len(steady) // len(shares)]
        steps.loc[part, "data_wait_s"] = share * total[part]
        steps.loc[part, "compute_s"] = (1 - share) * total[part]
    return run


def test_12_needs_two_runs(make_run):
    result = check("12.1", profiled(make_run)[:1], "input-bound")
    assert not result and "1 run(s) so far; the exercise compares two runs: the run as profiled" \
        in result.message


def test_12_nothing_changed_or_two_changes_are_refused(make_run):
    same = check("12.1", profiled(make_run, change={}), "input-bound")
    assert not same and "'changed' ran as 'as profiled' did: nothing was changed" in same.message
    two = check("12.1", profiled(make_run, change={"num_workers": 0, "batch_size": 256}), "input-bound")
    assert not two and "differ in more than one thing: batch_size 128 against 256; num_workers" \
        in two.message


def test_12_too_few_steps_ask_for_more_images(make_run):
    result = check("12.1", profiled(make_run, train_size=1024), "input-bound")
    assert not result and "too few steady steps to judge the data wait" in result.message
    assert 'gc.sizes("12", train_size=...)' in result.message


@pytest.mark.parametrize("verdict", [None, "compute-bound", "INPUT-BOUND"])
def test_12_the_verdict_is_one_of_the_two(make_run, verdict):
    result = check("12.1", profiled(make_run), verdict)
    assert not result and f"verdict={verdict!r}: write down, before you run" in result.message
    assert "'input-bound', 'not input-bound'" in result.message


def test_12_a_verdict_the_blocks_show_passes_and_says_what_the_change_moved(make_run):
    result = check("12.1", profiled(make_run), "input-bound")
    assert result.passed and "as you predicted, INPUT-BOUND: 'changed' waited for data 60%" in result.message
    assert "'as profiled' 10%; input-bound from 25%" in result.message
    assert "The change (num_workers 1 against 0) moved the verdict from not input-bound to " \
        "input-bound" in result.message
    assert "torch.profiler's trace says it of its few profiled steps" in result.message


def test_12_a_verdict_the_blocks_contradict_fails(make_run):
    result = check("12.1", profiled(make_run), "not input-bound")
    assert not result and "you predicted not input-bound; the step timers say INPUT-BOUND, every " \
        "block" in result.message and "Where does the loading run" in result.message


def test_12_a_verdict_left_where_it_was_is_said_and_gluon_has_no_profiler(make_run):
    result = check("12.1", profiled(make_run, waits=(0.05, 0.1), engine="gluon"), "not input-bound")
    assert result.passed and "left the verdict not input-bound" in result.message
    assert "MXNet's pip build has no profiler to ask" in result.message


def test_12_blocks_on_both_sides_of_the_line_leave_either_verdict_untested(make_run):
    runs = profiled(make_run)
    set_blocks(runs[1], [0.15, 0.2, 0.3, 0.35, 0.2])
    for verdict in ("input-bound", "not input-bound"):
        result = check("12.1", runs, verdict)
        assert result.passed and "blocks of steps lie on both sides of the line" in result.message
        assert "Not contradicted, not shown" in result.message and "moved the verdict" not in result.message


# -- 13.1: the guard's cost ---------------------------------------------------------------------

def loops(make_run, rates, guards=(False, True), engine="pytorch", gpus=0, configs=None):
    """One run a loop, interleaved: (without, with) the guard by default."""
    configs = configs or [{}] * len(rates)
    return [make_run(f"guard {'on' if g else 'off'}", rate=rate, engine=engine, gpus=gpus,
                     notes={GUARD: g}, config={"num_workers": 0, **c})
            for rate, g, c in zip(rates, guards, configs)]


def shared(run, other_cores):
    run.meta["load"] = {"start": {"wall": 0.0, "cpu_busy_s": 0.0, "process_cpu_s": 0.0},
                        "end": {"wall": 10.0, "process_cpu_s": 10.0,
                                "cpu_busy_s": 10.0 * (1 + other_cores)}}
    return run


def test_13_needs_the_exercise_runs(make_run):
    assert "0 run(s) so far; the exercise compares two runs" in check("13.1", [], "same").message
    unnoted = [make_run("a"), make_run("b")]
    result = check("13.1", unnoted, "same")
    assert not result and "'a' does not say whether its loop guarded the loss (rec.note(loss_guard=...))" \
        in result.message


@pytest.mark.parametrize("guards, state", [((False, False), "off"), ((True, True), "on")])
def test_13_a_guard_not_switched_is_nothing_changed(make_run, guards, state):
    result = check("13.1", loops(make_run, (600, 300), guards=guards), "slower")
    assert not result and f"every run had the guard {state}: nothing was changed" in result.message


def test_13_a_second_change_is_named(make_run):
    runs = loops(make_run, (600, 300), configs=[{}, {"batch_size": 256}])
    result = check("13.1", runs, "slower")
    assert not result and "differ in more than the guard: batch_size 128 against 256" in result.message


def test_13_too_few_steps_ask_for_more_images(make_run):
    runs = loops(make_run, (600, 300), configs=[{"train_size": 1024}] * 2)
    result = check("13.1", runs, "slower")
    assert not result and "'guard off' has 16 steady steps: too few to judge" in result.message


@pytest.mark.parametrize("prediction", [None, "more", 2])
def test_13_a_missing_prediction_asks_for_one(make_run, prediction):
    result = check("13.1", loops(make_run, (600, 300)), prediction)
    assert not result and f"prediction={prediction!r}: write down, before you run" in result.message


def test_13_a_cost_shown_on_gluons_cpu_says_the_engine_waits(make_run):
    result = check("13.1", loops(make_run, (600, 300), engine="gluon"), "slower")
    assert result.passed and "as you predicted (slower): 'guard on' against 'guard off'" in result.message
    assert "Each check stops the host until MXNet's engine threads have finished" in result.message
    assert "a sync, as .item() is, hidden in a condition." in result.message


def test_13_a_cost_on_a_gpu_says_the_device_waits(make_run):
    result = check("13.1", loops(make_run, (600, 300), gpus=1), "slower")
    assert result.passed and "Each check stops the host until the device has finished" in result.message
    assert "set_sync_debug_mode('warn') names its line" in result.message


def test_13_a_prediction_the_runs_contradict_fails(make_run):
    result = check("13.1", loops(make_run, (600, 300)), "same")
    assert not result and "you predicted same, but 'guard on' against 'guard off' is ×0.49, a slow-down" \
        in result.message


def test_13_no_cost_is_explained_by_device_and_track(make_run):
    cpu = check("13.1", loops(make_run, (600, 601)), "same")
    assert cpu.passed and "as you predicted (same)" in cpu.message
    assert "so the `if` on torch.isfinite(loss) has nothing to wait for" in cpu.message
    gluon = check("13.1", loops(make_run, (600, 601), engine="gluon"), "slower")
    assert gluon.passed and "cannot tell it from the same speed" in gluon.message
    assert "the host and MXNet's engine share the same cores" in gluon.message
    gpu = check("13.1", loops(make_run, (600, 601), gpus=1), "same")
    assert gpu.passed and "No cost beyond noise here. The device finished each step" in gpu.message
    assert "the checks cost" in gpu.message


def test_13_single_runs_parted_by_the_machines_load_are_untested(make_run):
    runs = loops(make_run, (600, 300))
    shared(runs[0], 0.0), shared(runs[1], 3.0)
    result = check("13.1", runs, "same")
    assert result.passed and "your prediction, same, is untested" in result.message


def test_13_repeats_are_judged_on_all_their_blocks_not_on_two_runs_a_side(make_run):
    runs = loops(make_run, (600, 620, 610, 630), guards=(False, True, False, True))
    plain, guarded = runs[0::2], runs[1::2]
    assert noise.compare(plain, guarded).kind == noise.Kind.FASTER   # two runs a side: parted
    result = check("13.1", runs, "same")
    assert result.passed and "within noise" in result.message and "over 10 / 10 blocks of steady " \
        "steps over 2 / 2 runs" in result.message
    assert check("13.1", loops(make_run, (600, 300, 610, 290), guards=(False, True, False, True)),
                 "slower").passed
