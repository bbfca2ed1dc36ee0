"""The `distributed` verb's scaling table from recorded runs (the jobs themselves run
in tests/pytorch/test_multinode.py and tests/gluon/test_dist.py)."""
import pytest

from fake_runs import write_run
from gpu_course import cli
from gpu_course.scale import distributed
from gpu_course.measure import records


def _run(tmp_path, name, samples_per_sec, ranks=None):
    path = write_run(tmp_path, name=name, samples_per_sec=samples_per_sec)
    run = records.load_run(path)
    if ranks is not None:
        run.meta.setdefault("notes", {})["ranks"] = ranks
    return run


def test_scaling_table_measured_talk_and_model_rows(tmp_path):
    epochs = [{"samples": 640, "steps": 10, "samples_per_sec": 160.0}]
    base = _run(tmp_path, "one", 100.0)
    job = _run(tmp_path, "two", 160.0, ranks=[{"epochs": epochs},
                                              {"epochs": [dict(epochs[0], samples_per_sec=128.0)]}])
    assert distributed.step_seconds(job) == pytest.approx(64 / 128)  # the slowest rank's
    rows = distributed.scaling_table(base, job, k=2, batch=32, grad_bytes=1_000_000)
    s1, s2 = base.summary["samples_per_sec"], job.summary["samples_per_sec"]
    assert (s1, s2) == pytest.approx((100, 160), rel=0.05)
    measured = rows[1]
    assert measured["efficiency"] == pytest.approx(s2 / (2 * s1))
    assert measured["exposed_ms"] == pytest.approx(1e3 * (2 * 32 / s2 - 32 / s1))
    talk = rows[2]
    assert talk["efficiency"] == pytest.approx(50_000 / 68_000)
    model = [r for r in rows if r["what"].startswith("model")]
    assert len(model) == 2 * 3 * 2 and all(0 < r["efficiency"] <= 1 for r in model)
    text = distributed.format_table(rows)
    assert "talk, 4 V100 batch 640" in text and "NVLink" in text


def test_cli_refuses_bad_counts(capsys):
    assert cli.main(["distributed", "--engine", "pytorch", "--nodes", "0"]) == 2
    assert "--nodes=0" in capsys.readouterr().err
