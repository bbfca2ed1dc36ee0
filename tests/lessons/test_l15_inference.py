"""Lesson 15's conclusions on fake records: each scenario gets the paragraph its
declaration (`CPU`, `GPU`) gives it: oneDNN, ONNX Runtime and batching on the CPU, the
GPU's variants (runs no CPU makes), the outputs, the tail, a busy machine, too few
passes, the packages not installed and what waits for a GPU; the table and the records."""
import math

import numpy as np
import pytest

from gpu_course.analyse import noise

from gpu_course.analyse import inference as l15
from gpu_course.lessons import l15_inference as lesson, sizes
from gpu_course.show import closing
from declared import paragraphs
from gpu_course.show.findings import Outcome

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
    say = lesson.conclude(records, **context)
    assert say.check() == []
    return say.text



def gpu(model, variant, one_ms, big_ms, **kw):
    return served(model, variant, one_ms, big_ms, batch=1024, device="cuda:0", **kw)


ONEDNN, ORT, BATCHING = lesson.CPU.compares
OUT = next(f for f in lesson.CPU.flags if f.column == "outputs").means
O = l15.Outputs
# a scenario of fake records -> a paragraph its declaration gives it
SCENARIOS = [
    ("onednn faster", lambda: served("resnet20", V.ONEDNN_OFF, 40, 4000)
     + served("resnet20", V.ONEDNN_ON, 20, 1000), {}, ONEDNN.means[Outcome.EXPECTED]),
    ("a larger gain at the large batch, as in the talk",
     lambda: served("resnet20", V.ONEDNN_OFF, 40, 4000) + served("resnet20", V.ONEDNN_ON, 20, 1000),
     {}, ONEDNN.ranks[0].means[noise.Order.LOWER]),
    ("a larger gain at batch 1, unlike the talk",
     lambda: served("resnet20", V.ONEDNN_OFF, 40, 2000) + served("resnet20", V.ONEDNN_ON, 10, 1000),
     {}, ONEDNN.ranks[0].means[noise.Order.HIGHER]),
    ("onednn within noise", lambda: served("tiny", V.ONEDNN_OFF, 1.0, 30, spread=0.3)
     + served("tiny", V.ONEDNN_ON, 0.99, 29.7, spread=0.3), {}, ONEDNN.means[Outcome.NONE]),
    ("onednn slower", lambda: served("tiny", V.ONEDNN_OFF, 1.0, 30)
     + served("tiny", V.ONEDNN_ON, 2.0, 60), {}, ONEDNN.means[Outcome.OPPOSITE]),
    ("networks apart", lambda: served("tiny", V.ONEDNN_OFF, 1, 30)
     + served("resnet20", V.ONEDNN_OFF, 40, 4000)
     + served("tiny", V.ONEDNN_ON, 0.9, 25) + served("resnet20", V.ONEDNN_ON, 10, 1000),
     {}, ONEDNN.ranks[1].means[noise.Order.HIGHER]),
    ("networks together", lambda: served("tiny", V.ONEDNN_OFF, 1, 30, spread=0.2)
     + served("resnet20", V.ONEDNN_OFF, 40, 4000, spread=0.2)
     + served("tiny", V.ONEDNN_ON, 0.5, 25, spread=0.2)
     + served("resnet20", V.ONEDNN_ON, 19, 1000, spread=0.2),
     {}, ONEDNN.ranks[1].means[noise.Order.WITHIN_NOISE]),
    ("batching faster", lambda: served("resnet20", V.ONEDNN_ON, 20, 1000), {},
     BATCHING.means[Outcome.EXPECTED]),
    ("batching slower", lambda: served("tiny", V.ONEDNN_ON, 1.0, 400), {},
     BATCHING.means[Outcome.OPPOSITE]),
    ("batching within noise", lambda: served("tiny", V.ONEDNN_ON, 1.0, 128, spread=0.3), {},
     BATCHING.means[Outcome.NONE]),
    ("too few passes", lambda: served("tiny", V.ONEDNN_ON, 1.0, 15, requests=3, big_passes=3), {},
     BATCHING.means[Outcome.CANNOT_JUDGE]),
    ("onnx runtime faster", lambda: served("resnet20", V.ONEDNN_ON, 20, 1000)
     + served("resnet20", V.ONNX_RUNTIME, 10, 500), {}, ORT.means[Outcome.EXPECTED]),
    ("outputs equal", lambda: served("resnet20", V.ONEDNN_OFF, 40, 4000, outputs=logits())
     + served("resnet20", V.ONEDNN_ON, 20, 1000, outputs=logits() * (1 + 1e-7)), {}, OUT[O.AGREE]),
    ("a near tie flipped", lambda: served("resnet20", V.ONEDNN_OFF, 40, 4000, outputs=tie(0))
     + served("resnet20", V.ONEDNN_ON, 20, 1000, outputs=tie(1)), {}, OUT[O.TOP1_FLIPPED]),
    ("outputs differ", lambda: served("resnet20", V.ONEDNN_OFF, 40, 4000, outputs=logits(seed=1))
     + served("resnet20", V.ONEDNN_ON, 20, 1000, outputs=logits(seed=2)), {}, OUT[O.DIFFER]),
    ("a long tail", lambda: served("tiny", V.ONEDNN_OFF, 1.0, 30, slow=2), {},
     lesson.FLAGS[1].means[l15.LONG_TAIL]),
    ("a busy machine", lambda: served("tiny", V.ONEDNN_OFF, 1.0, 30, load=6.5), {"cpu": CPU},
     lesson.FLAGS[2].means[l15.BUSY]),
    ("onnx runtime missing", lambda: served("tiny", V.ONEDNN_OFF, 1.0, 30),
     {"not_installed": ["onnxruntime"]}, lesson.MISSING[lesson.Package.ONNX_RUNTIME]),
]


