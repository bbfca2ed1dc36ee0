"""The CPU's instruction sets (/proc/cpuinfo) that decide whether a lower precision runs and
pays: `supports(Capability.MXNET_BFLOAT16)` is truthy, with `.why`. GPU_COURSE_CPU_FLAGS fakes
another CPU ("-avx512,-amx": drop flags by prefix, "+name": add one); DNNL_MAX_CPU_ISA is read too.
"""
from __future__ import annotations

import enum
import functools
import os
from dataclasses import dataclass
from pathlib import Path

FAKE = "GPU_COURSE_CPU_FLAGS"
ISA_CAP = "DNNL_MAX_CPU_ISA"   # oneDNN's own cap (MXNet's and PyTorch's): it hides what is above it
# what oneDNN does not use below each cap it reads (prefixes of /proc/cpuinfo flags)
HIDDEN_BELOW = {"SSE41": ("avx", "fma", "f16c"), "AVX": ("avx2", "avx512", "amx", "fma", "f16c"),
                "AVX2": ("avx512", "amx"), "AVX2_VNNI": ("avx512", "amx"),
                "AVX2_VNNI_2": ("avx512", "amx"), "AVX512_CORE": ("avx512_bf16", "avx512_fp16", "amx"),
                "AVX512_CORE_VNNI": ("avx512_bf16", "avx512_fp16", "amx"),
                "AVX512_CORE_BF16": ("avx512_fp16", "amx"), "AVX512_CORE_FP16": ("amx",),
                "AVX10_1_512": ("amx",)}
CPUINFO = Path("/proc/cpuinfo")
# the flags the course reads, as /proc/cpuinfo names them; a run records those present
READ = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq",
        "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8")
# oneDNN's "avx512_core": the least its bfloat16 convolutions need (MXNet 1.9.1's oneDNN)
AVX512_CORE = ("avx512f", "avx512bw", "avx512vl", "avx512dq")
BF16_INSTRUCTIONS = ("avx512_bf16", "amx_bf16")   # Cooper Lake's dot products, Sapphire Rapids' tiles


class Capability(enum.Enum):
    """What a lesson may need of the CPU."""
    MXNET_BFLOAT16 = "MXNet's bfloat16 on the CPU"
    BFLOAT16_INSTRUCTIONS = "instructions for bfloat16 arithmetic"


@dataclass(frozen=True)
class Support:
    """Whether the CPU has a capability, and the sentence that says why (or why not)."""
    capability: Capability
    ok: bool
    why: str

    def __bool__(self) -> bool:
        return self.ok


def apply_fake(flags: frozenset, spec: str) -> frozenset:
    """`flags` changed as a GPU_COURSE_CPU_FLAGS value says; ValueError naming a bad part."""
    out = set(flags)
    for part in filter(None, (p.strip() for p in spec.split(","))):
        if part[0] not in "+-" or not part[1:].replace("_", "").isalnum():
            raise ValueError(f"{FAKE}={spec!r}: {part!r} is not a change; allowed: '-name' (drop "
                             "flags starting with name) or '+name' (add it), e.g. -avx512,-amx")
        name = part[1:].lower()
        out = {f for f in out if not f.startswith(name)} if part[0] == "-" else out | {name}
    return frozenset(out)


def machine_flags(cpuinfo: Path | None = None) -> frozenset | None:
    """Every flag of the first processor in /proc/cpuinfo; None where there is none to read."""
    try:
        for line in (cpuinfo or CPUINFO).read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


@functools.lru_cache(maxsize=None)
def _features(spec: str, cap: str) -> frozenset | None:
    flags = machine_flags()
    if flags is None:
        return None
    hidden = HIDDEN_BELOW.get(cap.upper(), ())
    usable = frozenset(f for f in flags if not f.startswith(hidden)) if hidden else flags
    return frozenset(f for f in apply_fake(usable, spec) if f in READ or f.startswith(("avx512", "amx")))


def features() -> frozenset | None:
    """The course's flags this CPU has as oneDNN may use them (less what DNNL_MAX_CPU_ISA
    caps away, faked as GPU_COURSE_CPU_FLAGS says); None without /proc/cpuinfo."""
    return _features(os.environ.get(FAKE, ""), os.environ.get(ISA_CAP, ""))


def faked() -> str | None:
    """What changes the flags read from the machine, in words (None: nothing)."""
    parts = [f"{name}={os.environ[name]}" for name in (FAKE, ISA_CAP)
             if os.environ.get(name) and (name == FAKE or os.environ[name].upper() in HIDDEN_BELOW)]
    return ", ".join(parts) or None


def describe(flags) -> str:
    """'AVX2, no AVX-512, no AMX'-like words for a set of flags (None: not known)."""
    if flags is None:
        return "its instruction sets unknown (no /proc/cpuinfo)"
    flags = set(flags)
    return ", ".join(word if has else f"no {word}" for word, has in (
        ("AVX2", "avx2" in flags), ("AVX-512", set(AVX512_CORE) <= flags),
        ("AVX512-BF16", "avx512_bf16" in flags), ("AMX", "amx_bf16" in flags)))


def supports(capability: Capability, flags=None) -> Support:
    """Whether a CPU with `flags` (default: this one's, `features()`) has `capability`."""
    flags = features() if flags is None else frozenset(flags)
    has = describe(flags) + (f" ({faked()})" if faked() and flags == features() else "")
    if capability == Capability.MXNET_BFLOAT16:
        ok = flags is not None and set(AVX512_CORE) <= flags
        why = f"MXNet's bfloat16 convolutions need AVX-512 (F, BW, VL, DQ); this CPU has {has}"
    else:
        ok = flags is not None and bool(set(BF16_INSTRUCTIONS) & flags)
        why = (f"a CPU multiplies bfloat16 faster than float32 only with AVX512-BF16 or AMX; "
               f"elsewhere each operator converts to float32 and back; this CPU has {has}")
    return Support(capability, ok, why)


def record() -> dict:
    """What a run record keeps of the CPU's instruction sets."""
    flags = features()
    return {"cpu_features": sorted(flags) if flags is not None else None, "cpu_features_faked": faked()}
