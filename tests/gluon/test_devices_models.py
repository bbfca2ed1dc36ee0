import os

import mxnet as mx
import numpy as np
import pytest

from gpu_course.env import cpu
from gpu_course.tracks import gluon as gc
from gpu_course.tracks.gluon.devices import BFLOAT16_ON_GPU, FLOAT16_ON_CPU, effective_config
from gpu_course.tracks.gluon.models import dtype_of, graph_of, prepare, to_bfloat16


def test_cpu_fallback_gives_one_context_per_gpu_asked_for(monkeypatch):
    monkeypatch.setattr(gc.devices, "gpu_count", lambda: 0)
    devices, notice = gc.try_devices(2)
    assert devices == [mx.cpu(0), mx.cpu(1)]
    assert "No GPU" in notice
    assert gc.try_devices(0) == ([mx.cpu(0)], None)


def test_gpus_when_there_are_some_and_too_many_is_an_error(monkeypatch):
    monkeypatch.setattr(gc.devices, "gpu_count", lambda: 2)
    assert gc.try_devices(2) == ([mx.gpu(0), mx.gpu(1)], None)
    with pytest.raises(ValueError, match="num_gpus=3"):
        gc.try_devices(3)


def test_float16_only_on_a_gpu():
    cfg = gc.Experiment(dtype="float16")
    on_cpu, notice = effective_config(cfg, [mx.cpu(0)])
    assert on_cpu.dtype == "float32" and FLOAT16_ON_CPU in notice
    on_gpu, notice = effective_config(cfg.replace(num_gpus=2), [mx.gpu(0), mx.gpu(1)])
    assert (on_gpu.dtype, notice) == ("float16", None)


# the real CPU (DNNL_MAX_CPU_ISA applied), not as GPU_COURSE_CPU_FLAGS fakes it: MXNet computes on this one
REAL_BF16 = cpu.supports(cpu.Capability.MXNET_BFLOAT16, cpu._features("", os.environ.get(cpu.ISA_CAP, "")) or ())
needs_bf16 = pytest.mark.skipif(not REAL_BF16, reason=f"not on this CPU: {REAL_BF16.why}")


@pytest.mark.parametrize("fake", ["+avx512f,+avx512bw,+avx512vl,+avx512dq", "+amx_bf16"])
def test_bfloat16_on_a_cpu_with_avx512_and_never_on_a_gpu(fake, monkeypatch):
    """AVX-512 faked on (with or without AMX): the request runs as asked on the CPU."""
    monkeypatch.setenv(cpu.FAKE, fake if "avx512" in fake else "+avx512f,+avx512bw,+avx512vl,+avx512dq," + fake)
    cfg = gc.Experiment(dtype="bfloat16")
    on_cpu, notice = effective_config(cfg, [mx.cpu(0)])
    assert (on_cpu.dtype, notice) == ("bfloat16", None)
    on_gpu, notice = effective_config(cfg, [mx.gpu(0)])
    assert on_gpu.dtype == "float32" and BFLOAT16_ON_GPU in notice


@pytest.mark.parametrize("fake", ["-avx512,-amx", "-avx512bw"])
def test_bfloat16_falls_back_to_float32_on_a_cpu_without_avx512(fake, monkeypatch):
    """AVX-512 faked off (all of it, or one part oneDNN needs): float32, and why."""
    monkeypatch.setenv(cpu.FAKE, fake)
    on_cpu, notice = effective_config(gc.Experiment(dtype="bfloat16"), [mx.cpu(0)])
    assert on_cpu.dtype == "float32"
    assert "not on this CPU" in notice and "need AVX-512 (F, BW, VL, DQ)" in notice
    assert "no AVX-512" in notice and f"{cpu.FAKE}={fake}" in notice


@needs_bf16
def test_a_bfloat16_copy_computes_in_bfloat16_and_keeps_float32_weights():
    net = gc.get_model("tiny")
    cfg = gc.Experiment(graph="static", dtype="bfloat16")
    prepare(net, cfg, [mx.cpu(0)])
    x = mx.nd.random.uniform(shape=(4, 3, 32, 32))
    low = to_bfloat16(net, cfg, [mx.cpu(0)])
    assert (dtype_of(net), dtype_of(low), graph_of(low)) == ("float32", "bfloat16", "static")
    assert {np.dtype(p.dtype).name for p in low.collect_params().values()} == {"float32"}
    assert low.course_model == "tiny" and to_bfloat16(low, cfg, [mx.cpu(0)]) is low
    exact, rounded = net(x).asnumpy(), low(x).asnumpy()
    assert rounded.dtype == np.float32 and not np.array_equal(exact, rounded)   # 8 bits of mantissa
    np.testing.assert_allclose(rounded, exact, atol=0.05 * np.abs(exact).max())


def test_num_gpus_follows_the_devices_given():
    cfg, _ = effective_config(gc.Experiment(num_gpus=1), [mx.cpu(0), mx.cpu(1)])
    assert cfg.num_gpus == 2 and cfg.global_batch == 2 * cfg.batch_size


@pytest.mark.parametrize("name, zoo_class", [("resnet20", "CIFARResNetV1"),
                                             ("resnet56", "CIFARResNetV1"),
                                             ("wrn16_10", "CIFARWideResNet"),
                                             ("cifar_resnet20_v2", "CIFARResNetV2")])
def test_zoo_models_by_course_or_gluoncv_name(name, zoo_class):
    assert type(gc.get_model(name)).__name__ == zoo_class


def test_unknown_model_names_the_allowed_ones():
    with pytest.raises(ValueError, match="resnet20"):
        gc.get_model("resnet18")


def test_tiny_and_resnet20_classify_a_cifar_batch():
    x = mx.nd.random.uniform(shape=(2, 3, 32, 32))
    for name in ("tiny", "resnet20"):
        net = gc.get_model(gc.Experiment(model=name), classes=7)
        net.initialize()
        assert net(x).shape == (2, 7)


@pytest.mark.parametrize("word, graph", [("imperative", "eager"), ("hybridize", "hybrid"),
                                         ("static-alloc", "static"), ("static", "static")])
def test_prepare_hybridizes_as_the_config_says(word, graph):
    """In Gluon's words, or as a record keeps it."""
    net = gc.get_model("tiny")
    prepare(net, gc.Experiment(graph=word), [mx.cpu(0)])
    net(mx.nd.zeros((1, 3, 32, 32)))
    assert graph_of(net) == graph
    assert dtype_of(net) == "float32"


def test_prepare_keeps_the_weights_of_an_initialised_network():
    net = gc.get_model("tiny")
    net.initialize(ctx=mx.cpu(0))
    net(mx.nd.zeros((1, 3, 32, 32)))
    before = {k: v.data().asnumpy() for k, v in net.collect_params().items()}
    prepare(net, gc.Experiment(), [mx.cpu(0), mx.cpu(1)])
    for k, v in net.collect_params().items():
        assert v.list_ctx() == [mx.cpu(0), mx.cpu(1)]
        np.testing.assert_array_equal(v.data(mx.cpu(1)).asnumpy(), before[k])
