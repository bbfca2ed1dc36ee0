"""What limits a training run, from its record: input-, compute- or overhead-bound, the
numbers that show it and the next rung to try (`diagnose(run)`; `explain(run)` prints it).
The evidence is the lecture's: data wait against compute, the two mock ceilings
(mock="loader": how fast the model can go; "trainer": how fast the input can go), GPU and CPU load.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import flops, metrics, signals
from ..config import Graph
from ..measure.records import Run, load_run, load_runs
from ..rungs import GRAPH, PRECISION, RungName
from ..page import Page

PAGE = Page.of(__name__)   # the fixed evidence and advice: text/diagnose.md
SAY = {name: PAGE.text(name) for name in ("compute_ceiling_run", "input_ceiling_run",
                                          "shared_cores", "no_gpu", "overhead", "cpu_limit",
                                          "gpu_limit", "own_data", "data_on_gpu", "more_cores",
                                          "heading", "again", "at_peak", "few_steps", "above",
                                          "data_wait", "loader_limit", "throughput",
                                          "steadiness", "ceiling", "delivers", "unmeasured",
                                          "cores_shared", "gpu_util", "cpu_idle", "cpu_load",
                                          "double_batch", "large_batch", "workers", "cpu_busy")}
ADVICE = {name: PAGE.means(name, str) for name in ("graph", "static_graph", "precision",
                                                   "formats", "packed")}

VERDICTS = ("input-bound", "compute-bound", "overhead-bound")
UNRELIABLE = "unreliable"  # what diagnose says instead of a verdict it cannot stand behind
AGAIN = "measure again"  # the advice of an unreliable diagnosis, which names no rung
FORMATS = ("loose", "preresized", "packed", "memory")  # how an image folder is read, slow to fast
INPUT_WAIT = 0.25       # data wait >= this share of step time: the loader is the limit
NEAR_CEILING = 0.85     # a run at >= 85 % of a ceiling is held by what that ceiling measures
BELOW_COMPUTE = 0.70    # under 70 % of the compute ceiling without waiting: overhead
GPU_BUSY = 90.0         # % GPU-Util at which a GPU counts as kept busy (the lecture's 90 %)
IDLE_EXPLAINED = 0.5    # data wait >= half the GPU's idle share: the loader starves it
CPU_SATURATED = 90.0    # % of all cores busy: more loader workers have nowhere to run
LARGE_BATCH = 256       # per-device batch from which large-batch is no longer the advice
MIN_STEPS = metrics.MIN_STEADY_STEPS   # steady steps a run or a ceiling needs before it is ruled on
CEILING_FREE = ("mock", "epochs", "max_steps")  # what a mock ceiling changes by design
ABOVE_CEILING = 1.05    # a run above 105 % of a ceiling it cannot beat: one is mismeasured
# the two ceilings: {kind: (in words, the mock that measures it)}
CEILINGS = {"compute": ("compute ceiling (mock loader)", "loader"),
            "input": ("input ceiling (mock trainer)", "trainer")}
_CEILING_FREE = {*CEILING_FREE, "name", "warmup_steps", "monitor_interval", "train_size",
                 "test_size"}


@dataclass
class Diagnosis:
    """The verdict on one run, its evidence lines, and the next rung (None: cannot rule)."""

    run_name: str
    verdict: str
    evidence: list = field(default_factory=list)
    next_rung: RungName | None = None
    advice: str = ""
    numbers: dict = field(default_factory=dict)
    findings: list = field(default_factory=list)   # signals.FINDINGS the GPU's counters show

    def __str__(self) -> str:
        also = f" (also: {', '.join(self.findings)})" if self.findings else ""
        lines = [SAY["heading"].format(name=self.run_name, verdict=self.verdict.upper(),
                                       also=also)]
        lines += [f"  - {line}" for line in self.evidence]
        lines.append(f"Next rung: {self.next_rung}: {self.advice}" if self.next_rung else
                     f"Next: {self.advice}")
        return "\n".join(lines)


def diagnose(run, compute_ceiling=None, input_ceiling=None, search: bool = True) -> Diagnosis:
    """A run (`records.Run`, folder or id) against its ceilings: samples/s, runs, else found."""
    run = run if isinstance(run, Run) else load_run(run)
    if not len(run.epochs):
        error = f": {run.meta['error']}" if run.meta.get("error") else ""
        raise ValueError(f"run {run.name!r} finished no epoch (status {run.status!r}{error})")
    cfg = dict(run.config)
    mock = cfg.get("mock", "none")
    found = find_ceilings(run) if search else (None, None)
    n = measure(run)
    given = {"compute": compute_ceiling, "input": input_ceiling}
    for (kind, (_, itself)), near in zip(CEILINGS.items(), found):
        ceiling = given[kind] if given[kind] is not None else None if mock == itself else near
        # a mock run is its own ceiling
        n[f"{kind}_ceiling"] = _ceiling(run if given[kind] is None and mock == itself else ceiling)[0]
        n[f"{kind}_ceiling_steps"] = _ceiling(ceiling)[1]
    evidence = _evidence(run, n, mock)
    why_not = unreliable(n, mock)
    verdict = UNRELIABLE if why_not else _verdict(n, mock)
    rung, advice = (None, SAY["again"].format(again=AGAIN, least=MIN_STEPS)) \
        if why_not else next_rung(verdict, cfg, n)
    achieved = flops.achieved(run, n["samples_per_sec"])
    n.update(achieved_tflops=achieved["achieved_tflops"],
             fraction_of_peak=achieved["fraction_of_peak"])
    line = flops.sentence(achieved)
    if verdict == "compute-bound" and _known(achieved["fraction_of_peak"]):
        line = SAY["at_peak"].format(percent=100 * achieved["fraction_of_peak"], line=line)
    found = signals.findings(run, GPU_BUSY)   # the counters speak either way
    evidence += [text for _, text in found] + [line] + [f"not ruled on: {r}" for r in why_not]
    return Diagnosis(run.name, verdict, evidence, rung, advice, n, [f for f, _ in found])


def explain(run) -> str:
    """What `gpu-course diagnose RUN` prints."""
    return str(diagnose(run))


# -- the numbers ------------------------------------------------------------------------
def measure(run: Run) -> dict:
    """The numbers a diagnosis rests on, by `metrics`' definitions (NaN where not measured)."""
    timed_s = metrics.epochs_sum(run, "timed_s")
    timed_steps = metrics.epochs_sum(run, "timed_steps")
    hardware = run.meta.get("hardware") or {}
    cpu, busiest = _cpu_load(run)
    steady = metrics.steadiness(run)
    return {
        "samples_per_sec": metrics.samples_per_sec(run),
        "wait_share": metrics.data_wait_share(run),
        "data_wait_s": metrics.epochs_sum(run, "timed_wait_s"),
        "compute_s": timed_s - metrics.epochs_sum(run, "timed_wait_s"),
        "step_ms": 1000 * timed_s / timed_steps if timed_steps else math.nan,
        "steady_steps": steady["steady_steps"], "spikiness": steady["spikiness"],
        "waited_share": steady["waited_share"],
        "epochs": len(run.epochs), "gpus": len(hardware.get("gpus") or []),
        "gpu_util": metrics.gpu_util(run),
        "cpu_percent": cpu, "busiest_core": busiest,
        "cpu_count": hardware.get("cpu_count") or math.nan,
    }


