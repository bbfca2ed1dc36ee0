"""Lesson 14's conclusions on fake runs whose records carry memory notes as the adapters'
`MemoryMeter.measure` writes them: the parts per batch size (PyTorch's profiler, which
sorts memory into parts; the process's memory, which does not; a GPU with the CUDA
allocator and a snapshot, a GPU under MXNet), gradient accumulation against the large
batch and another seed of it, activation checkpointing, and a graph against the network
as written (hybridized, compiled by aot_eager and by inductor)."""
import math

import pytest

from gpu_course.analyse import memory as m
from gpu_course.lessons import l14_memory as l14, sizes

MiB = 2**20
P, C = l14.Counter.PROFILER, l14.Counter.PROCESS


def notes(counter=P, peak=10.0, act=8.0, held=2.0, params=0.5, grads=0.5, opt=0.5, inp=0.25,
          readings=2, spread=0.0, held_parts=None, total=None, allocator=None, files=(),
          most=None):
    """notes["memory"] in MiB as the meters write them in bytes; a sorting counter gets its
    parts at the peak (grads not yet made) and each part's most."""
    def r(v):
        return [v * MiB * (1 + spread * i) for i in range(readings)]
    sort = counter == P or (counter == l14.Counter.CUDA and most is not False)
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


# -- where the memory goes --------------------------------------------------------------------
def test_the_profiler_sorts_the_parts_and_the_activations_grow_with_the_batch(make_run):
    sweep = [run(make_run, "batch 4", 4, notes(peak=3.75, act=2.5)),
             run(make_run, "batch 16", 16, notes(peak=11.25, act=10.0))]
    say = l14.conclude(sweep)
    assert say.lines[0].text == (
        "At batch 16 the step peaked at 11.2 MiB, by torch.profiler's memory timeline: "
        "parameters 0.5 MiB, gradients 0.5 MiB, optimizer state 0.5 MiB (counted from the "
        "model: elements × bytes), activations 10.0 MiB, 89% of the peak.")
    assert "measured against counted: parameters 0.5 MiB against 0.5 MiB, gradients 0.5 " \
        "MiB against 0.5 MiB, optimizer state 0.5 MiB against 0.5 MiB: the same, to within " \
        "a percent." in say.text
    assert "From batch 4 to batch 16 (×4.00 the images) the activations grew from 2.50 to 10.0 " \
        "MiB; per image, ×1.00, the same within noise (×0.98–×1.02 over 2 measured steps each, " \
        "±1%): they grow in proportion to the batch, while the parameters" in say.text
    assert "What waits for a GPU: the CUDA caching allocator's own counters" in say.text
    assert say.check() == []
    frame = l14.table(sweep)
    assert list(frame["update_batch"]) == [4, 16] and frame["peak_mib"].iloc[1] == 11.25
    assert frame["activations_per_image_mib"].iloc[0] == pytest.approx(0.625)
    assert "loss_gap" not in frame.columns and "checkpoint_segments" not in frame.columns


@pytest.mark.parametrize("small, says", [
    (3.0, "×0.83, less (×0.82–×0.85 over 2 measured steps each, ±1%): less than in proportion: "
          "a share of them is fixed"),
    (2.3, "×1.09, more (×1.07–×1.11 over 2 measured steps each, ±1%): in proportion to the "
          "batch, to within 10%"),
    (1.5, "×1.67, more (×1.63–×1.70 over 2 measured steps each, ±1%): more than in proportion: "
          "what else a step allocates"),
])
def test_activations_per_image_that_are_not_in_proportion_say_which_way(make_run, small, says):
    sweep = [run(make_run, "batch 4", 4, notes(peak=small + 1.25, act=small)),
             run(make_run, "batch 16", 16, notes(peak=11.25, act=10.0))]
    say = l14.conclude(sweep)
    assert says in say.text and say.check() == []


