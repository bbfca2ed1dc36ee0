"""What every check asks of the runs: finished, differing in the change asked for alone,
enough steady steps; a prediction judged by `findings.Predict`, Contradicted by the runs."""
from __future__ import annotations

import math

from ...analyse import alike, metrics, noise
from ...show import findings
from ...show.findings import DRIFT, Expect, Outcome, Page, Predict
from .base import MARK, Contradicted, NotYet

PAGE = Page.of(__name__)   # the fixed sentences: text/judge.md
ASK = PAGE.means("ask", str)
# a prediction of what a change does to samples/s
SPEED = Predict("prediction", {"faster": Expect.FASTER, "slower": Expect.SLOWER,
                               "same": Expect.SAME}, ASK["speed"], PAGE.means("speed"))
# why a speed's prediction is untested: the runs' own note, or the machine's load
QUIET = PAGE.text("quiet")
UNTESTED = PAGE.means("untested", str)
# a prediction of the share of each step spent waiting for data, and what it says
NOT_SHOWN = PAGE.text("not_shown")
WAIT_WORDS = PAGE.means("wait_words", str)
WAIT = Predict("prediction", {"more": Expect.MORE, "less": Expect.LESS, "same": Expect.SAME},
               ASK["wait"], PAGE.means("wait"))
SHARE = {noise.Kind.FASTER: "more", noise.Kind.SLOWER: "less", noise.Kind.WITHIN_NOISE: "same"}
STATUS, UNFINISHED = PAGE.means("status", str), PAGE.text("unfinished")


def finished_runs(runs, least: int, what: str) -> list:
    """The runs as a flat list of at least `least` records, each finished."""
    runs = [r for r in (runs if isinstance(runs, (list, tuple)) else [runs]) if r is not None]
    if bad := [r for r in runs if not (hasattr(r, "config") and hasattr(r, "meta"))]:
        raise NotYet(f"{bad[0]!r} is not a run record: pass what gc.train or gc.record returned")
    if len(runs) < least:
        raise NotYet(f"{len(runs)} run(s) so far; {what}. Edit the lines marked {MARK} and rerun.")
    for run in runs:
        if (status := metrics.status(run)) != "finished":
            raise NotYet(STATUS.get(status, UNFINISHED).format(name=run.name, status=status))
    return runs


def only_change(a, b, setting: str, also: tuple = ()) -> None:
    """Runs a and b differ in `setting` (as they ran) and in nothing else but `also`."""
    if alike.value(a, setting) == alike.value(b, setting):
        raise NotYet(f"'{a.name}' and '{b.name}' have the same {setting} "
                     f"({alike.shown(a, setting)}): nothing was changed at {MARK}.")
    alike_but(a, b, (setting, *also), setting)


def alike_but(a, b, varies: tuple, what: str) -> None:
    """Runs (or lists of repeats) a and b differ in nothing beyond `varies` (the machine's load
    aside); else NotYet naming the rest, the change being `what` ("the guard")."""
    other = alike.differences(a, b, varies=varies)
    other.pop(alike.Aspect.LOAD, None)
    if other:
        differ = alike.words(other, *[metrics.representative(r).name for r in (a, b)])
        raise NotYet(f"the runs differ in more than {what}: {differ}. Change {what} alone.")


def one_change(a, b, same: str) -> dict:
    """The one setting runs a and b differ in (load aside), else NotYet; same: the sentence for
    runs that differ in nothing ({a}, {b})."""
    changed = alike.differences(a, b)
    changed.pop(alike.Aspect.LOAD, None)
    if len(changed) != 1:
        alone, words = f"Change one setting alone, at {MARK}.", alike.words(changed, a.name, b.name)
        raise NotYet(same.format(a=a.name, b=b.name) + " " + alone if not changed else
                     f"the runs differ in more than one thing: {words}. {alone}")
    return changed


