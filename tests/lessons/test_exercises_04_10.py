"""The checks of exercises 04.1, 07.1, 09.1 and 10.1 on fake runs (tests/fake_runs.py):
every way each says "not yet", and every way it passes, judged against the runs' noise."""
import re

import pytest
from fake_runs import busy

from gpu_course.lessons.exercises import check

FLOAT16_ON_CPU = "dtype='float16' needs a GPU: no float16 convolution on the CPU."


def load(run, other_cores=3):
    """Record that other programs kept `other_cores` cores busy while `run` ran (one core its own)."""
    run.meta["load"] = {"start": {"wall": 0.0, "cpu_busy_s": 0.0, "process_cpu_s": 0.0},
                        "end": {"wall": 10.0, "process_cpu_s": 10.0,
                                "cpu_busy_s": 10.0 * (1 + other_cores)}}
    return run


def downgraded(run, requested, why):
    """Record that `run` asked for dtype `requested` and ran its config's dtype."""
    run.meta["downgrades"] = [{"field": "dtype", "requested": requested,
                               "ran": run.config["dtype"], "why": why}]
    return run


# -- 04.1: the 16-bit type this device computes in ---------------------------------------------

def precisions(make_run, rates, low="bfloat16", gpus=0, engine="gluon", **config):
    return [make_run(f"exercise: {dtype}", rate=rate, gpus=gpus, engine=engine,
                     config={"dtype": dtype, **config})
            for dtype, rate in zip(("float32", low), rates)]


def test_the_first_run_is_float32(make_run):
    runs = precisions(make_run, (600, 500))[::-1]
    result = check("04.1", runs, "slower")
    assert not result and "'exercise: bfloat16' ran bfloat16: the first run is float32" in result.message


def test_a_16_bit_request_that_ran_float32_names_the_device_and_why(make_run):
    runs = precisions(make_run, (600, 610), low="float32")
    downgraded(runs[1], "float16", FLOAT16_ON_CPU)
    result = check("04.1", runs, "same")
    assert not result and ("'exercise: float32' asked for float16 and ran float32 on the CPU "
                           "(Intel(R) Xeon(R) CPU @ 2.20GHz), no GPU: " + FLOAT16_ON_CPU) in result.message
    assert "Nothing below float32 was measured" in result.message and "bfloat16 on a CPU" in result.message


AVX2 = ["avx", "avx2", "f16c", "fma", "sse4_2"]
AVX512 = AVX2 + ["avx512bw", "avx512dq", "avx512f", "avx512vl"]


@pytest.mark.parametrize("answer", ["same", "slower", "faster"])
def test_on_a_cpu_without_avx512_gluon_offers_what_the_cpu_can_do(make_run, answer):
    """The CPU lacks the exercise's subject (MXNet's bfloat16 needs AVX-512): whatever the
    prediction, two float32 runs cannot test it; the check says why and where it can."""
    runs = precisions(make_run, (600, 610), low="float32")
    why = "dtype='bfloat16' is not on this CPU: ... this CPU has AVX2, no AVX-512"
    downgraded(runs[1], "bfloat16", why)
    for run in runs:
        run.meta["hardware"]["cpu_features"] = AVX2
    result = check("04.1", runs, answer)
    assert result.passed, result.message
    assert f"your prediction, {answer}, is untested: 'exercise: float32' asked for bfloat16, " \
        "which is not on this CPU" in result.message
    assert "need AVX-512 (F, BW, VL, DQ); this CPU has AVX2, no AVX-512" in result.message
    assert "The PyTorch track's exercise 04.1 computes bfloat16 on this CPU" in result.message


def test_on_a_cpu_with_avx512_a_float32_fallback_is_not_yet(make_run):
    """The same refusal where the record's CPU has AVX-512 (or says nothing of it): the
    exercise could have run, so the check asks for a type that runs."""
    for flags in (AVX512, None):
        runs = precisions(make_run, (600, 610), low="float32")
        downgraded(runs[1], "bfloat16", "some other reason")
        for run in runs:
            run.meta["hardware"]["cpu_features"] = flags
        result = check("04.1", runs, "same")
        assert not result and "Nothing below float32 was measured" in result.message


def test_pytorch_on_any_cpu_is_not_offered_the_way_out(make_run):
    runs = precisions(make_run, (600, 610), low="float32", engine="pytorch")
    downgraded(runs[1], "bfloat16", "some reason")
    for run in runs:
        run.meta["hardware"]["cpu_features"] = AVX2
    assert not check("04.1", runs, "same")


def test_float32_twice_is_no_change_and_a_second_change_is_named(make_run):
    assert "have the same dtype (float32): nothing was changed" in \
        check("04.1", precisions(make_run, (600, 610), low="float32"), "same").message
    runs = precisions(make_run, (600, 500))
    runs[1].config["batch_size"] = 256
    assert "differ in more than dtype: batch_size" in check("04.1", runs, "slower").message


