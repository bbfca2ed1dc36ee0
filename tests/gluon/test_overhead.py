from gpu_course import gluon as gc
from gpu_course.bench.gluon_overhead import compare, harness_cost_per_step


def test_the_harness_adds_microseconds_to_a_step():
    """Timer, loss and accuracy sums, progress bar and monitor thread: a few
    microseconds a step (a GPU step takes milliseconds). Fails on, e.g., file writes or
    a device sync added to every step."""
    assert harness_cost_per_step(steps=5000, repeats=3, progress=True) < 200e-6


def test_gc_train_runs_about_as_fast_as_a_plain_gluon_loop():
    """Loose on purpose (a shared CI machine is noisy; one retry): catches a gross
    regression; `python -m gpu_course.bench.gluon_overhead` measures the real cost."""
    cfg = gc.Experiment(name="overhead", model="tiny", train_size=384, test_size=64,
                        batch_size=32, epochs=2, num_workers=0, warmup_steps=0)
    ratios = []
    for _attempt in range(2):
        ratios.append(compare(cfg, repeats=2, log=lambda line: None)["ratio_best"])
        if ratios[-1] > 0.85:
            break
    assert max(ratios) > 0.85, ratios
