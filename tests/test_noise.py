"""Effect or noise: verdicts computed from the runs' spreads."""
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import fake_runs  # noqa: E402

from gpu_course.analyse import noise  # noqa: E402


class Measured:
    """A run whose samples/s is a given number (for repeated-run comparisons)."""
    def __init__(self, rate):
        self.rate = rate


def value(run):
    return run.rate


def test_a_noisy_pair_inside_its_spread_is_within_noise():
    a = [Measured(r) for r in (100, 108, 95)]
    b = [Measured(r) for r in (103, 97, 110)]
    v = noise.compare(a, b, value)
    assert v.kind == "within noise" and not v.is_effect
    assert v.ratio == pytest.approx(103 / 100)
    assert v.low == pytest.approx(97 / 108) and v.high == pytest.approx(110 / 95)
    assert str(v) == "×1.03, within noise (×0.90–×1.16 over 3 runs)"


def test_a_clear_effect_is_one_and_a_slow_down_is_named_so():
    a = [Measured(r) for r in (100, 104, 98)]
    b = [Measured(r) for r in (150, 160, 155)]
    assert noise.compare(a, b, value).kind == "faster"
    slower = noise.compare(b, a, value)
    assert slower.kind == "slower" and slower.ratio < 1
    assert "a slow-down" in str(slower) and slower.ratio == pytest.approx(100 / 155)


def test_an_effect_whose_bound_rounds_to_one_never_reads_x1_00():
    # blocks ×1.003 apart at their closest: "faster (×1.00–×1.20)" read as a contradiction
    faster = noise.compare_samples([100.0, 99.0], [100.3, 120.0], "2 blocks")
    assert faster.kind == "faster" and "faster (×1.003–×1.21 over 2 blocks)" in str(faster)
    slower = noise.compare_samples([100.0, 99.0], [98.9, 80.0], "2 blocks")
    assert "a slow-down (×0.80–×0.999 over 2 blocks)" in str(slower)
    exact = noise.compare_samples([100.0], [100.0, 120.0], "2 blocks")
    zero = noise.compare_samples([0.0, 0.0], [5.0, 6.0], "2 steps")   # a counter's zero: no ratio
    assert zero.kind == noise.Kind.NOT_MEASURED and zero.how == "2 steps; A read 0"
    assert "within noise (×1.00–×1.20 over 2 blocks)" in str(exact)


def test_a_single_run_is_judged_by_blocks_of_its_own_steady_steps(tmp_path):
    slow = fake_runs.load(fake_runs.write_run(tmp_path, "slow", samples_per_sec=500.0, seed=1))
    fast = fake_runs.load(fake_runs.write_run(tmp_path, "fast", samples_per_sec=1500.0,
                                              seed=2, index=1))
    assert len(noise.block_rates(slow)) == noise.BLOCKS
    v = noise.compare(slow, fast)
    assert v.kind == "faster" and v.how == "5 blocks of steady steps"
    same = noise.compare(slow, fake_runs.load(fake_runs.write_run(
        tmp_path, "again", samples_per_sec=500.0, seed=3, index=2)))
    assert same.kind == "within noise"


def test_nothing_to_compare_says_so(tmp_path):
    one = fake_runs.load(fake_runs.write_run(tmp_path, "warm-up only", epochs=1))
    v = noise.compare(one, one)
    assert v.kind == "not measured" and math.isnan(v.ratio)
    assert "not measured" in str(v)


class Scored:
    """A run with a validation accuracy on n images (what the record says)."""
    def __init__(self, name, acc, n):
        import pandas as pd
        self.name, self.meta, self.config = name, {}, {"test_size": n}
        self.epochs = pd.DataFrame({"val_acc": [acc]})


def test_accuracy_against_chance_uses_the_recorded_number_of_images():
    assert noise.chance_bar(100) == pytest.approx(0.1 + 2 * (0.09 / 100) ** 0.5)  # 16 %
    assert noise.at_chance(Scored("a", 0.15, 100))              # under 16 % on 100 images
    assert not noise.at_chance(Scored("b", 0.15, 10_000))       # clear of 10.6 % on 10,000


