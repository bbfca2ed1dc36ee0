"""Exercise 08.1 on fake runs: one rung taken out of the ladder's top rung, every way its
check says "not yet", and every way it passes, beside a recorded ladder or none."""
import sys
from pathlib import Path

import pytest

from gpu_course.lessons import l08_summary, sizes
from gpu_course.lessons.exercises import check
from gpu_course.lessons.exercises.ex08 import rung_settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fake_runs  # noqa: E402

# the smoke ladder's top rung on a CPU (naive, workers, data-format), as the records keep it
TOP = {"model": "tiny", "dataset": "folder", "num_workers": 2, "persistent_workers": True,
       "data_format": "memory"}
LOOSE = {**TOP, "data_format": "loose"}


def pair(make_run, rates=(900, 500), mine=LOOSE, top=TOP, **options):
    return [make_run("exercise: data-format", rate=rates[0], engine="pytorch", config=top, **options),
            make_run("exercise: one rung out", rate=rates[1], engine="pytorch", config=mine,
                     **options)]


def ladder(folder, rates, train_size=50_000):
    """A recorded CPU ladder of the PyTorch track: naive, workers, data-format."""
    configs = [{"model": "tiny", "dataset": "folder", "num_workers": 1, "data_format": "loose"},
               {**LOOSE}, {**TOP}]
    for i, (name, rate, config) in enumerate(zip(("naive", "workers", "data-format"), rates, configs)):
        fake_runs.write_run(folder / "ladder-pytorch-20261122-090000", name, engine="pytorch",
                            num_gpus=0, machine_gpus=0, samples_per_sec=rate, index=i, seed=i,
                            config={**config, "train_size": train_size})


@pytest.fixture(autouse=True)
def _cpu_with_bfloat16_instructions(monkeypatch):
    """The ladder these checks read is this CPU's: one with bfloat16 instructions (faked),
    whose PyTorch ladder has the bfloat16 rung."""
    from gpu_course.env import cpu
    monkeypatch.delenv(cpu.ISA_CAP, raising=False)
    monkeypatch.setenv(cpu.FAKE, "+avx512_bf16")


def test_on_a_cpu_without_bfloat16_instructions_the_rung_is_not_the_ladders(monkeypatch,
                                                                            make_run):
    from gpu_course.env import cpu
    monkeypatch.setenv(cpu.FAKE, "-avx512,-amx")
    assert "bfloat16" not in rung_settings("pytorch", gpu=False)
    assert "bfloat16" in rung_settings("pytorch", gpu=True)
    result = check("08.1", pair(make_run, mine={**TOP, "dtype": "bfloat16"}), "faster")
    assert not result and "differs from 'exercise: data-format' in dtype float32 against " \
        "bfloat16: not one rung's settings" in result.message


def test_each_rung_changes_the_settings_the_ladder_gives_it():
    cpu, gpu = rung_settings("pytorch", gpu=False), rung_settings("pytorch", gpu=True)
    assert cpu["workers"] == {"num_workers": 1, "persistent_workers": False}
    assert cpu["data-format"] == {"data_format": "loose"} and "data-format" not in gpu
    assert set(gpu["workers"]) == {"num_workers", "pin_memory", "persistent_workers"}
    assert "threads" not in cpu and "naive" not in cpu     # not rungs to take out
    assert set(rung_settings("gluon", gpu=False)["hybridize"]) == {"graph"}


