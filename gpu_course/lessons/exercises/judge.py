"""What the checks ask of the attendee's runs and answers, shared by the lessons'
exercises: runs that finished, two runs that differ in the one change asked for, a
samples/s verdict against noise, a prediction read against it, and the data wait's
share by blocks of steady steps, with a prediction of it read the same way."""
from __future__ import annotations

import math

from ...analyse import alike, metrics, noise
from .base import MARK, Contradicted, NotYet

# a prediction of what a change does to samples/s, and the noise verdict that bears it out
DIRECTIONS = {"faster": noise.Kind.FASTER, "slower": noise.Kind.SLOWER,
              "same": noise.Kind.WITHIN_NOISE}
# a prediction of the share of each step spent waiting for data, and what it says
# how far apart two runs of one job made one after the other can land while other programs
# share the machine, beyond what each run's own blocks show: their load moves between the
# runs. The course's 2-core machine, other programs running, measured x0.74 to x1.36 over
# repeated pairs (exercise 03.1 with aot_eager) and x0.82 to x1.19 (Gluon's 05.1)
DRIFT = 1.5
WAIT_WORDS = {"more": "more of each step waiting for data", "less": "less of each step waiting",
              "same": "the same share waiting, within noise"}


def finished_runs(runs, least: int, what: str) -> list:
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


def only_change(a, b, setting: str, also: tuple = ()) -> None:
    """Runs a and b differ in `setting` (as they ran) and in nothing else that changes the
    work (`alike.differences`), `also` and the machine's load aside."""
    if alike.value(a, setting) == alike.value(b, setting):
        raise NotYet(f"'{a.name}' and '{b.name}' have the same {setting} "
                     f"({alike.shown(a, setting)}): nothing was changed. Make the change at the "
                     f"line marked {MARK}.")
    other = alike.differences(a, b, varies=(setting, *also))
    other.pop(alike.Aspect.LOAD, None)
    if other:
        raise NotYet(f"the runs differ in more than {setting}: {alike.words(other, a.name, b.name)}. "
                     f"Change {setting} alone, so that the difference measured is its own.")


def speed_verdict(a, b, setting: str, lesson: str, also: tuple = ()) -> noise.Verdict:
    """b's samples/s against a's, judged against noise; NotYet where the runs are too short."""
    verdict = noise.compare(a, b, varies=(setting, *also))
    if verdict.kind in (noise.Kind.TOO_FEW, noise.Kind.NOT_MEASURED):
        raise NotYet(f"'{b.name}' against '{a.name}': {verdict}. Give each run more steady steps: "
                     f"gc.sizes(\"{lesson}\", exercise_size=...) with more images, then run the "
                     "exercise again.")
    return verdict


