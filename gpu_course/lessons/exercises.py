"""The lessons' exercises: one change, a prediction, a measurement, and a check of it.

Each lesson ends with an exercise cell (tagged "exercise" in the notebook) whose lines
marked `# >>>` are the attendee's to change, and a check cell (tagged "check"):

    gc.check("02.1", runs, answer)    # judges the attendee's own runs, from their records
    gc.solution("02.1")               # prints this track's solution (notebooks/solutions/)

A check reads the runs' records, never the machine the notebook runs on, and never
compares with a typed number. It returns a `Result`: passed, with a sentence computed from
the runs, or "not yet", with what is wrong and how to fix it. It fails when the runs are
not the experiment asked for (missing, unfinished, a different change, or differing in
more than the one change) or too short to judge, and when the attendee's answer is
contradicted by the measurement beyond noise: samples/s by `noise.compare` (blocks of
steady steps), the data wait by the same rule on its blocks (`wait_blocks`), accuracy by
two binomial standard errors of the validation set (`noise.accuracy_se`). An answer the
runs cannot tell from its alternatives (within noise, at chance, or a machine shared with
other programs for one run) is accepted, and the sentence says it is untested and how to
test it. No deep-learning framework here.

    01.1  another worker count in the naive script: the data wait's share, predicted
    02.1  a sweep of worker counts: its knee, named
    03.1  a third network as a graph: its samples/s, predicted
    05.1  a larger batch: its samples/s, predicted; its accuracy after the same epochs, read
    06.1  a race of learning-rate schedules: the first to the constant rate's accuracy, named
"""
from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from ..analyse import alike, metrics, noise
from ..measure.records import REPO_ROOT
from .l02_workers import KNEE

SOLUTIONS = REPO_ROOT / "notebooks" / "solutions"   # <track>/<NN>_<lesson>.py, one section an exercise
TRACKS = ("gluon", "pytorch")
MARK = "# >>>"                                       # the attendee's lines in an exercise cell
# a prediction of what a change does to samples/s, and the noise verdict that bears it out
DIRECTIONS = {"faster": noise.Kind.FASTER, "slower": noise.Kind.SLOWER,
              "same": noise.Kind.WITHIN_NOISE}


class NotYet(Exception):
    """The runs or the answer do not do what the exercise asks; the message says what is
    wrong and how to fix it."""


@dataclass(frozen=True)
class Result:
    """A check's outcome: passed or not, and the sentence that says why."""

    exercise: str
    passed: bool
    message: str

    def __str__(self) -> str:
        head = "passed" if self.passed else "not yet"
        return f"Exercise {self.exercise}, {head}: {self.message}"

    __repr__ = __str__

    def __bool__(self) -> bool:
        return self.passed


@dataclass(frozen=True)
class Exercise:
    """One exercise: its id ("02.1": lesson 02, first exercise), what it asks, and the
    check that reads the attendee's runs and answer, returning the pass sentence or
    raising NotYet."""

    id: str
    asks: str
    judge: Callable

    @property
    def lesson(self) -> str:
        return self.id.split(".")[0]


EXERCISES: dict[str, Exercise] = {}


def exercise(id: str, asks: str):
    """Register the decorated function as exercise `id`'s check."""
    def register(judge):
        EXERCISES[id] = Exercise(id, asks, judge)
        return judge
    return register


def find(id) -> Exercise:
    key = str(id).strip()
    if key not in EXERCISES:
        raise ValueError(f"exercise={id!r} is not an exercise; allowed: {', '.join(sorted(EXERCISES))}")
    return EXERCISES[key]


def check(id, runs, answer=None) -> Result:
    """Exercise `id`'s check on the attendee's `runs` and `answer`: a Result that passes
    with a sentence computed from the runs, or says what is not yet right."""
    ex = find(id)
    try:
        return Result(ex.id, True, ex.judge(runs, answer))
    except NotYet as why:
        return Result(ex.id, False, str(why))


def solution_text(id, track: str) -> str:
    """The solution of exercise `id` in `track`: its section of
    notebooks/solutions/<track>/<NN>_*.py (the whole exercise cell, solved)."""
    ex = find(id)
    if track not in TRACKS:
        raise ValueError(f"track={track!r} is not a track; allowed: {', '.join(TRACKS)}")
    files = sorted((SOLUTIONS / track).glob(f"{ex.lesson}_*.py"))
    if len(files) != 1:
        raise FileNotFoundError(f"no solutions file for lesson {ex.lesson} in {SOLUTIONS / track}")
    sections = solution_sections(files[0].read_text())
    if ex.id not in sections:
        raise KeyError(f"{files[0]} has no section '# %% exercise {ex.id}'")
    return sections[ex.id]


