"""The CPU benchmark of lesson 11 reports each timed pass, for noise.compare_samples; and
`gpu-course env --quick` measures this CPU through it. The command's measuring (a fresh
process for each setting) is the same code on both tracks, so it runs once, here; each
track's benchmark processes also run in its lesson 11 notebook."""
import pytest

from gpu_course.analyse import noise
from gpu_course.tracks.torch import envinfo
from support import run_cli


def test_the_benchmark_reports_every_timed_pass_and_their_total():
    out = envinfo.bench(threads=1, onednn=True, batch=4, steps=3, model="tiny")
    passes = out["step_images_per_s"]
    assert len(passes) == 3 and all(v > 0 for v in passes)
    # the total is the passes' time summed: batch * steps / sum(batch / rate)
    assert out["images_per_s"] == pytest.approx(4 * 3 / sum(4 / v for v in passes))
    v = noise.compare_samples(passes, passes, "3 timed passes each",
                              out["images_per_s"], out["images_per_s"])
    assert v.kind == "within noise" and v.ratio == pytest.approx(1.0)


def test_env_text_on_this_machine_measures_the_cpu():
    done = run_cli("env", "--quick", timeout=600)
    assert done.returncode == 0, done.stderr
    assert "oneDNN on:" in done.stdout and "threads: 1 ->" in done.stdout
    assert "disk (" in done.stdout and "MB/s" in done.stdout
