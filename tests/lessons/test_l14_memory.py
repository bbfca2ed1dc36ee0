"""Lesson 14's conclusions on fake runs whose records carry memory notes as the adapters'
`MemoryMeter.measure` writes them: each reading's scenarios and the paragraph its
declaration gives them (PyTorch's profiler, which sorts memory into parts; the process's
memory, which does not; a GPU with the CUDA allocator and a snapshot, a GPU under MXNet),
then the few special cases."""
import math

import pytest

from gpu_course.analyse import memory as m
from gpu_course.lessons import l14_memory as l14, sizes
from gpu_course.lessons.l14_memory import ACCUMULATION, CHECKPOINTING, GRAPH, SWEEP
from gpu_course.show import closing
from declared import paragraphs
from gpu_course.show.findings import Outcome, Sign

MiB = 2**20
P, C = m.Counter.PROFILER, m.Counter.PROCESS


def notes(counter=P, peak=10.0, act=8.0, held=2.0, params=0.5, grads=0.5, opt=0.5, inp=0.25,
          readings=2, spread=0.0, held_parts=None, total=None, allocator=None, files=(),
          most=None):
    """notes["memory"] in MiB as the meters write them in bytes; a sorting counter gets its
    parts at the peak (grads not yet made) and each part's most."""
    def r(v):
        return [v * MiB * (1 + spread * i) for i in range(readings)]
    sort = counter == P or (counter == m.Counter.CUDA and most is not False)
    at_peak = {"parameters": r(params), "optimizer state": r(opt), "input": r(inp),
               "gradients": r(0.0), "activations": r(act), "other": r(0.0)} if sort else {}
    most = {"parameters": r(params), "gradients": r(grads), "optimizer state": r(opt),
            "input": r(inp), "activations": r(act), "other": r(0.0),
            **(most or {})} if sort else {}
    return {"counter": counter.value, "device": "cpu",
            "computed": {"parameters": params * MiB, "gradients": grads * MiB,
                         "optimizer state": opt * MiB, "input": inp * MiB},
            "held_parts": held_parts or (["parameters", "optimizer state", "input"] if sort else
                                         ["parameters", "gradients", "optimizer state", "input"]),
            "held": r(held), "peak": r(peak), "at_peak": at_peak, "most": most,
            "device_total": total, "allocator": allocator, "files": list(files)}


def run(make_run, name, batch, memory, engine="pytorch", gpus=0, accumulate=1, checkpoint=0,
        curve=None, seed=0, rate=600.0, graph="eager", ran=None):
    return make_run(name, rate=rate, engine=engine, gpus=gpus, seed=seed, ran=ran, epochs=2,
                    config={"batch_size": batch // accumulate, "seed": seed, "graph": graph,
                            "train_size": 6_400},
                    notes={"memory": memory, "accumulate": accumulate, "checkpoint": checkpoint,
                           "loss_curve": curve or []})



def sweep(make_run, small, large, engine="pytorch", gpus=0):
    return [run(make_run, "batch 4", 4, small, engine=engine, gpus=gpus),
            run(make_run, "batch 16", 16, large, engine=engine, gpus=gpus)]


def means(lesson, n=0):
    return lesson.compares[n].means


# -- where the memory goes: the sweep's scenarios -> the paragraph its declaration gives them
SWEEPS = [
    (notes(peak=3.75, act=2.5), notes(peak=11.25, act=10.0), "pytorch",
     means(SWEEP)[Outcome.EXPECTED]),
    (notes(peak=4.25, act=3.0), notes(peak=11.25, act=10.0), "pytorch",
     means(SWEEP)[Outcome.OPPOSITE]),
    (notes(peak=2.75, act=1.5), notes(peak=11.25, act=10.0), "pytorch",
     means(SWEEP)[Outcome.OPPOSITE]),
    (notes(C, peak=3.0, held=3.0, act=0), notes(C, peak=14.0, held=3.5, act=0), "gluon",
     means(SWEEP)[Outcome.CANNOT_JUDGE]),
    (notes(C, peak=6.0, held=3.0), notes(C, peak=14.0, held=3.5), "gluon",
     SWEEP.by_sign["held_rest_mib"][Sign.POSITIVE]["gluon"]),
    (notes(C, peak=6.0, held=3.0), notes(C, peak=14.0, held=1.0), "gluon",
     SWEEP.by_sign["held_rest_mib"][Sign.OTHER]),
    (notes(), notes(peak=11.25, act=10.0), "pytorch", SWEEP.by_sign["counted_gap"][Sign.OTHER]),
    (notes(), notes(most={"gradients": [0.0, 0.0]}), "pytorch",
     SWEEP.by_sign["counted_gap"][Sign.POSITIVE]),
]


