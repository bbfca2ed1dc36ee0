"""gpu_course.analyse.profiling without a framework: trace split and verdict on made-up traces."""
import gzip
import json

import pytest

from gpu_course.analyse import profiling


def event(name, ts, dur, cat="cpu_op"):
    return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "pid": 1, "tid": 1}


def gpu_trace(wait_us, kernel_us):
    """Two 1000 us steps: a data wait, then nested operators and kernels after it."""
    events = []
    for k, start in enumerate((0, 1000)):
        events += [event(f"ProfilerStep#{k}", start, 1000, "user_annotation"),
                   event("data wait", start, wait_us, "user_annotation"),
                   event("aten::conv2d", start + wait_us, 50),
                   event("aten::convolution", start + wait_us + 5, 40),   # nested: once
                   event("cudaLaunchKernel", start + wait_us + 10, 5, "cuda_runtime"),
                   event("kernel", start + wait_us + 20, kernel_us, "kernel"),
                   event("Memcpy HtoD", start + wait_us, 10, "gpu_memcpy")]
    return events


def test_split_and_verdicts_on_a_gpu():
    split = profiling.trace_split(gpu_trace(wait_us=100, kernel_us=870))
    assert split["steps"] == 2 and split["step_s"] == pytest.approx(0.002)
    assert split["data_wait_s"] == pytest.approx(0.0002)
    assert split["device_kernels_s"] == pytest.approx(0.00174)
    assert split["memcpy_s"] == pytest.approx(0.00002)
    assert split["host_launch_s"] == pytest.approx(0.00001)
    assert split["on_device"] and profiling.trace_verdict(split) == "compute-bound"
    assert profiling.trace_verdict(profiling.trace_split(gpu_trace(600, 300))) == "input-bound"
    assert profiling.trace_verdict(profiling.trace_split(gpu_trace(50, 300))) == \
        "overhead-bound"
    table = profiling.split_table(split)
    assert table["% of step"].sum() == pytest.approx(100, abs=1)


def test_the_gpu_copy_of_a_step_annotation_is_no_step_and_a_sync_is_no_launch():
    """A CUDA trace repeats each ProfilerStep on the GPU (gpu_user_annotation); the
    host's cudaDeviceSynchronize waits for the device and launches nothing."""
    events = gpu_trace(wait_us=100, kernel_us=500)
    events += [event(f"ProfilerStep#{k}", start + 150, 600, "gpu_user_annotation")
               for k, start in enumerate((0, 1000))]
    events += [event("cudaDeviceSynchronize", start + 700, 250, "cuda_runtime")
               for start in (0, 1000)]
    split = profiling.trace_split(events)
    assert split["steps"] == 2 and split["host_launch_s"] == pytest.approx(0.00001)
    assert split["host_sync_s"] == pytest.approx(0.0005)
    assert split["device_busy_s"] == pytest.approx(0.00102)   # kernels and copies: 2 x (500 + 10)
    assert "host waiting for the device (sync calls)" in list(profiling.split_table(split)["part"])


def test_cpu_split_counts_nested_operators_once():
    events = [event("ProfilerStep#1", 0, 1000, "user_annotation"),
              event("data wait", 0, 100, "user_annotation"),
              event("aten::stack", 50, 40),                 # inside the wait: not compute
              event("aten::conv2d", 100, 800), event("aten::convolution", 110, 700)]
    split = profiling.trace_split(events)
    assert split["host_ops_s"] == pytest.approx(0.0008) and not split["on_device"]
    assert split["other_host_s"] == pytest.approx(0.0001)
    assert profiling.trace_verdict(split) == "compute-bound"


def test_gzipped_traces_read_back(tmp_path):
    raw = tmp_path / "trace.json"
    raw.write_text(json.dumps({"traceEvents": gpu_trace(100, 500)}))
    packed = profiling.gzip_trace(raw)
    assert not raw.exists() and packed.name == "trace.json.gz"
    assert len(profiling.read_trace(packed)) == 14
    with gzip.open(packed, "rt") as f:
        assert "traceEvents" in json.load(f)
    with pytest.raises(ValueError, match="ProfilerStep"):
        profiling.trace_split([event("aten::add", 0, 5)])


def test_the_profile_verb_takes_the_flags_of_run():
    from support import run_cli
    profile_help, run_help = run_cli("profile", "--help"), run_cli("run", "--help")
    assert profile_help.returncode == 0 and "--batch-size" in profile_help.stdout
    flags = {w for w in run_help.stdout.split() if w.startswith("--")} - {"--no-progress"}
    assert flags <= {w for w in profile_help.stdout.split() if w.startswith("--")}


