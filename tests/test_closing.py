"""A closing text prints only numbers its table holds (or names the source of)."""
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import fake_runs  # noqa: E402

from gpu_course.show import closing, report
from gpu_course.analyse import metrics, noise  # noqa: E402


@pytest.fixture
def ladder(tmp_path):
    runs = [fake_runs.load(fake_runs.write_run(tmp_path, name, samples_per_sec=rate, seed=i,
                                               index=i, config={"test_size": 10_000}))
            for i, (name, rate) in enumerate((("naive", 300.0), ("workers", 900.0),
                                              ("float16", 910.0)))]
    return runs, report.ladder_table(runs)


def test_cited_numbers_are_printed_as_the_table_writes_them(ladder, capsys):
    runs, table = ladder
    say = closing.Closing(table, runs)
    rate = say.cell("naive", "samples_per_sec")
    say(f"naive: {rate} samples/s, {say.ratio('samples_per_sec', 0, 1)} with workers.")
    assert rate == f"{metrics.samples_per_sec(runs[0]):,.0f}"
    assert capsys.readouterr().out == say.text + "\n"
    assert [c.value for c in say.read(say.text)[0]] == pytest.approx(
        [table.samples_per_sec[0], table.samples_per_sec[1] / table.samples_per_sec[0]])
    assert say.read(say.text)[0][1].text.startswith("×") and say.check() == []


def test_a_typed_number_is_refused_with_the_number_named(ladder):
    runs, table = ladder
    say = closing.Closing(table, runs)
    with pytest.raises(closing.UncitedNumber, match="'~6x'|'6x'"):
        say(f"naive: {say.cell(0, 'samples_per_sec')} samples/s, ~6x slower than the rest.")
    with pytest.raises(closing.UncitedNumber, match="'40.97 s'"):
        say("An epoch took 40.97 s.")
    with pytest.raises(closing.UncitedNumber, match="'1,234 samples/s'"):
        say("It reached 1,234 samples/s.")
    assert say.lines == []


def test_a_number_from_elsewhere_is_refused_even_when_computed(ladder):
    runs, table = ladder
    say = closing.Closing(table, runs)
    other = 2 * table.samples_per_sec[0]            # computed, but not a cell of the table
    with pytest.raises(closing.UncitedNumber):
        say(f"naive: {other:,.0f} samples/s.")


def test_counts_and_names_are_not_measurements(ladder):
    runs, table = ladder
    say = closing.Closing(table, runs)
    say("float16 on ResNet-20 with 2 workers (lessons 2 and 9), run 'float16'.")
    assert closing.measurements("resnet20 sm_86 float16 2 workers") == []
    text = "x3.7, ×1.31, 45%, 4.0 s, 1,500 images/s, +3.5 points, 12 ms"
    found = [text[a:b] for a, b in closing.measurements(text)]
    assert found == ["x3.7", "×1.31", "45%", "4.0 s", "1,500 images/s", "+3.5 points", "12 ms"]


def test_a_quote_must_name_its_source(ladder):
    runs, table = ladder
    say = closing.Closing(table, runs)
    talk = say.quote("the talk", 306, "{:,} samples/s")
    say(f"The talk's V100 trained at {talk}.")
    with pytest.raises(closing.UncitedNumber, match="which the line does not name"):
        say(f"A V100 trained at {talk}.")
    with pytest.raises(ValueError, match="source=''"):
        say.quote("", 1.5)


def test_a_measurement_that_prints_as_a_quote_does_is_the_measurement(ladder):
    """A clean-clone run measured a scaling efficiency of 74%, the talk's best: the line
    that printed only the measured 74% was refused for not naming the talk."""
    runs, table = ladder
    say = closing.Closing(table, runs)
    measured = say.setting("the measured efficiency", 0.74, "{:.0%}")
    quoted = say.quote("the talk", 0.74, "{:.0%}")
    assert measured == quoted == "74%"
    say(f"An efficiency of {measured} says nothing about GPUs.")
    assert [c.kind for c in say.read(say.lines[-1])[0]] == ["setting"]
    say(f"{measured} here, the talk's best {quoted}.")   # named: both are cited
    assert [c.kind for c in say.read(say.lines[-1])[0]] == ["setting", "quote"]
    only_quoted = say.quote("the talk", 0.91, "{:.0%}")
    with pytest.raises(closing.UncitedNumber, match="'91%' is quoted from 'the talk'"):
        say(f"An efficiency of {only_quoted} says nothing about GPUs.")