def solution_sections(text: str) -> dict[str, str]:
    """{exercise id: code} of a solutions file, whose sections start `# %% exercise <id>`."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        found = re.match(r"# %% exercise (\d\d\.\d+)\s*$", line)
        if found:
            current = found.group(1)
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return {k: "\n".join(v).strip("\n") + "\n" for k, v in out.items()}


def solution(id, track: str) -> None:
    """Print exercise `id`'s solution for `track`, to compare with your own after trying."""
    print(solution_text(id, track))


# -- what every check asks of the runs -------------------------------------------------------

def _runs(runs, least: int, what: str) -> list:
    """The runs as a flat list of at least `least` records, each finished."""
    if runs is None:
        runs = []
    if not isinstance(runs, (list, tuple)):
        runs = [runs]
    runs = [r for r in runs if r is not None]
    bad = [r for r in runs if not (hasattr(r, "config") and hasattr(r, "meta"))]
    if bad:
        raise NotYet(f"{bad[0]!r} is not a run record: pass what gc.train or gc.record returned")
    if len(runs) < least:
        raise NotYet(f"{len(runs)} run(s) so far; {what}. Change the lines marked {MARK} and "
                     "run the exercise cell.")
    for run in runs:
        status = metrics.status(run)
        if status == "oom":
            raise NotYet(f"'{run.name}' ran out of device memory: its batch does not fit this "
                         "device. That is the limit; choose a smaller batch and run again.")
        if status != "finished":
            raise NotYet(f"'{run.name}' did not finish (status {status}): fix what stopped it "
                         "(its error is in the cell above) and run the exercise again.")
    return list(runs)


def _only_change(a, b, setting: str, also: tuple = ()) -> None:
    """Runs a and b differ in `setting` (as they ran) and in nothing else that changes the
    work (`alike.differences`), `also` and the machine's load aside."""
    if alike.value(a, setting) == alike.value(b, setting):
        raise NotYet(f"'{a.name}' and '{b.name}' have the same {setting} "
                     f"({alike.value(a, setting)}): nothing was changed. Make the change at the "
                     f"line marked {MARK}.")
    other = alike.differences(a, b, varies=(setting, *also))
    other.pop(alike.Aspect.LOAD, None)
    if other:
        raise NotYet(f"the runs differ in more than {setting}: {alike.words(other, a.name, b.name)}. "
                     f"Change {setting} alone, so that the difference measured is its own.")


def _verdict(a, b, setting: str, lesson: str, also: tuple = ()) -> noise.Verdict:
    """b's samples/s against a's, judged against noise; NotYet where the runs are too short."""
    verdict = noise.compare(a, b, varies=(setting, *also))
    if verdict.kind in (noise.Kind.TOO_FEW, noise.Kind.NOT_MEASURED):
        raise NotYet(f"'{b.name}' against '{a.name}': {verdict}. Give each run more steady steps: "
                     f"gc.sizes(\"{lesson}\", exercise_size=...) with more images, then run the "
                     "exercise again.")
    return verdict


def _direction(answer, verdict: noise.Verdict, a, b) -> str:
    """The sentence on a prediction ("faster", "slower" or "same") of b against a; NotYet
    when the measurement contradicts it beyond noise."""
    if not isinstance(answer, str) or answer not in DIRECTIONS:
        raise NotYet(f"prediction={answer!r}: write down, before you run, what you expect of "
                     f"'{b.name}' against '{a.name}': one of " + ", ".join(map(repr, DIRECTIONS))
                     + ".")
    if verdict.kind == noise.Kind.UNLIKE:   # only the machine's load is left (`_only_change`)
        return (f"your prediction, {answer}, is untested: {verdict}. Run the exercise again "
                "while nothing else runs on the machine to put it to the test.")
    if verdict.kind == DIRECTIONS[answer]:
        return f"as you predicted ({answer}): '{b.name}' against '{a.name}' is {verdict}."
    if verdict.kind == noise.Kind.WITHIN_NOISE:
        return (f"you predicted {answer}; '{b.name}' against '{a.name}' is {verdict}: the runs "
                f"cannot tell {answer} from the same speed. Not contradicted, not shown: more "
                "images (exercise_size) or repeated runs would tell.")
    measured = next(k for k, v in DIRECTIONS.items() if v == verdict.kind)
    raise NotYet(f"you predicted {answer}, but '{b.name}' against '{a.name}' is {verdict}: "
                 f"{measured}, beyond the runs' noise. Look at what changed in the data wait and "
                 "the compute time (gc.show) and say why; then write the prediction the runs "
                 "support.")


