"""gpu_course.analyse.diagnose: verdicts, evidence and next rungs from run records."""
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fake_runs import load, write_run
from gpu_course.analyse import diagnose
from gpu_course.measure.records import Ran, RunRecord
from gpu_course.rungs import RungName

GPU = dict(engine="pytorch", num_gpus=1, machine_gpus=1)
CPU = dict(engine="gluon", num_gpus=0, machine_gpus=0, gpm=False, cpu_count=2)
REPO = Path(__file__).resolve().parents[1]


def run_cli(*args, timeout=600):
    """`python -m gpu_course.cli ARGS` as a real subprocess from the repository root."""
    return subprocess.run([sys.executable, "-m", "gpu_course.cli", *map(str, args)],
                          cwd=REPO, capture_output=True, text=True, timeout=timeout)


def test_a_starved_gpu_is_input_bound_and_more_workers_come_next(tmp_path):
    run = load(write_run(tmp_path, "naive", samples_per_sec=640.0, busy=45,
                         data_wait_share=0.62, **GPU))
    d = diagnose.diagnose(run)
    assert d.verdict == "input-bound" and d.next_rung == "workers"
    assert "num_workers 0 -> 13" in d.advice
    text = str(d)
    assert "INPUT-BOUND" in text and "data wait: 62% of step time" in text
    assert "GPU utilisation:" in text and "CPU load:" in text
    assert "mock='loader' and mock='trainer' ceilings not measured" in text


def test_a_busy_gpu_is_compute_bound_and_the_compute_rungs_follow_in_order(tmp_path):
    steps = [({}, "compile"), ({"graph": "hybrid"}, "bfloat16"),   # a PyTorch run's rungs
             ({"graph": "compile", "dtype": "bfloat16"}, "large-batch"),
             ({"graph": "hybrid", "dtype": "bfloat16", "batch_size": 1024}, "all-gpus")]
    for i, (config, rung) in enumerate(steps):
        run = load(write_run(tmp_path, f"r{i}", busy=97, data_wait_share=0.02, index=i,
                             config={"num_workers": 8, **config}, **GPU))
        d = diagnose.diagnose(run)
        assert (d.verdict, d.next_rung) == ("compute-bound", rung), config
    assert "torch.compile" in diagnose.next_rung("compute-bound", {"engine": "pytorch"},
                                                 {"gpus": 1})[1]
    assert diagnose.next_rung("compute-bound", {"engine": "gluon"}, {"gpus": 1})[0] == \
        RungName.HYBRIDIZE
    assert diagnose.next_rung("compute-bound", {"engine": "gluon", "graph": "static"},
                              {"gpus": 1})[0] == RungName.FLOAT16


@pytest.mark.parametrize("engine, rung, words, not_words", [
    ("pytorch", RungName.COMPILE, ("'compile'", "'cuda-graphs'", "torch.compile"),
     ("hybrid", "static")),
    ("gluon", RungName.HYBRIDIZE, ("'hybridize'", "'static-alloc'", "static_alloc"),
     ("torch", "'static'", "'hybrid'")),
])
def test_the_graph_advice_speaks_the_run_s_track(engine, rung, words, not_words):
    """An overhead-bound run's graph rung and advice, eager then a graph, in its own
    track's words: what its attendee writes as graph=."""
    said = [diagnose.next_rung("overhead-bound", {"engine": engine, "graph": graph}, {"gpus": 1})
            for graph in ("eager", "hybrid")]
    assert {r for r, _ in said} == {rung}
    text = " ".join(advice for _, advice in said)
    assert all(w in text for w in words) and not any(w in text for w in not_words), text


def test_an_idle_gpu_that_does_not_wait_for_data_is_overhead_bound(tmp_path):
    run = load(write_run(tmp_path, "small net", busy=35, data_wait_share=0.02,
                         config={"num_workers": 8, "model": "tiny"}, **GPU))
    d = diagnose.diagnose(run)
    assert d.verdict == "overhead-bound" and d.next_rung == "compile"
    static = load(write_run(tmp_path, "compiled", busy=35, data_wait_share=0.02, index=1,
                            config={"num_workers": 8, "graph": "static"}, **GPU))
    assert diagnose.diagnose(static).next_rung == "large-batch"