def _cpu_load(run: Run) -> tuple[float, float]:
    """Mean CPU % over all cores, and mean % of the busiest core, while epochs ran."""
    if not len(run.host) or "cpu_percent" not in run.host.columns:
        return math.nan, math.nan
    rows = metrics.during_epochs(run, run.host)
    total = float(pd.to_numeric(rows["cpu_percent"], errors="coerce").mean())
    busiest = math.nan
    if "cpu_per_core" in rows.columns:
        peaks = [max(float(v) for v in str(text).split(";") if v.strip())
                 for text in rows["cpu_per_core"].dropna() if str(text).strip()]
        busiest = sum(peaks) / len(peaks) if peaks else math.nan
    return total, busiest


def unreliable(n: dict, mock: str = "none") -> list[str]:
    """Why the numbers cannot carry a verdict: too few steady steps, or above a ceiling."""
    reasons = []
    if n["steady_steps"] < MIN_STEPS:
        reasons.append(SAY["few_steps"].format(what="run", steps=n["steady_steps"],
                                               least=MIN_STEPS))
    rate = n["samples_per_sec"]
    for kind, (label, _) in CEILINGS.items() if mock == "none" else ():
        # (a mock run is one ceiling, and the other does not bound it)
        ceiling, steps = n[f"{kind}_ceiling"], n.get(f"{kind}_ceiling_steps", math.nan)
        if _known(steps) and steps < MIN_STEPS:
            reasons.append(SAY["few_steps"].format(what=label, steps=steps, least=MIN_STEPS))
        if _known(ceiling, rate) and ceiling > 0 and rate > ABOVE_CEILING * ceiling:
            reasons.append(SAY["above"].format(share=rate / ceiling, label=label,
                                               ceiling=ceiling))
    return reasons