def test_parts_the_profiler_counts_apart_from_the_model_are_said_to_differ(make_run):
    say = l14.conclude([run(make_run, "batch 16", 16, notes(most={"gradients": [0.0, 0.0]}))])
    assert "gradients 0 MiB against 0.5 MiB" in say.text and ": they differ (a part" in say.text


def test_the_process_memory_holds_more_than_the_model_counts(make_run):
    sweep = [run(make_run, "batch 4", 4, notes(C, peak=6.0, held=3.0, act=0), engine="gluon"),
             run(make_run, "batch 16", 16, notes(C, peak=14.0, held=3.5, act=0), engine="gluon")]
    say = l14.conclude(sweep)
    assert "by the process's peak resident memory" in say.text
    assert "activations 10.5 MiB" in say.text   # the peak less what was held
    assert "Between steps the counter held 3.50 MiB, against 1.75 MiB counted (parameters, " \
        "gradients, optimizer state, input): the rest, 1.75 MiB, is the framework's own " \
        "(kernels' workspace and caches, buffers a static graph keeps" in say.text
    assert "What waits for a GPU: mx.context.gpu_memory_info" in say.text
    assert "counter sorts" not in say.text and say.check() == []


def test_a_small_batch_the_process_counter_saw_nothing_of_is_not_measured(make_run):
    """CI's Gluon run: batch 8's steps left the process's peak where an earlier step had
    put it (0 MiB of activations), which gave no ratio and once divided by zero."""
    sweep = [run(make_run, "batch 8", 8, notes(C, peak=3.0, held=3.0, act=0), engine="gluon"),
             run(make_run, "batch 32", 32, notes(C, peak=14.0, held=3.5, act=0), engine="gluon")]
    say = l14.conclude(sweep)
    assert "From batch 8 to batch 32 the activations read 0 and 10.5 MiB: batch 8's steps " \
        "raised the process's peak resident memory by nothing it could see" in say.text
    assert "is not measured here" in say.text and say.check() == []


def test_held_below_the_count_says_a_part_was_not_alive(make_run):
    text = l14.conclude([run(make_run, "batch 16", 16, notes(C, held=1.0), engine="gluon")]).text
    assert "less than counted, so a counted part was not alive between steps" in text


def test_on_a_gpu_the_allocator_the_device_s_limit_and_the_snapshot(make_run):
    gpu = notes(l14.Counter.CUDA, peak=1000.0, act=900.0, total=80 * 1024 * MiB,
                allocator={"peak": [1000 * MiB] * 2, "reserved": 1200 * MiB, "retries": 0},
                files=("memory_snapshot.pickle", "memory_timeline.json"))
    say = l14.conclude([run(make_run, "batch 1024", 1024, gpu, gpus=1)])
    assert "by torch.cuda.max_memory_allocated" in say.text
    assert "The caching allocator had reserved 1,200 MiB from the device for the 1,000 MiB its " \
        "tensors peaked at" in say.text and "no cudaMalloc had to be retried" in say.text
    assert "The peak is 1.2% of the device's 81,920 MiB; at 0.879 MiB of activations an image, " \
        "about 93,092 images a step would fill it. Stay well below that" in say.text
    assert "memory_snapshot.pickle in the run's folder: drop it on https://pytorch.org/memory_viz" \
        in say.text
    assert "What waits for a GPU" not in say.text and say.check() == []
    gpu["allocator"]["retries"] = 3
    assert "it retried cudaMalloc 3 times after freeing its cache" in l14.conclude(
        [run(make_run, "batch 1024", 1024, gpu, gpus=1)]).text


def test_mxnet_on_a_gpu_reads_the_device_and_its_limit(make_run):
    gpu = notes(l14.Counter.MXNET_GPU, peak=600.0, held=100.0, total=16 * 1024 * MiB)
    say = l14.conclude([run(make_run, "batch 256", 256, gpu, engine="gluon", gpus=1)])
    assert "by mx.context.gpu_memory_info" in say.text and "caching allocator" not in say.text
    assert "images a step would fill it" in say.text and "memory_viz" not in say.text