# -- kernels by kind (what the tuned rung's GPU time is spent on) --------------------------
KERNEL_NAMES = {   # real names from the H200 reference's traces, and the course's own
    "convolutions (cuDNN)": ["sm90_xmma_wgrad_indexed_implicit_gemm_bf16bf16_bf16f32_f32",
                             "void cudnn::engines_precompiled::nchwToNhwcKernel<float>",
                             "void wgrad_alg0_engine<float, 128, 5, 5, 3, 3, 3, false, 512>"],
    "fused by Inductor (BatchNorm, ReLU, adds)": [
        "triton_red_fused__native_batch_norm_legit_functional_add_native_batch_norm_backward"],
    "BatchNorm (cuDNN)": ["void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128>"],
    "optimizer (multi-tensor)": ["void at::native::multi_tensor_apply_kernel<at::native::>"],
    "other (copies, indexing, elementwise)": ["void at::native::index_elementwise_kernel<128>"],
}


def kernel_trace(kinds: dict, steps: int = 2):
    """`steps` steps of 1000 us, each with one 10 us kernel of every name in kinds."""
    events = []
    for k in range(steps):
        events.append(event(f"ProfilerStep#{k}", 1000 * k, 1000, "user_annotation"))
        events.append(event(f"ProfilerStep#{k}", 1000 * k + 5, 990, "gpu_user_annotation"))
        t = 1000 * k
        for names in kinds.values():
            for name in names:
                events.append(event(name, t, 10, "kernel"))
                t += 20
    return events


def test_kernels_are_sorted_by_what_they_compute_per_step():
    kinds = profiling.kernel_kinds(kernel_trace(KERNEL_NAMES))
    by_kind = kinds.set_index("kind")
    assert list(kinds["kind"]) == [k for k, _ in profiling.KERNEL_KINDS]
    for kind, names in KERNEL_NAMES.items():
        assert by_kind.loc[kind, "kernels_per_step"] == len(names), kind
        assert by_kind.loc[kind, "ms_per_step"] == pytest.approx(0.01 * len(names))
    assert kinds["share"].sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="no GPU kernel"):
        profiling.kernel_kinds(kernel_trace({}))
    with pytest.raises(ValueError, match="no ProfilerStep"):
        profiling.kernel_kinds([event("_conv3x3", 0, 10, "kernel")])


def test_the_gpu_busy_share_reads_the_gpu_s_own_span():
    """A CUDA-graph replay returns at once: its kernels run after the host's step window
    closed. The share is of the GPU's span, whatever the host's windows say."""
    events = [event("ProfilerStep#0", 0, 10, "user_annotation"),
              event("k", 100, 60, "kernel"), event("k", 180, 20, "kernel"),
              event("copy", 150, 20, "gpu_memcpy")]
    assert profiling.gpu_busy_share(events) == pytest.approx(90 / 100)
    with pytest.raises(ValueError, match="no GPU kernel"):
        profiling.gpu_busy_share([event("ProfilerStep#0", 0, 10, "user_annotation")])


def test_a_damaged_trace_is_refused_naming_the_file_never_read_as_an_idle_gpu(tmp_path):
    """A trace whose kernels lack `dur` read "GPU idle 99.9 %" (85.6 % intact), silently."""
    import gzip as gz
    import json as js
    events = [event("ProfilerStep#0", 0, 100, "user_annotation"), event("k", 10, 80, "kernel")]
    del events[1]["dur"]
    bad = tmp_path / "nodur.json"
    bad.write_text(js.dumps({"traceEvents": events}))
    with pytest.raises(ValueError, match=r"nodur.json: 1 of its 2 complete events lack a numeric "
                                         r"ts or dur \(first: 'k'\)"):
        profiling.read_trace(bad)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gz.compress(js.dumps({"traceEvents": [event("k", 0, 1, "kernel")]}).encode())[:40])
    plain = tmp_path / "plain.json.gz"
    plain.write_text(js.dumps({"traceEvents": []}))
    empty = tmp_path / "empty.json"
    empty.write_text("")
    for path in (cut, plain, empty):
        with pytest.raises(ValueError, match=f"{path.name} is not a readable Chrome trace"):
            profiling.read_trace(path)
