"""Lesson 04's conclusions on fake runs: a dtype that did not run is never credited (Gluon's
float16 as float32 on a CPU, PyTorch's as bfloat16), and the GPU branches a CPU never
takes: float16 faster or slower, the master copy's accuracy, TF32 on."""
import re

import pytest

from gpu_course.lessons import l04_precision as l04, sizes

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


# -- Gluon ------------------------------------------------------------------------------------
def test_float16_run_as_float32_on_a_cpu_is_two_identical_jobs_never_a_float16_gain(make_run):
    runs = repeated(make_run, [("float32", 600, {}),
                               ("float16", 900, {"dtype": "float16", "ran_dtype": "float32"})])
    say = l04.conclude(runs)
    assert "'float16' asked for float16 and ran float32. The record says why:" in say.text
    assert "both ran float32, two identical jobs, so the difference is this machine's speed " \
        "changing between the runs, not float16's: 2 repeats could not bound it" in say.text
    assert "Faster than float32" not in say.text and "in accuracy" not in say.text
    assert "No GPU here: float16's speed-up and the master copy's accuracy need one" in say.text
    assert l04.table(runs).differs_from_float32[1] == "–"
    assert say.check() == []
    say = l04.conclude(repeated(make_run, [("float32", 600, {}), ("float16", 600, {
        "dtype": "float16", "ran_dtype": "float32"})]))
    assert "it is within their noise, as it should be" in say.text


def test_float16_on_a_gpu_is_credited_and_the_master_copy_judged_on_accuracy(make_run, capsys):
    gpu = {"gpus": 1}
    runs = repeated(make_run, [
        ("float32", 900, {**gpu, "acc": 0.70}),
        ("float16", 2800, {**gpu, "dtype": "float16", "acc": 0.70}),
        ("float16 without multi_precision", 2900, {**gpu, "dtype": "float16", "master": False,
                                                   "acc": 0.55})])
    say = l04.conclude(runs)
    assert "'float16' against 'float32': ×3.1" in say.text
    assert "Faster than float32 beyond noise on this GPU: 'float16', 'float16 without " \
        "multi_precision'; the talk's float16 on a V100 ran at 3,100 samples/s" in say.text
    assert "The master copy's worth: 'float16' against 'float16 without multi_precision': " \
        "+15.0 points, an effect" in say.text
    assert "'float16' against 'float32' in accuracy: +0.0 points, within noise" in say.text
    assert "No GPU" not in say.text
    assert l04.table(runs).differs_from_float32[2] == "dtype float32 → float16; no master copy"
    assert say.check() == []
    assert "(×3.3)" in capsys.readouterr().out


def test_a_slower_float16_on_a_gpu_sends_the_reader_to_tensor_cores(make_run):
    runs = repeated(make_run, [("float32", 900, {"gpus": 1}),
                               ("float16", 500, {"gpus": 1, "dtype": "float16"})])
    say = l04.conclude(runs)
    assert "'float16' was a slow-down here: check that the GPU has tensor cores" in say.text
    runs = repeated(make_run, [("float32", 900, {"gpus": 1}),
                               ("float16", 901, {"gpus": 1, "dtype": "float16"})])
    assert "No 16-bit variant differs from float32 beyond noise here" in l04.conclude(runs).text


def test_a_loader_bound_float32_run_is_said_and_chance_is_named(make_run):
    runs = repeated(make_run, [("float32", 600, {"wait": 0.8, "test_size": 256,
                                                 "acc": 0.11}),
                               ("float16", 600, {"dtype": "float16", "ran_dtype": "float32",
                                                 "test_size": 256, "acc": 0.12})])
    say = l04.conclude(runs)
    assert "The float32 run waited for data" in say.text and "input pipeline keeps up" in say.text
    assert "float32: val acc 11.0% is within noise of chance" in say.text and say.check() == []


