"""Lesson 08's exercise: one rung taken out of the ladder's top rung, its samples/s predicted
and set beside what the ladder credited it with."""
from __future__ import annotations

from ...analyse import alike, metrics, noise
from ...ladder import RUNG_SETTINGS, RungName, rungs
from ..l08_summary import latest_ladder
from ...show.findings import Expect, Outcome, Page, outcome
from .base import MARK, NotYet, exercise
from .judge import finished_runs, judge_prediction, speed_verdict

PAGE = Page.of(__name__)   # the fixed sentences: text/ex08.md
# not rungs an exercise takes out: the thread count follows the load; the others are lines
APART = (RungName.NAIVE, RungName.THREADS, RungName.LONGER, RungName.ALL_GPUS)
# what a rung's verdict in the ladder expects of taking it out, and what that outcome says
# ((what it expects, Outcome), else the Outcome; None: the ladder gives no verdict on it)
UNDONE = {noise.Kind.FASTER: Expect.SLOWER, noise.Kind.SLOWER: Expect.FASTER,
          noise.Kind.WITHIN_NOISE: Expect.SAME}
WORTH = {None: PAGE.text("ladder_cannot_rule"), Outcome.CANNOT_JUDGE: PAGE.text("runs_cannot_rule"),
         (Expect.SAME, Outcome.EXPECTED): PAGE.text("same_in_both"),
         Outcome.EXPECTED: PAGE.text("worth_kept"),
         **dict.fromkeys((Outcome.NONE, Outcome.OPPOSITE), PAGE.text("worth_changed"))}
ONE_RUNG, A_RUNG_IT_HAS, RUNS = (PAGE.text(n) for n in ("one_rung", "a_rung_it_has", "runs"))
SAYS = PAGE.means("says", str)


def rung_settings(engine: str, gpu: bool) -> dict:
    """{rung: {setting it changes: its value in the rung before}} of the engine's ladder on a
    machine with a GPU or none (`ladder.rungs`: which settings a rung changes holds at any size)."""
    ladder = rungs(engine, int(gpu), quick=True)
    return {rung.name: {k: getattr(before.cfg, k) for k in RUNG_SETTINGS
                        if getattr(before.cfg, k) != getattr(rung.cfg, k)}
            for before, rung in zip(ladder, ladder[1:]) if rung.name not in APART}


def taken_out(top, mine, diff: dict) -> tuple[RungName, frozenset]:
    """The rung whose settings `mine` set back in the top rung (the last that changes all of
    them and that the top rung has on), and the settings it changes."""
    engine, keys = metrics.engine(top), set(diff)
    ladder = rung_settings(engine, metrics.on_gpu(top))
    found = [name for name, before in ladder.items() if keys <= set(before)]
    if not found:
        each = "; ".join(f"{name}: {', '.join(sorted(before))}" for name, before in ladder.items())
        raise NotYet(f"'{mine.name}' differs from '{top.name}' in {alike.words(diff, top.name, mine.name)}"
                     f": not one rung's settings. {ONE_RUNG} The {engine} ladder's rungs: {each}.")
    on = [name for name in found if all(alike.value(top, k) != v for k, v in ladder[name].items())]
    if not on:
        values = ", ".join(f"{k} {alike.value(top, k)!r}" for k in sorted(keys))
        raise NotYet(f"'{top.name}' does not have the '{found[-1]}' rung on ({values}): nothing "
                     f"to take out. {A_RUNG_IT_HAS}")
    return on[-1], frozenset(ladder[on[-1]])


def beside_ladder(top, rung: RungName, verdict: noise.Verdict) -> str:
    """What the ladder beside the runs credited `rung` with, against what taking it out cost."""
    recorded = latest_ladder(metrics.engine(top), top.path.parent)   # the runs' own folder
    ladder = [metrics.representative(r) for r in recorded]
    names = [r.name for r in ladder]
    if rung not in names or names.index(rung) == 0:
        return SAYS["no_ladder"].format(rung=rung)
    i = names.index(rung)
    credited = noise.compare(ladder[i - 1], ladder[i], varies=RUNG_SETTINGS)
    undone = UNDONE.get(credited.kind)   # what taking it out does, where it is worth the same
    found = outcome(verdict, undone) if undone else None
    return (SAYS["ladder"].format(rung=rung, under=names[i - 1], credited=credited, verdict=verdict)
            + " " + (WORTH.get((undone, found)) or WORTH[found]))


@exercise("08.1")
def _one_rung_out(runs, answer) -> str:
    """Take one rung out of the ladder's top rung and predict its samples/s."""
    top, mine = finished_runs(runs, 2, RUNS)[:2]
    diff = alike.differences(top, mine)
    diff.pop(alike.Aspect.LOAD, None)
    diff.pop(alike.Aspect.COMPILE_BACKEND, None)   # compiled or not: the graph setting says so
    if not diff:
        raise NotYet(f"'{mine.name}' runs as '{top.name}' does: set back one rung at {MARK}.")
    rung, settings = taken_out(top, mine, diff)
    changed = sorted(diff)
    verdict = speed_verdict(top, mine, changed[0], "08", also=(*changed[1:], alike.Aspect.COMPILE_BACKEND))
    said = judge_prediction(answer, verdict, top, mine)
    rest = ", ".join(sorted(settings - set(diff)))
    part = f" (part of it: the rung also sets {rest})" if rest else ""
    return (SAYS["took_out"].format(said=said, rung=rung, part=part,
                                    changes=alike.words(diff, top.name, mine.name))
            + " " + beside_ladder(top, rung, verdict))
