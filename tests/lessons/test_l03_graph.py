"""Lesson 03's conclusions on fake runs: every branch, the GPU ones included."""
import pytest

from gpu_course.analyse import noise
from gpu_course.lessons import l03_graph, module_of, sizes
from gpu_course.lessons.l03_graph import LESSON
from gpu_course.show import closing
from declared import paragraphs
from gpu_course.show.findings import Outcome, Where


def three(make_run, model, rates, engine="gluon", gpus=0, ran=None, params=None):
    names = ("imperative", "hybridize()", "static") if engine == "gluon" else \
        ("eager", "compile", "reduce-overhead")
    graphs = ("eager", "hybrid", "static")
    return [make_run(f"{model} {n}", rate=r, engine=engine, gpus=gpus,
                     config={"model": model, "graph": g},
                     ran={**(ran or {}), "network": {"parameters": params or 0}})
            for n, g, r in zip(names, graphs, rates)]


# rates of (resnet20, tiny) runs, where they ran -> the paragraph the lesson declares for it
OUTCOMES = [
    ((600, 602, 604), (600, 601, 603), 0, "gluon", LESSON.compares[0].means[Outcome.EXPECTED]),
    ((3000, 3010, 3005), (3000, 3004, 3010), 1, "pytorch",
     LESSON.compares[0].means[Outcome.NONE]),
    ((3000, 9000, 9500), (3000, 9000, 9100), 1, "pytorch",
     LESSON.compares[0].means[Outcome.EXPECTED][Where.GPU]),
    ((600, 1800, 1800), (600, 601, 602), 0, "gluon",
     LESSON.compares[0].means[Outcome.OPPOSITE][Where.CPU]),
    ((600, 640, 650), (600, 1500, 1600), 1, "gluon", LESSON.rank[noise.Order.HIGHER]),
    ((600, 2400, 2500), (600, 700, 700), 1, "gluon", LESSON.rank[noise.Order.LOWER]),
]


@pytest.mark.parametrize("resnet20, tiny, gpus, engine, paragraph", OUTCOMES)
def test_each_outcome_says_the_paragraph_the_lesson_declares(make_run, resnet20, tiny, gpus,
                                                             engine, paragraph):
    runs = three(make_run, "resnet20", resnet20, engine, gpus, params=272_474) + \
        three(make_run, "tiny", tiny, engine, gpus, params=20_000)
    say = l03_graph.conclude(runs)
    text = paragraph if isinstance(paragraph, str) else paragraph[Where.GPU if gpus else Where.CPU]
    assert text in say.text and say.check() == []
    assert ("CPU" in say.text) == (gpus == 0)
    assert "First epoch in seconds, which holds the graph's building or compiling" in say.text


def test_a_tracing_backend_is_not_called_compilings_speed_up(make_run):
    runs = three(make_run, "resnet20", (600, 900), engine="pytorch",
                 ran={"compile_backend": "aot_eager"})
    say = l03_graph.conclude(runs)
    assert "tracing backend generates no fused kernels" in say.text
    assert "CUDA graphs" in say.text   # skipped on the CPU, and said
    assert not any(p in say.text for p in paragraphs(LESSON)
                   if "tracing" not in p and "CUDA graphs" not in p)


def test_the_lessons_paragraphs_carry_no_number():
    for lesson in (LESSON, l03_graph.BY_HAND):
        assert all(not closing.measurements(p) for p in paragraphs(lesson))


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
    assert "faster" in say.text and "'resnet20 by hand, eager' was host-bound" in say.text
    assert say.check() == []


def test_a_capture_on_a_gpu_bound_or_starved_step_says_why_it_had_little_to_remove(make_run):
    say = l03_graph.conclude(by_hand=by_hand(make_run, busy=97, captured_rate=4010))
    assert "within noise" in say.text and "GPU-bound: its kernels, not their launches" in say.text
    assert "One launch a step saved little" in say.text
    starved = l03_graph.conclude(by_hand=by_hand(make_run, busy=97, captured_rate=4000, wait=0.6))
    assert "data-bound: it waited for its batches" in starved.text


def test_without_a_gpu_the_capture_is_said_to_wait_and_bad_runs_are_refused(make_run):
    say = l03_graph.conclude(by_hand=[])
    assert "No GPU here, so the capture above did not run" in say.text
    runs = by_hand(make_run, busy=35, captured_rate=9000)
    with pytest.raises(ValueError, match="no run has {'graph': 'eager'}.*by hand, static"):
        l03_graph.conclude(by_hand=runs[1:])
    with pytest.raises(ValueError, match="pass runs or by_hand="):
        l03_graph.conclude()