# -- PyTorch -----------------------------------------------------------------------------------
def test_pytorch_float16_run_as_bfloat16_on_a_cpu_is_a_bfloat16_result(make_run):
    pt = {"engine": "pytorch"}
    runs = repeated(make_run, [
        ("float32", 200, pt),
        ("float16", 300, {**pt, "dtype": "float16", "ran_dtype": "bfloat16"}),
        ("bfloat16 NCHW", 300, {**pt, "dtype": "bfloat16"}),
        ("bfloat16", 500, {**pt, "dtype": "bfloat16", "channels_last": True})])
    say = l04.conclude(runs)
    assert re.search(r"'float16' against 'float32': ×1\.\d\d, faster", say.text)
    assert "a bfloat16 result, not float16's" in say.text
    # one layout pair: float16 (ran bfloat16) against channels_last is not "NCHW against NHWC"
    assert say.text.count("channels_last against NCHW, both bfloat16") == 1
    assert "TF32 for float32 convolutions: not applicable here (no CUDA device" in say.text
    assert "this CPU's own ('float16' (ran bfloat16), 'bfloat16 NCHW' and 'bfloat16' faster " \
        "than float32 here)" in say.text
    assert say.check() == []


@pytest.mark.parametrize("flags, has", [(["avx2", "avx512f", "avx512_bf16"], True),
                                        (["avx2", "amx_bf16"], True), (["avx2"], False),
                                        (None, None)])
def test_pytorch_on_a_cpu_says_whether_the_cpu_has_bfloat16_instructions(make_run, flags, has):
    """From the CPU's instruction sets in the record (faked here on and off); a record that
    does not say gets no sentence."""
    pt = {"engine": "pytorch"}
    runs = repeated(make_run, [("float32", 300, pt),
                               ("bfloat16", 200, {**pt, "dtype": "bfloat16"})])
    for run in runs:
        run.meta["hardware"]["cpu_features"] = flags
    say = l04.conclude(runs)
    assert ("This CPU has instructions for bfloat16, so it can pay here" in say.text) == (has is True)
    assert ("This CPU has no instructions for bfloat16, so expect it to cost here" in say.text) \
        == (has is False)
    if has is False:
        assert "this CPU has AVX2, no AVX-512, no AVX512-BF16, no AMX." in say.text
    assert say.check() == []


def test_pytorch_on_an_ampere_gpu_says_where_tf32_ran_and_credits_bfloat16(make_run):
    gpu = {"engine": "pytorch", "gpus": 1}
    runs = repeated(make_run, [
        ("float32", 1000, gpu), ("tf32", 1800, {**gpu, "tf32": True}),
        ("float16", 3000, {**gpu, "dtype": "float16"}),
        ("bfloat16 NCHW", 2800, {**gpu, "dtype": "bfloat16"}),
        ("bfloat16", 3500, {**gpu, "dtype": "bfloat16", "channels_last": True})])
    say = l04.conclude(runs)
    assert re.search(r"'tf32 \(float32 convolutions ran in TF32\)' against 'float32': ×1\.\d\d, "
                     "faster", say.text)
    assert "TF32 for float32 convolutions: on in 'tf32', off in 'float32'." in say.text
    assert "Faster than float32 beyond noise on this GPU: 'float16', 'bfloat16 NCHW', 'bfloat16'" \
        in say.text and "'tf32'," not in say.text.split("beyond noise on this GPU")[1]
    assert l04.table(runs).differs_from_float32[1] == "TF32 convolutions"
    assert say.check() == []


def test_the_baseline_is_plain_float32_found_by_its_record(make_run):
    gpu = {"engine": "pytorch", "gpus": 1}
    runs = [variant(make_run, "tf32", 1800, tf32=True, **gpu), variant(make_run, "float32", 1000, **gpu)]
    assert l04.baseline(runs) == "float32"
    with pytest.raises(ValueError, match="no variant asked for and ran float32 without TF32"):
        l04.baseline(runs[:1])


def test_sizes_repeat_each_precision():
    assert sizes("04", smoke=True).repeats >= 2 and "repeats" not in sizes("04", smoke=True)
    assert sizes("04", smoke=False)["model"] == "resnet20"
