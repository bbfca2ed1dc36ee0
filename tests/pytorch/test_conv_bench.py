"""The convolution micro-benchmark (issue 28's first tool), rehearsed on this CPU: every
stage, pass and layout timed, each against the floor the measured limits set."""
from tools import conv_bench


def test_every_stage_pass_and_layout_is_timed_against_its_floor(capsys):
    assert conv_bench.main(["--quick", "--batch", "4"]) == 0
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
