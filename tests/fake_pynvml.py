"""A fake ``pynvml`` for tests: no driver, N GPUs, unsupported metrics, lost GPUs, GPM.

    fake = FakePynvml(gpus=2)
    fake.gpus[0].unsupported.add("power_w")     # this board has no power sensor
    fake.gpus[1].lost_after = 3                 # falls off the bus after 3 samples
    install(monkeypatch, fake)                  # gpu_course.measure.nvml now talks to the fake

It mirrors the parts of nvidia-ml-py that gpu_course.measure.nvml uses: the same function
names, units (bytes, milliwatts), NVMLError subclasses and GPM structures.
"""
import itertools
import sys
import types
from dataclasses import dataclass, field


class NVMLError(Exception):
    """Like pynvml.NVMLError: ``value`` is the NVML return code, str() its text."""
    value = 999
    text = "Unknown Error"

    def __str__(self):
        return self.text


def _error_class(name, value, text):
    return type(name, (NVMLError,), {"value": value, "text": text})


NVMLError_Uninitialized = _error_class("NVMLError_Uninitialized", 1, "Uninitialized")
NVMLError_InvalidArgument = _error_class("NVMLError_InvalidArgument", 2, "Invalid Argument")
NVMLError_NotSupported = _error_class("NVMLError_NotSupported", 3, "Not Supported")
NVMLError_NoPermission = _error_class("NVMLError_NoPermission", 4, "Insufficient Permissions")
NVMLError_DriverNotLoaded = _error_class("NVMLError_DriverNotLoaded", 9, "Driver Not Loaded")
NVMLError_LibraryNotFound = _error_class(
    "NVMLError_LibraryNotFound", 12, "NVML Shared Library Not Found")
NVMLError_FunctionNotFound = _error_class(
    "NVMLError_FunctionNotFound", 13, "Function Not Found")
NVMLError_GpuIsLost = _error_class("NVMLError_GpuIsLost", 15, "GPU is lost")
NVMLError_Unknown = _error_class("NVMLError_Unknown", 999, "Unknown Error")

MiB = 2**20


@dataclass
class FakeGpu:
    """One simulated board; change the fields at any time, the next query sees them."""
    name: str = "NVIDIA H100 80GB HBM3"
    memory_total_mib: float = 81559.0
    mem_used_mib: float = 1024.0
    reserved_mib: float = 0.0  # the driver's own share: in v1's "used", not in v2's
    util_gpu: int = 50
    util_mem: int = 20
    power_w: float = 300.0
    power_limit_w: float = 700.0
    temp_c: int = 60
    sm_clock_mhz: int = 1755
    sm_clock_max_mhz: int = 1980
    clock_event_reasons: int = 0          # bitmask as NVML returns it
    compute_capability: tuple = (9, 0)
    gpm: bool = False                     # GPM metrics (Hopper and newer)
    sm_active: float = 70.0               # GPM percentages at the moment of a GPM sample
    tensor_active: float = 30.0
    dram_active: float = 40.0             # GPM: % of peak DRAM bandwidth
    mem_clock_mhz: int = 2619
    mem_clock_max_mhz: int = 2619
    power_default_limit_w: float = 700.0
    pcie_gen: int = 5
    pcie_gen_max: int = 5
    pcie_width: int = 16
    pcie_width_max: int = 16
    #: metric names that raise NotSupported: util, memory, power_w, power_limit_w, temp_c,
    #: sm_clock_mhz, sm_clock_max_mhz, clock_event_reasons, name, compute_capability, gpm,
    #: mem_clock_mhz, mem_clock_max_mhz, power_default_limit_w, pcie
    unsupported: set = field(default_factory=set)
    #: metric name -> NVMLError subclass that its query raises
    failing: dict = field(default_factory=dict)
    lost: bool = False                    # fallen off the bus: every query raises GpuIsLost
    lost_after: int = None                # samples (utilisation queries) answered before lost
    samples: int = 0                      # utilisation queries answered so far


class FakeHandle:
    def __init__(self, index):
        self.index = index


class FakeGpmSample:
    serial = None       # order in which samples were taken
    values = None       # metric id -> value at that moment


class FakeGpmMetric:
    def __init__(self):
        self.metricId, self.nvmlReturn, self.value = 0, 0, 0.0


class FakeGpmMetricsGet:
    """Like pynvml.c_nvmlGpmMetricsGet_t (with a shorter metrics array)."""

    def __init__(self):
        self.version, self.numMetrics = 0, 0
        self.sample1 = self.sample2 = None
        self.metrics = [FakeGpmMetric() for _ in range(8)]


