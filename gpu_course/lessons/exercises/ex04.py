"""Lesson 04's exercise: this device's 16-bit type, its samples/s predicted, its accuracy read."""
from __future__ import annotations

from ...analyse import alike, metrics, noise
from ...env import cpu
from ...show.findings import Note, Outcome, Page, Where
from ..l04_precision import LESSON, SIXTEEN_BITS, asked
from .base import NotYet, exercise
from .judge import finished_runs, judge_prediction, only_change, speed_verdict

PAGE = Page.of(__name__)   # the fixed sentences: text/ex04.md
# why a 16-bit type pays, or not, on the device the runs trained on (on a GPU: True)
_TENSOR_CORES = LESSON.compares[-1].means[Outcome.EXPECTED][Where.GPU]
WHY = {True: _TENSOR_CORES[:1].lower() + _TENSOR_CORES[1:] + " " + PAGE.text("gpu_pays"),
       False: PAGE.text("cpu_pays")}
# a 16-bit request this CPU refused (MXNet without AVX-512): what the runs can and cannot say
NOT_HERE, ELSEWHERE, MEASURED = (PAGE.text(n) for n in ("not_here", "elsewhere", "measured"))
RUNS, ASK = PAGE.text("runs"), PAGE.text("ask_sixteen_bits")


def device_words(run) -> str:
    """The device the run trained on, from its record: the GPU's name, or the CPU's."""
    hw = run.meta.get("hardware") or {}
    gpu = (hw.get("gpus") or [{}])[0].get("name") or "?"
    return f"a GPU ({gpu})" if metrics.on_gpu(run) else f"the CPU ({hw.get('cpu_model') or '?'}), no GPU"


@exercise("04.1")
def _lower_precision(runs, answer) -> str:
    """Train in 16 bits on this device, predict its samples/s, read its accuracy."""
    full, low = finished_runs(runs, 2, RUNS)[:2]
    if alike.value(full, "dtype") != "float32":
        raise NotYet(f"'{full.name}' ran {alike.value(full, 'dtype')}: the first run is float32.")
    want, ran = asked(low, "dtype"), alike.value(low, "dtype")
    where = device_words(low)
    refused = ran not in SIXTEEN_BITS and want in SIXTEEN_BITS
    why = metrics.ran_as(low).get("dtype", ("", "", ""))[2]
    if refused and not lacks_sixteen_bits(low):
        raise NotYet(f"'{low.name}' asked for {want} and ran {ran} on {where}: {why} {ASK}")
    if not refused:   # where the CPU refused it, both ran float32: two identical jobs
        only_change(full, low, "dtype")
    untested = (Note(lambda run: run is low and refused, (True,), NOT_HERE.replace("{want}", want)),)
    said = judge_prediction(answer, speed_verdict(full, low, "dtype", "04"), full, low, untested)
    ran_as = f" ('{low.name}' asked for {want} and ran {ran}: {why})" if want != ran else ""
    flags = (low.meta.get("hardware") or {}).get("cpu_features") or []
    return (ELSEWHERE if refused else MEASURED).format(
        said=said, ran_as=ran_as, where=where, ran=ran, why=WHY[metrics.on_gpu(low)] if not refused
        else cpu.supports(cpu.Capability.MXNET_BFLOAT16, flags).why,
        accuracy=noise.accuracy_change(full, low)[1])


def lacks_sixteen_bits(run) -> bool:
    """Whether `run` trained MXNet on a CPU without AVX-512 (its bfloat16 needs it; PyTorch's
    runs on any CPU), by the record's instruction sets (none recorded: it does not say)."""
    flags = (run.meta.get("hardware") or {}).get("cpu_features")
    return (not metrics.on_gpu(run) and metrics.engine(run) == "gluon" and flags is not None
            and not cpu.supports(cpu.Capability.MXNET_BFLOAT16, flags))
