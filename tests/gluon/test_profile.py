"""The Gluon profiler lesson: detect a build without the profiler and fall back."""
import pstats

from gpu_course.analyse import profiling
from gpu_course.tracks.gluon import profile


def test_the_pip_wheel_has_no_profiler_and_says_so(small_cfg, tmp_path):
    window = profile.profile_steps(small_cfg, tmp_path, wait=1, warmup=0, active=2)
    if window["trace"] is not None:   # a build with the profiler writes a trace
        assert window["trace"].exists() and profiling.read_trace(window["trace"])
        return
    assert window["trace"] is None and "PROFILER off" in window["note"]
    assert pstats.Stats(str(tmp_path / "steps.prof")).total_calls > 0
    assert len(window["ops"]) > 0
