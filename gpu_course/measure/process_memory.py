"""This process's memory from Linux (VmRSS, VmHWM): the CPU's `memory_allocated` and
`max_memory_allocated` (lesson 14). Never raises."""
from __future__ import annotations

import ctypes
import ctypes.util
import re
from pathlib import Path

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")
MMAP_THRESHOLD = 128 * 1024     # bytes: larger blocks are mapped alone and unmapped when freed
TRIM_THRESHOLD = 256 * 1024     # bytes of free heap top returned to the system
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3   # glibc's mallopt parameters
_STEADY: list = []   # whether steady() took effect: set once a process


def _status(field: str, path: Path = STATUS) -> int | None:
    """A `kB` field of /proc/self/status in bytes, or None where there is none."""
    try:
        found = re.search(rf"^{field}:\s+(\d+)\s+kB", path.read_text(), re.M)
    except OSError:
        return None
    return int(found.group(1)) * 1024 if found else None


def resident(path: Path = STATUS) -> int | None:
    """Bytes of this process resident in memory now (VmRSS), or None off Linux."""
    return _status("VmRSS", path)


def peak(path: Path = STATUS) -> int | None:
    """The most bytes resident since the last `reset_peak()` (VmHWM), or None off Linux."""
    return _status("VmHWM", path)


def reset_peak(path: Path = CLEAR_REFS) -> bool:
    """Set the peak back to the resident set now; False where the kernel cannot."""
    try:
        path.write_text("5")
    except OSError:
        return False
    return True


def available() -> bool:
    """Whether this process can read its resident set and reset its peak."""
    return resident() is not None and peak() is not None and reset_peak()


def steady() -> bool:
    """Fix glibc's mmap threshold so freed blocks go back to the system; False off glibc."""
    if not _STEADY:
        _STEADY.append(_mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                       and _mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _STEADY[0]


def _mallopt(parameter: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(parameter, value))
    except (OSError, AttributeError):   # no C library by that name, or no mallopt in it
        return False