def test_too_few_steps_ask_for_more_images(make_run):
    result = check("04.1", precisions(make_run, (600, 500), train_size=1024), "slower")
    assert not result and 'gc.sizes("04", exercise_size=...)' in result.message


def test_a_missing_prediction_asks_for_one(make_run):
    result = check("04.1", precisions(make_run, (600, 500)), None)
    assert not result and "prediction=None: write down, before you run" in result.message


def test_a_slower_cpu_contradicts_faster_and_shows_slower(make_run):
    runs = precisions(make_run, (600, 400))
    wrong = check("04.1", runs, "faster")
    assert not wrong and "you predicted faster, but 'exercise: bfloat16' against 'exercise: float32'" \
        in wrong.message and "a slow-down (×0.6" in wrong.message
    right = check("04.1", runs, "slower")
    assert right.passed and "as you predicted (slower)" in right.message
    assert "These runs trained on the CPU (Intel(R) Xeon(R) CPU @ 2.20GHz), no GPU: a CPU gains " \
        "from 16 bits only where it has instructions for them (AVX512-BF16" in right.message
    assert "Validation accuracy after the same epochs, bfloat16 against float32: " in right.message
    assert "standard errors" in right.message


def test_a_faster_gpu_names_the_gpu_and_its_tensor_cores(make_run):
    result = check("04.1", precisions(make_run, (600, 1500), low="float16", gpus=1), "faster")
    assert result.passed and "These runs trained on a GPU (NVIDIA H100 80GB HBM3): tensor cores " \
        "multiply" in result.message and "float16 against float32:" in result.message


def test_float16_run_as_bfloat16_on_a_cpu_counts_and_is_named(make_run):
    runs = precisions(make_run, (600, 760))
    downgraded(runs[1], "float16", "no fast float16 convolutions on the CPU: bfloat16 autocast.")
    result = check("04.1", runs, "faster")
    assert result.passed and "('exercise: bfloat16' asked for float16 and ran bfloat16: no fast " \
        "float16" in result.message


# -- 07.1: the same batch split over more devices -----------------------------------------------

def splits(make_run, rates, ks=(1, 2), batches=(128, 64), gpus=0, engine="gluon", **config):
    return [make_run(f"exercise: {k} device(s)", rate=rate, gpus=k if gpus else 0, engine=engine,
                     machine_gpus=gpus, ran={"threads": {"intra_op": 1}},
                     config={"num_gpus": k, "batch_size": b, **config})
            for k, b, rate in zip(ks, batches, rates)]


def test_the_second_run_has_more_devices(make_run):
    result = check("07.1", splits(make_run, (600, 610), ks=(2, 2), batches=(64, 64)), "same")
    assert not result and "'exercise: 2 device(s)' on 2: give the second more devices at # >>>" \
        in result.message


def test_the_batch_a_step_must_stay_the_same(make_run):
    result = check("07.1", splits(make_run, (600, 900), batches=(128, 128)), "faster")
    assert not result and ("the batch a step differs: 'exercise: 1 device(s)' 128 × 1 device(s), "
                           "'exercise: 2 device(s)' 128 × 2") in result.message
    assert "batch_size = 128 // devices" in result.message


def test_a_split_that_changes_more_is_refused(make_run):
    runs = splits(make_run, (600, 900))
    runs[1].config["model"] = "resnet56"
    result = check("07.1", runs, "faster")
    assert not result and "differ in more than num_gpus: model resnet20 against resnet56" in result.message


def test_a_contradicted_split_fails_and_the_cpu_is_named(make_run):
    runs = splits(make_run, (600, 900), engine="pytorch")
    assert "you predicted slower, but" in check("07.1", runs, "slower").message
    result = check("07.1", runs, "faster")
    assert result.passed and "as you predicted (faster)" in result.message
    assert re.search(r"Scaling efficiency 7\d% \(the speed-up ÷ 2 times the devices\): each of 2 "
                     "devices computed 64 images a step where each of 1 computed 128.", result.message)
    assert "These devices were CPU processes sharing the same 16 cores (1 compute thread(s) each)" \
        in result.message and "Run it on a machine with two or more GPUs" in result.message