def speed_verdict(a, b, setting: str, lesson: str, also: tuple = ()) -> noise.Verdict:
    """b's samples/s against a's, judged against noise; NotYet where the runs are too short."""
    verdict = noise.compare(a, b, varies=(setting, *also))
    if verdict.kind in (noise.Kind.TOO_FEW, noise.Kind.NOT_MEASURED):
        raise NotYet(f"'{b.name}' against '{a.name}': {verdict}. Rerun a larger "
                     f"gc.sizes(\"{lesson}\", exercise_size=...).")
    return verdict


def expects(predict: Predict, answer, **fields):
    """What `answer` predicts (`predict.answers`); NotYet asking for one where it is none."""
    if wrong := predict.wrong(answer, **fields):
        raise NotYet(wrong)
    return predict.answers[answer]


def said(predict: Predict, found: Outcome, **fields) -> str:
    """`predict`'s sentence for `found`; raised as Contradicted where the runs contradict it."""
    text = predict.says[found].format(**fields)
    if found is Outcome.OPPOSITE:
        raise Contradicted(text)
    return text


def judge_prediction(answer, verdict: noise.Verdict, a, b, untested=()) -> str:
    """The sentence on a prediction of b against a (`SPEED`), Contradicted beyond noise;
    untested: `findings.Note`s on runs that cannot test it (the verdict only reported)."""
    expect = expects(SPEED, answer, a=a.name, b=b.name)
    note = findings.untested(untested, (a, b))
    shared = [f"'{r.name}'" for r in (a, b) if metrics.machine_load(r)["shared"]]
    found = Outcome.CANNOT_JUDGE if note else findings.predicted(
        expect, verdict, DRIFT if shared else 1.0)
    fields = dict(answer=answer, a=a.name, b=b.name, verdict=verdict, untested=note,
                  shared=" and ".join(shared))
    why = UNTESTED["note" if note else verdict.kind if verdict.kind in UNTESTED else "drift"]
    return said(SPEED, found, why=why.format(**fields, quiet=QUIET, drift=DRIFT), **fields)


def wait_words(run) -> str:
    return f"{share:.0%}" if math.isfinite(share := metrics.data_wait_share(run)) else "not measured"


def enough_waits(before, after, lesson: str, size: str = "exercise_size") -> tuple:
    """Both runs' data wait blocks; NotYet asking for a larger `size` where either is too short."""
    xs, ys = metrics.wait_blocks(before), metrics.wait_blocks(after)
    if not xs or not ys:
        need = noise.BLOCKS * noise.MIN_STEPS
        raise NotYet(f"too few steady steps to judge the data wait ({need} a run needed): use a "
                     f"larger gc.sizes(\"{lesson}\", {size}=...), then rerun.")
    return xs, ys


def wait_prediction(answer, before, after, lesson: str, labels: tuple[str, str],
                    why: str) -> tuple[str, str]:
    """(measured, sentence): what the blocks show ("more", "less", "same") of the data wait in
    `after` against `before`, and the sentence (`WAIT`); why: the question for a contradiction."""
    xs, ys = enough_waits(before, after, lesson)
    expect = expects(WAIT, answer, a=before.name, b=after.name)
    verdict = findings.apart(xs, ys, "blocks of steady steps")
    spans = [f"{min(v):.0%}–{max(v):.0%}" for v in (xs, ys)]
    shares = (f"data wait {wait_words(before)} of each step {labels[0]} (blocks {spans[0]}), "
              f"{wait_words(after)} {labels[1]} (blocks {spans[1]})")
    measured = SHARE[verdict.kind]
    return measured, said(WAIT, findings.predicted(expect, verdict), words=WAIT_WORDS[answer],
                          measured=WAIT_WORDS[measured], shares=shares, why=why,
                          not_shown=NOT_SHOWN)


def reaching(rates: dict, judged: dict, best) -> list:
    """The keys of `rates` (worker counts, batches) that reach the best's rate, in order: within
    1 - KNEE of it or not slower beyond noise (`judged`: each key's verdict against the best)."""
    from ..l02_workers import KNEE
    return sorted(n for n in rates if n == best or rates[n] >= KNEE * rates[best]
                  or judged[n].kind != noise.Kind.SLOWER)
