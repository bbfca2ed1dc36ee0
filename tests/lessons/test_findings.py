"""The findings engine on fake runs: each template and each generic caveat once, on a
made-up lesson declared the way a lesson module declares one."""
import pandas as pd
import pytest

import fake_runs

from gpu_course.analyse import anatomy, noise
from gpu_course.show import closing, findings, report
from declared import paragraphs
from gpu_course.env import cpu
from gpu_course.show.findings import (Column, Compare, Expect, Gain, Lesson, Limit, Mark, Note,
                                      Outcome, Quote, Reading, Requires, Said, Samples, Where,
                                      judge, judge_table, outcome, read)
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


def test_a_chain_judges_each_run_against_the_one_before_and_accuracy_has_outcomes(make_run):
    gained = {Outcome.EXPECTED: "GAINED", Outcome.NONE: "NO-GAIN", Outcome.OPPOSITE: "LOST"}
    lesson = Lesson(chain=True, compares=(
        Compare(varies=("lr",), means={}, gains=Gain.HIGHER, gained=gained),
        Compare(varies=("warmup_epochs",), means={}, gains=Gain.HIGHER, gained=gained)))
    runs = []
    for name, config, acc in (("plain", {"lr": 0.1, "warmup_epochs": 0}, 0.40),
                              ("scaled", {"lr": 0.4, "warmup_epochs": 0}, 0.60),
                              ("warm", {"lr": 0.4, "warmup_epochs": 1}, 0.60)):
        run = make_run(name, config=config)
        run.epochs["val_acc"] = [acc] * len(run.epochs)
        runs.append(run)
    say = judge(lesson, runs)
    assert "'scaled' against 'plain' in accuracy: +20.0 points, an effect" in say.text
    assert "'warm' against 'scaled' in accuracy: +0.0 points" in say.text
    assert "'warm' against 'plain'" not in say.text
    assert "GAINED" in say.text and "NO-GAIN" in say.text and "LOST" not in say.text
    assert say.check() == []


def test_what_ran_tells_variants_apart_and_pairs_compare_two_variants(make_run):
    lesson = Lesson(compares=(Compare(varies=("tf32.convolutions",), means={Outcome.EXPECTED: "TF32-ON"}),
                              Compare(varies=("channels_last",), means={}),
                              Compare(varies=("dtype", "channels_last"), means={})),
                    ran=("tf32.convolutions",), pairs=("channels_last",))
    runs = [make_run("float32", rate=600, gpus=1, config={"dtype": "float32"}, ran={"tf32": {"convolutions": False}}),
            make_run("tf32", rate=1800, gpus=1, config={"dtype": "float32"}, ran={"tf32": {"convolutions": True}}),
            make_run("nchw", rate=2000, gpus=1, config={"dtype": "bfloat16"}, ran={"tf32": {"convolutions": False}}),
            make_run("nhwc", rate=2400, gpus=1, config={"dtype": "bfloat16", "channels_last": True},
                     ran={"tf32": {"convolutions": False}})]
    say = judge(lesson, runs)
    assert "'tf32' against 'float32': ×" in say.text and "TF32-ON" in say.text
    assert "two identical jobs" not in say.text
    assert "'nhwc' against 'nchw': ×1.2" in say.text and "'nchw' against 'nhwc'" not in say.text


@pytest.mark.parametrize("flags, said", [(["avx512_bf16"], "HAS-IT"), (["avx2"], "LACKS-IT"),
                                         (None, None)])
def test_a_capability_is_read_from_the_records_cpu(make_run, flags, said):
    lesson = Lesson(compares=(), requires=(Requires(cpu.Capability.BFLOAT16_INSTRUCTIONS, "dtype",
                                                    ("bfloat16",), has="HAS-IT", lacks="LACKS-IT"),))
    run = make_run("bfloat16", config={"dtype": "bfloat16"})
    run.meta["hardware"]["cpu_features"] = flags
    say = judge(lesson, [run])
    assert (said or "IT") in say.text if said else "IT" not in say.text
    if said:
        assert "this CPU has" in say.text and say.check() == []


