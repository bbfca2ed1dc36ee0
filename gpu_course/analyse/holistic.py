"""A PyTorch trace read by Holistic Trace Analysis (HTA) beside the course's own
`profiling.trace_split` of it (`compare`), shares in percent of each side's own window.
"""
from __future__ import annotations

import enum
import json
import logging
import tempfile
from pathlib import Path

import pandas as pd

from . import profiling
from ..page import Page

PAGE = Page.of(__name__)   # what the comparison says, fixed: text/holistic.md

REFERENCE = Path(__file__).resolve().parents[1] / "reference" / "pytorch-h200"
REFERENCE_TRACES = {"naive": REFERENCE / "profile-naive" / "trace.json.gz",
                    "tuned": REFERENCE / "profile-tuned" / "trace.json.gz"}
KERNEL_WAIT_US = 30        # HTA's consecutive_kernel_delay (its default): a shorter gap is kernel wait
ROUNDING_US = 2            # HTA rounds each event's start up and its end down to whole µs
PACKAGE = "HolisticTraceAnalysis==0.5.0"   # as pinned in pyproject.toml

WINDOW = "window (ms)"
IDLE = "GPU idle (% of window)"
IDLE_ON_HTA = "GPU idle over HTA's window (%)"
COMPUTE = "compute kernels (% of window)"
COPIES = "copies with no kernel running (% of window)"
KERNEL_MS = "kernel time (ms)"
KERNELS = "GPU events (kernels, copies, memsets)"
STEPS = "profiled steps"
HOST_WAIT, KERNEL_WAIT, OTHER_WAIT = ("idle: host wait (% of idle)",
                                      "idle: kernel wait (% of idle)", "idle: other (% of idle)")
LAUNCHES = "per-kernel launch calls"
GRAPH_LAUNCHES = "CUDA graph launches"
DELAY = "launch delay, median (µs)"
CALL = "launch call, median (µs)"
SHORTER = "kernels shorter than their launch call (%)"
HOST_LAUNCH = "host launch calls (ms)"
HOST_SYNC = "host waiting in sync calls (ms)"
READINGS = (STEPS, WINDOW, IDLE, IDLE_ON_HTA, COMPUTE, COPIES, KERNEL_MS, KERNELS, HOST_WAIT, KERNEL_WAIT,
            OTHER_WAIT, LAUNCHES, GRAPH_LAUNCHES, DELAY, CALL, SHORTER, HOST_LAUNCH, HOST_SYNC)
NAN = float("nan")


def installed() -> bool:
    """Whether HTA imports here."""
    try:
        _trace_analysis()
    except ImportError:
        return False
    return True


def read(trace) -> dict:
    """HTA's readings of one torch.profiler trace (as rank 0), by READINGS name."""
    TraceAnalysis = _trace_analysis()
    profiling.read_trace(trace)   # a damaged one refused by name
    data = profiling.load_trace(trace)
    if not any(e.get("cat") in profiling.GPU_CATEGORIES for e in data.get("traceEvents", [])
               if isinstance(e, dict)):
        raise ValueError(f"trace={str(trace)!r} has no GPU events; record it with ProfilerActivity.CUDA")
    data["distributedInfo"] = {"rank": 0}              # what HTA takes the rank from
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "rank-0.json").write_text(json.dumps(data))
        analysis = TraceAnalysis(trace_dir=folder, include_last_profiler_step=True)
        temporal = analysis.get_temporal_breakdown(visualize=False).iloc[0]
        idle, _ = analysis.get_idle_time_breakdown(visualize=False,
                                                   consecutive_kernel_delay=KERNEL_WAIT_US)
        launches = analysis.get_cuda_kernel_launch_stats(visualize=False)[0]
        steps = len(analysis.get_profiler_steps())
        kernels = int((analysis.t.get_trace(0)["stream"] != -1).sum())   # the GPU events it kept
    window = float(temporal["kernel_time(us)"])
    by_kind = idle.groupby("idle_category")["idle_time"].sum()
    idle_us = float(by_kind.sum())
    share = (lambda kind: 100 * float(by_kind.get(kind, 0.0)) / idle_us if idle_us else NAN)
    return {STEPS: steps, WINDOW: window / 1e3,
            IDLE: 100 * float(temporal["idle_time(us)"]) / window,
            COMPUTE: 100 * float(temporal["compute_time(us)"]) / window,
            COPIES: 100 * float(temporal["non_compute_time(us)"]) / window,
            KERNEL_MS: float(temporal["compute_time(us)"]) / 1e3, KERNELS: kernels,
            HOST_WAIT: share("host_wait"), KERNEL_WAIT: share("kernel_wait"),
            OTHER_WAIT: share("other"), LAUNCHES: len(launches),
            DELAY: float(launches["launch_delay"].median()) if len(launches) else NAN,
            CALL: float(launches["cpu_duration"].median()) if len(launches) else NAN,
            SHORTER: 100 * float((launches["gpu_duration"] < launches["cpu_duration"]).mean())
            if len(launches) else NAN}


