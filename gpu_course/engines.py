"""Which track can run here: Gluon (MXNet) or PyTorch, by $ENGINE, the installed framework
or the GPU. MXNet 1.9.1 holds machine code for sm_50-sm_86 and no PTX: nothing runs on
sm_90 or newer. Standard library only: the Makefile runs it as `python3 -m gpu_course.engines`."""
from __future__ import annotations

import enum
import os
import re
import shutil
import subprocess
import sys

ENGINES = ("gluon", "pytorch")


def check_engine(engine: str) -> str:
    """`engine`, or a ValueError naming the tracks there are."""
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r} is not allowed; allowed: {', '.join(ENGINES)}")
    return engine


# the architectures with machine code in the mxnet-cu112 1.9.1 wheel (no PTX)
MXNET_CODE = ((5, 0), (5, 2), (6, 0), (6, 1), (7, 0), (7, 5), (8, 0), (8, 6))
# the GPUs the course meets (workshops, SageMaker), by CUDA compute capability
GPUS = {"V100": (7, 0), "T4": (7, 5), "A100": (8, 0), "A10G": (8, 6), "L4": (8, 9),
        "L40S": (8, 9), "H100": (9, 0), "H200": (9, 0), "B200": (10, 0)}


class Gluon(enum.Enum):
    """Whether the MXNet GPU build runs on a GPU of some compute capability."""

    RUNS = "its own machine code"
    UNTESTED = "sm_{code} machine code by CUDA's binary compatibility, not yet run on such a card"
    NO = "no machine code and no PTX for it: the PyTorch track"


def gluon_gpu(capability: tuple) -> tuple[Gluon, tuple | None]:
    """(whether the Gluon GPU build runs on `capability`, the machine code it runs)."""
    if not (same_major := [c for c in MXNET_CODE if c[0] == capability[0] and c <= tuple(capability)]):
        return Gluon.NO, None
    code = max(same_major)
    return (Gluon.RUNS if code == tuple(capability) else Gluon.UNTESTED), code


def gluon_extra(capabilities: list) -> str:
    """The pip extra of the Gluon track here: its GPU build where every GPU can run it."""
    runs = capabilities and all(gluon_gpu(c)[0] is not Gluon.NO for c in capabilities)
    return "gluon-gpu" if runs else "gluon"


def support_text(capability: tuple) -> str:
    kind, code = gluon_gpu(capability)
    return kind.value.format(code="".join(map(str, code or ())))


def compute_capabilities() -> list[tuple[int, int]]:
    """(major, minor) of every visible GPU; [] when there is none or no driver."""
    from .measure import nvml  # never raises; imports pynvml lazily
    caps = _parse(str(i.get("compute_capability")) for i in nvml.gpus_info()) \
        if nvml.available() else []
    if caps or shutil.which("nvidia-smi") is None:
        return caps
    try:
        return _parse(subprocess.run(["nvidia-smi", "--query-gpu=compute_cap",
                                      "--format=csv,noheader"],
                                     capture_output=True, text=True, timeout=20).stdout.split())
    except (OSError, subprocess.SubprocessError):
        return []


def _parse(texts) -> list[tuple[int, int]]:
    """'8.9' -> (8, 9), skipping what is not a capability."""
    return [(int(m[1]), int(m[2])) for t in texts if (m := re.fullmatch(r"\s*(\d+)\.(\d+)\s*", t))]


FRAMEWORKS = {"gluon": "mxnet", "pytorch": "torch"}


def installed_engines() -> tuple[str, ...]:
    """The tracks whose framework this Python environment has (without importing it)."""
    import importlib.util
    return tuple(e for e, module in FRAMEWORKS.items() if importlib.util.find_spec(module))


def pick_engine(env: dict | None = None, capabilities: list | None = None,
                installed: tuple | None = None) -> tuple[str, str]:
    """(engine, reason): $ENGINE where set; else the one framework installed; else (both or
    neither, as in the Makefile before any environment exists) by the GPU."""
    if chosen := (os.environ if env is None else env).get("ENGINE", "").strip().lower():
        if chosen not in ENGINES:
            raise ValueError(f"ENGINE={chosen!r} is not allowed; allowed: {', '.join(ENGINES)}")
        return chosen, f"ENGINE={chosen} was set"
    installed = installed_engines() if installed is None else tuple(installed)
    if len(installed) == 1:
        return installed[0], f"the framework this environment has: {FRAMEWORKS[installed[0]]}"
    if not (caps := compute_capabilities() if capabilities is None else capabilities):
        return "gluon", "no GPU found: the Gluon (MXNet) track runs on the CPU"
    newest = max(caps)
    engine = "pytorch" if gluon_extra(caps) == "gluon" else "gluon"
    return engine, f"compute capability {newest[0]}.{newest[1]}: MXNet 1.9.1 has {support_text(newest)}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:  # before any environment exists: by the hardware alone
        engine, reason = pick_engine(installed=())
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    # --gluon-extra: the Makefile's GLUON_EXTRA
    print(reason if "--reason" in argv else gluon_extra(compute_capabilities())
          if "--gluon-extra" in argv else engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