def test_on_a_cpu_the_ceilings_decide(tmp_path):
    # waits little, yet reaches only half the compute ceiling: per-step overhead
    run = load(write_run(tmp_path, "cpu", samples_per_sec=300.0, data_wait_share=0.05, **CPU))
    assert diagnose.diagnose(run, compute_ceiling=620.0).verdict == "overhead-bound"
    assert diagnose.diagnose(run, compute_ceiling=320.0).verdict == "compute-bound"
    # waits a little, but runs at the input ceiling, which is below the compute ceiling
    d = diagnose.diagnose(run, compute_ceiling=900.0, input_ceiling=310.0)
    assert d.verdict == "input-bound"
    assert "input pipeline can deliver 0.34x" in str(d)
    assert re.search(r"compute ceiling \(mock loader\): 900 samples/s; this run reaches 3\d%",
                     str(d))


def test_on_a_saturated_cpu_the_costlier_side_sets_the_pace(tmp_path):
    # little data wait, but the worker's decoding slows the model's steps down
    run = load(write_run(tmp_path, "loose", samples_per_sec=180.0, data_wait_share=0.14,
                         **CPU))
    run.host["cpu_percent"] = 99.0
    d = diagnose.diagnose(run, compute_ceiling=700.0, input_ceiling=350.0)
    assert d.verdict == "input-bound"
    assert "make the input cheaper" in str(d)
    d = diagnose.diagnose(run, compute_ceiling=300.0, input_ceiling=900.0)
    assert d.verdict == "compute-bound"


def test_a_run_that_waits_past_the_threshold_is_input_bound_on_a_saturated_cpu(tmp_path):
    """Gluon 09 in smoke mode: 82% data wait was called compute-bound because the compute
    ceiling was a little lower than the input ceiling."""
    run = load(write_run(tmp_path, "loose", samples_per_sec=215.0, data_wait_share=0.82,
                         **CPU))
    run.host["cpu_percent"] = 100.0
    d = diagnose.diagnose(run, compute_ceiling=526.0, input_ceiling=583.0)
    assert d.verdict == "input-bound" and d.next_rung == "workers"
    assert "data wait: 82% of step time" in str(d)


def test_ceilings_are_found_next_to_the_run(tmp_path):
    run = load(write_run(tmp_path, "loose", samples_per_sec=200.0, data_wait_share=0.1,
                         config={"dataset": "folder", "num_workers": 2}, **CPU))
    write_run(tmp_path, "other model", samples_per_sec=50.0, data_wait_share=0.0, index=1,
              config={"dataset": "folder", "num_workers": 2, "mock": "loader",
                      "model": "resnet110"}, **CPU)
    write_run(tmp_path, "ceiling c", samples_per_sec=1500.0, data_wait_share=0.0, index=2,
              config={"dataset": "folder", "num_workers": 2, "mock": "loader"}, **CPU)
    write_run(tmp_path, "ceiling i", samples_per_sec=210.0, data_wait_share=1.0, index=3,
              config={"dataset": "folder", "num_workers": 2, "mock": "trainer",
                      "train_size": 512}, **CPU)
    compute, feed = diagnose.find_ceilings(run)
    assert (compute.name, feed.name) == ("ceiling c", "ceiling i")
    # a ceiling named after the run wins over a later one that only shares its settings
    write_run(tmp_path, "loose: mock trainer", samples_per_sec=205.0, data_wait_share=1.0,
              index=4, config={"dataset": "folder", "num_workers": 2, "mock": "trainer"}, **CPU)
    write_run(tmp_path, "packed: mock trainer", samples_per_sec=5000.0, data_wait_share=1.0,
              index=5, config={"dataset": "folder", "num_workers": 2, "mock": "trainer"}, **CPU)
    assert diagnose.find_ceilings(run)[1].name == "loose: mock trainer"
    d = diagnose.diagnose(run)
    assert d.numbers["compute_ceiling"] == pytest.approx(1500.0, rel=0.05)
    assert d.verdict == "input-bound" and d.next_rung == RungName.DATA_FORMAT
    assert d.advice.startswith("data_format='preresized'")
    assert math.isnan(diagnose.diagnose(run, search=False).numbers["compute_ceiling"])


def test_mock_runs_are_their_own_ceilings(tmp_path):
    loader = load(write_run(tmp_path, "mock loader", samples_per_sec=900.0,
                            data_wait_share=0.0, config={"mock": "loader"}, **CPU))
    d = diagnose.diagnose(loader, input_ceiling=100.0)
    assert d.verdict == "compute-bound"  # never input-bound: it never waits for data
    assert "this run is the compute ceiling" in str(d)
    trainer = load(write_run(tmp_path, "mock trainer", samples_per_sec=100.0, index=1,
                             data_wait_share=1.0, config={"mock": "trainer"}, **CPU))
    assert diagnose.diagnose(trainer).verdict == "input-bound"


