"""Lesson 12: profilers. cProfile of the input pipeline, the framework's profiler around a
few steps, and what limits the run: the profiler's verdict (the trace's split of a step,
or the course's step timers where the build has no profiler) against the mock ceilings
of lesson 10, each method judged on its own numbers; and Holistic Trace Analysis's
reading of a GPU trace beside the course's own split of it (`analyse.holistic`).

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
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("active", "ceiling_steps", "input_steps", "torch_threads", "wait", "warmup")
NOT_INPUT_BOUND = "not input-bound"   # all the step timers can say against input-bound
CEILINGS = {"loader": ("compute ceiling", "compute-bound"),    # mock="loader": one batch, forever
            "trainer": ("input ceiling", "input-bound")}       # mock="trainer": fetch and drop


def table(runs=None, kernels=None) -> pd.DataFrame:
    """The run and its mock ceilings: samples/s with the spread of its blocks, the share
    of step time spent waiting for data, and the steady steps behind each. No speed-up
    column: a ceiling bounds the run, it is not a rung of it. kernels ({name: GPU trace}):
    their kernels by kind instead (`kernel_table`)."""
    if kernels is not None:
        return kernel_table(kernels)
    rows = []
    for run in runs:
        low, high = metrics.samples_per_sec_range(run)
        rows.append({"rung": run.name, "samples_per_sec": metrics.samples_per_sec(run),
                     "samples_per_sec_min": low, "samples_per_sec_max": high,
                     "data_wait_share": metrics.data_wait_share(run),
                     "steady steps": int(metrics.steadiness(run)["steady_steps"])})
    return pd.DataFrame(rows)


def conclude(runs=None, top=None, split=None, hta=None, kernels=None) -> Closing:
    """top (the input pipeline's cProfile table, as shown): its sentence. hta (a
    `holistic.compare` table, as shown): where HTA's reading of each trace and the
    course's agree, and why they differ where they do. kernels ({name: GPU trace}): the
    table of their kernels by kind, and what it says (`kernel_closing`). Otherwise what
    limits the run (runs[0]; its mock ceilings among `runs`): the profiler's verdict
    (split: `profiling.trace_split` of its trace; without one, the step timers) against
    the ceilings' own."""
    if top is not None:
        return _input(top)
    if hta is not None:
        return _holistic(hta)
    if kernels is not None:
        return kernel_closing(kernels)
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


# -- Holistic Trace Analysis beside the course's split ---------------------------------------
def _holistic(table) -> Closing:
    from ..analyse import holistic as h
    say = Closing(table, key="reading")
    tol = say.setting("holistic.AGREE_POINTS", h.AGREE_POINTS, "{:.0f} points")
    for name in h.traces_of(table):
        hta, mine = f"{name}: HTA", f"{name}: course"

        def pct(reading, column):
            return say.cell(reading, column, "{:.1f}%")
        idle = (f"HTA {pct(h.IDLE, hta)} of its window ({say.cell(h.WINDOW, hta)} ms, first "
                f"kernel to last), the course {pct(h.IDLE, mine)} of the profiled steps "
                f"({say.cell(h.WINDOW, mine)} ms)")
        reason = h.idle_reason(table, name)
        if reason is None:
            say(f"'{name}': HTA and the course agree on the GPU's idle share within {tol}: "
                f"{idle}.")
        else:
            say(f"'{name}': HTA and the course disagree on the GPU's idle share by more than "
                f"{tol}: {idle}. " + _why(say, h, reason, name, hta, mine))
        say(f"'{name}': copies ran with no kernel running for {pct(h.COPIES, hta)} (HTA) and "
            f"{pct(h.COPIES, mine)} (the course) of the window: both count that time apart "
            "from idle" + ("." if h.copies_agree(table, name) else
                           f", and differ by more than {tol}: HTA calls a GPU event a copy by "
                           "its name (Memcpy, Memset), the course by its category."))
        _idle_split(say, h, name, hta, mine)
        _launches(say, h, name, hta, mine)
    return say


