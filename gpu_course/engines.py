"""Which track can run here: the Gluon track (MXNet) or the PyTorch track.

MXNet 1.9.1's GPU wheels hold machine code for sm_50–sm_86 and no PTX, so they cannot
run on Hopper (sm_90) or newer; there the PyTorch track is the one that runs. A machine
with no GPU runs the Gluon track on the CPU. `ENGINE=gluon|pytorch` overrides.

Standard library only (plus NVML through gpu_course.measure.nvml, if present): the Makefile runs this before any
environment exists, as `python3 -m gpu_course.engines`.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

ENGINES = ("gluon", "pytorch")
MXNET_MAX_CAPABILITY = (8, 6)  # newest architecture with machine code in the MXNet wheels


def compute_capabilities() -> list[tuple[int, int]]:
    """(major, minor) of every visible GPU; [] when there is none or no driver."""
    from .measure import nvml  # never raises; imports pynvml lazily
    if nvml.available():
        caps = []
        for info in nvml.gpus_info():
            try:
                major, minor = str(info.get("compute_capability")).split(".")
                caps.append((int(major), int(minor)))
            except ValueError:
                continue
        if caps:
            return caps
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    caps = []
    for line in out.stdout.split():
        try:
            major, minor = line.strip().split(".")
            caps.append((int(major), int(minor)))
        except ValueError:
            continue
    return caps


FRAMEWORKS = {"gluon": "mxnet", "pytorch": "torch"}


def installed_engines() -> tuple[str, ...]:
    """The tracks whose framework this Python environment has (without importing it)."""
    import importlib.util
    return tuple(e for e, module in FRAMEWORKS.items() if importlib.util.find_spec(module))


def pick_engine(env: dict | None = None, capabilities: list | None = None,
                installed: tuple | None = None) -> tuple[str, str]:
    """Return (engine, reason): $ENGINE where set; the one framework this environment has
    (a track's own environment); else, where both or neither are installed (the Makefile,
    before any environment exists), by the GPU."""
    env = os.environ if env is None else env
    chosen = env.get("ENGINE", "").strip().lower()
    if chosen:
        if chosen not in ENGINES:
            raise ValueError(f"ENGINE={chosen!r} is not allowed; allowed: {', '.join(ENGINES)}")
        return chosen, f"ENGINE={chosen} was set"
    installed = installed_engines() if installed is None else tuple(installed)
    if len(installed) == 1:
        return installed[0], (f"the framework this environment has ({FRAMEWORKS[installed[0]]}; "
                              "ENGINE= chooses the other in its own environment)")
    caps = compute_capabilities() if capabilities is None else capabilities
    if not caps:
        return "gluon", "no GPU found: the Gluon (MXNet) track runs on the CPU"
    newest = max(caps)
    if newest > MXNET_MAX_CAPABILITY:
        return "pytorch", (f"GPU compute capability {newest[0]}.{newest[1]} is newer than "
                           "MXNet 1.9.1 supports (sm_86 at most): the PyTorch track")
    return "gluon", (f"GPU compute capability {newest[0]}.{newest[1]}: the Gluon (MXNet) "
                     "track on the GPU")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:  # before any environment exists: by the hardware alone
        engine, reason = pick_engine(installed=())
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if "--reason" in argv:
        print(reason)
    else:
        print(engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
