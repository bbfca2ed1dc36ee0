"""What the CPU can compute (gpu_course.env.cpu): read from a real cpuinfo file, faked on
and off, and recorded with every run."""
import pytest

from gpu_course.env import cpu
from gpu_course.measure import records

EPYC_AVX2 = "fpu vme sse4_2 avx f16c fma avx2 bmi2"   # Zen 2/3: no AVX-512
ZEN4 = EPYC_AVX2 + " avx512f avx512dq avx512bw avx512vl avx512_vnni avx512_bf16"
SAPPHIRE_RAPIDS = ZEN4 + " avx512_fp16 amx_tile amx_bf16 amx_int8"


@pytest.fixture
def cpuinfo(tmp_path, monkeypatch):
    """cpuinfo(flags): this machine's /proc/cpuinfo replaced by a file with those flags."""
    def write(flags):
        path = tmp_path / "cpuinfo"
        path.write_text("processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: " + flags + "\n\n"
                        "processor\t: 1\nflags\t\t: " + flags + "\n")
        monkeypatch.setattr(cpu, "CPUINFO", path)
        cpu._features.cache_clear()
        return path
    monkeypatch.delenv(cpu.FAKE, raising=False)
    monkeypatch.delenv(cpu.ISA_CAP, raising=False)
    yield write
    cpu._features.cache_clear()


@pytest.mark.parametrize("flags, mxnet_bf16, bf16_instructions", [
    (EPYC_AVX2, False, False), (ZEN4, True, True), (SAPPHIRE_RAPIDS, True, True),
    (EPYC_AVX2 + " avx512f avx512dq avx512bw avx512vl", True, False),   # Skylake-SP
    (EPYC_AVX2 + " avx512f", False, False),                             # Knights Landing
])
def test_capabilities_follow_the_cpus_flags(cpuinfo, flags, mxnet_bf16, bf16_instructions):
    cpuinfo(flags)
    assert bool(cpu.supports(cpu.Capability.MXNET_BFLOAT16)) == mxnet_bf16
    assert bool(cpu.supports(cpu.Capability.BFLOAT16_INSTRUCTIONS)) == bf16_instructions
    assert "bmi2" not in cpu.features() and "avx2" in cpu.features()   # only what the course reads


def test_faked_off_and_on_and_named_in_the_reason(cpuinfo, monkeypatch):
    cpuinfo(SAPPHIRE_RAPIDS)
    monkeypatch.setenv(cpu.FAKE, "-avx512,-amx")
    assert cpu.features() == {"sse4_2", "avx", "f16c", "fma", "avx2"}
    refused = cpu.supports(cpu.Capability.MXNET_BFLOAT16)
    assert not refused and "this CPU has AVX2, no AVX-512, no AVX512-BF16, no AMX " \
        f"({cpu.FAKE}=-avx512,-amx)" in refused.why
    assert records.hardware()["cpu_features_faked"] == f"{cpu.FAKE}=-avx512,-amx"
    assert records.hardware()["cpu_features"] == sorted(cpu.features())
    cpuinfo(EPYC_AVX2)
    monkeypatch.setenv(cpu.FAKE, "+avx512f,+avx512bw,+avx512vl,+avx512dq,+amx_bf16")
    assert cpu.supports(cpu.Capability.MXNET_BFLOAT16)
    assert cpu.supports(cpu.Capability.BFLOAT16_INSTRUCTIONS)
    assert cpu.describe(cpu.features()) == "AVX2, AVX-512, no AVX512-BF16, AMX"


@pytest.mark.parametrize("cap, mxnet_bf16, bf16_instructions", [
    ("AVX2", False, False), ("avx2", False, False), ("AVX512_CORE", True, False),
    ("AVX512_CORE_BF16", True, True), ("AVX512_CORE_AMX", True, True), ("ALL", True, True)])
def test_onednns_own_cap_hides_what_it_will_not_use(cpuinfo, monkeypatch, cap, mxnet_bf16,
                                                   bf16_instructions):
    """DNNL_MAX_CPU_ISA=AVX2 makes MXNet's bfloat16 fail as on an AVX2 CPU: the course
    reads it as such a CPU, and names it."""
    cpuinfo(SAPPHIRE_RAPIDS)
    monkeypatch.setenv(cpu.ISA_CAP, cap)
    assert bool(cpu.supports(cpu.Capability.MXNET_BFLOAT16)) == mxnet_bf16
    assert bool(cpu.supports(cpu.Capability.BFLOAT16_INSTRUCTIONS)) == bf16_instructions
    if not mxnet_bf16:
        assert f"({cpu.ISA_CAP}={cap})" in cpu.supports(cpu.Capability.MXNET_BFLOAT16).why


def test_flags_passed_in_are_judged_not_this_machines(cpuinfo):
    """A record's flags (an exercise reads them) decide, whatever this machine has."""
    cpuinfo(ZEN4)
    assert not cpu.supports(cpu.Capability.MXNET_BFLOAT16, EPYC_AVX2.split())
    assert cpu.supports(cpu.Capability.MXNET_BFLOAT16, ZEN4.split())


def test_a_machine_that_does_not_say_has_no_capability(cpuinfo, tmp_path, monkeypatch):
    cpuinfo(ZEN4)
    missing = tmp_path / "none"
    monkeypatch.setattr(cpu, "CPUINFO", missing)
    cpu._features.cache_clear()
    assert cpu.features() is None
    refused = cpu.supports(cpu.Capability.MXNET_BFLOAT16)
    assert not refused and "instruction sets unknown" in refused.why
    assert records.hardware()["cpu_features"] is None


@pytest.mark.parametrize("spec", ["avx512", "-avx512;+amx", "+", "-avx 512"])
def test_a_bad_fake_names_the_value_and_what_is_allowed(cpuinfo, monkeypatch, spec):
    cpuinfo(ZEN4)
    monkeypatch.setenv(cpu.FAKE, spec)
    with pytest.raises(ValueError, match=rf"{cpu.FAKE}=.*is not a change; allowed: '-name'"):
        cpu.features()