def _why(say: Closing, h, reason, name, hta, mine) -> str:
    if reason is h.Reason.EVENTS:
        return (f"They read different GPU events: HTA kept {say.cell(h.KERNELS, hta)}, the "
                f"course {say.cell(h.KERNELS, mine)}; HTA keeps only the events it can tie "
                "(by correlation id) to a launch inside the profiled steps.")
    if reason is h.Reason.WINDOW:
        on = say.cell(h.IDLE_ON_HTA, mine, "{:.1f}%")
        return (f"The windows differ: the course counts the host's time before the first kernel "
                f"and after the last as idle; over HTA's window its idle would be {on}.")
    kernel_ms = f"HTA {say.cell(h.KERNEL_MS, hta)} ms, the course {say.cell(h.KERNEL_MS, mine)} ms"
    if reason is h.Reason.ROUNDING:
        return (f"The windows are alike, the kernel time is not ({kernel_ms}): HTA reads "
                "times in whole microseconds, rounding each event's start up and its end "
                f"down (up to {say.setting('holistic.ROUNDING_US', h.ROUNDING_US)} µs an "
                f"event), and {say.cell(h.KERNELS, hta)} short GPU events lose enough to that "
                "to show as idle.")
    return (f"Their kernel time differs ({kernel_ms}) by more than HTA's whole-microsecond "
            "rounding explains: open the trace in ui.perfetto.dev and compare the events.")


def _idle_split(say: Closing, h, name, hta, mine) -> None:
    """HTA's largest idle category, and whether the course's launch reading agrees."""
    kinds = {h.HOST_WAIT: "host wait: the GPU had finished and its next work was not yet "
                          "launched, so the host sets the pace",
             h.KERNEL_WAIT: "kernel wait: gaps under "
                            f"{say.setting('holistic.KERNEL_WAIT_US', h.KERNEL_WAIT_US)} µs "
                            "between kernels already queued, the cost of many small kernels",
             h.OTHER_WAIT: "other: longer gaps with the work already queued (syncs, events)"}
    values = {k: say.table.loc[say.table["reading"] == k, hta].iloc[0] for k in kinds}
    if any(_isnan(v) for v in values.values()):
        say(f"'{name}': HTA found no idle gaps to split.")
        return
    top = max(values, key=values.get)
    host_bound = say.table.loc[say.table["reading"] == h.HOST_LAUNCH, mine].iloc[0] > \
        say.table.loc[say.table["reading"] == h.KERNEL_MS, mine].iloc[0]
    line = (f"'{name}': most of HTA's idle time is {kinds[top]} "
            f"({say.cell(top, hta, '{:.0f}%')} of it).")
    launch = (f"its launch calls ({say.cell(h.HOST_LAUNCH, mine)} ms on the host) "
              f"{'outlast' if host_bound else 'take less than'} its kernels "
              f"({say.cell(h.KERNEL_MS, mine)} ms)")
    if host_bound == (top == h.HOST_WAIT):
        say(f"{line} The course agrees that the host "
            f"{'sets the pace' if host_bound else 'is not the limit'}: {launch}.")
    else:
        say(f"{line} The course reads it otherwise: {launch}; it adds up the calls' time, "
            "HTA looks at each gap, whether the next launch came after the GPU went idle.")


def _launches(say: Closing, h, name, hta, mine) -> None:
    count = say.table.loc[say.table["reading"] == h.LAUNCHES, hta].iloc[0]
    graphs = say.table.loc[say.table["reading"] == h.GRAPH_LAUNCHES, mine].iloc[0]
    if count:
        shorter = say.table.loc[say.table["reading"] == h.SHORTER, hta].iloc[0]
        say(f"'{name}': HTA's launch statistics: {say.cell(h.LAUNCHES, hta)} per-kernel launch "
            f"calls, a median delay of {say.cell(h.DELAY, hta)} µs from call to kernel and a "
            f"median call of {say.cell(h.CALL, hta)} µs; {say.cell(h.SHORTER, hta, '{:.0f}%')} "
            "of the kernels ran shorter than the call that launched them"
            + (": launching costs more than the work." if shorter >= 50 else "."))
    elif graphs:
        say(f"'{name}': HTA's launch statistics count per-kernel launch calls "
            "(cudaLaunchKernel, cudaMemcpyAsync, cudaMemsetAsync) and find none: "
            f"{say.cell(h.GRAPH_LAUNCHES, mine)} CUDA graph launches ran every kernel.")
    else:
        say(f"'{name}': HTA's launch statistics find no launch calls tied to a GPU event.")


