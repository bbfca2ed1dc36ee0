"""The findings engine on fake runs: each template and each generic caveat once, on a
made-up lesson declared the way a lesson module declares one."""
import pytest

import fake_runs

from gpu_course.analyse import anatomy, noise
from gpu_course.show import closing
from gpu_course.show.findings import (Column, Compare, Expect, Lesson, Limit, Mark, Note,
                                      Outcome, Quote, Reading, Said, Where, judge, outcome,
                                      paragraphs, read)

MEANS = {Outcome.EXPECTED: "EXPECTED-PARAGRAPH", Outcome.NONE: "NONE-PARAGRAPH",
         Outcome.OPPOSITE: "OPPOSITE-PARAGRAPH", Outcome.CANNOT_JUDGE: "CANNOT-PARAGRAPH"}
LESSON = Lesson(compares=(Compare(varies=("batch_size",), means=MEANS),),
                quotes=(Quote("batch 640", 17_000, "{:,} samples/s"),), hardware="a V100",
                cpu={"gluon": "GLUON-CPU", Where.CPU: "ANY-CPU"})


def pair(make_run, rate, gpus=1, base=600.0, config=None, **options):
    return [make_run("small", rate=base, gpus=gpus, config={"batch_size": 64, **(config or {})},
                     **options),
            make_run("large", rate=rate, gpus=gpus, config={"batch_size": 512, **(config or {})},
                     **options)]


@pytest.mark.parametrize("rate, expect, found", [
    (1800, Expect.FASTER, Outcome.EXPECTED), (600, Expect.FASTER, Outcome.NONE),
    (200, Expect.FASTER, Outcome.OPPOSITE), (600, Expect.SAME, Outcome.EXPECTED),
    (1800, Expect.SAME, Outcome.OPPOSITE), (200, Expect.SLOWER, Outcome.EXPECTED)])
def test_each_verdict_maps_to_the_outcome_the_expectation_gives_it(make_run, rate, expect, found):
    a, b = pair(make_run, rate)
    assert outcome(noise.compare(a, b, varies=("batch_size",)), expect) is found


def test_a_gpu_verdict_says_its_outcome_paragraph_once_and_the_talk_with_its_source(make_run):
    runs = pair(make_run, 1800) + [make_run("large", rate=1850, gpus=1, config={"batch_size": 512})]
    say = judge(LESSON, runs)
    assert "'large' against 'small': ×" in say.text and "faster" in say.text
    assert say.text.count("EXPECTED-PARAGRAPH") == 1
    assert "The talk, on a V100: batch 640 17,000 samples/s." in say.text
    assert "CPU" not in say.text and say.check() == []


@pytest.mark.parametrize("rate, paragraph", [(1800, "OPPOSITE-PARAGRAPH"),
                                             (600, "EXPECTED-PARAGRAPH")])
def test_on_a_cpu_the_lesson_expects_what_it_declares_for_a_cpu(make_run, rate, paragraph):
    say = judge(LESSON, pair(make_run, rate, gpus=0))
    assert paragraph in say.text and "GLUON-CPU" in say.text and "ANY-CPU" not in say.text
    pytorch = judge(LESSON, pair(make_run, rate, gpus=0, engine="pytorch"))
    assert "ANY-CPU" in pytorch.text


def test_too_few_steady_steps_is_cannot_judge_and_never_none(make_run):
    runs = pair(make_run, 600, epochs=2, config={"train_size": 6_144})   # 12 steady steps at 512
    say = judge(LESSON, runs)
    assert "too few steps to judge" in say.text
    assert "CANNOT-PARAGRAPH" in say.text and "NONE-PARAGRAPH" not in say.text


def test_a_setting_that_did_not_run_as_asked_is_said_and_identical_jobs_are_not_the_change(
        make_run):
    lesson = Lesson(compares=(Compare(varies=("dtype",), means=MEANS),))
    base = make_run("float32", config={"dtype": "float32"})
    ran32 = make_run("float16", config={"dtype": "float32"})
    ran32.meta["downgrades"] = [{"field": "dtype", "requested": "float16", "ran": "float32",
                                 "why": "float16 needs a GPU here."}]
    say = judge(lesson, [base, ran32])
    assert "'float16' asked for dtype float16 and ran float32: float16 needs a GPU here." in say.text
    assert "two identical jobs" in say.text and "PARAGRAPH" not in say.text