FEEDS = Lesson(compares=(Compare(varies=("num_workers",), means=MEANS, feeds=True,
                                   cpu=Expect.FASTER),),
               versus=findings.Versus.BEST, marks={"knee": "KNEE"},
               columns={"data_wait_share": "WAIT", "gpu_util": {Where.GPU: "UTIL"},
                        "absent": "ABSENT"})


def workers(make_run, rates, waits):
    return [make_run(f"w{n}", rate=r, data_wait_share=w, config={"num_workers": n})
            for n, r, w in zip((0, 1, 2), rates, waits)]


def test_a_feeding_change_judges_its_best_variant_and_credits_no_more_than_the_data_wait(
        make_run):
    runs = workers(make_run, (300, 600, 500), (0.6, 0.1, 0.1))
    table = report.ladder_table(runs).assign(knee=[False, True, False])
    say = judge(FEEDS, runs, table)
    assert "'w1' against 'w0'" in say.text and "'w2' against 'w0'" not in say.text
    assert "EXPECTED-PARAGRAPH" in say.text and "waited for its data" not in say.text
    assert "KNEE: 'w1'." in say.text and "WAIT: 'w0' 60" in say.text
    assert "UTIL" not in say.text and "ABSENT" not in say.text   # a CPU; no such column
    runs = workers(make_run, (100, 1200, 900), (0.1, 0.1, 0.1))
    beyond = judge(FEEDS, runs, report.ladder_table(runs).assign(knee=[False, True, False]))
    assert "more than removing all of 'w0''s data wait (10.0% of its steady" in beyond.text
    assert "PARAGRAPH" not in beyond.text and "KNEE" not in beyond.text


def test_ceilings_are_judged_then_the_run_placed_against_the_lower_one(make_run):
    lesson = Lesson(compares=(), ceilings=findings.Ceilings(
        "mock", {"trainer": "INPUT", "loader": "MODEL"}, varies=("mock",),
        means={findings.Place.AT: "AT-PARAGRAPH", findings.Place.BELOW: "BELOW-PARAGRAPH"}))
    runs = [make_run(n, rate=r, config={"mock": m})
            for n, r, m in (("run", 300, "none"), ("in", 2000, "trainer"), ("model", 900, "loader"))]
    say = judge(lesson, runs)
    assert "The ceilings, 'in' (INPUT alone) against 'model' (MODEL alone): ×2.2" in say.text
    assert "'run' reached 34% of the lower ceiling, 'model' (MODEL alone)" in say.text
    assert "BELOW-PARAGRAPH" in say.text and "AT-PARAGRAPH" not in say.text
    with pytest.raises(ValueError, match="only ceilings"):
        judge(lesson, runs[1:])


def test_a_setting_the_loops_noted_is_compared_and_picks_the_baseline(make_run):
    lesson = Lesson(compares=(Compare(varies=("loss_read",), gpu=Expect.SLOWER, means=MEANS),),
                    baseline={"loss_read": "at the end"})
    runs = [make_run("read each step", rate=300, gpus=1, notes={"loss_read": "each step"}),
            make_run("read at the end", rate=600, gpus=1, notes={"loss_read": "at the end"})]
    say = judge(lesson, runs)
    assert "'read each step' against 'read at the end': ×0.5" in say.text
    assert "slow-down" in say.text and "EXPECTED-PARAGRAPH" in say.text
    assert "identical jobs" not in say.text


def test_a_column_no_row_has_a_value_in_is_not_said(make_run):
    lesson = Lesson(compares=(Compare(varies=("batch_size",), means=MEANS),),
                    columns={"samples_per_sec": "Samples/s", "gpu_util": "GPU-Util"})
    say = judge(lesson, pair(make_run, 1800, gpus=0))
    assert "Samples/s: 'small' 6" in say.text and "GPU-Util" not in say.text