def test_input_rungs_follow_the_data_format(tmp_path):
    n = {"cpu_count": 2, "cpu_percent": 99.0, "gpus": 0}
    folder_cfg = {"dataset": "folder", "num_workers": 2, "engine": "gluon"}
    assert diagnose.next_rung("input-bound", folder_cfg, n)[0] == RungName.DATA_FORMAT
    assert "100% busy" not in diagnose.next_rung("input-bound", folder_cfg,
                                                 {**n, "cpu_percent": 50.0})[1]
    for fmt, faster in (("loose", "preresized"), ("preresized", "packed"), ("packed", "memory")):
        rung, advice = diagnose.next_rung("input-bound", {**folder_cfg, "data_format": fmt}, n)
        assert rung == RungName.DATA_FORMAT and advice.startswith(f"data_format={faster!r}")
    assert diagnose.next_rung("input-bound", {**folder_cfg, "data_format": "memory"},
                              n)[0] == RungName.WORKERS   # Gluon: no data on the GPU
    assert "RecordIO" in diagnose.next_rung("input-bound", {**folder_cfg,
                                            "data_format": "preresized"}, n)[1]
    torch_cfg = {"dataset": "synthetic", "num_workers": 13, "engine": "pytorch"}
    assert diagnose.next_rung("input-bound", torch_cfg,
                              {**n, "cpu_count": 16})[0] == "data-on-gpu"
    with pytest.raises(ValueError, match="verdict"):
        diagnose.next_rung("bored", {}, n)


def test_a_run_without_epochs_cannot_be_diagnosed(tmp_path):
    path = write_run(tmp_path, "oom", epochs=0, status="oom", error="CUDA out of memory",
                     **GPU)
    with pytest.raises(ValueError, match="finished no epoch.*oom.*CUDA out of memory"):
        diagnose.diagnose(path)


def test_the_cli_prints_the_diagnosis(tmp_path):
    path = write_run(tmp_path, "naive", samples_per_sec=640.0, busy=45,
                     data_wait_share=0.62, **GPU)
    out = run_cli("diagnose", path.name, "--runs-dir", tmp_path)
    assert out.returncode == 0, out.stderr
    assert "INPUT-BOUND" in out.stdout and "Next rung: workers" in out.stdout
    rec = RunRecord({"name": "empty"}, Ran("gluon"), runs_dir=tmp_path, hardware_info={"gpus": []})
    rec.finish("failed", error="boom")
    out = run_cli("diagnose", rec.path)
    assert out.returncode == 2 and "finished no epoch" in out.stderr


def test_a_run_above_its_ceiling_is_not_ruled_on(tmp_path):
    """Lesson 01 printed runs at 127-285 % of a ceiling they cannot beat."""
    run = load(write_run(tmp_path, "job", samples_per_sec=600.0, data_wait_share=0.0, **CPU))
    d = diagnose.diagnose(run, compute_ceiling=400.0, input_ceiling=5000.0)
    assert d.verdict == diagnose.UNRELIABLE and d.next_rung is None
    assert d.advice.startswith(diagnose.AGAIN) and f"Next: {diagnose.AGAIN}: " in str(d)
    assert any(line.startswith("not ruled on: the run is at ") and "% of its compute ceiling "
               "(mock loader) (400), which it cannot beat" in line for line in d.evidence)
    assert diagnose.diagnose(run, compute_ceiling=590.0, input_ceiling=5000.0).verdict \
        != diagnose.UNRELIABLE  # within 5 %: noise, not a contradiction


def test_too_few_steps_in_the_run_or_a_ceiling_are_not_ruled_on(tmp_path):
    run = load(write_run(tmp_path, "job", samples_per_sec=300.0, data_wait_share=0.5, **CPU))
    steps = diagnose.measure(run)["steady_steps"]
    assert steps >= diagnose.MIN_STEPS  # the fake run is long enough
    short = load(write_run(tmp_path, "job: mock trainer", samples_per_sec=900.0, index=1,
                           data_wait_share=1.0, config={"mock": "trainer"}, epochs=1, **CPU))
    d = diagnose.diagnose(run, input_ceiling=short)
    assert d.verdict == diagnose.UNRELIABLE
    assert any("input ceiling (mock trainer) has 0 steady steps" in line for line in d.evidence)
    assert diagnose.diagnose(run, input_ceiling=900.0).verdict == "input-bound"