def test_runs_that_differ_in_what_no_comparison_names_get_no_verdict(make_run):
    runs = [make_run("a", config={"batch_size": 64}),
            make_run("b", config={"batch_size": 512, "model": "resnet56"})]
    say = judge(LESSON, runs)
    assert "'b' differs from 'a' in batch_size, model, which this lesson does not compare" in say.text
    assert "PARAGRAPH" not in say.text


def test_a_machine_shared_for_one_run_only_gives_no_verdict(make_run):
    a, b = pair(make_run, 1800)
    fake_runs.busy(a, other_cores=0)
    fake_runs.busy(b, other_cores=8)
    say = judge(LESSON, [a, b])
    assert "no verdict: the runs also differ in machine load" in say.text
    assert "CANNOT-PARAGRAPH" in say.text and "EXPECTED-PARAGRAPH" not in say.text


def test_a_baseline_that_waited_for_its_data_is_said_once(make_run):
    runs = pair(make_run, 1800, data_wait_share=0.8)
    say = judge(LESSON, runs)
    assert say.text.count("waited for its data") == 1 and "lessons 02 and 09" in say.text


def test_what_held_the_baseline_back_columns_notes_and_a_group_ranking(make_run):
    lesson = Lesson(compares=(Compare(varies=("graph",), means=MEANS),), group_by="model",
                    rank_by="network.parameters",
                    rank={noise.Order.HIGHER: "SMALL-GAINED-MORE"},
                    bound={anatomy.Bound.HOST: "HOST-PARAGRAPH"},
                    columns={"samples_per_sec": "Samples/s"},
                    notes=(Note("compile_backend", ("aot_eager",), "TRACED-ONLY", judged=False),))
    runs = []
    for model, size, rate in (("tiny", 1_000, 3000), ("resnet56", 100_000, 700)):
        for graph, r in (("eager", 600), ("hybrid", rate)):
            runs.append(make_run(f"{model} {graph}", rate=r, gpus=1, busy=30, data_wait_share=0,
                                 config={"model": model, "graph": graph},
                                 ran={"network": {"parameters": size}}))
    say = judge(lesson, runs)
    assert "tiny gained more than resnet56, beyond both ranges." in say.text
    assert "SMALL-GAINED-MORE" in say.text and "HOST-PARAGRAPH" in say.text
    assert "Samples/s: 'tiny eager' 6" in say.text and "TRACED-ONLY" not in say.text
    runs[1].meta["ran"]["compile_backend"] = "aot_eager"
    traced = judge(lesson, runs)
    assert "TRACED-ONLY" in traced.text
    assert "SMALL-GAINED-MORE" not in traced.text and "EXPECTED-PARAGRAPH" not in traced.text


def test_no_runs_says_the_lessons_empty_paragraph(make_run):
    assert judge(Lesson(compares=(), empty="NOTHING-RAN"), []).text == "NOTHING-RAN"


def test_paragraphs_lists_every_declared_text_and_they_carry_no_number():
    texts = paragraphs(LESSON)
    assert "EXPECTED-PARAGRAPH" in texts and "GLUON-CPU" in texts
    assert all(not closing.measurements(t) for t in texts)


def test_a_setting_recorded_in_the_notes_is_the_difference_a_comparison_names(make_run):
    """A job's workers live in its notes, not its config: without them the two runs are
    two identical jobs; named by the comparison, they get a verdict."""
    runs = [make_run(f"workers={n}", rate=r, gpus=1, notes={"workers": n})
            for n, r in ((1, 600), (2, 1150))]
    say = judge(Lesson(compares=(Compare(varies=("workers",), means=MEANS),)), runs)
    assert "'workers=2' against 'workers=1': ×" in say.text and "identical" not in say.text
    assert "identical jobs" in judge(LESSON, runs).text


