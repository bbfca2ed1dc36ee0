"""Lesson 12: profilers. cProfile of the input pipeline, the framework's profiler around a
few steps, and what limits the run: the profiler's verdict (the trace's split of a step,
or the course's step timers where the build has no profiler) against the mock ceilings
of lesson 10, each method judged on its own numbers.

The ceilings' verdict here is theirs alone: which ceiling is lower and how near the run
comes to it (diagnose's thresholds), never the data-wait threshold the step timers use,
so "the two methods agree" compares two methods. No deep-learning framework here.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..analyse import diagnose, metrics
from ..show.closing import Closing

SIZES = {
    "full": dict(model="resnet20", train_size=10_000, test_size=64, epochs=1, batch_size=64,
                 warmup_steps=1,
                 input_steps=100,      # batches fetched under cProfile
                 ceiling_steps=100,    # steps of each mock-ceiling run
                 wait=1, warmup=1, active=5,    # the profiler's schedule, in steps
                 torch_threads=None),           # the exercise's PyTorch intra-op threads (None: its default)
    # a small CNN and 24 steps a run: enough steady steps for the ceilings to rule
    "smoke": dict(model="tiny", train_size=768, test_size=64, epochs=1, batch_size=32,
                  warmup_steps=1, input_steps=8, ceiling_steps=24, wait=1, warmup=1, active=2,
                  torch_threads=1),   # a thread a core collapses while other programs share CI's 2
    "check": dict(train_size=5_000),
}
NOT_INPUT_BOUND = "not input-bound"   # all the step timers can say against input-bound
CEILINGS = {"loader": ("compute ceiling", "compute-bound"),    # mock="loader": one batch, forever
            "trainer": ("input ceiling", "input-bound")}       # mock="trainer": fetch and drop


def table(runs) -> pd.DataFrame:
    """The run and its mock ceilings: samples/s with the spread of its blocks, the share
    of step time spent waiting for data, and the steady steps behind each. No speed-up
    column: a ceiling bounds the run, it is not a rung of it."""
    rows = []
    for run in runs:
        low, high = metrics.samples_per_sec_range(run)
        rows.append({"rung": run.name, "samples_per_sec": metrics.samples_per_sec(run),
                     "samples_per_sec_min": low, "samples_per_sec_max": high,
                     "data_wait_share": metrics.data_wait_share(run),
                     "steady steps": int(metrics.steadiness(run)["steady_steps"])})
    return pd.DataFrame(rows)


def conclude(runs, top=None, split=None) -> Closing:
    """top (the input pipeline's cProfile table, as shown): its sentence. Otherwise what
    limits the run (runs[0]; its mock ceilings among `runs`): the profiler's verdict
    (split: `profiling.trace_split` of its trace; without one, the step timers) against
    the ceilings' own."""
    if top is not None:
        return _input(top)
    runs = list(runs)
    run = next(r for r in runs if _mock(r) == "none")
    ceilings = {_mock(r): r for r in runs if _mock(r) in CEILINGS}
    frame = table(runs)
    if split is not None:
        from ..analyse.profiling import split_table
        frame = pd.concat([frame, split_table(split).rename(columns={"part": "rung"})],
                          ignore_index=True)
    say = Closing(frame)
    if split is not None:
        found, source = _trace(say, run, split), "trace"
    else:
        found, source = _timers(say, run), "step timers"
    reading = _ceilings(say, run, ceilings)
    if found is None or reading is None:
        return say
    agree = found == reading or (found == NOT_INPUT_BOUND and reading != "input-bound")
    if agree:
        say(f"The {source} and the ceilings agree: {found.upper()}.")
    elif split is not None:
        say(f"The {source} and the ceilings disagree: the trace covers {split['steps']} steps, "
            "the ceilings whole runs (and on a busy CPU every step differs).")
    else:
        say(f"The {source} and the ceilings disagree: the timers count how long each step "
            "waited for its batch, the ceilings how fast each side runs alone; "
            + ("with both on the GPU's host, a longer run or a trace would tell which holds."
               if metrics.on_gpu(run) else "on a CPU the loader's workers and the model share "
               "the cores, so each slows the other, and the wait and the ceilings can point "
               "different ways."))
    return say


# -- the input pipeline ------------------------------------------------------------------
def _input(top) -> Closing:
    say = Closing(pd.DataFrame(top).reset_index(drop=True), key="function")
    first = say.table["function"].iloc[0]
    say(f"cProfile of the input pipeline: the most expensive function is {first}, with "
        f"{say.cell(0, 'own_%', '{:.0f}%')} of the time in its own code over "
        f"{say.cell(0, 'calls')} calls, {say.cell(0, 'own_per_call_ms')} ms per call.")
    return say


# -- the profiler's verdict ----------------------------------------------------------------
def _trace(say: Closing, run, split: dict) -> str:
    """The trace's split in words and its verdict (`profiling.trace_verdict`)."""
    from ..analyse.profiling import trace_verdict
    verdict = trace_verdict(split)
    where = Path(run.path).name + "/profile/trace.json.gz"

    def pct(part: str) -> str:   # as tables write percentages: a decimal below 10 %
        value = say.table.loc[say.table["rung"] == part, "% of step"].iloc[0]
        return say.cell(part, "% of step", "{:.0f}%" if value >= 10 else "{:.1f}%")
    busy = (f"device kernels {pct('device kernels')} and memory copies {pct('memory copies')}"
            if split["on_device"] else
            f"operators on the CPU {pct('operators on the CPU (compute)')}")
    say(f"The trace ({split['steps']} profiled steps; {where} in the runs folder opens in "
        f"ui.perfetto.dev): waiting for data {pct('waiting for data')} of the step, {busy}: "
        f"{verdict.upper()}.")
    if split["on_device"] and split["host_launch_s"] > split["device_kernels_s"]:
        launch = say.cell("host launch calls (overlap the device)", "seconds", "{:.3f} s")
        kernels = say.cell("device kernels", "seconds", "{:.3f} s")
        say(f"The launch calls took longer on the host ({launch}) than the kernels ran on the "
            f"device ({kernels}): "
            "the GPU waits for the host to issue work. CUDA graphs (lesson 3's "
            "mode=\"reduce-overhead\") launch a whole step at once; a larger batch gives each "
            "launch more work.")
    return verdict


def _timers(say: Closing, run) -> str | None:
    """The step timers' verdict: waiting for data from INPUT_WAIT of the step time is
    input-bound; below it they say only that the loader is not the limit."""
    steps = int(metrics.steadiness(run)["steady_steps"])
    wait = say.cell(0, "data_wait_share")
    bar = say.setting("diagnose.INPUT_WAIT", 100 * diagnose.INPUT_WAIT, "{:.0f}%")
    if steps < diagnose.MIN_STEPS:
        say(f"The step timers: {wait} of the step time waiting for data, from {steps} steady "
            f"steps: too few to judge (at least {diagnose.MIN_STEPS}; raise train_size).")
        return None
    verdict = "input-bound" if metrics.data_wait_share(run) >= diagnose.INPUT_WAIT \
        else NOT_INPUT_BOUND
    say(f"The step timers (all {steps} steady steps of '{run.name}'): {wait} of the step time "
        f"waiting for data, where the loader counts as the limit from {bar}: {verdict.upper()}.")
    return verdict


# -- the ceilings' own verdict ---------------------------------------------------------------
def ceilings_verdict(n: dict) -> tuple[str | None, str]:
    """(verdict, why) from the run's samples/s and its two ceilings alone (`diagnose`'s
    numbers): why is "unreliable" (verdict None), "shared" (no GPU and every core busy:
    the lower ceiling costs more per sample), "near" (the run within NEAR_CEILING of the
    lower ceiling) or "neither" (below both: overhead-bound)."""
    if diagnose.unreliable(n):
        return None, "unreliable"
    compute, feed, rate = n["compute_ceiling"], n["input_ceiling"], n["samples_per_sec"]
    lower = "trainer" if feed < compute else "loader"
    if diagnose.shared_cpu(n):
        return CEILINGS[lower][1], "shared"
    if rate >= diagnose.NEAR_CEILING * min(compute, feed):
        return CEILINGS[lower][1], "near"
    return "overhead-bound", "neither"


def _ceilings(say: Closing, run, ceilings: dict) -> str | None:
    missing = [m for m in CEILINGS if m not in ceilings]
    if missing:
        say("The mock ceilings were not measured (" + " and ".join(
            f"mock='{m}'" for m in missing) + "): train them beside the run to compare.")
        return None
    n = diagnose.diagnose(run, compute_ceiling=ceilings["loader"],
                          input_ceiling=ceilings["trainer"], search=False).numbers
    verdict, why = ceilings_verdict(n)
    if verdict is None:
        say("The mock ceilings give no verdict: " + "; ".join(_unreliable(say, run, ceilings, n))
            + ". Run longer (train_size, ceiling_steps) and ask again.")
        return None
    lower = "trainer" if n["input_ceiling"] < n["compute_ceiling"] else "loader"
    other = "loader" if lower == "trainer" else "trainer"
    low, high = ceilings[lower], ceilings[other]
    label, other_label = CEILINGS[lower][0], CEILINGS[other][0]
    if why == "shared":
        side = "input" if lower == "trainer" else "model"
        say(f"The mock ceilings alone: with no GPU and every core busy, the loader and the "
            f"model take turns on the same cores, and the {side} costs more per sample: the "
            f"{label} ('{low.name}', {say.cell(low.name, 'samples_per_sec')} samples/s) is below "
            f"the {other_label} ('{high.name}', {say.cell(high.name, 'samples_per_sec')}): "
            f"{verdict.upper()}.")
    elif why == "near":
        say(f"The mock ceilings alone: '{run.name}' reaches "
            f"{say.ratio('samples_per_sec', low.name, run.name, percent=True)} of the {label} "
            f"('{low.name}', {say.cell(low.name, 'samples_per_sec')} samples/s), the lower of the "
            "two: "
            f"{verdict.upper()}.")
    else:
        say(f"The mock ceilings alone: '{run.name}' reaches only "
            f"{say.ratio('samples_per_sec', low.name, run.name, percent=True)} of the lower one, "
            f"the {label} ('{low.name}', {say.cell(low.name, 'samples_per_sec')} samples/s): "
            "neither ceiling "
            f"holds it: {verdict.upper()} (Python, launches, the two sides waiting for each "
            "other).")
    return verdict


def _unreliable(say: Closing, run, ceilings: dict, n: dict) -> list[str]:
    """Why the ceilings cannot rule, in words whose numbers are the table's."""
    reasons = []
    for r in (run, *ceilings.values()):
        steps = int(metrics.steadiness(r)["steady_steps"])
        if steps < diagnose.MIN_STEPS:
            reasons.append(f"'{r.name}' has {steps} steady steps, fewer than {diagnose.MIN_STEPS}")
    rate = n["samples_per_sec"]
    for mock, (label, _) in CEILINGS.items():
        ceiling = n[f"{'compute' if mock == 'loader' else 'input'}_ceiling"]
        if _known(rate, ceiling) and ceiling > 0 and rate > diagnose.ABOVE_CEILING * ceiling:
            share = say.ratio("samples_per_sec", ceilings[mock].name, run.name, percent=True)
            reasons.append(f"'{run.name}' runs at {share} of its {label} "
                           f"('{ceilings[mock].name}'), which it cannot beat: one of the two "
                           "is mismeasured")
    return reasons or ["the run or a ceiling has no steady steps"]


def _mock(run) -> str:
    return (run.config or {}).get("mock") or "none"


def _known(*values) -> bool:
    return all(v is not None and not math.isnan(v) for v in values)