def test_a_quote_inside_a_measured_verdict_is_the_verdict(ladder):
    """A clean clone's lesson 14 measured a noise range of ×0.50–×1.62; the talk's ×0.50
    is printed the same way, and the line that printed only the verdict was refused."""
    runs, table = ladder
    say = closing.Closing(table, runs)
    v = say.compare(0, "workers")
    lo = noise.sentence(v).split("(")[1].split("–")[0]
    quoted = say.quote("the talk", lo, "{}")
    say(f"workers against naive: {v}.")
    assert [c.kind for c in say.read(say.lines[-1])[0]] == ["verdict"]
    with pytest.raises(closing.UncitedNumber, match="is quoted from 'the talk'"):
        say(f"workers against naive: {v}; elsewhere {quoted}.")


def test_noise_verdicts_are_cited_whole(ladder):
    runs, table = ladder
    say = closing.Closing(table, runs)
    v = say.compare(0, "workers")
    acc = say.accuracy(0, 1)[1]
    say(f"workers against naive: {v}; accuracy {acc}.")
    assert v.kind == "faster" and str(v) in say.text
    kinds = [c.kind for c in say.read(say.text)[0]]
    assert kinds == ["verdict", "verdict"] and say.check() == []
    assert say.at_chance([0, 1, 2]) == all(closing.noise.at_chance(r) for r in runs)


def test_runs_that_are_not_the_tables_rows_are_refused(ladder):
    runs, table = ladder
    with pytest.raises(ValueError, match="runs has 2 runs for a table of 3 rows"):
        closing.Closing(table, runs[:2])
    with pytest.raises(ValueError, match=r"runs\[0\] is 'workers' but row 0"):
        closing.Closing(table, [runs[1], runs[0], runs[2]])
    changed = table.copy()
    changed.loc[1, "samples_per_sec"] *= 2
    with pytest.raises(ValueError, match="the table is not these runs'"):
        closing.Closing(changed, runs)


def test_bad_rows_and_columns_name_what_is_allowed(ladder):
    runs, table = ladder
    say = closing.Closing(table, runs)
    with pytest.raises(ValueError, match="row='fast' is not a row.*'naive', 'workers'"):
        say.cell("fast", "samples_per_sec")
    with pytest.raises(ValueError, match="column='speed' is not in the table"):
        say.cell(0, "speed")
    with pytest.raises(ValueError, match="no runs"):
        closing.Closing(table).compare(0, 1)
    with pytest.raises(ValueError, match="at least one row"):
        closing.Closing(pd.DataFrame())


def test_a_table_without_runs_cites_cells_with_a_format():
    race = pd.DataFrame({"rung": ["sgd", "lamb"], "best val acc": [0.125, 0.5]})
    say = closing.Closing(race)
    say(f"lamb reached {say.cell('lamb', 'best val acc', '{:.1%}')}.")
    assert say.read(say.text)[0][0].value == 0.5 and say.text == "lamb reached 50.0%."


def test_amounts_are_cited_in_their_own_words_and_speed_words_are_refused():
    say = closing.Closing(pd.DataFrame({"rung": ["a", "b"], "peak_mib": [10.0, 2.5]}))
    v = say.compare_amounts(0, 1, [10.0, 10.0], [2.5, 2.5], "2 measured steps each", "peak_mib")
    say(f"Its peak: {noise.amount_sentence(v)}.")
    assert say.text == "Its peak: ×0.25, less (×0.25–×0.25 over 2 measured steps each)."
    with pytest.raises(closing.UncitedNumber):
        say(f"Its peak: {v}.")      # the speed words' sentence was not what was cited


def test_a_cited_number_does_not_cover_a_longer_one(ladder):
    runs, table = ladder
    say = closing.Closing(table, runs)
    one = say.setting("WORKERS", 1.5)
    with pytest.raises(closing.UncitedNumber, match="'11.5'"):
        say(f"{one} and 11.5")
    say(f"{one} workers on average")


# -- the lessons use it ------------------------------------------------------------------------
from support import REPO  # noqa: E402

NOTEBOOKS = sorted((REPO / "notebooks").glob("*/[0-9][0-9]_*.py"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_lesson_says_its_closing_through_its_lesson_module(path):
    """A notebook that concludes calls gc.conclude("NN", ...) of its own lesson, whose
    module builds every sentence with a Closing, itself or through the findings engine's
    judge (so each is checked against the table when the notebook runs in CI); the notebook itself writes no sentence."""
    text = path.read_text()
    if "gc.conclude(" not in text:
        pytest.skip("not yet in the lesson shape")
    numbers = set(re.findall(r"gc\.conclude\(\"(\d\d)\"", text))
    assert path.stem[:2] in numbers, f"{path.name} concludes lessons {numbers}, not its own"
    assert "say(" not in text and "Closing(" not in text
    for number in numbers:   # another lesson's analysis may be reused (09 uses 10's ceilings)
        module = (REPO / "gpu_course" / "lessons").glob(f"l{number}_*.py")
        source = next(module).read_text()
        assert "def conclude(" in source and re.search(r"\bClosing\(|\bjudge(_rows)?\(", source)
