"""The findings engine on fake runs: each template and each generic caveat once, on a
made-up lesson declared the way a lesson module declares one."""
import pytest

import fake_runs

from gpu_course.analyse import anatomy, noise
from gpu_course.show import closing, findings
from gpu_course.show.findings import (Compare, Expect, Lesson, Note, Outcome, Quote, Where,
                                      judge, outcome, paragraphs)
from gpu_course.show.findings import Context, Flag, Rank, Row, Sign, judge_rows

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


def memory_run(make_run, name, peak, checkpoint=0, rate=600.0):
    mib = 2**20
    notes = {"memory": {"counter": "the process's peak resident memory", "computed": {},
                        "held": [1.0 * mib] * 2, "peak": [peak * mib] * 2},
             "checkpoint": checkpoint}
    return make_run(name, rate=rate, config={"batch_size": 16}, notes=notes)


def test_an_amount_is_judged_on_its_readings_against_a_less_or_more_expectation(make_run):
    from gpu_course.show.findings import Metric, Sign
    import pandas as pd
    lesson = Lesson(compares=(Compare(varies=("checkpoint",), metric=Metric.PEAK, gpu=Expect.LESS,
                                      cpu=Expect.LESS, means=MEANS),),
                    last_row={"peak_mib": "peak {} MiB", "missing": "never {}"},
                    by_sign={"rest": {Sign.POSITIVE: "POSITIVE", Sign.OTHER: "OTHER"}})
    runs = [memory_run(make_run, "plain", 10.0), memory_run(make_run, "saved", 6.0, checkpoint=3)]
    table = pd.DataFrame({"rung": ["plain", "saved"], "peak_mib": [10.0, 6.0], "rest": [0.0, 1.5]})
    say = judge(lesson, runs, table)
    assert "'saved' against 'plain', peak memory: 6.00 against 10.0 MiB, ×0.60, less" in say.text
    assert "EXPECTED-PARAGRAPH" in say.text and "two identical jobs" not in say.text
    assert "'saved': peak 6.00 MiB." in say.text and "never" not in say.text
    assert "POSITIVE" in say.text and "OTHER" not in say.text and say.check() == []
    assert outcome(noise.compare_samples([10, 10], [20, 20], "2"), Expect.LESS) is Outcome.OPPOSITE


# -- measured rows (judge_rows): a table's rows with their own samples -----------------------
def rows_table(rows):
    import pandas as pd
    return pd.DataFrame([{"rung": r.name, "rate": sum(r.samples) / len(r.samples) if r.samples
                          else 10.0, "flag": flag, "size": size}
                         for r, flag, size in zip(rows, ("", "ODD", "ODD", ""), (1, 3, 2, 4))])


def measured(variant_rate, spread=0.01, samples=5, gpu=False):
    out = []
    for model in ("a", "b"):
        for variant, rate in (("base", 100.0), ("new", variant_rate * (2 if model == "b" else 1))):
            out.append(Row(f"{model} {variant}", {"model": model, "variant": variant},
                           tuple(rate * (1 + spread * (i - 2)) for i in range(samples)),
                           "5 blocks", gpu))
    return out


ROWS = Lesson(compares=(Compare(("variant",), when={"variant": "new"}, against={"variant": "base"},
                                cpu=Expect.FASTER, cells={"size": "size"}, means=MEANS,
                                ranks=(Rank("model", {noise.Order.HIGHER: "APART"}),)),),
              group_by="model", column="rate", more="MORE-SAMPLES",
              flags=(Flag("flag", {"ODD": "ODD-PARAGRAPH"}, cells={"size": "size"}, worst="size"),),
              missing={"pkg": "PKG-MISSING"}, empty="NO-ROWS",
              quotes=(Quote("a figure", 1.5, "×{:.2f}"),), hardware="a CPU")


@pytest.mark.parametrize("rate, spread, samples, gpu, paragraph", [
    (300, 0.01, 5, False, "EXPECTED-PARAGRAPH"), (100, 0.2, 5, False, "NONE-PARAGRAPH"),
    (30, 0.01, 5, False, "OPPOSITE-PARAGRAPH"), (300, 0.01, 3, False, "CANNOT-PARAGRAPH"),
    (300, 0.01, 5, True, "EXPECTED-PARAGRAPH")])
def test_a_measured_row_is_judged_on_its_samples_against_its_baseline(rate, spread, samples, gpu,
                                                                      paragraph):
    rows = measured(rate, spread, samples, gpu)
    say = judge_rows(ROWS, rows, rows_table(rows))
    assert paragraph in say.text and say.text.count(paragraph) == 1 and say.check() == []
    assert "'a new' against 'a base': size 1 → 3; ×" in say.text
    assert ("MORE-SAMPLES" in say.text) == (samples < noise.BLOCKS)


def test_measured_rows_are_ranked_flagged_and_the_missing_and_the_talk_said():
    rows = measured(300)
    say = judge_rows(ROWS, rows, rows_table(rows), Context(missing=("pkg",), cpu={
        "model": "Some CPU", "logical": 4, "physical": 2, "usable": 4}))
    assert say.text.startswith("This CPU (/proc/cpuinfo): Some CPU, 4 logical cores (2 physical)")
    assert "'b new' gained more than 'a new', beyond both ranges.\nAPART" in say.text
    assert "'a new': ODD (size 3). ODD-PARAGRAPH" in say.text and "'b base': ODD" not in say.text
    assert "PKG-MISSING" in say.text
    assert "The talk, on a CPU: a figure ×1.50." in say.text and say.check() == []


def test_no_measured_rows_says_the_empty_paragraph_the_missing_and_the_talk():
    say = judge_rows(ROWS, [], None, Context(missing=("pkg", "other")))
    assert say.text.splitlines() == ["NO-ROWS", "PKG-MISSING",
                                     "The talk, on a CPU: a figure ×1.50."]


def test_measured_rows_both_within_noise_are_not_ranked():
    rows = measured(100, spread=0.2)
    say = judge_rows(ROWS, rows, rows_table(rows))
    assert "gained more" not in say.text and "APART" not in say.text


def test_measured_rows_named_by_another_key_with_facts_columns_a_last_row_and_a_bare_flag():
    import pandas as pd
    frame = pd.DataFrame([{"name": "one", "size": 1.5, "flag": "ODD", "spare": float("nan")},
                          {"name": "two", "size": float("nan"), "flag": "", "spare": -1}])
    lesson = Lesson(compares=(), key="name", facts={"found": "FOUND-PARAGRAPH"},
                    columns={"size": "Size"}, last_row={"spare": "{} to spare"},
                    by_sign={"spare": {Sign.OTHER: "NO-ROOM"}},
                    flags=(Flag("flag", {"ODD": "ODD-PARAGRAPH"}),))
    say = judge_rows(lesson, [Row("one", {}), Row("two", {})], frame,
                     Context(facts=("found", "unknown")))
    assert say.text.splitlines() == ["FOUND-PARAGRAPH", "Size: 'one' 1.50.",
                                     "'two': -1.00 to spare.", "NO-ROOM", "'one': ODD. ODD-PARAGRAPH"]
    assert say.check() == [] and "FOUND-PARAGRAPH" in findings.paragraphs(lesson)