def course(trace) -> dict:
    """The course's readings of the same trace (`profiling.trace_split`), by READINGS name."""
    events = profiling.read_trace(trace)
    split = profiling.trace_split(events)
    kernels = [e for e in events if e.get("cat") in profiling.GPU_CATEGORIES]   # in the whole trace
    return {STEPS: split["steps"], WINDOW: 1e3 * split["step_s"],
            IDLE: 100 * (split["step_s"] - split["device_busy_s"]) / split["step_s"],
            COMPUTE: 100 * split["device_kernels_s"] / split["step_s"],
            COPIES: 100 * (split["device_busy_s"] - split["device_kernels_s"]) / split["step_s"],
            KERNEL_MS: 1e3 * split["device_kernels_s"], KERNELS: len(kernels),
            GRAPH_LAUNCHES: sum(e.get("name") == "cudaGraphLaunch" for e in events),
            HOST_LAUNCH: 1e3 * split["host_launch_s"], HOST_SYNC: 1e3 * split["host_sync_s"]}


def compare(traces: dict) -> pd.DataFrame:
    """HTA's readings and the course's of each trace ({name: path}), side by side."""
    if not traces:
        raise ValueError("traces={} names no trace; pass {name: path of a trace.json(.gz)}")
    columns = {}
    for name, path in traces.items():
        if not Path(path).is_file():
            raise ValueError(f"traces[{name!r}]={str(path)!r} is not a file; pass a trace.json(.gz)")
        theirs, mine = read(path), course(path)
        mine[IDLE_ON_HTA] = idle_on_window(mine, theirs[WINDOW])
        columns[f"{name}: HTA"], columns[f"{name}: course"] = theirs, mine
    frame = pd.DataFrame({col: pd.Series([values.get(r, NAN) for r in READINGS], dtype=object)
                          for col, values in columns.items()})   # counts stay whole
    frame.insert(0, "reading", READINGS)
    return frame


class Reason(str, enum.Enum):
    """Why HTA's idle share and the course's differ by more than AGREE_POINTS."""
    EVENTS = "events"        # they kept different GPU events
    WINDOW = "window"        # the course's steps are longer than HTA's first-to-last kernel
    ROUNDING = "rounding"    # HTA's whole-µs rounding of many short events
    OTHER = "other"          # busy times differ beyond what rounding explains


AGREE_POINTS = 5.0   # two shares of a window agree within this many percentage points


def idle_reason(table: pd.DataFrame, name: str) -> Reason | None:
    """Why HTA's idle share of trace `name` and the course's differ (None: they agree)."""
    hta, mine = _column(table, name, "HTA"), _column(table, name, "course")
    if abs(hta[IDLE] - mine[IDLE]) <= AGREE_POINTS:
        return None
    if hta[KERNELS] != mine[KERNELS]:
        return Reason.EVENTS
    if abs(hta[IDLE] - mine[IDLE_ON_HTA]) <= AGREE_POINTS:
        return Reason.WINDOW
    busy_ms = [r[WINDOW] * (1 - r[IDLE] / 100) for r in (hta, mine)]   # a kernel or copy running
    if abs(busy_ms[0] - busy_ms[1]) <= ROUNDING_US * hta[KERNELS] / 1e3:
        return Reason.ROUNDING
    return Reason.OTHER


def idle_on_window(mine: dict, window_ms: float) -> float:
    """The course's idle share (%) over another window (HTA's, `window_ms`)."""
    idle_ms = mine[IDLE] * mine[WINDOW] / 100 - (mine[WINDOW] - window_ms)
    return 100 * idle_ms / window_ms


def copies_agree(table: pd.DataFrame, name: str) -> bool:
    """Whether the two sides' copy-filled shares agree within AGREE_POINTS."""
    return abs(_column(table, name, "HTA")[COPIES] - _column(table, name, "course")[COPIES]) \
        <= AGREE_POINTS