def _isnan(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


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


# -- what the GPU's time is spent on, by kind of kernel ---------------------------------------
def kernel_table(traces: dict) -> pd.DataFrame:
    """One row a kind of kernel (`profiling.kernel_kinds`), a column pair a trace: its ms
    of kernel time a step and its percentage of the trace's kernel time; then every
    convolution's together (cuDNN's and the course's), and all kernels."""
    from ..analyse import profiling
    frame = None
    for name, path in traces.items():
        part = profiling.kernel_kinds(profiling.read_trace(path)).set_index("kind")
        part = part[["ms_per_step", "share"]].assign(share=lambda f: 100 * f["share"])
        convs = part[part.index.str.startswith("convolutions")]
        part.loc[ALL_CONVOLUTIONS] = [convs["ms_per_step"].sum(), convs["share"].sum()]
        part.loc[ALL_KERNELS] = [part["ms_per_step"].sum() - part.loc[ALL_CONVOLUTIONS,
                                                                      "ms_per_step"], 100.0]
        part.columns = [f"{name}: ms a step", f"{name}: % of kernels"]
        frame = part if frame is None else frame.join(part, how="outer")
    order = [k for k, _ in profiling.KERNEL_KINDS if k in frame.index] + [ALL_CONVOLUTIONS,
                                                                            ALL_KERNELS]
    return frame.loc[order].reset_index().rename(columns={"index": "kind"})


ALL_CONVOLUTIONS, ALL_KERNELS = "all convolutions", "all kernels"


def reference_kernel_traces() -> dict:
    """The H200 reference's GPU traces: the naive rung's and the tuned rung's."""
    from ..analyse.holistic import REFERENCE_TRACES
    return dict(REFERENCE_TRACES)


YOUR_TRACE = ("`gpu-course profile --engine pytorch` on a GPU records a trace of your own run "
              "(profile/trace.json.gz in its folder) to read the same way.")


def kernel_closing(traces: dict) -> Closing:
    """Where the GPU's time goes in each trace, by kind of kernel (`kernel_table`, which
    `gc.show(lesson="12", kernels=traces)` shows), and what that says: the largest kind,
    and how much of the step faster kernels and fewer launches could each remove at most
    (the GPU's busy share of the trace)."""
    from ..analyse import profiling
    frame = kernel_table(traces)
    say = Closing(frame, key="kind")
    names = list(traces)
    row = {kind: i for i, kind in enumerate(frame["kind"])}
    total, convs = row[ALL_KERNELS], row[ALL_CONVOLUTIONS]
    for name in names:
        col = f"{name}: ms a step"
        kinds = [i for i in range(convs) if frame[col].iloc[i] > 0]
        top = max(kinds, key=lambda i: frame[col].iloc[i])
        busy = profiling.gpu_busy_share(profiling.read_trace(traces[name]))
        say(f"'{name}': {say.cell(top, col, '{:.2f}')} of its {say.cell(total, col, '{:.2f}')} "
            f"ms of kernel time a step ({say.cell(top, f'{name}: % of kernels', '{:.0f}%')}) are "
            f"{frame['kind'].iloc[top]}. The GPU worked {say.quote('its trace', busy, '{:.0%}')} "
            f"of the span of its trace: faster kernels can shorten that step by at most that "
            f"share, and fewer launches (closing the idle gaps) by at most the rest "
            f"({say.quote('its trace', 1 - busy, '{:.0%}')}).")
    say(YOUR_TRACE)
    return say
