"""Lesson 12: profilers (cProfile, the framework's, HTA), and what limits the run (`limits`)."""
from __future__ import annotations

import pandas as pd

from ..analyse import holistic as h, limits, metrics
from ..analyse.kernels import (ALL_CONVOLUTIONS, ALL_KERNELS, kernel_rows,  # noqa: F401
                               kernel_table, reference_kernel_traces)
from ..analyse.limits import (ABOVE, CEILINGS, COMPUTE_BOUND, INPUT_BOUND, LAUNCH_BOUND,  # noqa: F401
                              NOT_INPUT_BOUND, OVERHEAD_BOUND, TOO_FEW, Agreement, Ceilings)
from ..show.closing import Closing
from ..show.findings import Flag, Lesson, Page, Reading, Row, Where, judge_rows, read

SIZES = {
    "full": dict(model="resnet20", train_size=10_000, test_size=64, epochs=1, batch_size=64,
                 warmup_steps=1, ceiling_steps=100,
                 input_steps=100,               # batches fetched under cProfile
                 wait=1, warmup=1, active=5,    # the profiler's schedule, in steps
                 torch_threads=None),           # the exercise's intra-op threads (None: default)
    "smoke": dict(model="tiny", train_size=768, test_size=64, epochs=1, batch_size=32,
                  warmup_steps=1, input_steps=8, ceiling_steps=24, wait=1, warmup=1, active=2,
                  torch_threads=1),   # a thread a core collapses while other programs share CI's 2
    "check": dict(train_size=5_000),
}
OWN_SIZES = ("active", "ceiling_steps", "input_steps", "torch_threads", "wait", "warmup")
PAGE = Page.of(__name__)   # the paragraphs: text/l12_profilers.md
INPUT = Lesson(compares=(), key="function", last_row={
    "own_%": "the input pipeline's costliest function under cProfile, {} of the time in its code",
    "calls": "over {} calls", "own_per_call_ms": "{} ms a call"})
LIMITS = Lesson(
    compares=(), columns=PAGE.means("limits_columns", str),
    flags=(
        Flag("trace", PAGE.means("trace", str),
             cells={"profiled steps": "profiled steps", "trace file": "in the runs folder",
                    "input_bound_from": "input-bound from"}),
        Flag("launch", {LAUNCH_BOUND: PAGE.text("launch_bound")},
             cells={"host launch calls (s)": "host launch calls (s)",
                    "device kernels (s)": "device kernels (s)"}),
        Flag("step timers", PAGE.means("step_timers", str),   # too few steps: the "steps" flag
             cells={"data_wait_share": "waiting for data", "input_bound_from":
                    "input-bound from", "steady steps": "steady steps"}),
        Flag("steps", {TOO_FEW: PAGE.text("too_few_steps")},
             cells={"steady steps": "steady steps", "steady steps needed": "needed"}),
        Flag("ceilings", PAGE.means("ceilings", Ceilings),
             cells={"compute ceiling (samples/s)": "compute ceiling (samples/s)",
                    "input ceiling (samples/s)": "input ceiling (samples/s)",
                    "of_compute_ceiling": "run ÷ compute ceiling",
                    "of_input_ceiling": "run ÷ input ceiling"}),
        Flag("above", {ABOVE: PAGE.text("above_ceiling")}),
        Flag("agreement", {Agreement.AGREE: "", **PAGE.means("agreement", Agreement)},
             cells={"profiler": "the profiler", "ceilings verdict": "the ceilings"})))


def table(runs=None, kernels=None) -> pd.DataFrame:
    """The run and its mock ceilings (`limits.table`), or kernels ({name: GPU trace}) by kind."""
    return limits.table(runs) if kernels is None else kernel_table(kernels)


