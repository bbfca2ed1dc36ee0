"""The convolution micro-benchmark (issue 28's first tool), rehearsed on this CPU: every
stage, pass and layout timed, each against the floor the measured limits set."""
import torch

from tools import conv_bench


def test_every_stage_pass_and_layout_is_timed_against_its_floor(capsys):
    import signal
    before = signal.getsignal(signal.SIGTERM)
    assert conv_bench.main(["--quick", "--batch", "4"]) == 0
    # its stop handler is gone again: a pool forked later in this process inherited it
    assert signal.getsignal(signal.SIGTERM) is before
    out = capsys.readouterr().out
    assert out.startswith("CPU, batch 4") and "measured limits: copy" in out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("bfloat16")]
    assert len(rows) == len(conv_bench.STAGES) * len(conv_bench.PASSES) * len(conv_bench.LAYOUTS)
    assert {r[-6] for r in rows} == set(conv_bench.PASSES)
    assert all(r[-1].startswith("×") for r in rows)
    assert "furthest from its floor: the " in out


def test_a_pass_counts_its_arithmetic_and_its_bytes():
    import torch
    fn = conv_bench.passes(2, 16, 16, 8, torch.float32, torch.contiguous_format,
                           torch.device("cpu"))
    _, flops, nbytes = fn["fprop"]
    assert flops == 2 * 2 * 16 * 8 * 8 * 16 * 9
    assert nbytes == 4 * (2 * 16 * 8 * 8 * 2 + 16 * 16 * 9)   # input, output, weight
    assert tuple(fn["dgrad"][0]().shape) == (2, 16, 8, 8)
    assert tuple(fn["wgrad"][0]().shape) == (16, 16, 3, 3)


def test_the_kernel_rung_s_passes_are_set_against_cudnn_s_and_left_out_of_the_worst():
    from tools import conv_bench
    limits = conv_bench.Limits(bytes_per_s=4e12, flops_per_s={torch.bfloat16: 7e14})
    rows = [conv_bench._row(torch.bfloat16, layout, search, "16 ch", "fprop", seconds,
                            4.8e9, 6.7e7, limits)
            for layout, search, seconds in (("NHWC", "as shipped", 137e-6),
                                            ("NCHW", "as shipped", 248e-6),
                                            ("NHWC", "triton", 40e-6))]
    lines = conv_bench.against_cudnn(rows)
    assert lines == ["bfloat16 16 ch fprop: Triton 0.040 ms against cuDNN's 0.137 ms, "
                     "×3.42 the speed; ×2.4 its floor"]
    text = conv_bench.table(rows, limits)
    assert "the kernel rung's Triton kernels against cuDNN (as shipped, NHWC):" in text
    assert "furthest from its floor: the 16 ch stage's fprop (bfloat16, NCHW" in text


def test_a_bench_stopped_part_way_prints_what_it_timed(monkeypatch, capsys):
    """A session's `timeout` sends SIGTERM: the passes timed by then are printed, with a
    line saying the rest were not (the handler turns the signal into `Stopped`)."""
    real, calls = conv_bench.passes, []

    def passes(*args):
        out = real(*args)
        for name, (fn, flops, nbytes) in list(out.items()):
            def counted(fn=fn):
                calls.append(1)
                if len(calls) > 2 * 8:       # the third pass's warm-up and 5 repeats
                    raise conv_bench.Stopped()
                return fn()
            out[name] = (counted, flops, nbytes)
        return out
    monkeypatch.setattr(conv_bench, "passes", passes)
    assert conv_bench.main(["--quick"]) == 1
    out = capsys.readouterr().out
    assert "stopped by its time limit after 2 passes: the rest were not timed" in out
    assert sum(line.split()[:1] == ["bfloat16"] for line in out.splitlines()) == 2   # rows
