"""Lesson 03: a graph instead of Python, `hybridize()` (Gluon) / `torch.compile` (PyTorch).

Each network is trained as written (imperative / eager), then as a graph; the table
gives each network's variants against its own first run, and the closing says which
network gained more, against the talk's rule that small networks and small batches gain
most (Python's per-operator overhead is a larger share of their step). PyTorch's lesson
also captures its own loop's whole step as a CUDA graph by hand (`by_hand=`: on a GPU).
"""
from __future__ import annotations

import pandas as pd

from ..analyse import anatomy, metrics, noise
from ..show import report
from ..show.closing import Closing
from . import talk

SIZES = {
    "full": dict(train_size=50_000, test_size=10_000, epochs=2,
                 warmup_steps=10,               # the first graph steps build (compile) the graph
                 compile_backend="inductor",
                 exercise_size=10_240,          # images of each exercise run
                 exercise_model="resnet56"),    # a network the lesson does not compile
    # inductor needs about a minute a network on 2 CPU cores; aot_eager only traces the graph:
    # the lesson's code path, without its speed-up
    "smoke": dict(train_size=768, test_size=256, epochs=1, warmup_steps=3,
                  compile_backend="aot_eager",
                  exercise_size=1_664,           # 23 steady steps: enough for a noise verdict
                  exercise_model="tiny"),       # the cheapest network, in CI
    # inductor and CUDA graphs as at full size: compiling dominates the check's time
    "check": dict(train_size=10_240, test_size=2_048, epochs=2, exercise_size=5_120),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("compile_backend", "exercise_model", "exercise_size")
WORDS = {"gluon": ("imperative", "hybridized"), "pytorch": ("eager", "compiled")}


def by_model(runs) -> dict:
    """The runs grouped by the network they trained, in order of first appearance."""
    groups: dict = {}
    for run in runs:
        groups.setdefault(run.config.get("model", "?"), []).append(run)
    return groups


def table(runs) -> pd.DataFrame:
    """Each network's runs, the speed-up against its own first (as-written) run, and the
    first epoch's time (it holds the graph's building or compiling)."""
    groups = by_model(runs)
    frame = pd.concat([report.ladder_table(rs) for rs in groups.values()], ignore_index=True)
    frame["first epoch (s)"] = [float(r.epochs.epoch_time_s.iloc[0]) if len(r.epochs) else float("nan")
                                for rs in groups.values() for r in rs]
    return frame


def conclude(runs=None, by_hand=None) -> Closing:
    """The networks' runs as written and as graphs; or by_hand (the notebook's loop run
    eagerly and as one captured CUDA graph; empty without a GPU): the capture's gain."""
    if by_hand is not None:
        return _by_hand(list(by_hand))
    if runs is None:
        raise ValueError("lesson 03 concludes on runs, or by_hand= (the loop eager and captured "
                         "as a CUDA graph, [] without a GPU); neither was passed")
    runs = list(runs)
    groups = by_model(runs)
    say = Closing(table(runs), [r for rs in groups.values() for r in rs], varies=("graph",))
    track = metrics.engine(runs[0])
    plain, graph = WORDS.get(track, WORDS["gluon"])
    best = {}
    for model, rs in groups.items():
        verdicts = [say.compare(rs[0], run) for run in rs[1:]]
        for run, verdict in zip(rs[1:], verdicts):
            say(f"'{run.name}' against '{rs[0].name}': {verdict}.")
        if verdicts:
            best[model] = max(verdicts, key=lambda v: v.ratio)
    backend = (runs[-1].meta.get("ran") or {}).get("compile_backend")
    if track == "pytorch" and backend not in (None, "inductor"):
        say(f"The '{backend}' backend traces the graph but generates no fused kernels: the code "
            "path ran, and whatever the verdicts above say is not compiling's speed-up. Run at "
            "full size (inductor) to see it.")
    elif len(best) == 2:
        (small, v_small), (large, v_large) = sorted(
            best.items(), key=lambda kv: _parameters(groups[kv[0]][0]))
        order = noise.ranked(v_small, v_large)
        if not any(v.is_effect for v in best.values()):
            say(f"Neither network's {graph} variant differs from its {plain} run beyond noise.")
        elif order == noise.Order.WITHIN_NOISE:
            say("Which network gained more is within noise: the ranges of their better variants "
                "overlap.")
        elif order == noise.Order.HIGHER:
            say(f"{small}, the smaller network, gained more, beyond both ranges, as {talk.SOURCE} "
                "says: it does little work per operator, so the per-operator overhead a graph "
                "removes (Python's, and on a GPU the launches') is a larger share of its step.")
        else:
            say(f"{large}, the larger network, gained more, beyond both ranges: unlike the rule "
                f"of thumb in {talk.SOURCE} (small networks and small batches gain most).")
    for model, rs in groups.items():
        if len(rs) > 1 and track == "pytorch":
            say(f"Compiling {model}: its first epoch took "
                f"{say.cell(rs[1], 'first epoch (s)', '{:.1f} s')} against "
                f"{say.cell(rs[0], 'first epoch (s)', '{:.1f} s')} {plain}; a compilation pays "
                "back only over a long enough run.")
            break
    if not any(metrics.on_gpu(r) for r in runs):
        say("Measured on the CPU, where there are no kernel launches to save"
            + ("; CUDA graphs (mode=\"reduce-overhead\") need a GPU and were skipped."
               if track == "pytorch" else
               f"; {talk.SOURCE}'s {say.quote(talk.SOURCE, talk.WORKERS_SAMPLES_PER_SEC, '{:,} samples/s')} "
               f"→ {say.quote(talk.SOURCE, talk.HYBRID_SAMPLES_PER_SEC, '{:,} samples/s')} were "
               f"{talk.HARDWARE}'s."))
    return say


# what the eager loop's anatomy says one replay a step can remove
WHY_BY_BOUND = {
    anatomy.Bound.HOST: "its GPU waited for the host to dispatch each operator, and that dispatch "
                        "is what one replay a step removes",
    anatomy.Bound.GPU: "its kernels, not their launches, filled each step, so one launch a step "
                       "had little to remove: precision (lesson 04) shortens the kernels",
    anatomy.Bound.DATA: "it waited for its batches, and a graph does not make the loader faster "
                        "(lesson 02)",
}


def _by_hand(runs) -> Closing:
    if not runs:
        say = Closing(pd.DataFrame([{"rung": "CUDA graph by hand"}]))
        say("CUDA graphs need an NVIDIA GPU and this machine has none, so the capture above did "
            "not run. On a GPU the cell trains the loop eagerly, then as one captured graph a "
            "step, and compares the two here.")
        return say
    eager = [r for r in runs if r.config.get("graph") == "eager"]
    captured = [r for r in runs if r.config.get("graph") == "static"]
    if len(eager) != 1 or not captured or len(eager) + len(captured) != len(runs):
        raise ValueError("by_hand= takes the loop's eager run (graph='eager') and its captured "
                         "run(s) (graph='static'); got graphs "
                         + ", ".join(str(r.config.get("graph")) for r in runs))
    say = Closing(table(runs), runs, varies=("graph",))
    for run in captured:
        say(f"'{run.name}' against '{eager[0].name}': {say.compare(eager[0], run)}.")
    bound = anatomy.anatomy(eager[0]).bound
    if bound in WHY_BY_BOUND:
        say(f"The eager loop was {bound}: {WHY_BY_BOUND[bound]}.")
    return say


def _parameters(run) -> int:
    return int(((run.meta.get("ran") or {}).get("network") or {}).get("parameters") or 0)