def test_a_run_without_a_measurement_is_refused_by_name(make_run):
    bare = make_run("batch 8", engine="pytorch")
    with pytest.raises(ValueError, match="run 'batch 8' has no memory measurement"):
        l14.conclude([bare])
    odd = run(make_run, "batch 8", 8, {**notes(), "counter": "a ruler"})
    with pytest.raises(ValueError, match="counter='a ruler' is not a memory counter; allowed"):
        l14.table([odd])
    with pytest.raises(ValueError, match="none was passed"):
        l14.conclude()


# -- gradient accumulation -------------------------------------------------------------------
def accumulation(make_run, gap=0.02, noise=0.2, updates=24, speed=(600.0, 620.0, 480.0)):
    curve = [2.3 - 0.05 * i for i in range(updates)]
    big = notes(peak=11.25, act=10.0)
    return [run(make_run, "batch 16", 16, big, curve=curve, rate=speed[0]),
            run(make_run, "batch 16, seed 1", 16, big, seed=1, rate=speed[1],
                curve=[v + noise for v in curve]),
            run(make_run, "4 micro-batches of 4", 16, notes(peak=4.0, act=2.6), accumulate=4,
                rate=speed[2], curve=[v + (gap if i % 2 else -gap) for i, v in enumerate(curve)])]


def test_accumulation_follows_the_large_batch_within_a_seed_s_noise(make_run):
    runs = accumulation(make_run)
    say = l14.conclude(accumulation=runs)
    assert say.lines[0].text.startswith(
        "4 micro-batches of 4 images, added up into one update of 16: over 24 updates its loss "
        "stayed 0.02 from batch 16's (mean absolute difference, update by update), where "
        "another seed of batch 16 differs by 0.2: within noise.")
    assert "Its peak: 4.00 MiB against 11.2 MiB, ×0.36, less" in say.text
    assert "its activations 2.60 MiB against 10.0 MiB, ×0.26, less" in say.text
    assert "What it costs in speed: samples/s ×0.80, a slow-down" in say.text
    assert say.check() == []
    frame = l14.table(runs)
    assert list(frame["accumulate"]) == [1, 1, 4] and list(frame["micro_batch"]) == [16, 16, 4]
    assert math.isnan(frame["loss_gap"].iloc[0]) and frame["updates"].iloc[2] == 24


def test_accumulation_beyond_the_noise_names_batchnorm(make_run):
    text = l14.conclude(accumulation=accumulation(make_run, gap=0.5, speed=(600, 610, 605))).text
    assert "beyond the noise of another seed. BatchNorm's statistics come from each" in text
    assert "no cost beyond noise here" in text


def test_curves_of_different_lengths_cannot_be_compared(make_run):
    runs = accumulation(make_run)
    runs[2].meta["notes"]["loss_curve"] = [1.0, 0.9]
    assert "the loss curves cannot be compared" in l14.conclude(accumulation=runs).text


def test_accumulation_refuses_runs_that_cannot_tell(make_run):
    runs = accumulation(make_run)
    with pytest.raises(ValueError, match="needs the large batch, the large batch again"):
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
def test_checkpointing_trades_memory_for_time(make_run):
    runs = [run(make_run, "batch 16", 16, notes(peak=11.0, act=10.0), rate=600),
            run(make_run, "batch 16, checkpointed", 16, notes(peak=9.0, act=7.5), checkpoint=3,
                rate=400)]
    say = l14.conclude(checkpointing=runs)
    assert "Checkpointed in 3 segments, the step kept 7.50 MiB of activations at its peak " \
        "against 10.0 MiB, ×0.75, less" in say.text
    assert "The price, samples/s: ×0.67, a slow-down" in say.text
    assert "Memory for time: 75% of the activations kept, for ×1.50 the time an image" in say.text
    assert "The peak fell less than the activations" in say.text and say.check() == []
    segments = l14.table(runs)["checkpoint_segments"]
    assert segments.isna().iloc[0] and segments.iloc[1] == "3"


