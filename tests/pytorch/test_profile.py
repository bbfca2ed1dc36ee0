"""torch.profiler window, cProfile of the input pipeline, and `gpu-course profile`."""
import pstats

from gpu_course.analyse import profiling
from gpu_course.tracks import torch as gc


def test_the_trace_is_a_chrome_trace_with_events_and_a_split(small_cfg, tmp_path):
    window = gc.profile_steps(small_cfg, tmp_path, wait=1, warmup=1, active=2)
    assert window["trace"].name == "trace.json.gz" and not (tmp_path / "trace.json").exists()
    events = profiling.read_trace(window["trace"])
    names = {e.get("name") for e in events}
    assert any(str(n).startswith("ProfilerStep#") for n in names)
    assert profiling.DATA_WAIT in names and "aten::convolution" in names
    assert all("ts" in e for e in events if e.get("ph") == "X")
    split = profiling.trace_split(events)
    assert split["steps"] == 2 and split["step_s"] > 0 and not split["on_device"]
    assert 0 < split["host_ops_s"] <= split["step_s"]
    assert profiling.trace_verdict(split) in ("compute-bound", "overhead-bound", "input-bound")
    ops = window["ops"]
    assert "aten::convolution" in set(ops.operator) and (tmp_path / "ops.csv").exists()
    assert "Self CPU" in window["table"]


def test_the_input_profile_loads_with_pstats(small_cfg, tmp_path):
    train_set, _ = gc.load_datasets(small_cfg)
    loader = gc.make_loader(train_set, small_cfg)
    top = profiling.profile_input(loader, 12, tmp_path / "input.prof")  # > one epoch of 8
    stats = pstats.Stats(str(tmp_path / "input.prof"))
    assert stats.total_calls > 0
    assert any("__getitem__" in f for f in top.function)
    assert list(top.columns) == ["function", "calls", "own_s", "with_callees_s",
                                 "own_per_call_ms", "own_%"]


def test_profile_run_checks_the_trace_against_the_diagnosis(small_cfg, runs_dir):
    result = profiling.profile_run(gc, small_cfg, runs_dir=runs_dir, active=2, input_steps=4,
                                   ceiling_steps=4)
    assert result["folder"] == result["run"].path / "profile"
    assert result["trace"].parent == result["folder"] and result["prof"].exists()
    assert result["trace_verdict"] in profiling.diagnose.VERDICTS
    # 4-step ceilings are too short to rule on: no verdict, so nothing to agree with
    assert result["diagnosis"].verdict == profiling.diagnose.UNRELIABLE
    assert result["agrees"] is None
    text = profiling.format_result(result)
    assert "the trace says" in text and "cProfile of the input pipeline" in text
    assert "there is no verdict to compare with" in text


def test_copy_bandwidth_says_no_gpu_without_cuda():
    from gpu_course.env import report as env
    import torch
    result = env.hook("pytorch", "copy")
    if torch.cuda.is_available():
        assert result["pinned_gb_s"] > 0 and result["pageable_gb_s"] > 0
        assert len(result["pinned_all"]) == len(result["pageable_all"]) == 5
    else:
        assert result == {"available": False}