TIMED = pd.DataFrame([{"rung": "clock", "ms": 1.0, "per_s": 1000.0},
                      {"rung": "synced", "ms": 20.0, "per_s": 50.0}])


def test_a_table_of_timed_passes_is_judged_on_its_own_samples_where_it_ran():
    gap = Compare(varies=("timer",), gpu=Expect.FASTER, cpu=Expect.SAME, means=MEANS)
    lesson = Lesson(compares=(gap,), columns={"ms": "Milliseconds"}, cpu="NO-GPU")
    pairs = [Samples("synced", "clock", (50.0, 48.0, 52.0), (1000.0, 990.0, 1010.0),
                     "3 passes each", "per_s", gap)]
    say = judge_table(lesson, TIMED, ("pytorch", Where.GPU), pairs)
    assert say.lines[0] == "'clock' against 'synced': ×20.00, faster (×19.04–×21.04 over " \
                                "3 passes each)."
    assert "EXPECTED-PARAGRAPH" in say.text and "Milliseconds: 'clock' 1.00, 'synced' 20.0." \
        in say.text and "NO-GPU" not in say.text and say.check() == []
    cpu = judge_table(lesson, TIMED, ("pytorch", Where.CPU), pairs)
    assert "OPPOSITE-PARAGRAPH" in cpu.text and cpu.text.endswith("NO-GPU")


def test_an_empty_table_says_the_empty_paragraph_or_off_a_gpu_the_cpu_one():
    lesson = Lesson(compares=(), empty="NOTHING-FOUND", cpu="NO-GPU")
    empty = pd.DataFrame(columns=["line", "calls"])
    assert judge_table(lesson, empty, ("pytorch", Where.GPU)).text == "NOTHING-FOUND"
    assert judge_table(lesson, empty, ("pytorch", Where.CPU)).text == "NO-GPU"


def test_a_runs_ceilings_are_read_as_amounts_and_never_as_a_variant(make_run):
    lesson = Lesson(compares=(), bounds=Compare(varies=("mock",), cpu=Expect.FASTER, means=MEANS),
                    above_ceiling="ABOVE-PARAGRAPH")
    job = {"batch_size": 64, "train_size": 6_400}
    runs = [make_run("job", rate=300, config=job)] + [
        make_run(f"job: mock {mock}", rate=rate, config={**job, "mock": mock, "max_steps": 24})
        for mock, rate in (("trainer", 310), ("loader", 1200))]
    say = judge(lesson, runs)
    assert "'job: mock trainer' (the input alone) against 'job: mock loader' (the model alone): " \
        "×0.26, less" in say.text and "OPPOSITE-PARAGRAPH" in say.text
    assert "'job' reaches 99% of its input ceiling and 26% of its compute ceiling." in say.text
    assert "ABOVE-PARAGRAPH" not in say.text and "does not compare" not in say.text
    runs[1] = make_run("job: mock trainer", rate=200, config={**job, "mock": "trainer"})
    assert "ABOVE-PARAGRAPH" in judge(lesson, runs).text


def test_a_lesson_that_names_its_changes_says_them_and_an_input_change_gets_no_data_wait_caveat(
        make_run):
    lesson = Lesson(compares=(Compare(varies=("num_workers",), means=MEANS),), changes=True)
    runs = [make_run("1 worker", rate=300, gpus=1, data_wait_share=0.8, config={"num_workers": 1}),
            make_run("4 workers", rate=900, gpus=1, config={"num_workers": 4})]
    say = judge(lesson, runs)
    assert "'4 workers' against '1 worker' (num_workers 1 → 4): ×" in say.text
    assert "waited for its data" not in say.text and say.check() == []


def test_a_shared_machine_is_named_once_for_all_its_runs(make_run):
    a, b = pair(make_run, 1800)
    fake_runs.busy(a, other_cores=8)
    fake_runs.busy(b, other_cores=8)
    say = judge(LESSON, [a, b])
    assert say.text.count("Another program shared the machine during 'small', 'large':") == 1


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
    assert say.check() == [] and "FOUND-PARAGRAPH" in paragraphs(lesson)