def _ceiling(ceiling) -> tuple[float, float]:
    """(samples/s, steady steps) of a ceiling given as a number, a Run, a path or None."""
    if ceiling is None or isinstance(ceiling, (int, float)):
        return (math.nan if ceiling is None else float(ceiling)), math.nan
    run = ceiling if isinstance(ceiling, Run) else load_run(ceiling)
    return metrics.samples_per_sec(run), float(metrics.steady_steps(run))


def is_mock(run) -> bool:
    """Whether the run is a ceiling (mock="loader" or "trainer"), not a rung."""
    return (run.config or {}).get("mock", "none") not in ("none", None)


def find_ceilings(run: Run, runs=None) -> tuple:
    """The latest mock="loader" and "trainer" runs alike but for _CEILING_FREE among `runs`
    (default: beside `run`), one named "<run name>: ..." first; None where there is none."""
    runs = load_runs(Path(run.path).parent) if runs is None else runs
    mine = {k: v for k, v in run.config.items() if k not in _CEILING_FREE}
    found = {}
    for other in runs:  # load_runs is oldest first: the latest match wins
        cfg = other.config
        kind = cfg.get("mock")
        if kind in ("loader", "trainer") and other.path != run.path and len(other.epochs) \
                and {k: v for k, v in cfg.items() if k not in _CEILING_FREE} == mine:
            named = other.name.startswith(f"{run.name}:")
            if named or not found.get(kind, (None, False))[1]:
                found[kind] = (other, named)
    return tuple(found[k][0] if k in found else None for k in ("loader", "trainer"))


# -- the verdict ----------------------------------------------------------------------------
def _verdict(n: dict, mock: str) -> str:
    if mock == "trainer":
        return "input-bound"  # nothing but input runs: this run measures the input ceiling
    rate, compute, feed = n["samples_per_sec"], n["compute_ceiling"], n["input_ceiling"]
    if mock != "loader" and n["wait_share"] >= INPUT_WAIT:
        return "input-bound"  # the threshold rules before ceilings measured over few steps
    if shared_cpu(n, mock):
        # the loader and the model take turns on the cores: the lower ceiling sets the pace
        return "input-bound" if feed < compute else "compute-bound"
    if mock != "loader":  # a mock loader never waits for input: only compute is left
        if _known(feed, compute) and feed < NEAR_CEILING * compute \
                and rate >= NEAR_CEILING * feed:
            return "input-bound"  # held at the loader's limit, which is below the model's
    if not math.isnan(n["gpu_util"]):
        if n["gpu_util"] >= GPU_BUSY:
            return "compute-bound"
        # an under-used GPU: the loader if waiting explains its idle time, else the host
        idle = 1 - n["gpu_util"] / 100
        return "input-bound" if n["wait_share"] >= IDLE_EXPLAINED * idle else "overhead-bound"
    if _known(compute, rate) and rate < BELOW_COMPUTE * compute:
        return "overhead-bound"  # neither waiting for data nor at the model's speed
    if idle_cpu(n, mock):
        return "overhead-bound"  # neither waiting for data nor keeping the cores busy
    return "compute-bound"