def conclude(runs=None, top=None, split=None, hta=None, kernels=None) -> Closing:
    """top= (cProfile's table): its costliest function; hta= (`holistic.compare`'s): HTA against
    the course; kernels= ({name: GPU trace}): `kernel_closing`; else what limits runs[0]: the
    profiler's verdict (split=, else the step timers) against its ceilings."""
    if top is not None:
        first = pd.DataFrame(top).reset_index(drop=True).head(1)
        return judge_rows(INPUT, [Row(first["function"].iloc[0], {})], first)
    if hta is not None:
        frame = h.per_trace(hta)
        return judge_rows(HTA, [Row(name, {}, gpu=True) for name in frame["trace"]], frame)
    if kernels is not None:
        return kernel_closing(kernels)
    runs = list(runs)
    frame, gpu = limits.table(runs, split), any(metrics.on_gpu(r) for r in runs)
    return judge_rows(LIMITS, [Row(name, {}, gpu=gpu) for name in frame["rung"]], frame)


# -- Holistic Trace Analysis beside the course's split ---------------------------------------
ROUNDING = PAGE.text("rounding")
HTA = Lesson(compares=(), key="trace", flags=(
    Flag("idle", {h.IDLE_AGREE: "", h.IDLE_DIFFER: ""}, cells={
        f"HTA {h.IDLE}": "HTA (%)", f"HTA {h.WINDOW}": "of its window, first kernel to last (ms)",
        f"course {h.IDLE}": "the course (%)", f"course {h.WINDOW}": "of the profiled steps (ms)",
        "agree within (points)": "within (points)"}),
    Flag("why", {h.WHY[h.Reason.EVENTS]: PAGE.text("why_events")},
         cells={f"HTA {h.KERNELS}": "HTA kept", f"course {h.KERNELS}": "the course"}),
    Flag("why", {h.WHY[h.Reason.WINDOW]: PAGE.text("why_window")},
         cells={f"course {h.IDLE_ON_HTA}": "the course's idle over HTA's window (%)"}),
    Flag("why", {h.WHY[h.Reason.ROUNDING]: ROUNDING, h.WHY[h.Reason.OTHER]: PAGE.text("why_other")},
         cells={f"HTA {h.KERNEL_MS}": "kernel time, HTA (ms)", f"course {h.KERNEL_MS}":
                "the course (ms)", "rounding (µs an event)": "rounding up to (µs an event)",
                f"HTA {h.KERNELS}": "GPU events"}),
    Flag("copies", {h.COPIES_ALIKE: PAGE.text("copies_alike"),
                    h.COPIES_APART: PAGE.text("copies_apart")},
         cells={f"HTA {h.COPIES}": "HTA (%)", f"course {h.COPIES}": "the course (%)"}),
    Flag("largest idle", {**dict.fromkeys(h.Idle, ""), **PAGE.means("largest_idle", h.Idle)},
         cells={"its share of idle (%)": "its share of idle (%)",
                "kernel wait under (µs)": "kernel wait: gaps under (µs)"}),
    Flag("host pace", {**{v: "" for v in h.PACE.values()}, **{
        v: PAGE.text("host_pace") for (calls, wait), v in h.PACE.items() if calls != wait}},
         cells={f"course {h.HOST_LAUNCH}": "its launch calls on the host (ms)",
                f"course {h.KERNEL_MS}": "its kernels (ms)"}),
    Flag("launches", {**dict.fromkeys(h.Launches, ""), **PAGE.means("launches", h.Launches)},
         cells={f"HTA {h.LAUNCHES}": "calls",
                f"HTA {h.DELAY}": "median delay, call to kernel (µs)",
                f"HTA {h.CALL}": "median call (µs)",
                f"HTA {h.SHORTER}": "kernels shorter than their call (%)",
                f"course {h.GRAPH_LAUNCHES}": "CUDA graph launches"})))


YOUR_TRACE = PAGE.text("your_trace")
KERNELS = Reading(
    key="trace", each={"kernels (ms a step)": "{} ms of kernel time a step",
                       "largest kind": "the largest part {}", "largest (ms a step)": "{} ms",
                       "largest (% of kernels)": "{} of it",
                       "GPU busy": "the GPU busy {} of the span of its trace", "GPU idle": "idle {}"},
    formats={"largest (% of kernels)": "{:.0f}%", "GPU busy": "{:.0%}", "GPU idle": "{:.0%}"},
    text=(PAGE.text("kernels"), YOUR_TRACE))


def kernel_closing(traces: dict) -> Closing:
    """Each trace's largest kind of kernel, and what faster kernels or fewer launches could save."""
    return read(KERNELS, kernel_rows(traces), where=Where.GPU, show=False)