def test_a_reading_says_a_line_a_row_each_cell_in_its_format_the_empty_left_out():
    table = pd.DataFrame([{"trace": "a", "ms": 5.55, "busy": 0.94, "kind": "convolutions"},
                          {"trace": "b", "ms": 2.0, "busy": None, "kind": "copies"}])
    reading = Reading(key="trace", each={"ms": "{} ms", "busy": "busy {}", "kind": "mostly {}"},
                      formats={"busy": "{:.0%}"}, text=("AFTER-THE-ROWS",))
    say = read(reading, table, show=False)
    assert say.text.splitlines() == ["'a': 5.55 ms, busy 94%, mostly convolutions.",
                                     "'b': 2.00 ms, mostly copies.", "AFTER-THE-ROWS"]
    assert say.check() == []


# -- a prediction written down before the run (the exercises' checks) ---------------------------
@pytest.mark.parametrize("rate, expect, drift, found", [
    (1800, Expect.FASTER, 1.0, Outcome.EXPECTED), (600, Expect.FASTER, 1.0, Outcome.NONE),
    (600, Expect.SAME, 1.0, Outcome.EXPECTED), (300, Expect.FASTER, 1.0, Outcome.OPPOSITE),
    (480, Expect.FASTER, findings.DRIFT, Outcome.CANNOT_JUDGE),   # x0.8: within the load's drift
    (300, Expect.FASTER, findings.DRIFT, Outcome.OPPOSITE)])      # x0.5: beyond it
def test_a_prediction_is_judged_as_an_expectation_a_contradiction_within_the_drift_untested(
        make_run, rate, expect, drift, found):
    a, b = pair(make_run, rate)
    assert findings.predicted(expect, noise.compare(a, b, varies=("batch_size",)), drift) is found


@pytest.mark.parametrize("answer, call, possible, found", [
    ("input-bound", "input-bound", (), Outcome.EXPECTED), ("input-bound", None, (), Outcome.NONE),
    ("input-bound", "compute-bound", ("input-bound",), Outcome.NONE),
    ("input-bound", "compute-bound", (), Outcome.OPPOSITE)])
def test_a_named_call_against_the_answer(answer, call, possible, found):
    assert findings.called(answer, call, possible) is found


def test_a_predict_asks_for_one_of_its_answers_by_name():
    predict = findings.Predict("prediction", {"more": Expect.MORE, "less": Expect.LESS},
                               "what you expect of '{b}'", {})
    assert predict.wrong("more", b="x") == ""
    for answer in (None, ["more"], "quicker"):
        assert predict.wrong(answer, b="x") == (f"prediction={answer!r}: write down, before you "
                                                "run, what you expect of 'x': one of 'more', 'less'.")


def test_the_first_untested_note_that_fires_names_its_runs(make_run):
    a, b = pair(make_run, 600, gpus=0)
    b.config["graph"] = "static"
    notes = (Note("graph", ("hybrid",), "NEVER {names}"), Note("graph", ("static",), "ONLY {names}"),
             Note("batch_size", (64, 512), "BOTH {names}"))
    assert findings.untested(notes, (a, b)) == "ONLY 'large'"
    assert findings.untested(notes[2:], (a, b)) == "BOTH 'small' and 'large'"
    assert findings.untested(notes[:1], (a, b)) == ""


@pytest.mark.parametrize("xs, ys, kind", [
    ((0.1, 0.2), (0.3, 0.5), noise.Kind.FASTER), ((0.3, 0.5), (0.0, 0.2), noise.Kind.SLOWER),
    ((0.1, 0.3), (0.2, 0.4), noise.Kind.WITHIN_NOISE), ((), (0.2,), noise.Kind.NOT_MEASURED)])
def test_shares_are_apart_only_where_their_ranges_are(xs, ys, kind):
    assert findings.apart(xs, ys, "blocks").kind is kind
