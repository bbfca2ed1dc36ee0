"""Lesson 08's summary on fake ladders: the newest ladder folder, one coherent set; the
columns for what differs; a CPU ladder, a GPU ladder with GPM, repeats, and the reference
beside this machine's ladder."""
import re
import sys
from pathlib import Path

import pytest

from gpu_course.lessons import l08_summary as l08
from gpu_course.lessons import sizes
from gpu_course.lessons import talk
from gpu_course.lessons.l08_summary import LESSON
from gpu_course.rungs import RungName
from gpu_course.show import closing
from declared import paragraphs
from gpu_course.show.findings import Outcome, Where

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fake_runs  # noqa: E402

CPU_RUNGS = [("naive", 300, {"num_workers": 1}),
             ("workers", 600, {"num_workers": 2}),
             ("hybridize", 900, {"num_workers": 2, "graph": "static"}),
             ("lr-schedule", 850, {"num_workers": 2, "graph": "static", "lr_scheduler": "cosine"})]
GPU_RUNGS = [("naive", 3000, {"num_workers": 1}),
             ("workers", 9000, {"num_workers": 13}),
             ("lr-schedule", 40000, {"num_workers": 13, "lr_scheduler": "onecycle"}),
             ("data-on-gpu", 90000, {"num_workers": 0, "lr_scheduler": "onecycle",
                                     "data_on_gpu": True})]


def ladder(make_run, rungs, gpus=0, engine="gluon", **options):
    return [make_run(name, rate=rate, gpus=gpus, engine=engine, config={"model": "tiny", **cfg},
                     **options) for name, rate, cfg in rungs]


def test_the_newest_ladder_of_the_track_is_read_and_repeats_are_grouped(tmp_path):
    old, new = tmp_path / "ladder-gluon-20261120-090000", tmp_path / "ladder-gluon-20261122-090000"
    for i, name in enumerate(("naive", "workers")):
        fake_runs.write_run(old, name, engine="gluon", num_gpus=0, index=i)
    for i, name in enumerate(("naive", "workers", "naive", "workers")):
        fake_runs.write_run(new, name, engine="gluon", num_gpus=0, index=i, seed=i)
    fake_runs.write_run(tmp_path / "ladder-pytorch-20261123-090000", "naive", engine="pytorch",
                        num_gpus=0)
    fake_runs.write_run(tmp_path, "naive", engine="gluon", num_gpus=0, index=9)  # a lesson's run
    runs = l08.latest_ladder("gluon", tmp_path)
    assert [len(g) for g in runs] == [2, 2] and all(r.path.parent == new for g in runs for r in g)
    assert [r.name for r in l08.latest_ladder("pytorch", tmp_path)] == ["naive"]
    assert l08.latest_ladder("gluon", tmp_path / "nowhere") == []


def test_the_table_shows_a_column_for_every_setting_that_differs(make_run):
    runs = ladder(make_run, CPU_RUNGS)
    frame = l08.table(runs)
    assert {"num_workers", "graph", "lr_scheduler"} <= set(frame.columns)
    assert "model" not in frame.columns and "batch_size" not in frame.columns
    assert list(frame[l08.TALK_COLUMN]) == ["×1.00", "×2.17", "×3.08", "–"]
    mixed = runs + [make_run("float16", rate=4000, config={"model": "resnet20", "train_size": 512})]
    assert {"model", "train_size"} <= set(l08.table(mixed).columns)   # a mix says so


MEANS = LESSON.compares[0].means
NOTICE = {"device_notice": "No GPU found: running on the CPU with 1 device context instead of "
                           "1 GPU."}
# a ladder, where it ran -> the paragraph the declaration gives its fastest rung against naive
OUTCOMES = [
    (CPU_RUNGS, dict(cpu_count=2, notes=NOTICE), MEANS[Outcome.OPPOSITE][Where.CPU]),
    ([(n, 300 + i, c) for i, (n, _, c) in enumerate(CPU_RUNGS)], {}, LESSON.cpu),
    (GPU_RUNGS, dict(gpus=1, engine="pytorch"), MEANS[Outcome.EXPECTED][Where.GPU]),
    ([(n, 3000 + 60 * i, c) for i, (n, _, c) in enumerate(GPU_RUNGS[:2])], dict(gpus=1),
     MEANS[Outcome.NONE]),
    (GPU_RUNGS[:2], dict(gpus=1, gpm=False), LESSON.about[0].missing[Where.GPU]),
    (GPU_RUNGS[:2], dict(gpus=1), LESSON.about[0].present[Where.GPU]),
]


@pytest.mark.parametrize("rungs, where, paragraph", OUTCOMES)
def test_each_ladder_says_the_paragraph_the_lesson_declares(make_run, rungs, where, paragraph):
    say = l08.conclude(ladder(make_run, rungs, **where))
    assert paragraph in say.text and say.check() == []
    assert (l08.LESSON.cpu in say.text) == ("gpus" not in where)
    assert "Measured on " in say.text and "(from the run records)." in say.text


