"""Lesson 04's conclusions on fake runs: each outcome's paragraph, a dtype that did not run
never credited (Gluon's float16 as float32 on a CPU, PyTorch's as bfloat16), and the GPU
branches a CPU never takes: float16 faster or slower, the master copy's accuracy, TF32."""
import pytest

from gpu_course.lessons import l04_precision as l04, sizes
from gpu_course.lessons.l04_precision import LESSON
from gpu_course.show import closing
from declared import paragraphs
from gpu_course.show.findings import Outcome, Where

DTYPE, LAYOUT, TF32, MASTER = (LESSON.compares[i] for i in (3, 0, 1, 2))

WHY = {"gluon": "dtype='float16' needs a GPU: MXNet has no float16 convolution on the CPU.",
       "pytorch": "dtype='float16' on the CPU: this run uses bfloat16 autocast."}


def variant(make_run, name, rate, engine="gluon", gpus=0, dtype="float32", ran_dtype=None,
            master=True, tf32=False, acc=None, wait=0.1, **config):
    """One run of a variant: `dtype` asked for, `ran_dtype` run (a downgrade when they differ)."""
    ran = {"optimizer": {"multi_precision": master}} if engine == "gluon" else {}
    if gpus and engine == "pytorch":
        ran["tf32"] = {"convolutions": tf32, "matmul_precision": "highest"}
    run = make_run(name, rate=rate, engine=engine, gpus=gpus, ran=ran, data_wait_share=wait,
                   config={"dtype": ran_dtype or dtype, **config})
    if ran_dtype and ran_dtype != dtype:
        run.meta["downgrades"] = [{"field": "dtype", "requested": dtype, "ran": ran_dtype,
                                   "why": WHY[engine]}]
    if acc is not None:
        run.epochs["val_acc"] = [acc] * len(run.epochs)
    return run


def repeated(make_run, specs, repeats=2):
    """Each (name, rate, options) trained `repeats` times, interleaved, as the notebooks do."""
    return [variant(make_run, name, rate * (1 + 0.002 * r), **options)
            for r in range(repeats) for name, rate, options in specs]



GPU, PT = {"gpus": 1}, {"engine": "pytorch"}
F16 = {"dtype": "float16"}
# (variants after float32, rate and options) -> the paragraph the lesson declares for them
OUTCOMES = [
    ([("float16", 2800, {**GPU, **F16})], DTYPE.means[Outcome.EXPECTED][Where.GPU]),
    ([("float16", 901, {**GPU, **F16})], DTYPE.means[Outcome.NONE][Where.GPU]),
    ([("float16", 500, {**GPU, **F16})], DTYPE.means[Outcome.OPPOSITE][Where.GPU]),
    ([("bfloat16", 1500, {**PT, "dtype": "bfloat16"})], DTYPE.means[Outcome.OPPOSITE][Where.CPU]),
    ([("bfloat16 NCHW", 1500, {**PT, "dtype": "bfloat16"}),
      ("bfloat16", 2500, {**PT, "dtype": "bfloat16", "channels_last": True})],
     LAYOUT.means[Outcome.OPPOSITE][Where.CPU]),
    ([("float16", 2800, {**GPU, **F16, "acc": 0.70}),
      ("float16 without multi_precision", 2900, {**GPU, **F16, "master": False, "acc": 0.55})],
     MASTER.gained[Outcome.EXPECTED]),
    ([("float16", 2800, {**GPU, **F16, "acc": 0.50})], DTYPE.gained[Outcome.OPPOSITE]),
    ([("float16", 900, {**F16, "ran_dtype": "float32"})], LESSON.cpu["gluon"]),
]


@pytest.mark.parametrize("variants, paragraph", OUTCOMES)
def test_each_outcome_says_the_paragraph_the_lesson_declares(make_run, variants, paragraph):
    engine = variants[0][2].get("engine", "gluon")
    gpus = variants[0][2].get("gpus", 0)
    runs = repeated(make_run, [("float32", 900 if gpus else 600,
                                {"engine": engine, "gpus": gpus, "acc": 0.70})] + variants)
    say = l04.conclude(runs)
    assert paragraph in say.text and say.check() == []
    assert ("No GPU here" in say.text) == (gpus == 0)
    assert "The talk, on " in say.text and "×3.3" in say.text