def test_an_accuracy_change_is_an_effect_only_outside_two_standard_errors():
    points, text = noise.accuracy_change(Scored("a", 0.50, 200), Scored("b", 0.55, 200))
    assert points == pytest.approx(5.0) and "within noise" in text   # ±10 points on 200
    points, text = noise.accuracy_change(Scored("a", 0.50, 20_000), Scored("b", 0.55, 20_000))
    assert "an effect" in text and text.startswith("+5.0 points")


def test_two_accuracies_at_chance_name_no_winner_however_far_apart():
    """Lessons 05/06 in smoke mode: 2 % against 13 % on 256 images is not a result."""
    points, text = noise.accuracy_change(Scored("a", 0.02, 256), Scored("b", 0.13, 256))
    assert points == pytest.approx(11.0)
    assert "both within noise of chance (under 13.8%)" in text
    assert "an effect" not in text
    points, text = noise.accuracy_change(Scored("a", 0.02, 256), Scored("b", 0.40, 256))
    assert "an effect" in text   # one run clear of chance: the difference is judged as usual


def test_the_accuracy_verdict_is_a_value_that_the_sentence_is_written_from():
    """Lessons branch on the verdict (is_effect, kind), never on the sentence's wording."""
    v = noise.accuracy_verdict(Scored("a", 0.50, 20_000), Scored("b", 0.55, 20_000))
    assert v.is_effect and v.kind == "an effect" and v.points == pytest.approx(5.0)
    assert f"±{v.bound:.1f} points" in noise.accuracy_change(Scored("a", 0.50, 20_000),
                                                            Scored("b", 0.55, 20_000))[1]
    assert noise.accuracy_verdict(Scored("a", 0.50, 200), Scored("b", 0.55, 200)).kind == "within noise"
    v = noise.accuracy_verdict(Scored("a", 0.02, 256), Scored("b", 0.13, 256))
    assert v.kind == "at chance" and not v.is_effect and v.bar == pytest.approx(noise.chance_bar(256))


def test_identical_configs_far_apart_are_flagged(tmp_path):
    from gpu_course.show import report
    write_run, load = fake_runs.write_run, fake_runs.load
    a = load(write_run(tmp_path, "threads=2 a", samples_per_sec=30.0, seed=1))
    b = load(write_run(tmp_path, "threads=2 b", samples_per_sec=300.0, seed=2, index=1))
    c = load(write_run(tmp_path, "other", samples_per_sec=31.0, seed=3, index=2,
                       config={"batch_size": 256}))
    found = noise.far_apart([a, b, c])
    assert len(found) == 1 and "'threads=2 a' and 'threads=2 b' ran the same configuration" \
        in found[0]
    assert "Unreliable: 'threads=2 a' and 'threads=2 b'" in report.conclusion([a, b, c])
    assert noise.far_apart([a, c]) == []


def test_a_runs_spread_is_its_slowest_and_fastest_block_in_every_table(tmp_path):
    from gpu_course.analyse import metrics
    from gpu_course.show import report, tables
    run = fake_runs.load(fake_runs.write_run(tmp_path, "r", samples_per_sec=500.0, seed=4))
    rates = metrics.steady_block_rates(run)
    spread = metrics.throughput(run)
    low, high = spread["samples_per_sec_min"], spread["samples_per_sec_max"]
    assert (low, high) == (min(rates), max(rates)) and low < metrics.samples_per_sec(run) < high
    table = report.ladder_table([run])
    assert (table.samples_per_sec_min[0], table.samples_per_sec_max[0]) == (low, high)
    cell = f"{tables._num(low)}–{tables._num(high)}"
    shown = tables.show(table)
    assert "min–max" in shown.blocks[0].columns or "min–max" in shown.text()
    assert cell in shown.text()
    assert "min–max" in report.format_table(table) and cell in report.format_table(table)
    # no steady steps: no spread, and no empty column
    bare = fake_runs.load(fake_runs.write_run(tmp_path, "warm-up only", epochs=1, index=1))
    spread = metrics.throughput(bare)
    assert all(math.isnan(spread[k]) for k in ("samples_per_sec_min", "samples_per_sec_max"))
    assert "min–max" not in tables.show(report.ladder_table([bare])).text()