@pytest.mark.parametrize("rate, said", [(1150, ()), (700, ("LOW",)), (1800, ("HIGH",))])
def test_a_limit_names_the_first_judged_variant_beyond_its_bar(make_run, rate, said):
    lesson = Lesson(compares=(Compare(varies=("batch_size",), means=MEANS),),
                    limits=(Limit("speedup", 2.5, "HIGH", above=True, words="speed-up"),
                            Limit("speedup", 1.5, {Where.GPU: "LOW"}, fmt="{:.2f}",
                                  words="speed-up"),
                            Limit("speedup", 1.5, {Where.CPU: "CPU-LOW"}, where=Where.CPU)))
    say = judge(lesson, pair(make_run, rate) + [make_run("larger", rate=rate, gpus=1,
                                                         config={"batch_size": 1024})])
    for text in ("HIGH", "LOW"):
        assert say.text.count(f": {text}") == (text in said)   # once, for 'large' alone
    assert "CPU-LOW" not in say.text and say.check() == []
    if said == ("LOW",):
        assert "'large': speed-up 1.15, below 1.50: LOW" in say.text


def test_a_reading_says_a_tables_paragraphs_cells_marks_bars_and_quotes():
    import pandas as pd
    frame = pd.DataFrame({"size": ["4 KiB", "1 MiB"], "GB/s": [0.015, 0.84],
                          "model (%)": [float("nan"), 93.0], "kind": ["small", "large"]})
    reading = Reading(key="size", text=("ANY", {Where.CPU: "CPU-ONLY"}, {"gluon": "GLUON"}),
                      columns={"model (%)": "Model"}, marks=(Mark("kind", ("small",), "SMALL"),
                                                             Mark("kind", ("huge",), "HUGE")),
                      limits=(Limit("GB/s", 0.5, "SLOW", fmt="{:g} GB/s"),
                              Limit("GB/s", 0.9, "ROW", row="1 MiB"),
                              Limit("GB/s", 0.9, "ONCE")),
                      quotes=(Quote("NVLink", 40, "{:g} GB/s"),), source="the lecture")
    say = read(reading, frame, "pytorch", Where.CPU, show=False)
    assert say.text.split("\n") == [
        "ANY", "CPU-ONLY", "Model: '1 MiB' 93.0.", "SMALL",
        "'4 KiB': GB/s 0.015 GB/s, below 0.5 GB/s: SLOW", "'1 MiB': GB/s 0.84, below 0.9: ROW",
        "'4 KiB': GB/s 0.015, below 0.9: ONCE",
        "The lecture: NVLink 40 GB/s."]
    assert say.check() == [] and "SLOW" in paragraphs(reading)


@pytest.mark.parametrize("gpm", [True, False])
def test_a_columns_values_the_records_notices_and_the_machine_are_said_where_declared(make_run,
                                                                                    gpm):
    about = (Column("sm_active", present={Where.GPU: "HAS-GPM"}, missing="NO-GPM"),)
    notice = {"device_notice": "Asked for 2 GPUs: 1 device instead."}
    runs = pair(make_run, 1800, gpm=gpm, notes=notice)
    say = judge(Lesson(compares=LESSON.compares, about=about, notices=True, machine=True), runs)
    assert ("HAS-GPM" in say.text) == gpm and ("NO-GPM" in say.text) != gpm
    assert "What the records say ran otherwise than asked (small, large): Asked for 2 GPUs: " \
        "1 device instead." in say.text
    assert "Measured on 1 × NVIDIA H100 80GB HBM3 (driver 550.54.15) (from the run records)." \
        in say.text and say.check() == []
    plain = judge(LESSON, runs).text   # neither unless declared
    assert "ran otherwise than asked" not in plain and "Measured on" not in plain
    assert "NO-GPM" in paragraphs(Lesson(compares=(), about=about))


def test_a_reading_groups_rows_by_a_columns_value_and_says_its_empty_paragraph():
    import pandas as pd
    frame = pd.DataFrame({"rung": ["a", "b", "c"], "bound": ["host-bound", "", "host-bound"]})
    reading = Reading(key="rung", groups={"bound": "Held by"}, empty="NO-TABLE",
                      about=(Column("missing", missing="NO-COLUMN"),))
    say = read(reading, frame, show=False)
    assert say.text == "Held by: host-bound: 'a', 'c'.\nNO-COLUMN"
    assert read(reading, None).text == "NO-TABLE" and read(reading, frame.iloc[:0]).text == "NO-TABLE"
    both = Said([say, read(reading, None)])
    assert both.text.endswith("NO-COLUMN\nNO-TABLE") and both.check() == []