def judge_prediction(answer, verdict: noise.Verdict, a, b, untested: str = "") -> str:
    """The sentence on a prediction ("faster", "slower" or "same") of b against a; NotYet
    when it is not one of those, Contradicted when the measurement contradicts it beyond
    noise. untested: why these runs cannot test any prediction (the change they made is not
    the one predicted, e.g. a compile backend that compiles nothing), and what would; the
    verdict is then only reported."""
    if not isinstance(answer, str) or answer not in DIRECTIONS:
        raise NotYet(f"prediction={answer!r}: write down, before you run, what you expect of "
                     f"'{b.name}' against '{a.name}': one of " + ", ".join(map(repr, DIRECTIONS))
                     + ".")
    if untested:
        return (f"your prediction, {answer}, is untested: {untested} '{b.name}' against "
                f"'{a.name}' measured {verdict}.")
    if verdict.kind == noise.Kind.UNLIKE:   # only the machine's load is left (`only_change`)
        return (f"your prediction, {answer}, is untested: {verdict}. Run the exercise again "
                "while nothing else runs on the machine to put it to the test.")
    if verdict.kind == DIRECTIONS[answer]:
        return f"as you predicted ({answer}): '{b.name}' against '{a.name}' is {verdict}."
    if verdict.kind == noise.Kind.WITHIN_NOISE:
        return (f"you predicted {answer}; '{b.name}' against '{a.name}' is {verdict}: the runs "
                f"cannot tell {answer} from the same speed. Not contradicted, not shown: more "
                "images (exercise_size) or repeated runs would tell.")
    measured = next(k for k, v in DIRECTIONS.items() if v == verdict.kind)
    shared = [f"'{r.name}'" for r in (a, b) if metrics.machine_load(r)["shared"]]
    if shared and max(verdict.ratio, 1 / verdict.ratio) < DRIFT:
        return (f"your prediction, {answer}, is untested: '{b.name}' against '{a.name}' is "
                f"{verdict}, {measured}, but other programs shared the machine while "
                f"{' and '.join(shared)} ran (by the records), and between two runs made one "
                f"after the other their load moves speeds by up to ×{DRIFT:g}, more than each "
                "run's blocks show. Run the exercise again while nothing else runs to test it.")
    raise Contradicted(f"you predicted {answer}, but '{b.name}' against '{a.name}' is "
                       f"{verdict}: {measured}, beyond the runs' noise. Look at what changed in "
                       "the data wait and the compute time (gc.show) and say why; then write "
                       "the prediction the runs support.")


def wait_words(run) -> str:
    share = metrics.data_wait_share(run)
    return "not measured" if not math.isfinite(share) else f"{share:.0%}"


# the data wait's share in each block of steady steps: one definition, kept under this name
wait_blocks = metrics.wait_blocks


def wait_prediction(answer, before, after, lesson: str, labels: tuple[str, str],
                    why: str) -> tuple[str, str]:
    """(measured, sentence): what the runs show ("more", "less" or "same") and the sentence
    on a prediction ("more", "less" or "same") of the data wait's share in
    `after` against `before`, each run's blocks of steady steps its spread (the rule
    `noise.compare` applies to samples/s: their ranges apart, or overlapping); NotYet when
    the runs are too short or the answer is not one of WAIT_WORDS, Contradicted when the
    blocks contradict it. labels: how each run's share is introduced ("with 1 worker(s)");
    why: the question to ask oneself when the prediction is contradicted."""
    xs, ys = wait_blocks(before), wait_blocks(after)
    if not xs or not ys:
        raise NotYet(f"'{after.name}' against '{before.name}': too few steady steps to judge the "
                     f"data wait (a verdict needs {noise.BLOCKS * noise.MIN_STEPS} a run). Give "
                     f"each run more images: gc.sizes(\"{lesson}\", exercise_size=...), then run "
                     "the exercise again.")
    if not isinstance(answer, str) or answer not in WAIT_WORDS:
        raise NotYet(f"prediction={answer!r}: write down, before you run, what you expect of the "
                     f"share of each step spent waiting for data in '{after.name}' against "
                     f"'{before.name}': one of " + ", ".join(map(repr, WAIT_WORDS)) + ".")
    measured = "more" if min(ys) > max(xs) else "less" if max(ys) < min(xs) else "same"
    shares = (f"data wait {wait_words(before)} of the steady step time {labels[0]} (blocks "
              f"{min(xs):.0%}–{max(xs):.0%}), {wait_words(after)} {labels[1]} (blocks "
              f"{min(ys):.0%}–{max(ys):.0%})")
    if measured != answer and measured != "same":
        raise Contradicted(f"you predicted {WAIT_WORDS[answer]}; the runs say "
                           f"{WAIT_WORDS[measured]}, beyond their noise: {shares}. {why}")
    if measured == answer:
        return measured, f"as you predicted, {WAIT_WORDS[answer]}: {shares}."
    return measured, (f"you predicted {WAIT_WORDS[answer]}; the runs cannot tell it from the "
                      f"same share: {shares}. Not contradicted, not shown: more images "
                      "(exercise_size) would tell.")
