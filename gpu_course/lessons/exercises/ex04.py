"""Lesson 04's exercise: the 16-bit type this device computes in, its samples/s predicted
and its accuracy read, the device named."""
from __future__ import annotations

from ...analyse import alike, metrics, noise
from ...env import cpu
from ..l04_precision import SIXTEEN_BITS, asked
from .base import NotYet, exercise
from .judge import finished_runs, judge_prediction, only_change, speed_verdict


def device_words(run) -> str:
    """The device the run trained on, from its record: the GPU's name, or the CPU's."""
    hw = run.meta.get("hardware") or {}
    if metrics.on_gpu(run):
        return f"a GPU ({(hw.get('gpus') or [{}])[0].get('name') or '?'})"
    return f"the CPU ({hw.get('cpu_model') or '?'}), no GPU"


@exercise("04.1", "Train in 16 bits on this device, predict its samples/s, read its accuracy.")
def _lower_precision(runs, answer) -> str:
    full, low = finished_runs(runs, 2, "the exercise compares two runs: float32 and a 16-bit type")[:2]
    if alike.value(full, "dtype") != "float32":
        raise NotYet(f"'{full.name}' ran {alike.value(full, 'dtype')}: the first run is float32, "
                     "the second the lower precision.")
    want, ran = asked(low, "dtype"), alike.value(low, "dtype")
    where = device_words(low)
    if ran not in SIXTEEN_BITS and want in SIXTEEN_BITS and lacks_sixteen_bits(low):
        return _not_on_this_cpu(full, low, answer, where)
    if ran not in SIXTEEN_BITS and want in SIXTEEN_BITS:
        raise NotYet(f"'{low.name}' asked for {want} and ran {ran} on {where}: "
                     f"{metrics.ran_as(low)['dtype'][2]} Nothing below float32 was measured: ask "
                     "for the 16-bit type this device computes in (MXNet: float16 on a GPU, "
                     "bfloat16 on a CPU; PyTorch: either on a GPU, bfloat16 on a CPU).")
    only_change(full, low, "dtype")
    said = judge_prediction(answer, speed_verdict(full, low, "dtype", "04"), full, low)
    if want != ran:
        said += f" ('{low.name}' asked for {want} and ran {ran}: {metrics.ran_as(low)['dtype'][2]})"
    if metrics.on_gpu(low):
        why = ("a GPU's tensor cores (V100 and newer; bfloat16 from Ampere) multiply 16-bit "
               "numbers several times faster than float32 ones, and 16 bits move half the bytes, "
               "so they pay where the step is the GPU's arithmetic or memory traffic; a step "
               "held by the loader or by Python (a small batch) gains little.")
    else:
        why = ("a CPU gains from 16 bits only where it has instructions for them (AVX512-BF16 "
               "or AMX, from Intel's Cooper Lake and Sapphire Rapids) and the framework's "
               "kernels use them; elsewhere the casts around each operator cost more than the "
               "smaller numbers save. The same change speeds up one machine and slows down "
               "another: predict for the device, not for the precision.")
    _, accuracy = noise.accuracy_change(full, low)
    return (f"{said} These runs trained on {where}: {why} Validation accuracy after the same "
            f"epochs, {ran} against float32: {accuracy}.")


def lacks_sixteen_bits(run) -> bool:
    """Whether `run` trained on a CPU without any 16-bit type its framework computes in
    there: MXNet's bfloat16 needs AVX-512, by the CPU's instruction sets in the record
    (PyTorch computes bfloat16 on any CPU). A record without them does not say."""
    flags = (run.meta.get("hardware") or {}).get("cpu_features")
    return (not metrics.on_gpu(run) and metrics.engine(run) == "gluon" and flags is not None
            and not cpu.supports(cpu.Capability.MXNET_BFLOAT16, flags))


def _not_on_this_cpu(full, low, answer, where) -> str:
    """What the exercise offers on a CPU that has no 16-bit type for MXNet: the request
    and its recorded refusal read, the two float32 runs compared as the identical jobs
    they are, and where the precision can be measured instead."""
    flags = low.meta["hardware"]["cpu_features"]
    why = cpu.supports(cpu.Capability.MXNET_BFLOAT16, flags).why
    verdict = speed_verdict(full, low, "dtype", "04")
    said = judge_prediction(answer, verdict, full, low, untested=(
        f"'{low.name}' asked for {asked(low, 'dtype')}, which is not on this CPU, so it "
        "trained in float32 like the first run (its record says so): two identical jobs, "
        "whose difference is only this machine's noise."))
    return (f"{said} These runs trained on {where}. {why}: no 16-bit type runs "
            "in MXNet here, and a course that claimed one would report float32's speed as "
            "bfloat16's. What this CPU can do: the PyTorch track's exercise 04.1 computes "
            "bfloat16 on it (through float32 conversions, without instructions for it: "
            "predict accordingly); this exercise measures a 16-bit type on a GPU (float16) "
            "or on a CPU with AVX-512 (bfloat16).")