def test_float16_run_as_float32_on_a_cpu_is_two_identical_jobs_never_a_float16_gain(make_run):
    runs = repeated(make_run, [("float32", 600, {}),
                               ("float16", 900, {"dtype": "float16", "ran_dtype": "float32"})])
    say = l04.conclude(runs)
    assert "'float16' asked for dtype float16 and ran float32: dtype='float16' needs a GPU" \
        in say.text and say.text.count("asked for") == 1
    assert "both ran as 'float32' did, two identical jobs" in say.text
    assert "in accuracy" not in say.text
    assert l04.table(runs).differs_from_float32[1] == "–" and say.check() == []


def test_the_master_copy_is_judged_on_accuracy_against_the_run_without_it(make_run):
    runs = repeated(make_run, [
        ("float32", 900, {**GPU, "acc": 0.70}), ("float16", 2800, {**GPU, **F16, "acc": 0.70}),
        ("float16 without multi_precision", 2900, {**GPU, **F16, "master": False, "acc": 0.55})])
    say = l04.conclude(runs)
    assert "'float16' against 'float16 without multi_precision' in accuracy: +15.0 points, " \
        "an effect" in say.text
    assert "'float16' against 'float32' in accuracy: +0.0 points, within noise" in say.text
    assert l04.table(runs).differs_from_float32[2] == \
        "dtype float32 → float16; master copy True → False"


def test_pytorch_float16_run_as_bfloat16_and_one_layout_pair(make_run):
    runs = repeated(make_run, [
        ("float32", 200, PT), ("float16", 300, {**PT, **F16, "ran_dtype": "bfloat16"}),
        ("bfloat16 NCHW", 300, {**PT, "dtype": "bfloat16"}),
        ("bfloat16", 500, {**PT, "dtype": "bfloat16", "channels_last": True})])
    say = l04.conclude(runs)
    assert "'float16' asked for dtype float16 and ran bfloat16" in say.text
    # one layout pair: float16 (ran bfloat16) against channels_last is not "NCHW against NHWC"
    assert say.text.count("'bfloat16' against 'bfloat16 NCHW': ×") == 1
    assert "'bfloat16' against 'float16'" not in say.text
    assert "TF32 needs an Ampere or newer GPU" in say.text and say.check() == []


@pytest.mark.parametrize("flags, has", [(["avx2", "avx512f", "avx512_bf16"], True),
                                        (["avx2", "amx_bf16"], True), (["avx2"], False),
                                        (None, None)])
def test_pytorch_on_a_cpu_says_whether_the_records_cpu_has_bfloat16_instructions(make_run, flags,
                                                                                  has):
    """From the CPU's instruction sets in the record (faked here on and off); a record that
    does not say gets no sentence."""
    runs = repeated(make_run, [("float32", 300, PT), ("bfloat16", 200, {**PT, "dtype": "bfloat16"})])
    for run in runs:
        run.meta["hardware"]["cpu_features"] = flags
    say = l04.conclude(runs)
    assert ("This CPU has bfloat16 instructions, so it can pay here" in say.text) == (has is True)
    assert ("This CPU has no bfloat16 instructions, so expect a cost" in say.text) \
        == (has is False)
    if has is False:
        assert "this CPU has AVX2, no AVX-512, no AVX512-BF16, no AMX." in say.text
    assert say.check() == []


def test_pytorch_on_an_ampere_gpu_judges_tf32_against_plain_float32(make_run):
    gpu = {"engine": "pytorch", "gpus": 1}
    runs = repeated(make_run, [("float32", 1000, gpu), ("tf32", 1800, {**gpu, "tf32": True}),
                               ("bfloat16", 3500, {**gpu, "dtype": "bfloat16"})])
    say = l04.conclude(runs)
    assert "'tf32' against 'float32': ×1.8" in say.text and TF32.means[Outcome.EXPECTED] in say.text
    assert "two identical jobs" not in say.text and "No GPU" not in say.text
    assert l04.table(runs).differs_from_float32[1] == "TF32 convolutions False → True"
    assert say.check() == []


def test_the_lessons_paragraphs_carry_no_number():
    assert all(not closing.measurements(p) for p in paragraphs(LESSON))


def test_sizes_repeat_each_precision():
    assert sizes("04", smoke=True).repeats >= 2 and "repeats" not in sizes("04", smoke=True)
    assert sizes("04", smoke=False)["model"] == "resnet20"
