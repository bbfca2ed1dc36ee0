"""Lesson 12's conclusions on fake runs and fake trace splits: the CPU trace, the CUDA trace
(kernels, copies, launch calls), the step timers where MXNet has no profiler, the ceilings'
own verdict (near a ceiling, below both, a shared CPU, unreliable) and whether they agree."""
import os

import pandas as pd
import pytest

from gpu_course.analyse import profiling
from gpu_course.lessons import l12_profilers as l12
from gpu_course.lessons import sizes


def trio(make_run, rate=110.0, compute=120.0, feed=500.0, wait=0.05, engine="pytorch", gpus=0,
         cpu=None, ceiling_config=None):
    """The run and its two mock ceilings, as the notebook trains them."""
    run = make_run("profiled", rate=rate, engine=engine, gpus=gpus, data_wait_share=wait,
                   config={"mock": "none"})
    loader = make_run("profiled: mock loader", rate=compute, engine=engine, gpus=gpus,
                      data_wait_share=0.0, config={"mock": "loader", **(ceiling_config or {})})
    trainer = make_run("profiled: mock trainer", rate=feed, engine=engine, gpus=gpus,
                       data_wait_share=0.9, config={"mock": "trainer", **(ceiling_config or {})})
    if cpu is not None:   # the host's CPU use while they ran
        for r in (run, loader, trainer):
            r.host["cpu_percent"] = cpu
    return [run, loader, trainer]


def cpu_split(wait=0.01, ops=0.95, steps=2):
    return {"steps": steps, "step_s": 1.0, "data_wait_s": wait, "device_kernels_s": 0.0,
            "memcpy_s": 0.0, "host_launch_s": 0.0, "host_ops_s": ops, "on_device": False,
            "other_host_s": 1.0 - wait - ops}


def gpu_split(kernels=0.03, launch=0.06, wait=0.002):
    return {"steps": 5, "step_s": 0.1, "data_wait_s": wait, "device_kernels_s": kernels,
            "memcpy_s": 0.002, "host_launch_s": launch, "host_ops_s": 0.08, "on_device": True,
            "other_host_s": 0.1 - wait - kernels - 0.002}


def said(runs, **context):
    say = l12.conclude(runs, **context)
    assert say.check() == []
    return say.text


FLAGS = {f.column: f.means for f in l12.LIMITS.flags}
C = l12.Ceilings
# the run and its ceilings (trio's arguments), the trace's split -> a paragraph LIMITS gives them
SCENARIOS = [
    ("cpu trace, compute-bound", {}, cpu_split(), FLAGS["trace"][l12.COMPUTE_BOUND][l12.Where.CPU]),
    ("gpu trace, compute-bound", dict(rate=8800, compute=9000, feed=20000, gpus=1),
     gpu_split(kernels=0.095, launch=0.01), FLAGS["trace"][l12.COMPUTE_BOUND][l12.Where.GPU]),
    ("near the compute ceiling", {}, cpu_split(), FLAGS["ceilings"][C.NEAR_COMPUTE]),
    ("below both ceilings", dict(rate=3000, compute=9000, feed=20000, gpus=1), gpu_split(),
     FLAGS["ceilings"][C.NEITHER]),
    ("overhead-bound trace", dict(rate=3000, compute=9000, feed=20000, gpus=1), gpu_split(),
     FLAGS["trace"][l12.OVERHEAD_BOUND]),
    ("launches outlast kernels", dict(rate=3000, compute=9000, feed=20000, gpus=1), gpu_split(),
     FLAGS["launch"][l12.LAUNCH_BOUND]),
    ("timers not input-bound", dict(rate=268, compute=457, feed=610, wait=0.07, engine="gluon",
                                    cpu=100.0), None, FLAGS["step timers"][l12.NOT_INPUT_BOUND]),
    ("a shared cpu", dict(rate=268, compute=457, feed=610, wait=0.07, engine="gluon", cpu=100.0),
     None, FLAGS["ceilings"][C.SHARED_COMPUTE]),
    ("timers input-bound", dict(rate=268, compute=457, feed=610, wait=0.4, engine="gluon",
                                cpu=100.0), None, FLAGS["step timers"][l12.INPUT_BOUND]),
    ("timers disagree on a cpu", dict(rate=268, compute=457, feed=610, wait=0.4, engine="gluon",
                                      cpu=100.0), None,
     FLAGS["agreement"][l12.Agreement.TIMERS][l12.Where.CPU]),
    ("timers disagree on a gpu", dict(rate=8800, compute=9000, feed=20000, wait=0.4, gpus=1),
     None, FLAGS["agreement"][l12.Agreement.TIMERS][l12.Where.GPU]),
    ("trace disagrees", {}, cpu_split(wait=0.5, ops=0.45, steps=3),
     FLAGS["agreement"][l12.Agreement.TRACE]),
    ("input trace", {}, cpu_split(wait=0.5, ops=0.45), FLAGS["trace"][l12.INPUT_BOUND]),
    ("near the input ceiling", dict(rate=95, compute=500, feed=100, wait=0.3), cpu_split(0.3, 0.6),
     FLAGS["ceilings"][C.NEAR_INPUT]),
    ("above a ceiling", dict(rate=600, compute=400, feed=2000), cpu_split(), FLAGS["above"][l12.ABOVE]),
    ("above: no verdict", dict(rate=600, compute=400, feed=2000), cpu_split(),
     FLAGS["ceilings"][C.NO_VERDICT]),
    ("ceilings with too few steps", dict(ceiling_config={"train_size": 640}), cpu_split(),
     FLAGS["steps"][l12.TOO_FEW]),
]