def tie(flipped):
    out = logits()
    out[0, :2] = [5.0 - 1e-5, 5.0] if flipped else [5.0, 5.0 - 1e-5]
    return out


@pytest.mark.parametrize("scenario, records, context, paragraph", SCENARIOS,
                         ids=[s[0] for s in SCENARIOS])
def test_each_scenario_says_the_paragraph_its_declaration_gives_it(scenario, records, context,
                                                                  paragraph):
    assert paragraph in said(records(), **context)


WHAT = {v: c for c in lesson.GPU.compares for v in [c.when.get("variant")]}
GPU_SCENARIOS = [
    (V.COMPILED, 1.5, 10, "float32", Outcome.EXPECTED, noise.Order.LOWER),
    (V.CUDA_GRAPHS, 0.2, 9.8, "float32", Outcome.EXPECTED, noise.Order.HIGHER),
    (V.BFLOAT16, 2.0, 20, "bfloat16", Outcome.NONE, noise.Order.WITHIN_NOISE),
    (V.TENSORRT, 4.0, 40, "float32", Outcome.OPPOSITE, noise.Order.WITHIN_NOISE),
]


@pytest.mark.parametrize("variant, one_ms, big_ms, dtype, found, ranked", GPU_SCENARIOS)
def test_each_gpu_variant_against_eager_says_its_outcome_and_where_it_gained(
        variant, one_ms, big_ms, dtype, found, ranked):
    records = gpu("resnet20", V.EAGER, 2.0, 20) + gpu("resnet20", variant, one_ms, big_ms,
                                                      dtype=dtype)
    text = said(gpu=records)
    assert WHAT[variant].means[found] in text
    assert ("The gain was larger" in text) == (ranked != noise.Order.WITHIN_NOISE)
    if ranked != noise.Order.WITHIN_NOISE:
        assert lesson.BY_BATCH.means[ranked] in text
    assert "The talk, on a Titan V: TensorRT for cifar_resnet20_v2 ×1.21." in text
    assert "oneDNN" not in text and "No GPU here" not in text


