"""Lesson 03's conclusions on fake runs: every branch, the GPU ones included."""
import pytest

from gpu_course.lessons import l03_graph, module_of, sizes


def three(make_run, model, rates, engine="gluon", gpus=0, ran=None):
    names = ("imperative", "hybridize()", "static") if engine == "gluon" else \
        ("eager", "compile", "reduce-overhead")
    return [make_run(f"{model} {n}", rate=r, engine=engine, gpus=gpus, config={"model": model},
                     ran=ran) for n, r in zip(names, rates)]


def test_the_smaller_network_gaining_more_beyond_noise_is_said_as_the_talk_says(make_run, capsys):
    runs = three(make_run, "resnet20", (600, 640, 650)) + three(make_run, "tiny", (600, 1500, 1600))
    runs[0].meta["ran"]["network"] = {"parameters": 272_474}
    runs[3].meta["ran"]["network"] = {"parameters": 20_000}
    say = l03_graph.conclude(runs)
    assert "tiny, the smaller network, gained more" in say.text and "the talk" in say.text
    assert say.check() == []
    assert "no kernel launches to save" in capsys.readouterr().out


def test_within_noise_names_no_winner(make_run):
    runs = three(make_run, "resnet20", (600, 601, 602)) + three(make_run, "tiny", (600, 600, 603))
    say = l03_graph.conclude(runs)
    assert "Neither network's hybridized variant differs" in say.text


def test_the_larger_network_gaining_more_is_said_against_the_rule_of_thumb(make_run):
    runs = three(make_run, "resnet20", (600, 2400, 2500)) + three(make_run, "tiny", (600, 700, 700))
    runs[0].meta["ran"]["network"] = {"parameters": 272_474}
    runs[3].meta["ran"]["network"] = {"parameters": 20_000}
    say = l03_graph.conclude(runs)
    assert "resnet20, the larger network, gained more" in say.text


def test_a_gpu_run_says_nothing_of_the_cpu_and_pytorch_names_the_compile_cost(make_run):
    runs = three(make_run, "resnet20", (3000, 9000, 20000), engine="pytorch", gpus=1,
                 ran={"compile_backend": "inductor"})
    say = l03_graph.conclude(runs)
    assert "CPU" not in say.text and "Compiling resnet20: its first epoch took" in say.text
    assert "'resnet20 reduce-overhead' against 'resnet20 eager'" in say.text


def test_a_tracing_backend_is_not_called_compilings_speed_up(make_run):
    runs = three(make_run, "resnet20", (600, 900), engine="pytorch",
                 ran={"compile_backend": "aot_eager"})
    say = l03_graph.conclude(runs)
    assert "'aot_eager' backend traces the graph" in say.text
    assert "CUDA graphs" in say.text   # skipped on the CPU, and said


def test_sizes_are_small_in_smoke_mode_and_refuse_an_unknown_override():
    assert sizes("03", smoke=True).train_size < sizes("03", smoke=False).train_size
    assert sizes("3", smoke=False, epochs=5)["epochs"] == 5
    assert "compile_backend" not in sizes("03", smoke=True)   # not an Experiment field
    with pytest.raises(ValueError, match="epoch.*not a size of this lesson; allowed"):
        sizes("03", epoch=5)
    with pytest.raises(ValueError, match="lesson='99' is not a lesson; allowed: .*03"):
        module_of("99")


def by_hand(make_run, busy, captured_rate, wait=0.0):
    """The lesson's own loop on a GPU, eager then captured as one CUDA graph."""
    return [make_run(f"resnet20 by hand, {graph}", rate=rate, engine="pytorch", gpus=1,
                     busy=busy, data_wait_share=wait, config={"graph": graph})
            for graph, rate in (("eager", 4000), ("static", captured_rate))]


def test_a_capture_on_a_host_bound_step_is_judged_and_the_dispatch_named(make_run):
    say = l03_graph.conclude(by_hand=by_hand(make_run, busy=35, captured_rate=12000))
    assert "'resnet20 by hand, static' against 'resnet20 by hand, eager': ×" in say.text
    assert "faster" in say.text and "The eager loop was host-bound" in say.text
    assert say.check() == []


def test_a_capture_on_a_gpu_bound_or_starved_step_says_why_it_had_little_to_remove(make_run):
    say = l03_graph.conclude(by_hand=by_hand(make_run, busy=97, captured_rate=4010))
    assert "within noise" in say.text and "GPU-bound: its kernels, not their launches" in say.text
    starved = l03_graph.conclude(by_hand=by_hand(make_run, busy=97, captured_rate=4000, wait=0.6))
    assert "data-bound: it waited for its batches" in starved.text


def test_without_a_gpu_the_capture_is_said_to_wait_and_bad_runs_are_refused(make_run):
    say = l03_graph.conclude(by_hand=[])
    assert "need an NVIDIA GPU and this machine has none" in say.text
    runs = by_hand(make_run, busy=35, captured_rate=9000)
    with pytest.raises(ValueError, match="by_hand= takes the loop's eager run.*got graphs static"):
        l03_graph.conclude(by_hand=runs[1:])
    with pytest.raises(ValueError, match="concludes on runs, or by_hand="):
        l03_graph.conclude()