def idle_cpu(n: dict, mock: str = "none") -> bool:
    """Whether a run without GPU counters or compute ceiling left its CPU unsaturated."""
    return (mock == "none" and math.isnan(n["gpu_util"]) and not _known(n["compute_ceiling"])
            and _known(n["cpu_percent"]) and n["cpu_percent"] < CPU_SATURATED)


def shared_cpu(n: dict, mock: str = "none") -> bool:
    """Whether the loader and the model compete for the CPU: no GPU, every core busy."""
    return (mock == "none" and n["gpus"] == 0 and _known(n["cpu_percent"])
            and n["cpu_percent"] >= CPU_SATURATED
            and _known(n["input_ceiling"], n["compute_ceiling"]))


def _known(*values) -> bool:
    return all(v is not None and not math.isnan(v) for v in values)


def _evidence(run: Run, n: dict, mock: str) -> list:
    lines = [SAY[f"{kind}_ceiling_run"] for kind, (_, itself) in CEILINGS.items() if mock == itself]
    limit = "" if mock == "loader" else "; " + SAY["loader_limit"].format(share=INPUT_WAIT)
    lines.append(SAY["data_wait"].format(**n, wait=_pct(n["wait_share"]), limit=limit))
    lines.append(SAY["throughput"].format(**n, batch=run.config.get("batch_size", "?")))
    if _known(n["spikiness"]):
        lines.append(SAY["steadiness"].format(**n, waited=_pct(n["waited_share"]),
                                              share=metrics.WAITED))
    for kind, (label, itself) in CEILINGS.items():
        ceiling = n[f"{kind}_ceiling"]
        if _known(ceiling) and mock != itself:
            lines.append(SAY["ceiling"].format(label=label, ceiling=ceiling,
                                               share=_pct(n["samples_per_sec"] / ceiling)))
    if _known(n["compute_ceiling"], n["input_ceiling"]):
        ratio = n["input_ceiling"] / n["compute_ceiling"]
        enough = "enough" if ratio >= 1 else "not enough"
        lines.append(SAY["delivers"].format(ratio=ratio, enough=enough))
    elif mock == "none":
        missing = [f"mock='{m}'" for kind, (_, m) in CEILINGS.items()
                   if not _known(n[f"{kind}_ceiling"])]
        lines.append(SAY["unmeasured"].format(missing=" and ".join(missing)))
    if shared_cpu(n, mock):
        ratio = n["input_ceiling"] / n["compute_ceiling"]
        costly = "either" if 0.8 <= ratio <= 1.25 else "the input" if ratio < 1 else "the model"
        lines.append(SAY["cores_shared"].format(**n, shared=SAY["shared_cores"], costly=costly))
    elif not math.isnan(n["gpu_util"]):
        lines.append(SAY["gpu_util"].format(**n, busy=GPU_BUSY))
    else:
        lines.append(SAY["no_gpu"])
    if idle_cpu(n, mock) and n["wait_share"] < INPUT_WAIT:
        lines.append(SAY["cpu_idle"].format(**n, overhead=SAY["overhead"]))
    if not math.isnan(n["cpu_percent"]):
        cores = n["cpu_count"] if _known(n["cpu_count"]) else "?"
        lines.append(SAY["cpu_load"].format(**n, cores=cores, saturated=CPU_SATURATED))
    return lines