def test_the_exercise_ladder_is_the_smoke_ladder_on_the_exercise_images(monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_COURSE_DATA", str(tmp_path))
    made = []
    monkeypatch.setattr("gpu_course.ladder.ensure_photos", made.append)
    rungs = l08_summary.exercise_ladder("pytorch", sizes("08", smoke=True), gpus=0)
    assert list(rungs) == ["naive", "workers", "data-format"]
    top = rungs["data-format"]
    assert (top.train_size, top.batch_size, top.warmup_steps, top.epochs, top.threads) == \
        (1024, 32, 6, 1, 1)
    assert top.name == "exercise: data-format" and top.data_format == "memory"
    assert [cfg.data_dir for cfg in made] == [rungs["naive"].data_dir]   # the photos it reads
    assert l08_summary.exercise_ladder("gluon", sizes("08", smoke=True), gpus=0)[
        "data-format"].threads is None          # MXNet fixes its threads when it is imported
    full = l08_summary.exercise_ladder("gluon", sizes("08", smoke=False), gpus=2)
    assert full["naive"].num_gpus == 1 and full["naive"].epochs == 1 and "all-gpus" not in full


def test_no_second_run_asks_for_the_rung_taken_out(make_run):
    result = check("08.1", pair(make_run)[:1], "slower")
    assert not result and "1 run(s) so far; the exercise compares two runs: the ladder's top " \
        "rung and the same with one rung taken out" in result.message


def test_nothing_taken_out_is_named(make_run):
    result = check("08.1", pair(make_run, mine=TOP), "same")
    assert not result and "runs as 'exercise: data-format' does: set back one rung at # >>>" in result.message


@pytest.mark.parametrize("mine, says", [
    ({**LOOSE, "model": "resnet20"}, "model tiny against resnet20"),
    ({**LOOSE, "graph": "hybrid"}, "data_format memory against loose; graph eager against compile"),
])
def test_more_than_one_rung_is_refused_with_each_rungs_settings(make_run, mine, says):
    result = check("08.1", pair(make_run, mine=mine), "slower")
    assert not result and says in result.message and "not one rung's settings" in result.message
    assert "rungs: workers: num_workers, persistent_workers; data-format: " \
        "data_format; compile: graph" in result.message


def test_a_rung_the_top_rung_does_not_have_is_named(make_run):
    result = check("08.1", pair(make_run, mine={**TOP, "dtype": "bfloat16"}), "faster")
    assert not result and "does not have the 'bfloat16' rung on (dtype 'float32'" \
        in result.message


def test_too_few_steady_steps_ask_for_more_images(make_run):
    runs = pair(make_run, top={**TOP, "train_size": 1024}, mine={**LOOSE, "train_size": 1024})
    result = check("08.1", runs, "slower")
    assert not result and 'gc.sizes("08", exercise_size=...)' in result.message


@pytest.mark.parametrize("prediction", [None, "less", 2])
def test_a_missing_prediction_asks_for_one(make_run, prediction):
    result = check("08.1", pair(make_run), prediction)
    assert not result and f"prediction={prediction!r}: write down, before you run" in result.message


def test_a_prediction_the_runs_contradict_fails(make_run):
    result = check("08.1", pair(make_run), "faster")
    assert not result and "you predicted faster, but 'exercise: one rung out' against " \
        "'exercise: data-format' is ×0." in result.message and "beyond the runs' noise" in result.message


def test_a_prediction_borne_out_without_a_ladder_beside_says_where_to_look(make_run):
    result = check("08.1", pair(make_run), "slower")
    assert result.passed and "as you predicted (slower)" in result.message
    assert "You took out 'data-format': data_format memory against loose." in result.message
    assert "No ladder recorded beside these runs has a 'data-format' rung" in result.message


def test_a_prediction_within_noise_passes_untested(make_run):
    result = check("08.1", pair(make_run, rates=(600, 610)), "slower")
    assert result.passed and "not contradicted, not shown" in result.message


def test_a_rung_worth_as_much_on_top_as_in_its_place(make_run, tmp_path):
    ladder(tmp_path, (300, 400, 1000))
    result = check("08.1", pair(make_run), "slower")
    assert result.passed and "In the ladder, 'data-format' against the rung under it, " \
        "'workers': ×2." in result.message and "taken out of the top rung it leaves ×0." \
        in result.message
    assert "It is worth on top of the ladder what it was worth in its place" in result.message


def test_a_rung_whose_worth_changed_on_top_says_so(make_run, tmp_path):
    ladder(tmp_path, (300, 400, 1000))
    result = check("08.1", pair(make_run, rates=(600, 610)), "same")
    assert result.passed and "Its worth changed with the rungs around it" in result.message


def test_a_ladder_too_short_to_rule_is_the_row_to_trust_less(make_run, tmp_path):
    ladder(tmp_path, (300, 400, 1000), train_size=512)
    result = check("08.1", pair(make_run), "slower")
    assert result.passed and "The ladder's own runs cannot rule on the rung; your two can: " \
        "trust their verdict over the table's row." in result.message


def test_a_rung_worth_nothing_here_in_either_place_says_so(make_run, tmp_path):
    ladder(tmp_path, (300, 600, 610))
    result = check("08.1", pair(make_run, rates=(600, 610)), "same")
    assert result.passed and "Neither in its place nor on top of the ladder did it change " \
        "samples/s beyond noise" in result.message


def test_runs_on_a_machine_shared_for_one_of_them_leave_the_row_untested(make_run, tmp_path):
    ladder(tmp_path, (300, 400, 1000))
    runs = pair(make_run)
    for run, other_cores in zip(runs, (0, 3)):   # the process and its 2 workers, and others
        run.meta["load"] = {"start": {"wall": 0.0, "cpu_busy_s": 0.0, "process_cpu_s": 0.0},
                            "end": {"wall": 10.0, "process_cpu_s": 10.0,
                                    "cpu_busy_s": 10.0 * (3 + other_cores)}}
    result = check("08.1", runs, "faster")
    assert result.passed and "your prediction, faster, is untested" in result.message
    assert "Your two runs cannot rule on it yet: the table's row stands untested." in result.message


def test_part_of_a_rung_is_judged_and_named(make_run):
    top = {**TOP, "data_on_gpu": True, "num_workers": 0, "persistent_workers": False}
    result = check("08.1", pair(make_run, top=top, mine={**top, "data_on_gpu": False},
                                rates=(1800, 600)), "slower")
    assert result.passed and "You took out 'data-on-gpu' (part of it: the rung also sets " \
        "num_workers, persistent_workers): data_on_gpu True against False." in result.message