@pytest.mark.parametrize("small, large, engine, paragraph", SWEEPS)
def test_each_sweep_says_the_paragraph_its_declaration_gives_it(make_run, small, large, engine,
                                                                  paragraph):
    say = l14.conclude(sweep(make_run, small, large, engine))
    assert paragraph in say.text and say.check() == []
    assert l14.ON_A_GPU[engine] in say.text        # no GPU: what waits for one, in sentences
    assert "What waits for a GPU" not in say.text


def test_the_sweep_names_the_largest_batch_s_parts_and_judges_activations_per_image(make_run):
    runs = sweep(make_run, notes(peak=3.75, act=2.5), notes(peak=11.25, act=10.0))
    say = l14.conclude(runs[::-1])                 # judged smallest first, largest last
    assert "'batch 16': peak 11.2 MiB, by torch.profiler's memory timeline, parameters 0.5 MiB" \
        in say.text and "activations 10.0 MiB, 88.9% of the peak" in say.text
    assert "'batch 16' against 'batch 4', activations per image: 0.625 against 0.625 MiB, " \
        "×1.00, the same within noise (×0.98–×1.02 over 2 measured steps each, ±1%)." in say.text
    assert "Activations at the peak, MiB: 'batch 4' 2.50, 'batch 16' 10.0." in say.text
    frame = l14.table(runs)
    assert list(frame["update_batch"]) == [4, 16] and frame["peak_mib"].iloc[1] == 11.25
    assert frame["activations_per_image_mib"].iloc[0] == pytest.approx(0.625)
    assert "loss_gap" not in frame.columns and "checkpoint_segments" not in frame.columns


def test_a_counter_that_saw_nothing_of_the_small_batch_gives_no_ratio(make_run):
    runs = sweep(make_run, notes(C, peak=3.0, held=3.0, act=0),
                 notes(C, peak=14.0, held=3.5, act=0), "gluon")
    say = l14.conclude(runs)
    assert "'batch 16' against 'batch 4', activations per image: not measured." in say.text
    assert "Activations at the peak, MiB: 'batch 4' 0, 'batch 16' 10.5." in say.text
    assert say.check() == []


def test_on_a_gpu_the_allocator_the_device_s_limit_and_the_snapshot(make_run):
    gpu = notes(m.Counter.CUDA, peak=1000.0, act=900.0, total=80 * 1024 * MiB,
                allocator={"peak": [1000 * MiB] * 2, "reserved": 1200 * MiB, "retries": 0},
                files=("memory_snapshot.pickle", "memory_timeline.json"))
    say = l14.conclude([run(make_run, "batch 1024", 1024, gpu, gpus=1)])
    assert "by torch.cuda.max_memory_allocated" in say.text
    assert "reserved by the caching allocator 1,200 MiB" in say.text
    assert "the device's memory 81,920 MiB, the peak 1.2% of it, activations an image 0.879 " \
        "MiB, about 93,092 images a step would fill the device" in say.text
    assert "memory_snapshot.pickle in the run's folder (open in https://pytorch.org/memory_viz" \
        in say.text
    for sign in (Sign.OTHER,):
        assert SWEEP.by_sign["allocator_retries"][sign] in say.text
    assert SWEEP.by_sign["fills_device_batch"][Sign.POSITIVE] in say.text
    assert "This run had no GPU" not in say.text and say.check() == []
    gpu["allocator"]["retries"] = 3
    assert SWEEP.by_sign["allocator_retries"][Sign.POSITIVE] in l14.conclude(
        [run(make_run, "batch 1024", 1024, gpu, gpus=1)]).text


def test_mxnet_on_a_gpu_reads_the_device_and_its_limit(make_run):
    gpu = notes(m.Counter.MXNET_GPU, peak=600.0, held=100.0, total=16 * 1024 * MiB)
    say = l14.conclude([run(make_run, "batch 256", 256, gpu, engine="gluon", gpus=1)])
    assert "by mx.context.gpu_memory_info" in say.text and "caching allocator" not in say.text
    assert "images a step would fill the device" in say.text and "memory_viz" not in say.text


def test_a_run_without_a_measurement_is_refused_by_name(make_run):
    bare = make_run("batch 8", engine="pytorch")
    with pytest.raises(ValueError, match="run 'batch 8' has no memory measurement"):
        l14.conclude([bare])
    odd = run(make_run, "batch 8", 8, {**notes(), "counter": "a ruler"})
    with pytest.raises(ValueError, match="counter='a ruler' is not a memory counter; allowed"):
        l14.table([odd])
    with pytest.raises(ValueError, match="no runs: pass"):
        l14.conclude()


