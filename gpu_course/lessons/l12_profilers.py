"""Lesson 12: profilers. cProfile of the input pipeline, the framework's profiler around a
few steps, and what limits the run: the profiler's verdict (the trace's split of a step,
or the course's step timers where the build has no profiler) against the mock ceilings
of lesson 10, each method judged on its own numbers (`analyse.limits`); and Holistic
Trace Analysis's reading of a GPU trace beside the course's own split of it
(`analyse.holistic`).

The ceilings' verdict here is theirs alone: which ceiling is lower and how near the run
comes to it (diagnose's thresholds), never the data-wait threshold the step timers use,
so "the two methods agree" compares two methods. No deep-learning framework here.
"""
from __future__ import annotations

import math

import pandas as pd

from ..analyse import limits
from ..analyse.limits import (ABOVE, CEILINGS, COMPUTE_BOUND, INPUT_BOUND, LAUNCH_BOUND,  # noqa: F401
                              NOT_INPUT_BOUND, OVERHEAD_BOUND, TOO_FEW, Agreement, Ceilings)
from ..show.closing import Closing
from ..show.findings import Flag, Lesson, Row, Where, judge_rows

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
INPUT = Lesson(compares=(), key="function", last_row={
    "own_%": "the input pipeline's most expensive function under cProfile, {} of the time in "
             "its own code", "calls": "over {} calls", "own_per_call_ms": "{} ms per call"})
PERFETTO = " (its trace opens in ui.perfetto.dev)"
DIFFER = "The timers count how long each step waited for its batch, the ceilings how fast each side runs alone"
LIMITS = Lesson(
    compares=(), columns={"% of step": "The trace's split of a profiled step"},
    flags=(
        Flag("trace", {
            INPUT_BOUND: "By the trace, the step waited for its data at least the share the "
                         "course counts as input-bound" + PERFETTO + ".",
            COMPUTE_BOUND: "By the trace, the device's kernels and copies (on a CPU, the "
                           "operators) fill most of the step" + PERFETTO + ".",
            OVERHEAD_BOUND: "By the trace, neither the data nor the device's work fills the "
                            "step: Python, launches and the framework hold it" + PERFETTO + "."},
             cells={"profiled steps": "profiled steps", "trace file": "in the runs folder",
                    "input_bound_from": "input-bound from"}),
        Flag("launch", {LAUNCH_BOUND: "The GPU waits for the host to issue work. CUDA graphs "
                                      "(lesson 3's mode=\"reduce-overhead\") launch a whole "
                                      "step at once; a larger batch gives each launch more work."},
             cells={"host launch calls (s)": "host launch calls (s)",
                    "device kernels (s)": "device kernels (s)"}),
        Flag("step timers", {
            INPUT_BOUND: "By the step timers, the loader is the limit.",
            NOT_INPUT_BOUND: "By the step timers, the loader is not the limit; they cannot "
                             "tell what is."},   # too few steps: the "steps" flag
             cells={"data_wait_share": "waiting for data", "input_bound_from":
                    "input-bound from", "steady steps": "steady steps"}),
        Flag("steps", {TOO_FEW: "A verdict needs more steady steps: run longer (train_size, "
                                "ceiling_steps)."},
             cells={"steady steps": "steady steps", "steady steps needed": "needed"}),
        Flag("ceilings", {
            Ceilings.NOT_MEASURED: "Train mock='loader' and mock='trainer' beside the run to "
                                   "compare.",
            Ceilings.NO_VERDICT: "The mock ceilings give no verdict: run longer (train_size, "
                                 "ceiling_steps) and ask again.",
            Ceilings.SHARED_COMPUTE: "The loader and the model take turns on the same cores, "
                                     "and the model costs more a sample: the compute ceiling "
                                     "is the lower.",
            Ceilings.SHARED_INPUT: "The loader and the model take turns on the same cores, and "
                                   "the input costs more a sample: the input ceiling is the "
                                   "lower.",
            Ceilings.NEAR_COMPUTE: "The run comes near the lower ceiling: the model holds it.",
            Ceilings.NEAR_INPUT: "The run comes near the lower ceiling: the loader holds it.",
            Ceilings.NEITHER: "Neither ceiling holds it: Python, launches, the two sides "
                              "waiting for each other."},
             cells={"compute ceiling (samples/s)": "compute ceiling (samples/s)",
                    "input ceiling (samples/s)": "input ceiling (samples/s)",
                    "of_compute_ceiling": "run ÷ compute ceiling",
                    "of_input_ceiling": "run ÷ input ceiling"}),
        Flag("above", {ABOVE: "A run cannot beat its own ceiling: one of the two is "
                              "mismeasured."}),
        Flag("agreement", {
            Agreement.AGREE: "",
            Agreement.TRACE: "The trace covers a few profiled steps, the ceilings whole runs "
                             "(and on a busy CPU every step differs).",
            Agreement.TIMERS: {
                Where.GPU: f"{DIFFER}; with both on the GPU's host, a longer run or a trace "
                           "would tell which holds.",
                Where.CPU: f"{DIFFER}; on a CPU the loader's workers and the model share the "
                           "cores, so each slows the other, and the wait and the ceilings can "
                           "point different ways."}},
             cells={"profiler": "the profiler", "ceilings verdict": "the ceilings"})))


def table(runs=None, kernels=None) -> pd.DataFrame:
    """The run and its mock ceilings (`limits.table`: samples/s with the spread of its
    blocks, the share of step time waiting for data, the steady steps, the verdicts);
    kernels ({name: GPU trace}): their kernels by kind instead (`kernel_table`)."""
    return limits.table(runs) if kernels is None else kernel_table(kernels)


def conclude(runs=None, top=None, split=None, hta=None, kernels=None) -> Closing:
    """top (the input pipeline's cProfile table, as shown): its most expensive function.
    hta (a `holistic.compare` table, as shown): where HTA's reading of each trace and the
    course's agree, and why they differ where they do. kernels ({name: GPU trace}): the
    table of their kernels by kind, and what it says (`kernel_closing`). Otherwise what
    limits the run (runs[0]; its mock ceilings among `runs`): the profiler's verdict
    (split: `profiling.trace_split` of its trace; without one, the step timers) against
    the ceilings' own, through the findings engine (`LIMITS`)."""
    if top is not None:
        first = pd.DataFrame(top).reset_index(drop=True).head(1)
        return judge_rows(INPUT, [Row(first["function"].iloc[0], {})], first)
    if hta is not None:
        return _holistic(hta)
    if kernels is not None:
        return kernel_closing(kernels)
    from ..analyse import metrics
    runs = list(runs)
    frame, gpu = limits.table(runs, split), any(metrics.on_gpu(r) for r in runs)
    return judge_rows(LIMITS, [Row(name, {}, gpu=gpu) for name in frame["rung"]], frame)


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