def test_a_cpu_ladder_against_the_talk_and_what_ran_otherwise(make_run):
    runs = ladder(make_run, CPU_RUNGS, cpu_count=2, notes=NOTICE)
    say = l08.conclude(runs)
    assert re.search(r"'hybridize' against 'naive': ×\d\.\d\d, faster", say.text)
    assert "The talk, on V100s (ResNet on CIFAR-10): 'hybridize' against 'naive' ×3.1." \
        in say.text
    assert "ran otherwise than asked (naive, hybridize): No GPU found" in say.text
    assert "Measured on CPU only: Intel(R) Xeon(R) CPU @ 2.20GHz, 2 cores" in say.text
    assert "The fastest rung, 'hybridize'" in l08.caption(runs)   # the ladder's own conclusion


def test_a_gpu_ladder_says_what_the_data_on_the_gpu_did(make_run):
    runs = ladder(make_run, GPU_RUNGS, gpus=1, engine="pytorch", data_wait_share=0.2)
    say = l08.conclude(runs)
    assert re.search(r"'data-on-gpu' against 'lr-schedule': ×2\.\d\d, faster", say.text)
    assert l08.DATA_ON_GPU.compares[0].means[Outcome.EXPECTED][Where.GPU] in say.text
    assert "Share of each step spent waiting for data: 'lr-schedule' " in say.text
    assert say.check() == []


def test_a_ladder_walked_twice_is_judged_on_its_repeats(make_run):
    groups = [[make_run(name, rate=rate * f, config=cfg, seed=i) for i, f in enumerate((1.0, 1.1))]
              for name, rate, cfg in CPU_RUNGS[:2]]
    say = l08.conclude(groups)
    assert "'workers' against 'naive': ×" in say.text and say.check() == []
    assert list(l08.table(groups)["rung"]) == ["naive", "workers"]   # a row a rung


def test_the_reference_is_set_beside_this_ladder_with_its_differences_named(make_run):
    mine = ladder(make_run, CPU_RUNGS)
    reference = [make_run(name, rate=rate, gpus=1, engine="pytorch", epochs=3,
                          config={"model": "resnet20", "epochs": 30 if name == "data-on-gpu" else 3,
                                  **cfg}) for name, rate, cfg in GPU_RUNGS]
    frame = l08.beside_table(l08._rungs(reference), mine)
    assert frame.set_index("what").loc["model"].tolist() == ["resnet20", "tiny"]
    assert frame.set_index("what").loc["epochs"].tolist() == ["3–30", "3"]
    assert frame.set_index("what").loc["machine", "the reference"] == \
        "1 × NVIDIA H100 80GB HBM3 (driver 550.54.15)"
    say = l08.conclude(reference, beside=mine)
    assert l08.BESIDE.text[0] in say.text and say.check() == []
    # its fastest rung trained longer than naive: the fastest that ran as naive did is judged
    assert "'lr-schedule' against 'naive': ×" in say.text and "'data-on-gpu' against 'naive'" \
        not in say.text


def test_the_caption_is_the_ladders_own_conclusion_and_none_for_the_reference():
    from gpu_course.show import report
    reference = l08.latest_ladder("pytorch", report.REFERENCE_ROOT / "pytorch-h200")
    assert l08.caption(reference) is None


def test_nothing_to_summarise_is_refused_and_sizes_are_quick_in_smoke_mode():
    with pytest.raises(ValueError, match="no ladder to summarise"):
        l08.conclude([])
    assert sizes("08", smoke=True).quick and not sizes("08", smoke=False).quick
    assert sizes("08", smoke=True).compile_backend == "aot_eager"


def test_the_anatomy_says_what_holds_each_rung_and_why_fusion_cannot_pay_on_a_host_bound_step(capsys):
    """The committed H200 ladder (real records): every batch-64 rung is host-bound, and
    the lines say why compile and bfloat16 could not pay there."""
    from gpu_course.lessons import l08_summary
    from gpu_course.show import report
    runs = l08_summary.latest_ladder("pytorch", report.REFERENCE_ROOT / "pytorch-h200")
    say = l08_summary.anatomy(runs)
    out = capsys.readouterr().out
    assert "held by" in out and "× faster to target" in out
    assert "GPU-bound: 'cuda-graphs'." in say.text
    assert "(next_rung names it): no: 'naive', 'compile', 'large-batch'" in say.text
    frame = l08_summary.anatomy_table(runs).set_index("rung")["shorter GPU part, host-bound"]
    assert list(frame[frame == "yes"].index) == ["compile", "bfloat16"]
    assert l08_summary.ANATOMY.marks[1].text in say.text
    assert say.check() == []


def test_the_anatomy_on_a_cpu_ladder_says_cpu_bound_and_no_fusion_advice(tmp_path, capsys):
    import fake_runs
    from gpu_course.lessons import l08_summary
    runs = [fake_runs.load(p) for p in fake_runs.cpu_ladder(tmp_path)]
    say = l08_summary.anatomy(runs)
    assert "make the GPU's part" not in say.text
    assert "-bound:" in say.text and "GPU-bound:" not in say.text
    at_chance = [fake_runs.load(p) for p in fake_runs.cpu_ladder(tmp_path / "chance")]
    for run in at_chance:   # learned nothing: no accuracy to race to
        run.epochs["val_acc"] = 0.1
    capsys.readouterr()
    say = l08_summary.anatomy(at_chance)
    assert "time-to-target columns are left out" in say.text
    assert "to target" not in capsys.readouterr().out