class Idle(enum.StrEnum):
    """The largest kind of HTA's idle time."""
    HOST_WAIT = "most of HTA's idle time is host wait"
    KERNEL_WAIT = "most of HTA's idle time is kernel wait"
    OTHER_WAIT = "most of HTA's idle time is other waits"
    NONE = "HTA found no idle gaps to split"


class Launches(enum.StrEnum):
    COSTLY = "per-kernel launch calls, most kernels shorter than their call"
    PER_KERNEL = LAUNCHES
    GRAPHS = "no per-kernel launch calls: CUDA graph launches ran every kernel"
    NONE = "no launch calls tied to a GPU event"


IDLE_AGREE, IDLE_DIFFER = PAGE.text("idle_agree"), PAGE.text("idle_differ")
WHY = PAGE.means("why", Reason)
COPIES_ALIKE, COPIES_APART = PAGE.text("copies_alike"), PAGE.text("copies_apart")
# the course's launch calls against its kernels, against HTA's largest idle
PACE = {(True, True): PAGE.text("host_pace"), (False, False): PAGE.text("not_host"),
        (True, False): PAGE.text("calls_outlast"), (False, True): PAGE.text("calls_shorter")}


def per_trace(table: pd.DataFrame) -> pd.DataFrame:
    """A `compare` table as one row a trace: both sides' readings and what they say."""
    rows = []
    for name in traces_of(table):
        hta, mine = _column(table, name, "HTA"), _column(table, name, "course")
        kinds = {k: hta[k] for k in (HOST_WAIT, KERNEL_WAIT, OTHER_WAIT)}
        top = None if any(pd.isna(v) for v in kinds.values()) else max(kinds, key=kinds.get)
        host_bound = mine[HOST_LAUNCH] > mine[KERNEL_MS]
        reason = idle_reason(table, name)
        rows.append({"trace": name, **{f"HTA {k}": v for k, v in hta.items()},
                     **{f"course {k}": v for k, v in mine.items()},
                     "agree within (points)": AGREE_POINTS, "rounding (µs an event)": ROUNDING_US,
                     "kernel wait under (µs)": KERNEL_WAIT_US if top == KERNEL_WAIT else NAN,
                     "idle": IDLE_DIFFER if reason else IDLE_AGREE, "why": WHY.get(reason, ""),
                     "copies": COPIES_ALIKE if copies_agree(table, name) else COPIES_APART,
                     "largest idle": {HOST_WAIT: Idle.HOST_WAIT, KERNEL_WAIT: Idle.KERNEL_WAIT,
                                      OTHER_WAIT: Idle.OTHER_WAIT, None: Idle.NONE}[top],
                     "its share of idle (%)": kinds[top] if top else NAN,
                     "host pace": "" if top is None else PACE[host_bound, top == HOST_WAIT],
                     "launches": Launches.NONE if not hta[LAUNCHES] and not mine[GRAPH_LAUNCHES]
                     else Launches.GRAPHS if not hta[LAUNCHES] else Launches.COSTLY
                     if hta[SHORTER] >= 50 else Launches.PER_KERNEL})
    return pd.DataFrame(rows)


def traces_of(table: pd.DataFrame) -> list[str]:
    """The trace names a `compare` table holds, in order."""
    return [c[:-len(": HTA")] for c in table.columns if c.endswith(": HTA")]


# -- HTA, held at arm's length ---------------------------------------------------------------
def _trace_analysis():
    """HTA's TraceAnalysis, with the process-wide logging set-up its import makes undone."""
    root = logging.getLogger()
    saved = root.level, list(root.handlers), {
        name: logger.disabled for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)}
    try:
        from hta.configs.config import HtaConfig
        from hta.trace_analysis import TraceAnalysis
    except ImportError as err:
        raise ImportError(f"HTA is not installed ({err}): pip install {PACKAGE}") from None
    HtaConfig()                                       # where HTA sets up its logging
    root.setLevel(saved[0])
    root.handlers[:] = saved[1]
    for name, disabled in saved[2].items():
        logging.getLogger(name).disabled = disabled
    logging.getLogger("hta").setLevel(logging.ERROR)   # its progress lines held back
    return TraceAnalysis


def _column(table: pd.DataFrame, name: str, side: str) -> dict:
    column = f"{name}: {side}"
    if column not in table.columns:
        allowed = ", ".join(traces_of(table))
        raise ValueError(f"name={name!r} is not a trace of the table; allowed: {allowed}")
    return dict(zip(table["reading"], table[column]))