def _wait(run) -> str:
    share = metrics.data_wait_share(run)
    return "not measured" if not math.isfinite(share) else f"{share:.0%}"


# -- the exercises ---------------------------------------------------------------------------

def wait_blocks(run) -> list[float]:
    """The data wait's share of the step time in each of `noise.BLOCKS` equal blocks of the
    run's steady steps: the spread that stands in for repeats of one run (as samples/s's
    blocks do in `noise.compare`)."""
    steps = run.steps
    if not len(steps):
        return []
    steady = steps[pd.to_numeric(steps["timed"], errors="coerce") == 1]
    wait = pd.to_numeric(steady["data_wait_s"], errors="coerce").to_numpy()
    total = wait + pd.to_numeric(steady["compute_s"], errors="coerce").to_numpy()
    size = len(steady) // noise.BLOCKS
    if size < noise.MIN_STEPS:
        return []
    return [float(wait[i * size:(i + 1) * size].sum() / total[i * size:(i + 1) * size].sum())
            for i in range(noise.BLOCKS)]


WAIT_WORDS = {"more": "more of each step waiting for data", "less": "less of each step waiting",
              "same": "the same share waiting, within noise"}


@exercise("01.1", "Change the naive script's worker count and predict its data wait.")
def _naive_workers(runs, answer) -> str:
    before, after = _runs(runs, 2, "the exercise compares two runs: the naive script and your "
                          "change of it")[:2]
    _only_change(before, after, "num_workers")
    xs, ys = wait_blocks(before), wait_blocks(after)
    if not xs or not ys:
        raise NotYet(f"'{after.name}' against '{before.name}': too few steady steps to judge the "
                     f"data wait (a verdict needs {noise.BLOCKS * noise.MIN_STEPS} a run). Give "
                     "each run more images: gc.sizes(\"01\", exercise_size=...), then run the "
                     "exercise again.")
    if not isinstance(answer, str) or answer not in WAIT_WORDS:
        raise NotYet(f"prediction={answer!r}: write down, before you run, what you expect of the "
                     f"share of each step spent waiting for data in '{after.name}' against "
                     f"'{before.name}': one of " + ", ".join(map(repr, WAIT_WORDS)) + ".")
    # the blocks' ranges apart or overlapping: the rule `noise.compare` applies to samples/s
    measured = "more" if min(ys) > max(xs) else "less" if max(ys) < min(xs) else "same"
    shares = (f"data wait {_wait(before)} of the steady step time with "
              f"{alike.value(before, 'num_workers')} worker(s) (blocks {min(xs):.0%}–{max(xs):.0%}), "
              f"{_wait(after)} with {alike.value(after, 'num_workers')} (blocks "
              f"{min(ys):.0%}–{max(ys):.0%})")
    if measured != answer and measured != "same":
        raise NotYet(f"you predicted {WAIT_WORDS[answer]}; the runs say {WAIT_WORDS[measured]}, "
                     f"beyond their noise: {shares}. Where does the loading happen with "
                     f"{alike.value(after, 'num_workers')} worker(s), and does the training loop "
                     "wait for it?")
    said = (f"as you predicted, {WAIT_WORDS[answer]}: {shares}." if measured == answer else
            f"you predicted {WAIT_WORDS[answer]}; the runs cannot tell it from the same share: "
            f"{shares}. Not contradicted, not shown: more images (exercise_size) would tell.")
    speed = noise.compare(before, after, varies=("num_workers",))
    said += f" Samples/s, '{after.name}' against '{before.name}': {speed}"
    if measured == "less" and not metrics.on_gpu(before) and speed.kind != noise.Kind.FASTER:
        said += (": without a GPU the workers and the model share the CPU's cores, so waiting "
                 "less need not mean training faster")
    return said + "."


