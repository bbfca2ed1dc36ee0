"""gpu_course.analyse.flops: FLOPs from layer shapes, the peak table, achieved FLOP/s of a run."""
import math

import pytest

from fake_runs import load, write_run
from gpu_course.analyse import flops


def test_layers_are_counted_by_hand():
    # a 3x3 conv, 3 -> 16 channels, padding 1, on a 32x32 image: 16*32*32 outputs of 27 MACs
    assert flops.conv(3, 16, 3, 32).macs == 16 * 32 * 32 * 27
    # stride 2 halves the output side: 32*16*16 outputs of 16*9 MACs
    layer = flops.conv(16, 32, 3, 32, stride=2)
    assert layer.out_shape == (32, 16, 16) and layer.macs == 32 * 16 * 16 * 144
    # the 1x1 projection of a ResNet shortcut, stride 2 (k // 2: no padding)
    assert flops.conv(16, 32, 1, 32, 2).macs == 32 * 16 * 16 * 16
    assert flops.dense(64, 10).macs == 640


def test_resnet20_matches_the_known_figure():
    stem = 16 * 32 * 32 * 27
    stage1 = 6 * 16 * 32 * 32 * 144                       # six 16 -> 16 convs at 32x32
    stage2 = 32 * 16 * 16 * (144 + 5 * 288) + 32 * 16 * 16 * 16
    stage3 = 64 * 8 * 8 * (288 + 5 * 576) + 64 * 8 * 8 * 32
    assert flops.forward_macs("resnet20") == stem + stage1 + stage2 + stage3 + 640
    assert flops.forward_macs("resnet20") == 40_813_184    # "about 41 M multiply-adds"
    assert flops.train_flops("resnet20") == 6 * 40_813_184
    assert flops.forward_macs("resnet56") > 3 * flops.forward_macs("resnet20")
    with pytest.raises(ValueError, match="allowed: resnet20"):
        flops.layers("resnet18")


def test_precision_and_peak_by_gpu_name():
    assert flops.precision("float32", "pytorch", "9.0") == "tf32"
    assert flops.precision("float32", "gluon", "8.0") == "fp32"
    assert flops.precision("float32", "pytorch", "7.0") == "fp32"    # V100: no TF32
    assert flops.precision("bfloat16", "pytorch", "9.0") == "bf16"
    assert flops.gpu_peak_tflops("NVIDIA H100 80GB HBM3", "bf16") == (989.0, "H100")
    assert flops.gpu_peak_tflops("NVIDIA H100 PCIe", "fp32") == (51.0, "H100 PCIe")
    assert flops.gpu_peak_tflops("Tesla T4", "bf16") == (8.1, "T4")  # no bf16: fp32
    assert flops.gpu_peak_tflops("Some GPU", "fp32") == (None, None)


def test_achieved_on_a_gpu_run(tmp_path):
    run = load(write_run(tmp_path, "r", samples_per_sec=10_000.0, num_gpus=1,
                         config={"dtype": "bfloat16"}))
    got = flops.achieved(run, 10_000.0)
    assert got["precision"] == "bf16" and got["peak_tflops"] == 989.0
    assert got["achieved_tflops"] == pytest.approx(6 * 40_813_184 * 10_000 / 1e12)
    assert got["fraction_of_peak"] == pytest.approx(got["achieved_tflops"] / 989.0)
    assert "% of the peak 989" in flops.sentence(got)


def test_a_cpu_run_from_another_machine_has_no_peak(tmp_path):
    run = load(write_run(tmp_path, "cpu", num_gpus=0, machine_gpus=0, gpm=False))
    got = flops.achieved(run, 300.0)
    assert got["achieved_tflops"] > 0 and math.isnan(got["fraction_of_peak"])
    assert "not known here" in flops.sentence(got)


def test_the_ladder_table_gains_flops_columns_before_the_status(tmp_path):
    from gpu_course.analyse import metrics
    from gpu_course.show import report
    runs = [load(write_run(tmp_path, name, index=i, num_gpus=1))
            for i, name in enumerate(("a", "b"))]
    table = report.ladder_table(runs)
    assert list(table.columns)[-3:] == ["tflops", "peak_pct", "status"]
    assert [c for c in table.columns if c not in ("sm_active", "tensor_active")] == \
        metrics.TABLE_COLUMNS[:-1] + ["tflops", "peak_pct", "status"]
    text = report.format_table(table).splitlines()[0]
    assert text.index("TFLOP/s") < text.index("% of peak") < text.index("status")


def test_cpu_peak_is_measured():
    peak = flops.cpu_peak_tflops(256, 2)
    assert 1e-4 < peak < 100


def _measured_here(path):
    """The run folder at `path`, as recorded on this machine (its CPU peak is known)."""
    import json
    import socket
    meta = json.loads((path / "run.json").read_text())
    meta["hardware"]["hostname"] = socket.gethostname()
    (path / "run.json").write_text(json.dumps(meta))
    return load(path)


def test_a_bfloat16_cpu_run_is_not_held_against_the_float32_peak(tmp_path, monkeypatch):
    from gpu_course.show import report, tables
    monkeypatch.setattr(flops, "cpu_peak_tflops", lambda: 0.01)
    bf16 = _measured_here(write_run(tmp_path, "cpu bf16", num_gpus=0, machine_gpus=0,
                                    gpm=False, config={"dtype": "bfloat16"}))
    got = flops.achieved(bf16, 300.0)
    assert got["precision"] == "bf16" and math.isnan(got["fraction_of_peak"])
    assert "bf16 peak is not measured" in flops.sentence(got)
    # a float32 run here is judged against the measured float32 matmul; above it is flagged
    fp32 = _measured_here(write_run(tmp_path, "cpu fp32", num_gpus=0, machine_gpus=0,
                                    gpm=False, index=1))
    table = report.ladder_table([fp32, bf16])
    assert table.peak_pct[0] > 100 and math.isnan(table.peak_pct[1])
    assert tables.ABOVE_PEAK in report.format_table(table)
    assert tables.ABOVE_PEAK in tables.show(table).text()