def test_the_lessons_paragraphs_carry_no_number():
    for lesson in (SWEEP, ACCUMULATION, CHECKPOINTING, GRAPH):
        assert all(not closing.measurements(p) for p in paragraphs(lesson))


# -- gradient accumulation -------------------------------------------------------------------
def accumulation(make_run, gap=0.02, noise=0.2, updates=24, speed=(600.0, 620.0, 480.0)):
    curve = [2.3 - 0.05 * i for i in range(updates)]
    big = notes(peak=11.25, act=10.0)
    return [run(make_run, "batch 16", 16, big, curve=curve, rate=speed[0]),
            run(make_run, "batch 16, seed 1", 16, big, seed=1, rate=speed[1],
                curve=[v + noise for v in curve]),
            run(make_run, "4 micro-batches of 4", 16, notes(peak=4.0, act=2.6), accumulate=4,
                rate=speed[2], curve=[v + (gap if i % 2 else -gap) for i, v in enumerate(curve)])]


LOSS = ACCUMULATION.by_sign["loss_gap_beyond_seed"]


@pytest.mark.parametrize("gap, speed, paragraphs", [
    (0.02, (600, 620, 480), (LOSS[Sign.OTHER], means(ACCUMULATION)[Outcome.EXPECTED],
                             means(ACCUMULATION, 2)[Outcome.EXPECTED])),
    (0.5, (600, 610, 605), (LOSS[Sign.POSITIVE], means(ACCUMULATION, 2)[Outcome.NONE])),
])
def test_accumulation_says_what_its_declaration_gives_each_outcome(make_run, gap, speed,
                                                                   paragraphs):
    say = l14.conclude(accumulation=accumulation(make_run, gap=gap, speed=speed))
    assert all(p in say.text for p in paragraphs) and say.check() == []


def test_accumulation_numbers_its_loss_peak_and_speed(make_run):
    runs = accumulation(make_run)
    say = l14.conclude(accumulation=runs)
    assert "'4 micro-batches of 4': 4 micro-batches, of 4 images, added up into one update of " \
        "16, over 24 updates, its loss 0.02 from the large batch's (mean absolute difference), " \
        "another seed of the large batch 0.2 from it." in say.text
    assert "'4 micro-batches of 4' against 'batch 16', peak memory: 4.00 against 11.2 MiB, " \
        "×0.36, less" in say.text
    assert "activations at the peak: 2.60 against 10.0 MiB, ×0.26, less" in say.text
    assert "'4 micro-batches of 4' against 'batch 16': ×0.80, a slow-down" in say.text
    frame = l14.table(runs)
    assert list(frame["accumulate"]) == [1, 1, 4] and list(frame["micro_batch"]) == [16, 16, 4]
    assert math.isnan(frame["loss_gap"].iloc[0]) and frame["updates"].iloc[2] == 24


def test_curves_of_different_lengths_cannot_be_compared(make_run):
    runs = accumulation(make_run)
    runs[2].meta["notes"]["loss_curve"] = [1.0, 0.9]
    assert LOSS[Sign.EMPTY] in l14.conclude(accumulation=runs).text


def test_accumulation_refuses_runs_that_cannot_tell(make_run):
    runs = accumulation(make_run)
    with pytest.raises(ValueError, match="needs the large batch, it again with another seed"):
        l14.conclude(accumulation=runs[:2])
    runs[1].config["seed"] = 0
    with pytest.raises(ValueError, match="has the same seed as 'batch 16'"):
        l14.conclude(accumulation=runs)
    other = accumulation(make_run)
    other[2].config["batch_size"] = 8
    with pytest.raises(ValueError, match="updates on 32 images and 'batch 16' on 16"):
        l14.conclude(accumulation=other)


def test_the_loss_gap_and_the_last_loss():
    class R:
        def __init__(self, curve):
            self.meta = {"notes": {"loss_curve": curve}}
    assert m.loss_gap(R([1.0, 2.0]), R([1.5, 1.0])) == 0.75
    assert math.isnan(m.loss_gap(R([1.0]), R([1.0, 2.0]))) and math.isnan(m.loss_gap(R([]), R([])))
    assert m.last_loss([4.0, 3.0, 2.0, 1.0]) == 1.0 and math.isnan(m.last_loss([]))