@exercise("02.1", "Sweep the worker count and name the knee: where samples/s stops growing.")
def _knee(runs, answer) -> str:
    runs = _runs(runs, 3, "a knee needs a sweep of at least three worker counts")
    first = runs[0]
    for run in runs[1:]:
        other = alike.differences(first, run, varies=("num_workers",))
        other.pop(alike.Aspect.LOAD, None)
        if other:
            raise NotYet(f"the sweep's runs differ in more than num_workers: "
                         f"{alike.words(other, first.name, run.name)}. Change the worker count alone.")
    counts = [int(alike.value(r, "num_workers") or 0) for r in runs]
    tried = ", ".join(map(str, sorted(set(counts))))
    if len(set(counts)) < 3:
        raise NotYet(f"the sweep tried {len(set(counts))} worker count(s) ({tried}); a knee "
                     "needs at least three different ones.")
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real) or int(answer) not in counts:
        raise NotYet(f"knee={answer!r}: name one of the worker counts the sweep tried ({tried}): "
                     f"the fewest workers within {1 - KNEE:.0%} of the best samples/s, or within "
                     "its noise.")
    rates = [metrics.samples_per_sec(r) for r in runs]
    best = runs[max(range(len(runs)), key=lambda i: rates[i] if math.isfinite(rates[i]) else -1)]
    best_n = counts[runs.index(best)]
    waits = ", ".join(f"{n} worker(s) {_wait(r)}" for n, r in sorted(zip(counts, runs), key=lambda p: p[0]))
    judged = {n: _verdict(best, r, "num_workers", "02") for n, r in zip(counts, runs) if r is not best}

    def reaches(n) -> bool:   # the knee's rule: near the best, or not beaten by it beyond noise
        return n == best_n or rates[counts.index(n)] >= KNEE * rates[runs.index(best)] \
            or judged[n].kind != noise.Kind.SLOWER

    knee = int(answer)
    if not reaches(knee):
        raise NotYet(f"with {knee} worker(s) the sweep is below {KNEE:.0%} of the best ({best_n} "
                     f"workers) and slower beyond noise: {judged[knee]}. Samples/s still grows past "
                     f"{knee}. Data wait by workers: {waits}.")
    fewest = min(n for n in counts if reaches(n))
    said = (f"knee at {knee} worker(s): " + ("the fastest of the sweep." if knee == best_n else
            f"against the best ({best_n} workers), {judged[knee]}."))
    if fewest < knee:
        said += f" {fewest} worker(s) reach the best as closely: the knee may lie lower."
    if any(v.kind == noise.Kind.UNLIKE for v in judged.values()):
        said += (" Other programs loaded the machine during some runs and not others: the "
                 "sweep cannot place the knee for sure; run it again on a quiet machine.")
    return said + f" Data wait by workers: {waits}: more workers can remove no more than that."


@exercise("03.1", "Turn a network the lesson did not into a graph and predict its samples/s.")
def _graph(runs, answer) -> str:
    before, after = _runs(runs, 2, "the exercise compares two runs: the network as written and "
                          "the same network as a graph")[:2]
    _only_change(before, after, "graph", also=(alike.Aspect.COMPILE_BACKEND,))
    if alike.value(before, "graph") != "eager":
        raise NotYet(f"'{before.name}' ran with graph={alike.value(before, 'graph')}: the first "
                     "run is the network as written (eager / imperative), the second its graph.")
    verdict = _verdict(before, after, "graph", "03", also=(alike.Aspect.COMPILE_BACKEND,))
    said = _direction(answer, verdict, before, after)
    model = alike.value(before, "model")
    step = metrics.steadiness(before)["step_p50_s"]
    batch = int(before.config.get("batch_size") or 0)
    backend = alike.value(after, alike.Aspect.COMPILE_BACKEND)
    note = (f" (compile backend {backend}: it traces the graph and generates no new kernels, so "
            "expect no speed-up from it)" if backend == "aot_eager" else "")
    return (f"{said} {model}'s median step as written: {1e3 * step:.3g} ms for {batch} images; "
            f"a graph saves the Python work around each operator, which matters most where the "
            f"operators themselves are short{note}.")