@pytest.mark.parametrize("name, trio_of, split, paragraph", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_each_scenario_gets_its_paragraph(make_run, name, trio_of, split, paragraph):
    assert paragraph and paragraph in said(trio(make_run, **trio_of), split=split)


def test_paragraphs_carry_no_number():
    from gpu_course.show import closing
    from declared import paragraphs
    for lesson in (l12.LIMITS, l12.INPUT):
        assert all(closing.measurements(t) == [] for t in paragraphs(lesson))


def test_the_trace_the_ceilings_and_their_agreement_cite_their_cells(make_run):
    text = said(trio(make_run), split=cpu_split())
    assert ("The trace's split of a profiled step: 'waiting for data' 1.0%, 'operators on the "
            "CPU (compute)' 95%") in text
    assert "'profiled': compute-bound (profiled steps 2; in the runs folder " in text
    assert "/profile/trace.json.gz; input-bound from 25.0%)" in text
    assert ("'profiled': compute-bound: near the compute ceiling, the lower (compute ceiling "
            "(samples/s) 119; input ceiling (samples/s) 494; run ÷ compute ceiling 93.4%") in text
    assert ("'profiled': the two methods agree (the profiler compute-bound; the ceilings "
            "compute-bound).") in text
    gpu = said(trio(make_run, rate=3000, compute=9000, feed=20000, gpus=1), split=gpu_split())
    assert "(host launch calls (s) 0.06; device kernels (s) 0.03)" in gpu
    busy = said(trio(make_run, rate=8800, compute=9000, feed=20000, gpus=1),
                split=gpu_split(kernels=0.095, launch=0.01))
    assert FLAGS["launch"][l12.LAUNCH_BOUND] not in busy and "the two methods agree" in busy


def test_too_few_steps_and_missing_ceilings_give_no_verdict(make_run):
    loader_few = said(trio(make_run, ceiling_config={"train_size": 640}), split=cpu_split())
    assert "'profiled: mock loader': too few steady steps (steady steps 10; needed 20)." in loader_few
    assert "agree" not in loader_few
    run = make_run("profiled", rate=100, engine="gluon", config={"mock": "none", "train_size": 640})
    text = said([run])
    assert "'profiled': too few steady steps (steady steps 10; needed 20)." in text
    assert FLAGS["ceilings"][C.NOT_MEASURED] in text and "not input-bound" not in text


def test_the_input_profile_names_its_most_expensive_function():
    top = pd.DataFrame([{"function": "data.py:63(__getitem__)", "calls": 7512, "own_s": 0.138,
                         "with_callees_s": 0.142, "own_per_call_ms": 0.0184, "own_%": 25.4},
                        {"function": "pad", "calls": 256, "own_s": 0.01, "with_callees_s": 0.02,
                         "own_per_call_ms": 0.039, "own_%": 1.8}])
    text = said([], top=top)
    assert text == ("'data.py:63(__getitem__)': the input pipeline's costliest function "
                    "under cProfile, 25% of the time in its code, over 7,512 calls, 0.0184 "
                    "ms a call.")


def test_the_table_has_no_speed_up_for_ceilings(make_run):
    frame = l12.table(trio(make_run))
    assert "speedup" not in frame.columns and frame["steady steps"].min() >= 20


def test_the_profilers_log_lines_are_held_back_and_anything_else_passes(capfd):
    with profiling.quiet_profiler():
        os.write(2, b"USDT:2026-11-26 12:51:08 11656:11656 SyncActivityProfilerHandler.cpp:52] "
                    b"profiler_start\nSTAGE:2024-01-02 03:04:05 1:1 ActivityProfilerController"
                    b".cpp:312] Completed Stage: Warm Up\na real warning\n")
    err = capfd.readouterr().err
    assert "a real warning" in err and "USDT" not in err and "STAGE" not in err


def test_sizes():
    assert sizes("12", smoke=True).active < sizes("12", smoke=False).active
    assert sizes("12", smoke=True)["model"] == "tiny"
    with pytest.raises(ValueError, match="not a size"):
        sizes("12", activ=3)


# -- what the GPU's time is spent on ------------------------------------------------------
def _trace_file(path, kernels: list[tuple[str, float]], steps: int = 3, gap_us: float = 0.0):
    """A gzipped GPU trace of `steps` steps, each running `kernels` (name, us) back to back
    and then idling gap_us."""
    import gzip
    import json
    events, t = [], 0.0
    for k in range(steps):
        start = t
        for name, dur in kernels:
            events.append({"ph": "X", "cat": "kernel", "name": name, "ts": t, "dur": dur})
            t += dur
        t += gap_us
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}",
                       "ts": start, "dur": t - start})
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    return path


