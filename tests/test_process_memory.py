"""The process's own memory, read from Linux (lesson 14's CPU counter): the resident set,
its peak and the peak's reset, read from real files; and the allocation a step makes,
seen in the peak once glibc gives freed blocks back."""
import sys

import pytest

from gpu_course.measure import process_memory as pm

linux = pytest.mark.skipif(not sys.platform.startswith("linux") or not pm.available(),
                           reason="needs /proc/self/status and clear_refs (Linux 4.0+)")


def test_the_status_file_is_read_in_bytes(tmp_path):
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n")
    assert pm.resident(status) == 1024 * 1024 and pm.peak(status) == 2048 * 1024
    assert pm.resident(tmp_path / "missing") is None
    status.write_text("Name:\tpython\n")
    assert pm.peak(status) is None


def test_a_reset_that_cannot_be_written_says_so(tmp_path):
    assert pm.reset_peak(tmp_path / "no" / "clear_refs") is False


@linux
def test_a_new_allocation_shows_in_the_peak_and_goes_when_freed():
    pm.steady()
    before = pm.resident()
    pm.reset_peak()
    block = bytearray(64 * 2**20)        # touched pages: 64 MiB resident
    grown = pm.peak() - before
    del block
    assert grown >= 60 * 2**20 and pm.resident() - before < 16 * 2**20
    pm.reset_peak()
    assert pm.peak() - pm.resident() < 16 * 2**20   # the peak starts again from now
    assert pm.steady() is True                        # once a process, the same answer
