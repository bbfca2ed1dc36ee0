"""Lesson 03: a graph instead of Python, `hybridize()` (Gluon) / `torch.compile` (PyTorch),
each network against its own first run; `BY_HAND`: a CUDA graph captured by hand."""
from __future__ import annotations

import pandas as pd

from ..analyse import alike, anatomy, noise
from ..show import report
from ..show.closing import Closing
from ..show.findings import Compare, Expect, Lesson, Note, Page, Quote, judge
from . import talk

SIZES = {
    "full": dict(train_size=50_000, test_size=10_000, epochs=2,
                 warmup_steps=10,               # the first graph steps build (compile) the graph
                 compile_backend="inductor", exercise_size=10_240,
                 exercise_model="resnet56"),    # a network the lesson does not compile
    # inductor needs a minute a network on 2 cores; aot_eager only traces (no speed-up);
    # 23 steady steps: enough for a noise verdict
    "smoke": dict(train_size=384, test_size=256, epochs=1, warmup_steps=3,
                  compile_backend="aot_eager", exercise_size=1_664, exercise_model="tiny"),
    "check": dict(train_size=10_240, test_size=2_048, epochs=2, exercise_size=5_120),
}
OWN_SIZES = ("compile_backend", "exercise_model", "exercise_size")


def by_model(runs) -> dict:
    """The runs grouped by network, in order of first appearance."""
    groups: dict = {}
    for run in runs:
        groups.setdefault(run.config.get("model", "?"), []).append(run)
    return groups


def table(runs) -> pd.DataFrame:
    """Each network's runs against its own first (as written), and the first epoch's time."""
    groups = by_model(runs)
    frame = pd.concat([report.ladder_table(rs) for rs in groups.values()], ignore_index=True)
    frame["first epoch (s)"] = [float(r.epochs.epoch_time_s.iloc[0]) if len(r.epochs) else float("nan")
                                for rs in groups.values() for r in rs]
    return frame


PAGE = Page.of(__name__)   # the paragraphs: text/l03_graph.md
LESSON = Lesson(
    compares=(Compare(varies=("graph", alike.Aspect.COMPILE_BACKEND), gpu=Expect.FASTER,
                      cpu=Expect.SAME, means=PAGE.means("graph")),),
    group_by="model",
    rank_by="network.parameters",
    rank={noise.Order.HIGHER: f"The smaller network gained more, as {talk.SOURCE} says: more of "
                              "its step is the per-operator overhead a graph removes.",
          noise.Order.LOWER: f"The larger network gained more, unlike {talk.SOURCE}'s rule."},
    columns=PAGE.means("first_epoch", str),
    notes=(Note("compile_backend", ("aot_eager", "eager"), PAGE.text("tracing_backend"),
                judged=False),),
    cpu=PAGE.means("no_gpu", str),
    quotes=(Quote("one worker-fed GPU, imperative", talk.WORKERS_SAMPLES_PER_SEC,
                  "{:,} samples/s"),
            Quote("hybridized", talk.HYBRID_SAMPLES_PER_SEC, "{:,} samples/s")),
    hardware=talk.HARDWARE,
)

# the notebook's own loop, eager and captured as one CUDA graph a step
BY_HAND = Lesson(
    compares=(Compare(varies=("graph",), gpu=Expect.FASTER, means=PAGE.means("by_hand")),),
    baseline={"graph": "eager"},
    bound=PAGE.means("bound", anatomy.Bound),
    empty=PAGE.text("no_capture"),
)


def conclude(runs=None, by_hand=None) -> Closing:
    """The networks as written and as graphs (`LESSON`); or by_hand= (the loop eager and as one
    captured CUDA graph, [] without a GPU: `BY_HAND`)."""
    if by_hand is not None:
        return judge(BY_HAND, by_hand, table(by_hand) if by_hand else None)
    if runs is None:
        raise ValueError("pass runs or by_hand= (the loop eager and CUDA-graphed; [] on a CPU)")
    runs = [r for rs in by_model(runs).values() for r in rs]
    return judge(LESSON, runs, table(runs))