# -- activation checkpointing -----------------------------------------------------------------
@pytest.mark.parametrize("ckpt, rate, paragraphs", [
    (notes(peak=9.0, act=7.5), 400, (means(CHECKPOINTING)[Outcome.EXPECTED],
                                     means(CHECKPOINTING, 1)[Outcome.EXPECTED],
                                     means(CHECKPOINTING, 2)[Outcome.EXPECTED])),
    (notes(peak=7.0, act=7.0), 602, (means(CHECKPOINTING, 2)[Outcome.NONE],)),
    (notes(), 600, (means(CHECKPOINTING)[Outcome.NONE],)),
])
def test_checkpointing_says_what_its_declaration_gives_each_outcome(make_run, ckpt, rate,
                                                                    paragraphs):
    runs = [run(make_run, "batch 16", 16, notes(peak=11.0, act=10.0) if rate != 600 else notes()),
            run(make_run, "batch 16, checkpointed", 16, ckpt, checkpoint=3, rate=rate)]
    say = l14.conclude(checkpointing=runs)
    assert all(p in say.text for p in paragraphs) and say.check() == []
    assert "'batch 16, checkpointed': checkpointed in 3 segments." in say.text
    assert "two identical jobs" not in say.text    # the segments are a note, not a config


def test_checkpointing_numbers_and_refusal(make_run):
    runs = [run(make_run, "batch 16", 16, notes(peak=11.0, act=10.0), rate=600),
            run(make_run, "batch 16, checkpointed", 16, notes(peak=9.0, act=7.5), checkpoint=3,
                rate=400)]
    say = l14.conclude(checkpointing=runs)
    assert "activations at the peak: 7.50 against 10.0 MiB, ×0.75, less" in say.text
    assert "'batch 16, checkpointed' against 'batch 16': ×0.67, a slow-down" in say.text
    segments = l14.table(runs)["checkpoint_segments"]
    assert segments.isna().iloc[0] and segments.iloc[1] == "3"
    with pytest.raises(ValueError, match="no run has {'checkpoint': 0}"):
        l14.conclude(checkpointing=runs[1:])


# -- a graph ----------------------------------------------------------------------------------
def test_a_hybridized_graph_peaks_lower_and_holds_its_buffers(make_run):
    runs = [run(make_run, "batch 16", 16, notes(C, peak=17.0, held=3.6), engine="gluon"),
            run(make_run, "batch 16, hybridized", 16, notes(C, peak=14.0, held=14.0),
                engine="gluon", graph="static", rate=2400)]
    say = l14.conclude(graph=runs)
    assert "peak memory: 14.0 against 17.0 MiB, ×0.82, less" in say.text
    assert "memory held between steps: 14.0 against 3.60 MiB, ×3.89, more" in say.text
    assert means(GRAPH)[Outcome.EXPECTED]["gluon"] in say.text
    assert means(GRAPH, 1)[Outcome.OPPOSITE]["gluon"] in say.text
    assert "The talk, on its example (c = b * a; d = c + 1): imperative, each interim value " \
        "kept 320 bytes; symbolic, one buffer reused 160 bytes." in say.text
    assert "'batch 16, hybridized' against 'batch 16': ×4.00, faster" in say.text
    assert say.check() == []


def test_compiled_by_aot_eager_expects_nothing_and_by_inductor_says_why(make_run):
    def pair(backend, peak):
        return [run(make_run, "eager", 16, notes()),
                run(make_run, "compiled", 16, notes(peak=peak, act=peak - 2.0), graph="hybrid",
                    ran={"compile_backend": backend})]
    traced = l14.conclude(graph=pair("aot_eager", 10.0)).text
    assert GRAPH.notes[0].text in traced and means(GRAPH)[Outcome.EXPECTED]["pytorch"] not in traced
    text = l14.conclude(graph=pair("inductor", 4.0)).text
    assert "×0.40, less" in text and means(GRAPH)[Outcome.EXPECTED]["pytorch"] in text
    with pytest.raises(ValueError, match="no run has {'graph': 'eager'}"):
        l14.conclude(graph=pair("inductor", 4.0)[1:])


def test_sizes():
    smoke, full, check = sizes("14", smoke=True), sizes("14", smoke=False), sizes("14", mode="check")
    assert smoke["model"] == "tiny" and full["model"] == "resnet20"
    assert full.batches[-1] == full.accumulate * 256 and smoke.batches[-1] % smoke.accumulate == 0
    assert smoke["train_size"] // smoke.batches[-1] - smoke["warmup_steps"] >= 20
    assert check["train_size"] < full["train_size"] and check.compile_backend == "inductor"


