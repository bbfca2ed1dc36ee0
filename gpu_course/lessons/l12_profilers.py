"""Lesson 12: profilers. cProfile of the input pipeline, the framework's profiler around a
few steps, and what limits the run: the profiler's verdict (or the step timers') against
lesson 10's mock ceilings, each judged on its own numbers (`analyse.limits`); and Holistic
Trace Analysis's reading of a GPU trace beside the course's (`analyse.holistic`).
"""
from __future__ import annotations

import pandas as pd

from ..analyse import holistic as h, limits
from ..analyse.kernels import (ALL_CONVOLUTIONS, ALL_KERNELS, kernel_rows,  # noqa: F401
                               kernel_table, reference_kernel_traces)
from ..analyse.limits import (ABOVE, CEILINGS, COMPUTE_BOUND, INPUT_BOUND, LAUNCH_BOUND,  # noqa: F401
                              NOT_INPUT_BOUND, OVERHEAD_BOUND, TOO_FEW, Agreement, Ceilings)
from ..show.closing import Closing
from ..show.findings import Flag, Lesson, Reading, Row, Where, judge_rows, read

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
             "its own code", "calls": "over {} calls", "own_per_call_ms": "{} ms a call"})
PERFETTO = " (its trace opens in ui.perfetto.dev)"
DIFFER = "The timers count each step's wait for its batch, the ceilings each side's speed alone"
TURNS = "The loader and the model take turns on the same cores: "
LIMITS = Lesson(
    compares=(), columns={"% of step": "The trace's split of a profiled step"},
    flags=(
        Flag("trace", {
            INPUT_BOUND: "By the trace, the step waited for its data as long as an "
                         "input-bound one" + PERFETTO + ".",
            COMPUTE_BOUND: {Where.GPU: "By the trace, the device's kernels and copies fill "
                                       "most of the step" + PERFETTO + ".",
                            Where.CPU: "By the trace, the CPU's operators fill most of the "
                                       "step" + PERFETTO + "."},
            OVERHEAD_BOUND: "By the trace, neither the data nor the device's work fills the "
                            "step: Python, launches and the framework do" + PERFETTO + "."},
             cells={"profiled steps": "profiled steps", "trace file": "in the runs folder",
                    "input_bound_from": "input-bound from"}),
        Flag("launch", {LAUNCH_BOUND: "The GPU waits for the host to issue work: CUDA graphs "
                                      "(lesson 3) launch a whole step at once, a larger batch "
                                      "gives each launch more work."},
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
                                 "ceiling_steps).",
            Ceilings.SHARED_COMPUTE: TURNS + "the model costs more a sample, so the compute "
                                             "ceiling is the lower.",
            Ceilings.SHARED_INPUT: TURNS + "the input costs more a sample, so the input "
                                           "ceiling is the lower.",
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
                             "(on a busy CPU every step differs).",
            Agreement.TIMERS: {
                Where.GPU: f"{DIFFER}: a longer run or a trace would tell which holds.",
                Where.CPU: f"{DIFFER}: on a CPU the workers and the model slow each other, so "
                           "the two can point different ways."}},
             cells={"profiler": "the profiler", "ceilings verdict": "the ceilings"})))


def table(runs=None, kernels=None) -> pd.DataFrame:
    """The run and its mock ceilings (`limits.table`), or kernels ({name: GPU trace}) by kind."""
    return limits.table(runs) if kernels is None else kernel_table(kernels)


def conclude(runs=None, top=None, split=None, hta=None, kernels=None) -> Closing:
    """top= (cProfile's table): its costliest function; hta= (`holistic.compare`'s table): HTA
    against the course; kernels= ({name: GPU trace}): `kernel_closing`. Else what limits
    runs[0]: the profiler's verdict (split=, else the step timers) against its ceilings."""
    if top is not None:
        first = pd.DataFrame(top).reset_index(drop=True).head(1)
        return judge_rows(INPUT, [Row(first["function"].iloc[0], {})], first)
    if hta is not None:
        frame = h.per_trace(hta)
        return judge_rows(HTA, [Row(name, {}, gpu=True) for name in frame["trace"]], frame)
    if kernels is not None:
        return kernel_closing(kernels)
    from ..analyse import metrics
    runs = list(runs)
    frame, gpu = limits.table(runs, split), any(metrics.on_gpu(r) for r in runs)
    return judge_rows(LIMITS, [Row(name, {}, gpu=gpu) for name in frame["rung"]], frame)


# -- Holistic Trace Analysis beside the course's split ---------------------------------------
ROUNDING = ("HTA reads whole microseconds, rounding each event's start up and its end down: "
            "many short GPU events lose enough to show as idle.")
