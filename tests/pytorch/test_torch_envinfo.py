"""The CPU benchmark of lesson 11 reports each timed pass, for noise.compare_samples."""
import pytest

from gpu_course.analyse import noise
from gpu_course.tracks.torch import envinfo


def test_the_benchmark_reports_every_timed_pass_and_their_total():
    out = envinfo.bench(threads=1, onednn=True, batch=4, steps=3, model="tiny")
    passes = out["step_images_per_s"]
    assert len(passes) == 3 and all(v > 0 for v in passes)
    # the total is the passes' time summed: batch * steps / sum(batch / rate)
    assert out["images_per_s"] == pytest.approx(4 * 3 / sum(4 / v for v in passes))
    v = noise.compare_samples(passes, passes, "3 timed passes each",
                              out["images_per_s"], out["images_per_s"])
    assert v.kind == "within noise" and v.ratio == pytest.approx(1.0)