def test_the_cpu_lines_cite_the_table_the_talk_and_the_cpu():
    records = served("resnet20", V.ONEDNN_OFF, 40, 4000) + served("resnet20", V.ONEDNN_ON, 20, 1000)
    text = said(records, cpu=CPU)
    assert text.startswith("This CPU (/proc/cpuinfo): Intel(R) Xeon(R) CPU @ 2.20GHz, 4 logical")
    assert ("'resnet20, oneDNN on, batch 1' against 'resnet20, oneDNN off, batch 1': p50 (ms) "
            "40.0 → 20.0; p99 (ms) 40.8 → 20.4; ×2.00, faster (×1.92–×2.08 over 5 blocks of 8 "
            "passes each).") in text
    assert ("The talk, on a 72-vCPU c5.18xlarge (ResNet-50 v1, MXNet v1.3): a batch-1 request "
            "without MKL-DNN 97.19 ms; with it 13.04 ms; a speed-up of ×7.45; batch 128 without "
            "it 10.29 images/s; with it 163.52 images/s; a speed-up of ×15.90; top-1 both ways "
            "76.06%; top-5 both ways 93.05%.") in text
    frame = l15.table(records)
    assert list(frame["against"]) == ["–", "–", "oneDNN off", "oneDNN off"]
    assert frame["speedup"].iloc[3] == pytest.approx(4.0) and math.isnan(frame["speedup"].iloc[0])
    assert frame["p50_blocks_ms"].iloc[0] == "39.2–40.8" and frame["passes"].iloc[1] == 10


def test_flagged_rows_name_their_cells_and_too_few_passes_give_the_ratio_alone():
    text = said(served("tiny", V.ONEDNN_OFF, 1.0, 30, slow=2, load=6.5), cpu=CPU)
    assert ("'tiny, oneDNN off, batch 1': a long tail (p50 (ms) 1.00; p99 (ms) 3.00; p99/p50 "
            "×3.00).") in text
    assert "'tiny, oneDNN off, batch 1': on a busy machine (load average before 6.50)." in text
    few = said(served("tiny", V.ONEDNN_OFF, 2.0, 30, requests=3, big_passes=3)
               + served("tiny", V.ONEDNN_ON, 1.0, 15, requests=3, big_passes=3))
    assert "×2.00, too few measured to judge (five blocks a side" in few
    assert "faster" not in few and "a long tail" not in few


def test_bfloat16_beyond_its_tolerance_is_its_precision_and_onnx_is_judged_against_onednn():
    far = gpu("resnet20", V.BFLOAT16, 1.9, 8, outputs=logits(seed=3), dtype="bfloat16")
    text = said(gpu=gpu("resnet20", V.EAGER, 2.0, 20) + far)
    assert OUT[O.DIFFER_PRECISION] in text and "tolerance 5e-02" in text
    text = said(served("resnet20", V.ONEDNN_ON, 20, 1000)
                + served("resnet20", V.ONNX_RUNTIME, 10, 1000))
    assert "'resnet20, ONNX Runtime, batch 1' against 'resnet20, oneDNN on, batch 1'" in text


def test_without_a_gpu_the_lesson_says_what_waits_and_that_tensorrt_is_missing():
    text = said(gpu=[], not_installed=["torch_tensorrt", "onnxruntime"])
    assert text.startswith("No GPU here. On one: eager against torch.compile, CUDA graphs")
    assert "ONNX Runtime is not installed here" in text
    assert lesson.MISSING[lesson.Package.TENSORRT] in text
    assert "The talk, on a Titan V: TensorRT for cifar_resnet20_v2 ×1.21." in text


def test_the_lessons_paragraphs_carry_no_number():
    for declared in (lesson.CPU, lesson.GPU):
        assert all(not closing.measurements(p) for p in paragraphs(declared))


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
        lesson.conclude(gpu("tiny", V.EAGER, 1, 30))
    with pytest.raises(ValueError, match="ran on cpu"):
        lesson.conclude(gpu=twice)
    with pytest.raises(ValueError, match="none was passed"):
        lesson.conclude()
    with pytest.raises(ValueError, match="both were passed"):
        lesson.conclude(twice, gpu=[])
    with pytest.raises(ValueError, match="records=\\[\\] is empty"):
        lesson.conclude([])
    with pytest.raises(ValueError, match="not_installed='tensorflow'; allowed: 'onnxruntime'"):
        lesson.conclude(twice, not_installed=["tensorflow"])
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