# -- what to try next -------------------------------------------------------------------------
def next_rung(verdict: str, cfg: dict, n: dict) -> tuple[RungName, str]:
    """(rung, advice): the next rung for this verdict and configuration, in the track's words."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict={verdict!r} is not allowed; allowed: {', '.join(VERDICTS)}")
    if verdict == "input-bound":
        return _input_rung(cfg, n)
    engine = cfg.get("engine", "gluon")
    graph, dtype = Graph.of(cfg.get("graph", Graph.EAGER)), cfg.get("dtype", "float32")
    batch, gpus = int(cfg.get("batch_size") or 0), n["gpus"]
    compile_advice = f"graph={Graph.HYBRID.word(engine)!r}, " + ADVICE["graph"][engine]
    if verdict == "overhead-bound":
        if graph == Graph.EAGER:
            return GRAPH[engine], compile_advice
        if graph == Graph.HYBRID:
            return GRAPH[engine], (f"graph={Graph.STATIC.word(engine)!r}: "
                                   + ADVICE["static_graph"][engine])
        return RungName.LARGE_BATCH, SAY["double_batch"].format(batch=batch,
                                                                 bigger=max(2 * batch, 1))
    if graph == Graph.EAGER:
        return GRAPH[engine], compile_advice
    if gpus == 0:
        return RungName.ALL_GPUS, SAY["cpu_limit"]
    if dtype == "float32":
        return PRECISION[engine], ADVICE["precision"][engine]
    if batch < LARGE_BATCH:
        optimizer = "LBSGD" if engine == "gluon" else "LARS"
        advice = SAY["large_batch"].format(batch=batch, large=LARGE_BATCH * 2,
                                           optimizer=optimizer)
        return RungName.LARGE_BATCH, advice
    if int(cfg.get("num_gpus") or 1) < gpus:
        return RungName.ALL_GPUS, f"num_gpus {cfg.get('num_gpus')} -> {gpus}"
    return RungName.ALL_GPUS, SAY["gpu_limit"]


def workers_advised(cfg: dict, n: dict) -> int | None:
    """The talk's loader workers (cpu_count() - 3, at least 2); None: has them or no free core."""
    cores = n["cpu_count"] if _known(n["cpu_count"]) else 1
    recommended = max(2, int(cores) - 3)
    cpu_free = not n["cpu_percent"] >= CPU_SATURATED   # NaN (not measured) counts as free
    return recommended if int(cfg.get("num_workers") or 0) < recommended and cpu_free else None


def next_format(fmt: str) -> str | None:
    """The FORMATS entry after `fmt`, None after the last."""
    if fmt not in FORMATS:
        raise ValueError(f"data_format={fmt!r} is not allowed; allowed: {', '.join(FORMATS)}")
    return FORMATS[FORMATS.index(fmt) + 1] if fmt != FORMATS[-1] else None


def _input_rung(cfg: dict, n: dict) -> tuple[RungName, str]:
    gluon = cfg.get("engine", "gluon") == "gluon"
    recommended = workers_advised(cfg, n)
    if recommended is not None:
        workers = int(cfg.get("num_workers") or 0)
        return RungName.WORKERS, SAY["workers"].format(workers=workers, recommended=recommended)
    faster = next_format(cfg.get("data_format") or
                         ("loose" if cfg.get("dataset") == "folder" else "memory"))
    saturated = "" if not n["cpu_percent"] >= CPU_SATURATED else \
        " " + SAY["cpu_busy"].format(**n)
    how = {**ADVICE["formats"], "packed": ADVICE["packed"]["gluon" if gluon else "pytorch"]}
    if cfg.get("dataset") == "own":   # a job's own data (gc.watch): no formats to offer
        return RungName.DATA_FORMAT, SAY["own_data"] + saturated
    if faster is not None:
        return RungName.DATA_FORMAT, f"data_format={faster!r}, {how[faster]}" + saturated
    if not gluon and not cfg.get("data_on_gpu"):
        return RungName.DATA_ON_GPU, SAY["data_on_gpu"] + saturated
    heavy = "cheaper augmentation, or " if cfg.get("augment") == "heavy" else ""
    return RungName.WORKERS, heavy + SAY["more_cores"] + saturated


def _pct(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{100 * value:.0f}%"