def test_a_split_on_cpu_cores_other_programs_shared_is_untested(make_run):
    runs = splits(make_run, (600, 360), engine="pytorch")   # x0.60: beyond any drift
    assert not check("07.1", runs, "faster")   # a quiet machine: contradicted
    for run in runs:
        busy(run, 1.0)
    result = check("07.1", runs, "faster")
    assert result.passed and "your prediction, faster, is untested: other programs shared " \
        "the cores while 'exercise: 1 device(s)' and 'exercise: 2 device(s)' ran" in result.message
    assert "wait for the slowest" in result.message and re.search(r"Scaling efficiency [23]\d%", result.message)
    gpus = [busy(r, 1.0) for r in splits(make_run, (600, 360), gpus=2)]
    assert not check("07.1", gpus, "faster")   # GPUs: other programs' cores are not the devices


def test_gluon_contexts_and_gpus_are_told_apart(make_run):
    contexts = check("07.1", splits(make_run, (600, 450)), "slower")
    assert contexts.passed and "CPU contexts sharing the same 16 cores: a speed-up" in contexts.message
    gpus = check("07.1", splits(make_run, (600, 1100), gpus=2), "faster")
    assert gpus.passed and "On GPUs a device's share of the step shrinks" in gpus.message


# -- 09.1: another data format ---------------------------------------------------------------

def formats(make_run, waits, rates=(300, 600), names=("loose", "memory")):
    return [make_run(f"exercise: {name}", rate=rate, data_wait_share=wait,
                     config={"dataset": "folder", "data_format": name})
            for name, wait, rate in zip(names, waits, rates)]


def test_the_first_run_reads_loose_jpegs(make_run):
    result = check("09.1", formats(make_run, (0.1, 0.8), names=("memory", "loose")), "more")
    assert not result and "'exercise: memory' read data_format='memory': the first run reads loose" \
        in result.message


def test_one_format_twice_is_no_change(make_run):
    result = check("09.1", formats(make_run, (0.8, 0.8), names=("loose", "loose")), "same")
    assert not result and "have the same data_format (loose): nothing was changed" in result.message


def test_less_wait_in_memory_passes_and_says_the_speed(make_run):
    result = check("09.1", formats(make_run, (0.8, 0.1)), "less")
    assert result.passed and ("as you predicted, less of each step waiting: data wait 80% of each "
                              "step reading loose (blocks ") in result.message
    assert "10% reading memory" in result.message
    assert re.search(r"Samples/s, 'exercise: memory' against 'exercise: loose': ×[12]\.\d\d, faster",
                     result.message)


def test_more_wait_predicted_is_contradicted(make_run):
    result = check("09.1", formats(make_run, (0.8, 0.1)), "more")
    assert not result and "beyond noise the runs say less of each step waiting" in result.message
    assert "What does one sample cost the loader reading memory" in result.message


def test_less_wait_and_no_faster_says_the_model_sets_the_pace(make_run):
    result = check("09.1", formats(make_run, (0.8, 0.1), rates=(300, 300)), "less")
    assert result.passed and "less waiting and no faster, so the model now sets the pace, and on a " \
        "CPU it shares the cores with the loader" in result.message


def test_less_wait_beside_a_shared_machine_gives_no_speed_verdict(make_run):
    runs = formats(make_run, (0.8, 0.1), rates=(300, 900))
    load(runs[0]), load(runs[1], other_cores=0)
    result = check("09.1", runs, "less")
    assert result.passed and "no verdict: the runs also differ in machine load" in result.message
    assert "sets the pace" not in result.message


def test_a_short_run_asks_for_more_images_of_lesson_09(make_run):
    runs = formats(make_run, (0.8, 0.1))
    runs[1] = make_run("short", data_wait_share=0.1,
                       config={"dataset": "folder", "data_format": "memory", "train_size": 1024})
    result = check("09.1", runs, "less")
    assert "differ in more than data_format: train_size" in result.message
    runs = [make_run(f"s{i}", data_wait_share=w, config={"data_format": f, "train_size": 1024})
            for i, (f, w) in enumerate((("loose", 0.8), ("memory", 0.1)))]
    assert 'too few steady steps to judge the data wait' in check("09.1", runs, "less").message


# -- 10.1: the loader made the bottleneck on purpose --------------------------------------------

def bottleneck(make_run, wait=0.6, rate=300, feed=320, compute=900, base=None, mine=None):
    """The job as it is, the changed job, and its two ceilings (input, then compute)."""
    base = {"data_format": "memory"} if base is None else base
    mine = {"data_format": "loose"} if mine is None else mine
    return [make_run("exercise", rate=600, data_wait_share=0.05, config=base),
            make_run("exercise, changed", rate=rate, data_wait_share=wait, config=mine),
            make_run("exercise, changed: mock trainer", rate=feed, data_wait_share=0.95,
                     config={**mine, "mock": "trainer"}),
            make_run("exercise, changed: mock loader", rate=compute, data_wait_share=0.0,
                     config={**mine, "mock": "loader"})]