def test_a_group_of_repeats_is_one_row_with_its_runs_median_and_spread(tmp_path):
    from gpu_course.analyse import metrics
    from gpu_course.show import report, tables
    a = [fake_runs.load(fake_runs.write_run(tmp_path, "a", samples_per_sec=r, seed=i,
                                            index=i)) for i, r in enumerate((500., 560., 530.))]
    b = fake_runs.load(fake_runs.write_run(tmp_path, "b", samples_per_sec=900., index=5,
                                           config={"num_workers": 4}))
    rates = sorted(metrics.samples_per_sec(r) for r in a)
    assert metrics.samples_per_sec(metrics.representative(a)) == rates[1]
    table = report.ladder_table([a, b])
    assert list(table.repeats) == [3, 1] and list(table.rung) == ["a", "b"]
    assert table.samples_per_sec[0] == rates[1]
    assert (table.samples_per_sec_min[0], table.samples_per_sec_max[0]) == (rates[0], rates[2])
    assert table.speedup[1] == pytest.approx(metrics.samples_per_sec(b) / rates[1])
    assert "runs" in tables.show(table).text().split()
    assert "3 runs / 5 blocks of steady steps" in report.conclusion([a, b],
                                                                    varies=("num_workers",))
    with pytest.raises(ValueError, match=r"runs\[1\] is an empty list"):
        metrics.table([b, []])


def test_two_verdicts_are_ranked_only_when_their_ranges_do_not_overlap():
    base = [Measured(r) for r in (100, 102, 98)]
    small = noise.compare(base, [Measured(r) for r in (120, 122, 118)], value)
    large = noise.compare(base, [Measured(r) for r in (200, 204, 196)], value)
    close = noise.compare(base, [Measured(r) for r in (119, 140, 110)], value)
    assert noise.ranked(large, small) == "higher" and noise.ranked(small, large) == "lower"
    assert noise.ranked(small, close) == "within noise"
    unmeasured = noise.Verdict(math.nan, math.nan, math.nan, "not measured", "")
    assert noise.ranked(large, unmeasured) == "within noise"


def test_measurements_without_runs_are_judged_the_same_way():
    """Lesson 11's benchmarks: the images/s of each timed pass of two settings."""
    v = noise.compare_samples([100, 104, 98], [150, 160, 155], "3 timed passes each", a=101, b=155)
    assert v.kind == "faster" and v.ratio == pytest.approx(155 / 101)
    assert str(v).endswith("over 3 timed passes each)")
    assert noise.compare_samples([100, 130], [110, 125], "2 passes").kind == "within noise"
    assert noise.compare_samples([150, 160], [100, 104], "2 passes").kind == "slower"
    assert noise.compare_samples([], [1.0], "none").kind == "not measured"


def test_an_amount_is_more_or_less_not_faster_or_slower():
    """Lesson 14's bytes: more memory is neither better nor worse."""
    less = noise.compare_samples([10.0, 10.2], [2.5, 2.6], "2 measured steps each")
    assert noise.amount_sentence(less) == "×0.25, less (×0.25–×0.26 over 2 measured steps each)"
    more = noise.compare_samples([1.0, 1.0], [4.0, 4.0], "2 steps")
    assert noise.amount_sentence(more).startswith("×4.00, more (")
    same = noise.compare_samples([1.0, 1.1], [1.05, 1.05], "2 steps")
    assert noise.amount_sentence(same).startswith("×1.00, the same within noise (")
    unmeasured = noise.compare_samples([], [1.0], "none")
    assert noise.amount_sentence(unmeasured) == noise.sentence(unmeasured)


def test_the_spread_brackets_the_steady_rate_when_the_closing_sync_holds_work(tmp_path):
    """An asynchronous engine's host step times leave work to the epoch's sync: the
    blocks are scaled to the steady time, so min <= samples/s <= max (Gluon 02 smoke
    showed 405 samples/s beside a range of 413-528)."""
    import pandas as pd
    from gpu_course.analyse import metrics
    path = fake_runs.write_run(tmp_path, "async", samples_per_sec=500.0, seed=6)
    epochs = pd.read_csv(path / "epochs.csv")
    epochs["timed_s"] = epochs["timed_s"] * 1.5  # a third of the time in the closing sync
    epochs.to_csv(path / "epochs.csv", index=False)
    run = fake_runs.load(path)
    spread = metrics.throughput(run)
    low, high = spread["samples_per_sec_min"], spread["samples_per_sec_max"]
    assert low <= metrics.samples_per_sec(run) <= high
    rates = metrics.steady_block_rates(run)
    assert sum(rates) / len(rates) == pytest.approx(metrics.samples_per_sec(run), rel=0.2)
