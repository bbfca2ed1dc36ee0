"""Is a difference an effect, or run-to-run noise? Computed from the runs, never typed.
Each side's spread is its min..max over repeated runs, or with one run the samples/s of
BLOCKS equal blocks of its steady steps. B/A is an effect only when the whole range of
ratios lies on one side of 1 (min(B)/max(A) > 1: faster; max(B)/min(A) < 1: slower).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from enum import StrEnum

from . import alike, metrics
from ..page import Page

BLOCKS = metrics.BLOCKS  # blocks of steady steps that stand in for repeats of one run
MIN_STEPS = metrics.MIN_STEADY_STEPS // BLOCKS  # steady steps a block needs to be evidence


class Kind(StrEnum):
    """What a comparison found."""

    FASTER = "faster"
    SLOWER = "slower"
    WITHIN_NOISE = "within noise"
    TOO_FEW = "too few steps"       # a side had fewer than BLOCKS * MIN_STEPS steady steps
    UNLIKE = "unlike runs"          # the runs differ in more than the comparison names
    NOT_MEASURED = "not measured"


PAGE = Page.of(__name__)   # the verdicts in words: text/noise.md
SAY = {name: PAGE.text(name) for name in ("blocks", "spread", "not_measured", "unlike", "too_few",
                                          "ratio", "at_chance", "accuracy", "far_apart")}
SPEED = PAGE.means("speed", Kind)     # what a ratio of rates found, in a word
AMOUNT = PAGE.means("amount", Kind)   # what a ratio of amounts (bytes) found


class Order(StrEnum):
    """One verdict's ratio against another's (`ranked`)."""

    HIGHER = "higher"
    LOWER = "lower"
    WITHIN_NOISE = "within noise"


@dataclass(frozen=True)
class Verdict:
    """B against A: median ratio, the range of ratios the spreads allow, and the call."""

    ratio: float          # median(B) / median(A)
    low: float            # min(B) / max(A)
    high: float           # max(B) / min(A)
    kind: Kind            # faster, slower, within noise, too few steps, unlike or not measured
    how: str              # what the spread was measured from
    unlike: str = ""      # Kind.UNLIKE: what else the runs differ in (`alike.words`)

    @property
    def is_effect(self) -> bool:
        return self.kind in (Kind.FASTER, Kind.SLOWER)

    def __str__(self) -> str:
        return sentence(self)


def samples(run_or_runs, value=metrics.samples_per_sec) -> tuple[list[float], str]:
    """One side's measurements: `value` of each run, or the blocks of a single run's steps."""
    runs = run_or_runs if isinstance(run_or_runs, (list, tuple)) else [run_or_runs]
    if len(runs) > 1:
        values = [v for v in (value(r) for r in runs) if _ok(v)]
        return values, f"{len(runs)} runs"
    return block_rates(runs[0]), SAY["blocks"].format(blocks=BLOCKS)


block_rates = metrics.steady_block_rates  # one definition, kept under its old name


def compare(a, b, value=metrics.samples_per_sec, varies=()) -> Verdict:
    """B against A (each a run or a list of repeated runs), higher is better; a verdict
    across anything but `varies` (settings' names, `alike.Aspect`s) is Kind.UNLIKE."""
    a, b = (r[0] if isinstance(r, (list, tuple)) and len(r) == 1 else r for r in (a, b))
    differ = alike.differences(a, b, varies)
    (xs, how_a), (ys, how_b) = samples(a, value), samples(b, value)
    single = [r for r in (a, b) if not isinstance(r, (list, tuple))]
    # one run a side: the table's own ratio, the blocks give the spread
    v = compare_samples(xs, ys, how_a if how_a == how_b else f"{how_a} / {how_b}",
                        *([value(r) for r in single] if len(single) == 2 else ()))
    if v.kind == Kind.NOT_MEASURED:
        return v
    if differ:
        names = [metrics.representative(r).name for r in (a, b)]
        return replace(v, kind=Kind.UNLIKE, unlike=alike.words(differ, *names))
    if any(metrics.steady_steps(r) < BLOCKS * MIN_STEPS for r in single):
        steps = " and ".join(str(metrics.steady_steps(r)) for r in single)
        return replace(v, kind=Kind.TOO_FEW, how=f"{steps} steady steps")
    return v


def compare_samples(xs, ys, how: str, a: float | None = None, b: float | None = None) -> Verdict:
    """B against A from their measurements, higher is better; `how` says what they are.
    The ratio is b / a where given (the numbers printed beside it), else the medians'."""
    xs, ys = [float(x) for x in xs if _ok(x)], [float(y) for y in ys if _ok(y)]
    if not xs or not ys:
        return Verdict(math.nan, math.nan, math.nan, Kind.NOT_MEASURED, how)
    if min(xs) <= 0:   # a side that read nothing: no ratio to B from it (a counter's zero)
        return Verdict(math.nan, math.nan, math.nan, Kind.NOT_MEASURED,
                       f"{how}; A read {min(xs):g}")
    ratio = b / a if _ok(a) and _ok(b) and a > 0 else statistics.median(ys) / statistics.median(xs)
    low, high = min(min(ys) / max(xs), ratio), max(max(ys) / min(xs), ratio)
    kind = Kind.FASTER if low > 1 else Kind.SLOWER if high < 1 else Kind.WITHIN_NOISE
    return Verdict(ratio, low, high, kind, how)


def _spread(v: Verdict) -> str:
    """"×low–×high over how", with the digits that keep a bound near ×1 off ×1.00."""
    def bound(x: float) -> str:
        for digits in (2, 3, 4):
            text = f"{x:.{digits}f}"
            if x == 1 or float(text) != 1:
                return text
        return text
    return SAY["spread"].format(low=bound(v.low), high=bound(v.high), how=v.how)


def sentence(v: Verdict, what: str = "") -> str:
    """The verdict in words with its numbers: "×1.42, faster (×1.31–×1.55 over 3 runs)"."""
    if v.kind == Kind.NOT_MEASURED:
        return SAY["not_measured"].format(what=what).strip()
    if v.kind == Kind.UNLIKE:
        return SAY["unlike"].format(what=what, v=v)
    if v.kind == Kind.TOO_FEW:
        return SAY["too_few"].format(what=what, v=v, least=BLOCKS * MIN_STEPS)
    return SAY["ratio"].format(what=what, v=v, word=SPEED[v.kind], spread=_spread(v))


def amount_sentence(v: Verdict, what: str = "") -> str:
    """`sentence` for an amount (bytes of memory): FASTER reads "more", SLOWER "less"."""
    if v.kind not in (Kind.FASTER, Kind.SLOWER, Kind.WITHIN_NOISE):
        return sentence(v, what)
    return SAY["ratio"].format(what=what, v=v, word=AMOUNT[v.kind], spread=_spread(v))


def _ok(value) -> bool:
    return value is not None and isinstance(value, (int, float)) and math.isfinite(value)


# -- accuracy against chance and against another run ----------------------------------------
CHANCE = 0.1  # ten classes


def accuracy_se(acc: float, n: int) -> float:
    """Binomial standard error of an accuracy on n validation images (at least chance's)."""
    p = max(acc, CHANCE)
    return (p * (1 - p) / n) ** 0.5


def chance_bar(n: int) -> float:
    """The accuracy a run must beat to be clear of chance: chance + 2 standard errors."""
    return CHANCE + 2 * accuracy_se(CHANCE, n)


def _test_size(run) -> int:
    return int((run.config or {}).get("test_size") or 0)


def at_chance(run) -> bool:
    """Whether the run's validation accuracy is within 2 standard errors of chance."""
    return not metrics.val_acc(run) >= chance_bar(_test_size(run))


@dataclass(frozen=True)
class AccuracyVerdict:
    """b's validation accuracy against a's: change and 2 standard errors (points), and the call."""

    points: float
    bound: float
    kind: str
    bar: float

    @property
    def is_effect(self) -> bool:
        return self.kind == "an effect"


def accuracy_verdict(a, b) -> AccuracyVerdict:
    """b's validation accuracy against a's, judged against 2 standard errors."""
    pa, pb = metrics.val_acc(a), metrics.val_acc(b)
    se = (accuracy_se(pa, _test_size(a)) ** 2 + accuracy_se(pb, _test_size(b)) ** 2) ** 0.5
    bar = max(chance_bar(_test_size(a)), chance_bar(_test_size(b)))
    kind = "at chance" if at_chance(a) and at_chance(b) else \
        "an effect" if abs(pb - pa) > 2 * se else "within noise"
    return AccuracyVerdict((pb - pa) * 100, 200 * se, kind, bar)


def accuracy_change(a, b) -> tuple[float, str]:
    """(points, sentence): `accuracy_verdict` of b against a, in words with its numbers."""
    v = accuracy_verdict(a, b)
    if v.kind == "at chance":
        return v.points, SAY["at_chance"].format(v=v)
    return v.points, SAY["accuracy"].format(v=v)


# -- measurements that contradict themselves ---------------------------------------------------
FAR_APART = 1.25        # identical configs whose samples/s differ by more: the machine varied
ABOVE_PERFECT = 1.05    # scaling efficiency above this: the runs differ in more than k

_NOT_THE_SAME = {"name", "seed", "monitor_interval"}  # fields that do not change the work


def far_apart(runs) -> list[str]:
    """Sentences for runs of one configuration whose samples/s differ by more than FAR_APART."""
    groups: dict[str, list] = {}
    for run in runs:
        cfg = {k: v for k, v in sorted(run.config.items()) if k not in _NOT_THE_SAME}
        groups.setdefault(repr(cfg), []).append(run)
    out = []
    for same in groups.values():
        values = [(v, r.name) for r in same if _ok(v := metrics.samples_per_sec(r))]
        if len(values) < 2:
            continue
        (low, low_name), (high, high_name) = min(values), max(values)
        if low > 0 and high / low > FAR_APART:
            out.append(SAY["far_apart"].format(low_name=low_name, high_name=high_name, low=low,
                                               high=high))
    return out


def ranked(v: Verdict, w: Verdict) -> Order:
    """v's ratio against w's: higher or lower when their ranges do not overlap."""
    if {v.kind, w.kind} & {Kind.NOT_MEASURED, Kind.TOO_FEW}:
        return Order.WITHIN_NOISE
    if v.low > w.high:
        return Order.HIGHER
    if v.high < w.low:
        return Order.LOWER
    return Order.WITHIN_NOISE