# -- two regimes: a step the host holds beside one the GPU holds --------------------------
LIGHT = [("naive", 7000, 30, {}),
         ("compile", 21000, 45, {"graph": "static"}),
         ("bfloat16", 21200, 30, {"graph": "static", "dtype": "bfloat16"}),
         ("large-batch", 70000, 80, {"graph": "static", "dtype": "bfloat16", "batch_size": 512})]
HEAVY = [("naive", 1000, 97, {}),
         ("compile", 1010, 97, {"graph": "static"}),
         ("bfloat16", 2600, 97, {"graph": "static", "dtype": "bfloat16"}),
         ("large-batch", 2620, 98, {"graph": "static", "dtype": "bfloat16", "batch_size": 512})]


def regime(make_run, rungs, model):
    return [make_run(name, rate=rate, gpus=1, engine="pytorch", busy=busy, data_wait_share=0.01,
                     config={"model": model, "num_workers": 13, **cfg})
            for name, rate, busy, cfg in rungs]


def test_the_two_regimes_say_which_fix_paid_on_which_bottleneck(make_run, capsys):
    light, heavy = regime(make_run, LIGHT, "resnet20"), regime(make_run, HEAVY, "wrn16_10")
    frame = l08.regimes_table(light, heavy)
    assert list(frame["rung"]) == ["compile", "bfloat16", "large-batch"]
    assert list(frame["held by (resnet20)"]) == ["host-bound"] * 3
    assert list(frame["held by (wrn16_10)"]) == ["GPU-bound"] * 3
    assert list(frame["verdict (resnet20)"]) == ["faster", "within noise", "faster"]
    assert list(frame["verdict (wrn16_10)"]) == ["within noise", "faster", "within noise"]
    say = l08.regimes(light, heavy)
    assert say.check() == []
    text = say.text
    gain = lambda row, model: f"{frame[f'gain ({model})'][row]:.3g}"   # noqa: E731
    assert f"On resnet20, gains beyond noise: 'compile' {gain(0, 'resnet20')}, 'large-batch' " \
           f"{gain(2, 'resnet20')}." in text
    assert 2.7 < frame["gain (resnet20)"][0] < 3.3 and 2.3 < frame["gain (wrn16_10)"][1] < 2.9
    assert f"On wrn16_10, gains beyond noise: 'bfloat16' {gain(1, 'wrn16_10')}." in text
    assert "Where each rung paid beyond noise: resnet20 only: 'compile', 'large-batch'; " \
           "wrn16_10 only: 'bfloat16'." in text
    # compile (graph) and the batch on a host-bound step, bfloat16 on a GPU-bound one
    assert "(anatomy.FIXES): yes: 'compile', 'large-batch'." in text
    assert "(anatomy.FIXES): yes: 'bfloat16'." in text and ": no: " not in text


def test_without_a_ladder_of_the_gpu_bound_regime_the_lesson_says_how_to_record_one(
        make_run, capsys):
    said = l08.regimes(regime(make_run, LIGHT, "resnet20"), [])
    out = capsys.readouterr().out
    assert said.text == out.strip() and said.check() == []
    assert "`gpu-course ladder --model wrn16_10` on a GPU records one." in out
    assert "tools/" not in out and "tools." not in out   # a command the attendee can run


def test_a_gain_from_a_rung_not_aimed_at_what_held_the_step_is_named(make_run):
    """bfloat16 paying on a step the host held: the lesson's thesis is a measurement, so
    a ladder that contradicts it says so."""
    odd = [LIGHT[0], LIGHT[1], ("bfloat16", 60000, 30, LIGHT[2][3])]
    say = l08.regimes(regime(make_run, odd, "resnet20"), regime(make_run, HEAVY[:3], "wrn16_10"))
    assert "On resnet20, whether each gain beyond noise came from a rung aimed at what held the " \
        "step before it (anatomy.FIXES): yes: 'compile'; no: 'bfloat16'." in say.text


def test_the_lessons_paragraphs_carry_no_number():
    for declared in (LESSON, l08.DATA_ON_GPU, l08.BESIDE, l08.ANATOMY, l08.REGIMES):
        assert all(not closing.measurements(p) for p in paragraphs(declared))


def test_the_talk_s_figures_are_keyed_by_the_ladder_s_rungs_in_both_tracks_names():
    assert all(isinstance(rung, RungName) for rung in (*talk.LADDER, *talk.SCALING))
    assert talk.LADDER[RungName.COMPILE] == talk.LADDER[RungName.HYBRIDIZE] and \
        talk.LADDER[RungName.BFLOAT16] == talk.LADDER[RungName.FLOAT16]
    assert talk.LADDER["all-gpus"] == talk.SCALING[RungName.LARGE_BATCH][1]   # a record's word