class FakePynvml(types.ModuleType):
    """A module object to put in ``sys.modules["pynvml"]``.

    gpus: a count or a list of FakeGpu. init_error: the NVMLError subclass nvmlInit
    raises (NVMLError_LibraryNotFound: no driver installed). old_binding: hide the
    functions newer than nvidia-ml-py 11 (clock *event* reasons, GPM).
    """
    NVMLError = NVMLError
    NVMLError_Uninitialized = NVMLError_Uninitialized
    NVMLError_InvalidArgument = NVMLError_InvalidArgument
    NVMLError_NotSupported = NVMLError_NotSupported
    NVMLError_NoPermission = NVMLError_NoPermission
    NVMLError_DriverNotLoaded = NVMLError_DriverNotLoaded
    NVMLError_LibraryNotFound = NVMLError_LibraryNotFound
    NVMLError_FunctionNotFound = NVMLError_FunctionNotFound
    NVMLError_GpuIsLost = NVMLError_GpuIsLost
    NVMLError_Unknown = NVMLError_Unknown
    NVML_TEMPERATURE_GPU = 0
    nvmlMemory_v2 = 0x02000028  # what nvidia-ml-py passes as version= for the v2 query
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_GPM_METRIC_SM_UTIL = 2
    NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5
    NVML_GPM_METRIC_DRAM_BW_UTIL = 10
    NVML_GPM_METRICS_GET_VERSION = 1
    c_nvmlGpmMetricsGet_t = FakeGpmMetricsGet
    _NEWER_THAN_OLD_BINDING = frozenset({
        "nvmlDeviceGetCurrentClocksEventReasons", "nvmlGpmQueryDeviceSupport",
        "nvmlGpmSampleAlloc", "nvmlGpmSampleGet", "nvmlGpmMetricsGet", "nvmlGpmSampleFree",
        "c_nvmlGpmMetricsGet_t", "nvmlSystemGetCudaDriverVersion_v2"})

    def __init__(self, gpus=1, *, init_error=None, old_binding=False,
                 driver_version="550.54.15", cuda_version=12040):
        super().__init__("pynvml")
        self.gpus = [FakeGpu() for _ in range(gpus)] if isinstance(gpus, int) else list(gpus)
        self.init_error = init_error
        self.hidden = set(self._NEWER_THAN_OLD_BINDING) if old_binding else set()
        self.driver_version = driver_version
        self.cuda_version = cuda_version
        self.initialised = 0
        self.calls = {}                   # function name -> number of calls
        self.freed_gpm_samples = 0
        self._serials = itertools.count()

    def __getattribute__(self, name):
        if name.startswith("nvml") or name.startswith("c_nvml"):
            if name in object.__getattribute__(self, "hidden"):
                raise AttributeError(f"fake pynvml has no {name} (old binding)")
            calls = object.__getattribute__(self, "calls")
            calls[name] = calls.get(name, 0) + 1
        return object.__getattribute__(self, name)

    # -- library ---------------------------------------------------------------------
    def nvmlInit(self):
        if self.init_error is not None:
            raise self.init_error()
        self.initialised += 1

    def nvmlShutdown(self):
        self._require_init()
        self.initialised -= 1

    def _require_init(self):
        if self.initialised <= 0:
            raise NVMLError_Uninitialized()

    def nvmlSystemGetDriverVersion(self):
        self._require_init()
        return self.driver_version

    def nvmlSystemGetCudaDriverVersion(self):
        self._require_init()
        return self.cuda_version

    nvmlSystemGetCudaDriverVersion_v2 = nvmlSystemGetCudaDriverVersion

    def nvmlDeviceGetCount(self):
        self._require_init()
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        self._require_init()
        if not 0 <= index < len(self.gpus):
            raise NVMLError_InvalidArgument()
        if self.gpus[index].lost:
            raise NVMLError_GpuIsLost()
        return FakeHandle(index)

    def _gpu(self, handle, metric):
        self._require_init()
        gpu = self.gpus[handle.index]
        if gpu.lost:
            raise NVMLError_GpuIsLost()
        if metric in gpu.unsupported:
            raise NVMLError_NotSupported()
        if metric in gpu.failing:
            raise gpu.failing[metric]()
        return gpu

    # -- per-device queries, in NVML's units ---------------------------------------------
    def nvmlDeviceGetName(self, handle):
        return self._gpu(handle, "name").name

    def nvmlDeviceGetCudaComputeCapability(self, handle):
        return self._gpu(handle, "compute_capability").compute_capability

    def nvmlDeviceGetUtilizationRates(self, handle):
        board = self.gpus[handle.index]
        if board.lost_after is not None and board.samples >= board.lost_after:
            board.lost = True             # the first query of sample lost_after + 1 fails
        gpu = self._gpu(handle, "util")
        gpu.samples += 1
        return types.SimpleNamespace(gpu=gpu.util_gpu, memory=gpu.util_mem)

    def nvmlDeviceGetMemoryInfo(self, handle, version=None):
        gpu = self._gpu(handle, "memory")
        total, used = int(gpu.memory_total_mib * MiB), int(gpu.mem_used_mib * MiB)
        reserved = int(gpu.reserved_mib * MiB)
        if version is None:  # v1: the driver's reserved memory counts as used
            return types.SimpleNamespace(total=total, used=used + reserved,
                                         free=total - used - reserved)
        assert version == self.nvmlMemory_v2
        return types.SimpleNamespace(total=total, used=used, reserved=reserved,
                                     free=total - used - reserved)

    def nvmlDeviceGetPowerUsage(self, handle):
        return int(self._gpu(handle, "power_w").power_w * 1000)           # milliwatts

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return int(self._gpu(handle, "power_limit_w").power_limit_w * 1000)

    def nvmlDeviceGetTemperature(self, handle, sensor):
        assert sensor == self.NVML_TEMPERATURE_GPU
        return self._gpu(handle, "temp_c").temp_c

    def nvmlDeviceGetClockInfo(self, handle, clock):
        assert clock in (self.NVML_CLOCK_SM, self.NVML_CLOCK_MEM)
        if clock == self.NVML_CLOCK_MEM:
            return self._gpu(handle, "mem_clock_mhz").mem_clock_mhz
        return self._gpu(handle, "sm_clock_mhz").sm_clock_mhz

    def nvmlDeviceGetMaxClockInfo(self, handle, clock):
        assert clock in (self.NVML_CLOCK_SM, self.NVML_CLOCK_MEM)
        if clock == self.NVML_CLOCK_MEM:
            return self._gpu(handle, "mem_clock_max_mhz").mem_clock_max_mhz
        return self._gpu(handle, "sm_clock_max_mhz").sm_clock_max_mhz

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle):
        return int(self._gpu(handle, "power_default_limit_w").power_default_limit_w * 1000)

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle):
        return self._gpu(handle, "pcie").pcie_gen

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle):
        return self._gpu(handle, "pcie").pcie_gen_max

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle):
        return self._gpu(handle, "pcie").pcie_width

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle):
        return self._gpu(handle, "pcie").pcie_width_max

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        return self._gpu(handle, "clock_event_reasons").clock_event_reasons

    nvmlDeviceGetCurrentClocksThrottleReasons = nvmlDeviceGetCurrentClocksEventReasons

    # -- GPM ---------------------------------------------------------------------------
    def nvmlGpmQueryDeviceSupport(self, handle):
        return types.SimpleNamespace(isSupportedDevice=int(self._gpu(handle, "").gpm))

    def nvmlGpmSampleAlloc(self):
        self._require_init()
        return FakeGpmSample()

    def nvmlGpmSampleFree(self, gpm_sample):
        self.freed_gpm_samples += 1

    def nvmlGpmSampleGet(self, handle, gpm_sample):
        gpu = self._gpu(handle, "gpm")
        if not gpu.gpm:
            raise NVMLError_NotSupported()
        gpm_sample.serial = next(self._serials)
        gpm_sample.values = {self.NVML_GPM_METRIC_SM_UTIL: gpu.sm_active,
                             self.NVML_GPM_METRIC_ANY_TENSOR_UTIL: gpu.tensor_active,
                             self.NVML_GPM_METRIC_DRAM_BW_UTIL: gpu.dram_active}
        return gpm_sample

    def nvmlGpmMetricsGet(self, request):
        """Each metric is the mean of its values at the two samples (a crude integral)."""
        self._require_init()
        first, second = request.sample1, request.sample2
        if (request.version != self.NVML_GPM_METRICS_GET_VERSION or first is None
                or second is None or first.serial is None or second.serial is None
                or not first.serial < second.serial):
            raise NVMLError_InvalidArgument()
        for metric in request.metrics[:request.numMetrics]:
            if metric.metricId in second.values:
                metric.nvmlReturn = 0
                metric.value = (first.values[metric.metricId]
                                + second.values[metric.metricId]) / 2
            else:
                metric.nvmlReturn = NVMLError_NotSupported.value
        return request


def install(monkeypatch, fake):
    """Make ``import pynvml`` give ``fake`` and reset gpu_course.measure.nvml to use it.

    Pass ``fake=None`` to simulate a missing binding. monkeypatch restores both
    sys.modules and gpu_course.measure.nvml's previous state when the test ends.
    """
    from gpu_course.measure import nvml
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(nvml, "_state", None)
    return fake