@exercise("05.1", "Train a larger batch, predict its samples/s, and read what it cost in accuracy.")
def _larger_batch(runs, answer) -> str:
    small, large = _runs(runs, 2, "the exercise compares two runs: the lesson's smallest batch "
                         "and your larger one")[:2]
    _only_change(small, large, "batch_size")
    if int(alike.value(large, "batch_size")) < int(alike.value(small, "batch_size")):
        raise NotYet(f"'{large.name}' has the smaller batch: the exercise asks for a larger one "
                     "than the first run's.")
    said = _direction(answer, _verdict(small, large, "batch_size", "05"), small, large)
    _, accuracy = noise.accuracy_change(small, large)
    steps = metrics.steady_steps(small), metrics.steady_steps(large)
    return (f"{said} Validation accuracy after the same epochs, the larger batch against the "
            f"smaller: {accuracy}. The larger batch took {steps[1]} steady steps where the smaller "
            f"took {steps[0]}: fewer updates at the same learning rate, which is why lesson 05 "
            "scales the rate with the batch and warms it up.")


@exercise("06.1", "Race schedules: which first reaches the accuracy the constant rate ends with?")
def _race(runs, answer) -> str:
    from .l06_schedules import CONSTANT, SCHEDULE_FIELDS
    runs = _runs(runs, 2, "a race needs the constant rate (lr_scheduler='none') and at least "
                 "one schedule")
    schedule = {r: alike.value(r, "lr_scheduler") for r in runs}
    constant = next((r for r in runs if schedule[r] == CONSTANT), None)
    if constant is None:
        raise NotYet(f"no run has the constant rate (lr_scheduler='{CONSTANT}'): its final accuracy "
                     "is the target of the race. Add it to the schedules raced.")
    if len(set(schedule.values())) < len(runs):
        raise NotYet("a schedule ran twice (" + ", ".join(sorted(map(str, schedule.values())))
                     + "): race each one once, so that a name says which run.")
    for run in runs:
        other = alike.differences(constant, run, varies=(*SCHEDULE_FIELDS, "warmup_epochs"))
        other.pop(alike.Aspect.LOAD, None)
        if other:
            raise NotYet(f"the runs differ in more than their schedule: "
                         f"{alike.words(other, constant.name, run.name)}. Change the schedule alone.")
    by_name = {schedule[r]: r for r in runs}
    if not isinstance(answer, str) or answer not in by_name:
        raise NotYet(f"first={answer!r}: name one of the schedules raced ("
                     + ", ".join(map(repr, by_name)) + "): the one whose validation accuracy "
                     "first reached the constant rate's final one.")
    target, images = metrics.val_acc(constant), int(constant.config.get("test_size") or 0)
    margin = 2 * noise.accuracy_se(target, images)
    curves = {name: list(pd.to_numeric(r.epochs["val_acc"], errors="coerce")) for name, r in by_name.items()}
    reached = {name: next((i + 1 for i, acc in enumerate(accs) if acc >= target), None)
               for name, accs in curves.items()}
    mine = reached[answer]
    where = "; ".join(f"{name} " + (f"epoch {e}" if e else "never") for name, e in reached.items())
    if mine is None:
        raise NotYet(f"'{answer}' never reached the target, {target:.1%} (the constant rate's final "
                     f"val acc): {where}. Name one that did.")
    ahead = [(name, e) for name, e in reached.items()
             if e is not None and e < mine and curves[answer][e - 1] < target - margin]
    if ahead:
        name, e = min(ahead, key=lambda p: p[1])
        raise NotYet(f"'{name}' reached the target, {target:.1%}, at epoch {e}, when '{answer}' "
                     f"was at {curves[answer][e - 1]:.1%}: below it by more than 2 standard errors "
                     f"({margin:.1%} on {images:,} images). First to reach it: {where}.")
    seconds = pd.to_numeric(by_name[answer].epochs["epoch_time_s"], errors="coerce").iloc[:mine].sum()
    said = (f"'{answer}' reached {target:.1%}, the constant rate's final val acc, at epoch {mine}, "
            f"after {seconds:.1f} s of training; no schedule reached it earlier beyond noise "
            f"(2 standard errors: {margin:.1%} on {images:,} images). Reached: {where}.")
    if noise.at_chance(constant):
        said += (" But the target is within noise of chance: the race is untested at this size; "
                 "train more epochs (gc.sizes(\"06\", epochs=...)) for one that tells.")
    return said