TUNED = [("sm90_xmma_fprop_implicit_gemm_bf16", 2500.0), ("sm80_xmma_wgrad_implicit_gemm", 1500.0),
         ("triton_red_fused__native_batch_norm_legit_functional_1", 1500.0),
         ("void at::native::multi_tensor_apply_kernel<>", 50.0)]


def test_the_kernels_say_what_limits_the_step_and_what_each_fix_could_remove(tmp_path):
    traces = {"tuned": _trace_file(tmp_path / "a.json.gz", TUNED, gap_us=550.0)}
    frame = l12.kernel_table(traces)
    assert list(frame["kind"]) == ["fused by Inductor (BatchNorm, ReLU, adds)",
                                   "convolutions (cuDNN)", "optimizer (multi-tensor)",
                                   "all convolutions", "all kernels"]
    say = l12.conclude(kernels=traces)
    assert say.check() == []
    text = say.text
    # 3 x 5.55 ms of kernels over a span of 3 x 5.55 + 2 x 0.55 (the last gap is past it)
    assert "'tuned': 5.55 ms of kernel time a step, the largest part convolutions (cuDNN), " \
        "4.00 ms, 72% of it, the GPU busy 94% of the span of its trace, idle 6%." in text, text
    assert "fewer launches (closing the idle gaps) by at most the share it was idle" in text
    assert l12.YOUR_TRACE in text


def test_the_reference_traces_name_the_convolutions_and_ask_for_the_kernel_rung_s(capsys):
    traces = l12.reference_kernel_traces()
    assert set(traces) >= {"naive", "tuned"}
    say = l12.conclude(kernels=traces)
    assert say.check() == []
    assert "the largest part convolutions (cuDNN)" in say.text
    assert "`gpu-course profile --engine pytorch` on a GPU records your own run" in say.text
    assert "tools." not in say.text   # a command the attendee can run
    assert "all convolutions" not in capsys.readouterr().out   # the table is gc.show's


def test_the_notebook_api_shows_the_kernel_table(tmp_path, capsys):
    from gpu_course.lessons import show
    traces = {"tuned": _trace_file(tmp_path / "a.json.gz", TUNED, gap_us=550.0)}
    show(lesson="12", kernels=traces)
    assert "all convolutions" in capsys.readouterr().out