HTA = Lesson(compares=(), key="trace", flags=(
    Flag("idle", {h.IDLE_AGREE: "", h.IDLE_DIFFER: ""}, cells={
        f"HTA {h.IDLE}": "HTA (%)", f"HTA {h.WINDOW}": "of its window, first kernel to last (ms)",
        f"course {h.IDLE}": "the course (%)", f"course {h.WINDOW}": "of the profiled steps (ms)",
        "agree within (points)": "within (points)"}),
    Flag("why", {h.WHY[h.Reason.EVENTS]: "HTA keeps only events it can tie (by correlation id) "
                                         "to a launch inside the profiled steps."},
         cells={f"HTA {h.KERNELS}": "HTA kept", f"course {h.KERNELS}": "the course"}),
    Flag("why", {h.WHY[h.Reason.WINDOW]: "The course counts the host's time before the first "
                                         "kernel and after the last as idle."},
         cells={f"course {h.IDLE_ON_HTA}": "the course's idle over HTA's window (%)"}),
    Flag("why", {h.WHY[h.Reason.ROUNDING]: ROUNDING, h.WHY[h.Reason.OTHER]:
                 "More than HTA's rounding explains: compare the events in ui.perfetto.dev."},
         cells={f"HTA {h.KERNEL_MS}": "kernel time, HTA (ms)", f"course {h.KERNEL_MS}":
                "the course (ms)", "rounding (µs an event)": "rounding up to (µs an event)",
                f"HTA {h.KERNELS}": "GPU events"}),
    Flag("copies", {h.COPIES_ALIKE: "Both count that time apart from idle.",
                    h.COPIES_APART: "Both count that time apart from idle; HTA tells a copy by "
                                    "its name (Memcpy, Memset), the course by its category."},
         cells={f"HTA {h.COPIES}": "HTA (%)", f"course {h.COPIES}": "the course (%)"}),
    Flag("largest idle", {
        h.Idle.HOST_WAIT: "Host wait: the GPU had finished before its next work was "
                          "launched, so the host sets the pace.",
        h.Idle.KERNEL_WAIT: "Kernel wait: short gaps between queued kernels, the cost of many "
                            "small kernels.",
        h.Idle.OTHER_WAIT: "Other: longer gaps with the work already queued (syncs, events).",
        h.Idle.NONE: ""},
         cells={"its share of idle (%)": "its share of idle (%)",
                "kernel wait under (µs)": "kernel wait: gaps under (µs)"}),
    Flag("host pace", {**{v: "" for v in h.PACE.values()}, **{
        v: "The course adds up the calls' time; HTA asks of each gap whether the next launch "
           "came after the GPU went idle." for (calls, wait), v in h.PACE.items() if calls != wait}},
         cells={f"course {h.HOST_LAUNCH}": "its launch calls on the host (ms)",
                f"course {h.KERNEL_MS}": "its kernels (ms)"}),
    Flag("launches", {
        h.Launches.COSTLY: "Launching costs more than the work.", h.Launches.PER_KERNEL: "",
        h.Launches.GRAPHS: "HTA's launch statistics count per-kernel launch calls "
                           "(cudaLaunchKernel, cudaMemcpyAsync, cudaMemsetAsync).",
        h.Launches.NONE: ""},
         cells={f"HTA {h.LAUNCHES}": "calls", f"HTA {h.DELAY}": "median delay from call to kernel "
                "(µs)", f"HTA {h.CALL}": "median call (µs)",
                f"HTA {h.SHORTER}": "kernels shorter than their call (%)",
                f"course {h.GRAPH_LAUNCHES}": "CUDA graph launches"})))


YOUR_TRACE = ("`gpu-course profile --engine pytorch` on a GPU records your own run's trace "
              "(profile/trace.json.gz in its folder) to read the same way.")
KERNELS = Reading(
    key="trace", each={"kernels (ms a step)": "{} ms of kernel time a step",
                       "largest kind": "the largest part {}", "largest (ms a step)": "{} ms",
                       "largest (% of kernels)": "{} of it",
                       "GPU busy": "the GPU busy {} of the span of its trace", "GPU idle": "idle {}"},
    formats={"largest (% of kernels)": "{:.0f}%", "GPU busy": "{:.0%}", "GPU idle": "{:.0%}"},
    text=("Faster kernels can shorten a step by at most the share the GPU was busy, and fewer "
          "launches (closing the idle gaps) by at most the share it was idle.", YOUR_TRACE))


def kernel_closing(traces: dict) -> Closing:
    """Each trace's largest kind of kernel, and the most faster kernels or fewer launches
    could remove (`KERNELS`)."""
    return read(KERNELS, kernel_rows(traces), where=Where.GPU, show=False)