def test_checkpointing_without_a_time_cost_or_without_a_saving(make_run):
    free = [run(make_run, "a", 16, notes(peak=11.0, act=10.0)),
            run(make_run, "b", 16, notes(peak=7.0, act=7.0), checkpoint=2, rate=602)]
    text = l14.conclude(checkpointing=free).text
    assert "70% of the activations kept; the recomputation's time is within" in text
    assert "The peak fell less" not in text
    none = [run(make_run, "a", 16, notes()), run(make_run, "b", 16, notes(), checkpoint=2)]
    assert "The activations did not shrink beyond noise" in l14.conclude(checkpointing=none).text
    with pytest.raises(ValueError, match="checkpointing= needs the network as is and checkpointed"):
        l14.conclude(checkpointing=none[:1])


# -- a graph ----------------------------------------------------------------------------------
def test_a_hybridized_graph_peaks_lower_and_holds_its_buffers(make_run):
    runs = [run(make_run, "batch 16", 16, notes(C, peak=17.0, held=3.6), engine="gluon"),
            run(make_run, "batch 16, hybridized", 16, notes(C, peak=14.0, held=14.0),
                engine="gluon", graph="static", rate=2400)]
    say = l14.conclude(graph=runs)
    assert "The step's peak hybridized (static_alloc): 14.0 MiB against 17.0 MiB imperative, " \
        "×0.82, less" in say.text and "held between steps 14.0 MiB against 3.60 MiB, ×3.89, " \
        "more" in say.text and "keeps them between steps (static_alloc)." in say.text
    assert "The talk's example (c = b * a; d = c + 1): imperative 320 bytes" in say.text
    assert "symbolic 160 bytes (two), ×0.50; a training step on your machine, ×0.82 at its " \
        "peak" in say.text
    assert "Samples/s hybridized (static_alloc) against imperative: ×4.00, faster" in say.text
    assert say.check() == []


def test_compiled_by_aot_eager_expects_nothing_and_by_inductor_says_why(make_run):
    def pair(backend, peak):
        return [run(make_run, "eager", 16, notes()),
                run(make_run, "compiled", 16, notes(peak=peak, act=peak - 2.0), graph="hybrid",
                    ran={"compile_backend": backend})]
    assert "(backend aot_eager: it traces the graph and runs the same operators" in \
        l14.conclude(graph=pair("aot_eager", 10.0)).text
    text = l14.conclude(graph=pair("inductor", 4.0)).text
    assert "×0.40, less" in text and "the compiler fuses operators" in text
    assert "×0.40 at its peak." in text
    with pytest.raises(ValueError, match="graph= needs the network as written"):
        l14.conclude(graph=pair("inductor", 4.0)[:1])


def test_sizes():
    smoke, full, check = sizes("14", smoke=True), sizes("14", smoke=False), sizes("14", mode="check")
    assert smoke["model"] == "tiny" and full["model"] == "resnet20"
    assert full.batches[-1] == full.accumulate * 256 and smoke.batches[-1] % smoke.accumulate == 0
    assert smoke["train_size"] // smoke.batches[-1] - smoke["warmup_steps"] >= 20
    assert check["train_size"] < full["train_size"] and check.compile_backend == "inductor"


def test_an_allocator_without_the_profiler_s_parts_and_models_that_differ(make_run):
    plain = notes(l14.Counter.CUDA, most=False, held=3.0, peak=12.0, total=8 * 1024 * MiB)
    say = l14.conclude([run(make_run, "batch 8", 8, notes(params=2.0, peak=6.0, act=4.0)),
                        run(make_run, "batch 32", 32, plain, gpus=1)])
    assert "the rest, 1.25 MiB, is the framework's own (kernels' workspace and caches, the " \
        "loader's batches)." in say.text      # no static graph's buffers in PyTorch's allocator
    assert "optimizer state stay as they are" not in say.text   # the two models differ
    assert say.check() == []
