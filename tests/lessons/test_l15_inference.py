"""Lesson 15's conclusions on fake records: oneDNN off against on beside the talk's table
(a larger gain at the large batch, a smaller one, none beyond noise, too few passes),
the outputs compared (equal, near-ties, beyond the tolerance, bfloat16), latency against
throughput (batching faster, slower, within noise), ONNX Runtime, the networks ranked,
the tail, a busy machine, the packages not installed; on a GPU (branches no CPU takes)
eager against compiled, CUDA graphs, bfloat16 and TensorRT, and what waits for a GPU."""
import math

import numpy as np
import pytest

from gpu_course.lessons import l15_inference as l15, sizes

V = l15.Variant
CPU = {"model": "Intel(R) Xeon(R) CPU @ 2.20GHz", "logical": 4, "physical": 4, "usable": 4,
       "load_average": 0.2, "usable_ids": [0, 1, 2, 3]}


def passes(ms, n, spread=0.02, slow=0):
    """n pass times around `ms`: each of the 5 blocks a step of `spread` apart (their
    medians span ±spread), the last `slow` passes three times as long (a tail)."""
    out = [ms / 1000 * (1 + spread * ((i * l15.BLOCKS // n) - 2) / 2) for i in range(n)]
    return out[:n - slow] + [3 * ms / 1000] * slow


def logits(n=8, shift=0.0, seed=1):
    return np.random.default_rng(seed).normal(size=(n, 10)) + shift


def served(model, variant, one_ms, big_ms, batch=128, outputs=None, spread=0.02, requests=40,
           big_passes=10, device="cpu", dtype="float32", load=0.2, slow=0):
    """The two records of one measurement: batch 1 and batch `batch` (with the outputs)."""
    big_timing = l15.Timing.QUEUED if device.startswith("cuda") else l15.Timing.ALONE
    what = l15.Served(model, variant, device, dtype)
    return [l15.record(what, 1, l15.Timing.ALONE, passes(one_ms, requests, spread, slow), None,
                       load_average=load, threads=4),
            l15.record(what, batch, big_timing, passes(big_ms, big_passes, spread),
                       logits() if outputs is None else outputs, load_average=load,
                       threads=4)]


def said(records=None, **context):
    say = l15.conclude(records, **context)
    assert say.check() == []
    return say.text


# -- oneDNN off against on, beside the talk ---------------------------------------------------
def test_onednn_gains_more_at_the_large_batch_as_in_the_talk():
    records = served("resnet20", V.ONEDNN_OFF, 40, 4000) + served("resnet20", V.ONEDNN_ON, 20, 1000)
    text = said(records, cpu=CPU)
    assert text.startswith("This CPU (/proc/cpuinfo): Intel(R) Xeon(R) CPU @ 2.20GHz")
    assert ("The talk's table (ResNet-50 v1, MXNet v1.3 on a 72-vCPU c5.18xlarge): MKL-DNN took a "
            "batch-1 request from 97.19 ms to 13.04 ms (×7.45) and batch 128 from 10.29 to 163.52 "
            "images/s (×15.90), with top-1 and top-5 unchanged (76.06% and 93.05% both ways).") in text
    assert ("resnet20, one request at a time: p50 40.0 ms without oneDNN, 20.0 ms with it "
            "(p99 40.8 → 20.4 ms): ×2.00, faster (×1.92–×2.08 over 5 blocks of 8 passes each).") in text
    assert ("resnet20 at batch 128: 32.0 images/s without oneDNN, 128 with it: ×4.00, faster "
            "(×3.84–×4.16 over 5 blocks of 2 passes each); a larger gain than at batch 1, as in "
            "the talk.") in text
    frame = l15.table(records)
    assert list(frame["against"]) == ["–", "–", "oneDNN off", "oneDNN off"]
    assert frame["speedup"].iloc[3] == pytest.approx(4.0) and math.isnan(frame["speedup"].iloc[0])
    assert frame["p50_blocks_ms"].iloc[0] == "39.2–40.8" and frame["passes"].iloc[1] == 10


def test_onednn_gains_less_at_the_large_batch_unlike_the_talk():
    records = served("resnet20", V.ONEDNN_OFF, 40, 2000) + served("resnet20", V.ONEDNN_ON, 10, 1000)
    text = said(records)
    assert "This CPU" not in text
    assert "×2.00, faster" in text and "a smaller gain than at batch 1, unlike the talk's." in text


def test_onednn_within_noise_says_no_ranking():
    records = (served("tiny", V.ONEDNN_OFF, 1.0, 30, spread=0.3)
               + served("tiny", V.ONEDNN_ON, 0.99, 29.7, spread=0.3))
    text = said(records)
    assert "tiny, one request at a time: p50 1.00 ms without oneDNN, 0.99 ms with it" in text
    assert text.count("within noise (") == 2
    assert "gain than at batch 1" not in text and "within noise of its gain" not in text


def test_too_few_passes_give_the_ratio_and_no_verdict():
    records = (served("tiny", V.ONEDNN_OFF, 2.0, 30, requests=3, big_passes=3)
               + served("tiny", V.ONEDNN_ON, 1.0, 15, requests=3, big_passes=3))
    text = said(records)
    assert "×2.00, too few passes to judge (at least 5 a side" in text
    assert "faster" not in text and "The longest tail" not in text


# -- the outputs --------------------------------------------------------------------------------
def test_outputs_equal_within_the_tolerance_with_every_top1_the_same():
    out = logits()
    records = (served("resnet20", V.ONEDNN_OFF, 40, 4000, outputs=out)
               + served("resnet20", V.ONEDNN_ON, 20, 1000, outputs=out * (1 + 1e-7)))
    text = said(records)
    assert ("resnet20: the outputs with and without oneDNN agree within the tolerance (max "
            "|difference| / max |output| = 1.0e-07, at most 1e-03), top-1 the same on 100.0% of "
            "the 8 probe images.") in text


def test_a_near_tie_flips_a_top1_within_the_tolerance():
    out = logits()
    out[0, :2] = [5.0, 5.0 - 1e-5]
    other = out.copy()
    other[0, :2] = [5.0 - 1e-5, 5.0]
    records = (served("resnet20", V.ONEDNN_OFF, 40, 4000, outputs=out)
               + served("resnet20", V.ONEDNN_ON, 20, 1000, outputs=other))
    text = said(records)
    assert "agree within the tolerance" in text and "yet top-1 the same on 87.5% of the 8" in text
    assert "the two largest outputs were nearly tied (the weights are untrained)" in text


def test_outputs_beyond_the_tolerance_are_named():
    records = (served("resnet20", V.ONEDNN_OFF, 40, 4000, outputs=logits(seed=1))
               + served("resnet20", V.ONEDNN_ON, 20, 1000, outputs=logits(seed=2)))
    text = said(records)
    assert "differ beyond the tolerance (max |difference| / max |output| = " in text
    assert "more than 1e-03); top-1 the same on" in text and "check the variant" in text


def test_outputs_of_another_shape_are_refused():
    records = (served("resnet20", V.ONEDNN_OFF, 40, 4000, outputs=logits(n=8))
               + served("resnet20", V.ONEDNN_ON, 20, 1000, outputs=logits(n=4)))
    with pytest.raises(ValueError, match="measure both on the same probe images"):
        l15.table(records)


# -- latency against throughput --------------------------------------------------------------------
def test_batching_faster_buys_throughput_with_latency():
    records = served("resnet20", V.ONEDNN_OFF, 40, 4000) + served("resnet20", V.ONEDNN_ON, 20, 1000)
    text = said(records)
    assert ("resnet20 with oneDNN on, latency against throughput: batch 128 ran 128 images/s, one "
            "request at a time 50.0: ×2.56, faster") in text
    assert ("Batching buys throughput with latency: a request in that batch waits for the whole "
            "pass, 1,000 ms against 20.0 ms alone (×50.0).") in text


def test_batching_slower_says_serve_one_at_a_time():
    records = served("tiny", V.ONEDNN_OFF, 1.0, 400, spread=0.02)
    text = said(records)
    assert "tiny with oneDNN off, latency against throughput" in text
    assert "a slow-down" in text and "on this machine, serve one at a time" in text


def test_batching_within_noise_only_makes_requests_wait():
    records = served("tiny", V.ONEDNN_OFF, 1.0, 128, spread=0.3)
    text = said(records)
    assert "batching bought nothing beyond noise here, and it makes each request wait" in text


# -- ONNX Runtime, the networks, the tail, the machine, the packages --------------------------------
def test_onnx_runtime_is_judged_against_onednn_and_its_outputs_against_onednn_off():
    out = logits()
    records = (served("resnet20", V.ONEDNN_OFF, 40, 4000, outputs=out)
               + served("resnet20", V.ONEDNN_ON, 20, 1000, outputs=out)
               + served("resnet20", V.ONNX_RUNTIME, 10, 1000, outputs=out * (1 + 2e-7)))
    text = said(records)
    assert ("resnet20, ONNX Runtime against oneDNN on: p50 20.0 → 10.0 ms one request at a time "
            "(p99 20.4 → 10.2 ms), ×2.00, faster") in text
    assert "at batch 128 128 → 128 images/s, ×1.00, within noise" in text
    assert "the outputs of ONNX Runtime and oneDNN off agree within the tolerance" in text
    assert "ONNX Runtime is not installed" not in text


def test_networks_apart_and_together():
    records = (served("tiny", V.ONEDNN_OFF, 1, 30) + served("resnet20", V.ONEDNN_OFF, 40, 4000)
               + served("tiny", V.ONEDNN_ON, 0.9, 25) + served("resnet20", V.ONEDNN_ON, 10, 1000))
    text = said(records)
    assert text.count("The talk's table") == 1
    assert ("Across networks, oneDNN cut the batch-1 latency most for resnet20 and least for tiny: "
            "apart beyond their spreads") in text
    records = (served("tiny", V.ONEDNN_OFF, 1, 30, spread=0.4)
               + served("resnet20", V.ONEDNN_OFF, 40, 4000, spread=0.4)
               + served("tiny", V.ONEDNN_ON, 0.5, 25, spread=0.4)
               + served("resnet20", V.ONEDNN_ON, 19, 1000, spread=0.4))
    assert "within each other's spreads, so no network gained clearly more" in said(records)


def test_a_long_tail_is_named_and_short_tails_are_said_short():
    records = served("tiny", V.ONEDNN_OFF, 1.0, 30, slow=2)
    text = said(records)
    assert ("The longest tail: 'tiny, oneDNN off, batch 1', p99 3.00 ms against p50 1.00 ms "
            "(×3.00): one request in a hundred waited that long or longer.") in text
    text = said(served("tiny", V.ONEDNN_OFF, 1.0, 30))
    assert "The tails are short: at most ×1.02 between p99 and p50 ('tiny, oneDNN off, batch 1'), " \
        "under the lesson's ×1.5." in text


def test_a_busy_machine_is_named_and_a_missing_package_said():
    records = served("tiny", V.ONEDNN_OFF, 1.0, 30, load=6.5)
    text = said(records, cpu=CPU, not_installed=["onnxruntime"])
    assert ("The machine was busy: a load average of 6.50 before 'tiny, oneDNN off, batch 1', with "
            "4 usable cores.") in text
    assert "ONNX Runtime is not installed here (import onnxruntime failed)" in text


# -- the GPU --------------------------------------------------------------------------------------
def gpu(model, variant, one_ms, big_ms, **kw):
    return served(model, variant, one_ms, big_ms, batch=1024, device="cuda:0", **kw)


def test_on_a_gpu_compiled_and_cuda_graphs_against_eager():
    out = logits()
    records = (gpu("resnet20", V.EAGER, 2.0, 20, outputs=out)
               + gpu("resnet20", V.COMPILED, 1.5, 10, outputs=out * (1 + 1e-6))
               + gpu("resnet20", V.CUDA_GRAPHS, 0.2, 9.8, outputs=out))
    text = said(gpu=records)
    assert ("resnet20, compiled against eager: p50 2.00 → 1.50 ms one request at a time (p99 2.04 "
            "→ 1.53 ms), ×1.33, faster") in text
    assert ("torch.compile fuses the network's operators into fewer kernels: it gained more at "
            "batch 1024, where the GPU's arithmetic and memory hold a pass.") in text
    assert ("replays it: one launch a pass instead of one a kernel: it gained more at batch 1, "
            "where launching the kernels holds a pass.") in text
    assert "the outputs of CUDA graphs and eager agree within the tolerance" in text
    assert ("resnet20 with CUDA graphs, latency against throughput: batch 1024 ran") in text
    assert "What waits for a GPU" not in text and "oneDNN" not in text
    assert list(l15.table(records)["timed"])[:2] == ["alone", "queued"]


def test_bfloat16_within_its_tolerance_and_beyond_it():
    out = logits()
    near = gpu("resnet20", V.BFLOAT16, 1.9, 8, outputs=out * (1 + 1e-2), dtype="bfloat16")
    text = said(gpu=gpu("resnet20", V.EAGER, 2.0, 20, outputs=out) + near)
    assert "bfloat16 halves the bytes of every value" in text
    assert "the outputs of bfloat16 and eager agree within the tolerance (" in text
    assert "at most 5e-02)" in text
    far = gpu("resnet20", V.BFLOAT16, 1.9, 8, outputs=logits(seed=3), dtype="bfloat16")
    text = said(gpu=gpu("resnet20", V.EAGER, 2.0, 20, outputs=out) + far)
    assert "differ beyond the tolerance" in text and "bfloat16 keeps 8 bits of mantissa" in text


def test_tensorrt_is_set_beside_the_talks_table():
    records = gpu("resnet20", V.EAGER, 2.0, 20) + gpu("resnet20", V.TENSORRT, 1.0, 12)
    text = said(gpu=records)
    assert ("TensorRT builds an engine of its own kernels for the network: it gained more at "
            "batch 1, where launching the kernels holds a pass. The talk's TensorRT table: ×1.21 "
            "for cifar_resnet20_v2 on a Titan V.") in text


def test_without_a_gpu_the_lesson_says_what_waits_and_that_tensorrt_is_missing():
    text = said(gpu=[], not_installed=["torch_tensorrt", "onnxruntime"])
    assert text.startswith("What waits for a GPU: eager against torch.compile, CUDA graphs")
    assert "ONNX Runtime is not installed here" in text
    assert ("torch-tensorrt is not installed here: no TensorRT rows (it needs the CUDA build of "
            "PyTorch it was built for, which pip cannot put beside this one); the talk's TensorRT "
            "table: ×1.21 for cifar_resnet20_v2 on a Titan V.") in text


# -- what the module refuses ----------------------------------------------------------------------
def test_bad_records_and_calls_are_refused_by_name():
    with pytest.raises(ValueError, match="variant='oneDNN maybe'; allowed: 'oneDNN off'"):
        l15.record(l15.Served("tiny", "oneDNN maybe", "cpu"), 1, "alone", [0.1])
    with pytest.raises(ValueError, match="batch=0: a whole number of images, at least 1"):
        l15.record(l15.Served("tiny", V.EAGER, "cpu"), 0, "alone", [0.1])
    with pytest.raises(ValueError, match="must be one time > 0 a timed pass"):
        l15.record(l15.Served("tiny", V.EAGER, "cpu"), 1, "alone", [float("nan")])
    with pytest.raises(ValueError, match="dtype='float16'; allowed: float32, bfloat16"):
        l15.record(l15.Served("tiny", V.EAGER, "cpu", dtype="float16"), 1, "alone", [0.1])
    with pytest.raises(ValueError, match="timing='soon'"):
        l15.record(l15.Served("tiny", V.EAGER, "cpu"), 1, "soon", [0.1])
    twice = served("tiny", V.ONEDNN_OFF, 1, 30)
    with pytest.raises(ValueError, match="'tiny, oneDNN off, batch 1' was measured twice"):
        l15.table(twice + twice[:1])
    with pytest.raises(ValueError, match="ran on cuda:0: pass the CPU's records first"):
        l15.conclude(gpu("tiny", V.EAGER, 1, 30))
    with pytest.raises(ValueError, match="ran on cpu"):
        l15.conclude(gpu=twice)
    with pytest.raises(ValueError, match="none was passed"):
        l15.conclude()
    with pytest.raises(ValueError, match="one at a time"):
        l15.conclude(twice, gpu=[])
    with pytest.raises(ValueError, match="records=\\[\\] is empty"):
        l15.conclude([])
    with pytest.raises(ValueError, match="not_installed='tensorflow'; allowed: 'onnxruntime'"):
        l15.conclude(twice, not_installed=["tensorflow"])
    with pytest.raises(ValueError, match="is not a record of lesson 15"):
        l15.table([{"images_per_s": 3.0}])


def test_the_probe_images_and_passes_are_the_same_everywhere():
    a, b = l15.probe_images(4), l15.probe_images(8)
    assert a.shape == (4, 3, 32, 32) and a.dtype == np.float32 and np.array_equal(a, b[:4])
    assert 0 <= a.min() and a.max() < 1
    with pytest.raises(ValueError, match="n=0 images"):
        l15.probe_images(0)
    assert l15.passes_for(128, 1280) == 10 and l15.passes_for(1024, 1280) == l15.MIN_PASSES
    assert l15.percentile([1, 2, 3, 4, 5], 50) == 3


def test_sizes_smoke_is_small_and_the_check_keeps_one_gpu_network():
    smoke, full = sizes("15", smoke=True), sizes("15", smoke=False)
    assert smoke.threads == 1 and smoke.requests < full.requests and smoke.batch < full.batch
    assert set(smoke.models) <= set(full.models) and smoke.exercise_model == "tiny"
    assert sizes("15", mode="check").gpu_models == ("resnet20",)