def test_the_job_its_change_and_two_ceilings_are_needed(make_run):
    runs = bottleneck(make_run)
    assert "the exercise needs four" in check("10.1", runs[:3], "input-bound").message
    one_job = check("10.1", [runs[1], runs[2], runs[3], runs[2]], "input-bound").message
    assert "1 run(s) without a mock among 4" in one_job


def test_no_change_and_two_changes_are_refused(make_run):
    same = bottleneck(make_run, base={"data_format": "loose"})
    assert "runs the same job as 'exercise': nothing was changed" in check("10.1", same, "input-bound").message
    two = bottleneck(make_run, mine={"data_format": "loose", "model": "tiny"})
    result = check("10.1", two, "input-bound")
    assert not result and "in more than one thing: data_format memory against loose; model " \
        "resnet20 against tiny" in result.message


def test_a_missing_ceiling_is_named(make_run):
    runs = bottleneck(make_run)
    runs[3].config["batch_size"] = 256   # not the same job: no ceiling of it
    result = check("10.1", runs, "input-bound")
    assert not result and "has no compute ceiling (mock='loader') among the runs" in result.message


@pytest.mark.parametrize("verdict", [None, "input bound", "io-bound"])
def test_the_verdict_is_one_diagnose_gives(make_run, verdict):
    result = check("10.1", bottleneck(make_run), verdict)
    assert not result and f"verdict={verdict!r}: write down, before you run" in result.message
    assert "'input-bound', 'compute-bound', 'overhead-bound'" in result.message


def test_an_unreliable_diagnosis_asks_for_more_steps(make_run):
    result = check("10.1", bottleneck(make_run, wait=0.05, rate=600, compute=300), "compute-bound")
    assert not result and "diagnose does not rule on 'exercise, changed': the run is at " in result.message
    assert "of its compute ceiling (mock loader)" in result.message and "which it cannot beat" in result.message
    assert 'gc.sizes("10", exercise_size=...)' in result.message and "Other programs" not in result.message
    runs = bottleneck(make_run, wait=0.05, rate=600, compute=300)
    load(runs[3])
    assert "'exercise, changed: mock loader' shared the machine: rerun when it is quiet" in check("10.1", runs, "compute-bound").message


def test_a_run_above_its_ceiling_within_noise_is_held_at_it(make_run):
    runs = bottleneck(make_run, rate=338, feed=320)   # ×1.06: diagnose would not rule
    result = check("10.1", runs, "input-bound")
    assert result.passed and "as you predicted, 'exercise, changed' ran above its input ceiling " \
        "(mock='trainer') within noise (×1." in result.message
    assert "it is held at that ceiling, input-bound" in result.message
    assert "next rung: workers" in result.message
    wrong = check("10.1", runs, "compute-bound")
    assert not wrong and "you predicted compute-bound, but 'exercise, changed' ran above" in wrong.message


def test_an_input_bound_job_predicted_passes_with_its_numbers(make_run):
    result = check("10.1", bottleneck(make_run), "input-bound")
    assert result.passed and "as you predicted, diagnose calls 'exercise, changed' input-bound: " \
        "data wait 60% of each step" in result.message
    assert re.search(r"input ceiling 3\d\d, compute ceiling 900", result.message)
    assert "Your change, data_format memory against loose, took the data wait from 5% to 60%" \
        in result.message and "next rung: workers" in result.message


def test_a_verdict_diagnose_contradicts_fails_with_the_evidence(make_run):
    result = check("10.1", bottleneck(make_run), "compute-bound")
    assert not result and "you predicted compute-bound, but diagnose calls 'exercise, changed' " \
        "input-bound: data wait 60%" in result.message and "gc.diagnose.explain" in result.message


def test_a_compute_bound_job_and_a_wait_at_the_threshold(make_run):
    runs = bottleneck(make_run, wait=0.05, rate=600, feed=2000, compute=620)
    assert check("10.1", runs, "compute-bound").passed
    assert not check("10.1", runs, "input-bound")
    near = bottleneck(make_run, wait=0.248, rate=600, feed=2000, compute=620)
    result = check("10.1", near, "input-bound")   # its blocks straddle the 25 % threshold
    assert result.passed and "diagnose calls 'exercise, changed' compute-bound, but " \
        "noise cannot rule input-bound out" in result.message


def test_a_shared_cpu_with_ceilings_within_noise_accepts_either_side(make_run):
    runs = bottleneck(make_run, wait=0.05, rate=580, feed=640, compute=620)
    runs[1].host["cpu_percent"] = 99.0   # the loader and the model keep every core busy
    assert check("10.1", runs, "compute-bound").passed
    result = check("10.1", runs, "input-bound")
    assert result.passed and "cannot rule input-bound out" in result.message
    assert not check("10.1", runs, "overhead-bound")
