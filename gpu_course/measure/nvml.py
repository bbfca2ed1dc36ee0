"""NVML (``pynvml``) behind a small API that never raises, the only module that touches it.

Without the binding or driver ``available()`` is False and ``init_error()`` says why; an
unsupported metric reads None, and a failure (a lost GPU) fills the sample's ``error``.
"""
import operator
import os
import threading

MiB = 2**20

#: Keys of ``sample()``: the gpu.csv columns after ``t`` and ``gpu``.
SAMPLE_KEYS = ("util_gpu", "util_mem", "mem_used_mib", "mem_total_mib", "power_w", "power_limit_w",
               "temp_c", "sm_clock_mhz", "sm_clock_max_mhz", "clock_event_reasons",
               "sm_active", "tensor_active", "dram_active", "error")

#: Bits of nvmlDeviceGetCurrentClocksEventReasons (0x1, 0x2, ...): why the SM clock is below its maximum.
CLOCK_EVENT_REASONS = {1 << bit: name for bit, name in enumerate((
    "gpu_idle", "applications_clocks", "sw_power_cap", "hw_slowdown", "sync_boost", "sw_thermal",
    "hw_thermal", "hw_power_brake", "display_clocks", "board_limit", "reliability"))}

_UNAVAILABLE = "NVML unavailable: {}; sampling CPU only"
_INIT_REASONS = (  # (binding's exception class name, what it means for a user)
    ("NVMLError_LibraryNotFound", "NVIDIA driver library not found (libnvidia-ml.so)"),
    ("NVMLError_DriverNotLoaded", "NVIDIA driver not loaded"),
    ("NVMLError_NoPermission", "no permission to open the GPU devices"),
    ("NVMLError_LibRmVersionMismatch",
     "driver and NVML library versions differ (reload the driver or reboot)"),
)
_KINDS = (("NVMLError_NotSupported", "unsupported"), ("NVMLError_GpuIsLost", "lost"),
          ("NVMLError_FunctionNotFound", "missing"))   # missing: the driver is older than the function

_lock = threading.RLock()  # guards _state, the handle cache and the GPM buffers
_state = None              # a _State once NVML was tried; None until first use


def _forget_in_child():
    """A forked child must not use the parent's handles, nor a lock held at the fork."""
    global _lock, _state
    _lock, _state = threading.RLock(), None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


class _State:
    """What the first use of NVML found, plus the per-GPU caches."""

    def __init__(self):
        self.nv = None        # the pynvml module, once nvmlInit succeeded
        self.error = None     # why NVML is unavailable
        self.count = 0
        self.handles = {}     # index -> device handle
        self.lost = set()     # indices that reported GPU_IS_LOST: never queried again
        self.static = {}      # index -> max SM clock (fixed for a board)
        self.gpm = {}         # index -> _GpmBuffers, or None where GPM is unsupported


class _GpmBuffers:
    """Two GPM samples taken in turn plus the request that compares them."""

    def __init__(self, request, prev, spare):
        self.request, self.prev, self.spare = request, prev, spare
        self.primed = False   # True once prev holds a sample


class _GpuLost(Exception):
    pass


def _nvml():
    """The NVML state, loading the binding and calling nvmlInit on first use."""
    global _state
    state = _state  # once set, read without the lock: a sampler blocked in a query
    if state is not None:  # (a wedged driver) holds it, and callers must not wait
        return state
    with _lock:
        if _state is None:
            _state = _initialise()
        return _state


def _initialise():
    state = _State()
    try:
        import pynvml
    except ImportError:
        state.error = _UNAVAILABLE.format("no Python binding (pip install nvidia-ml-py)")
        return state
    try:
        pynvml.nvmlInit()
        state.count = int(pynvml.nvmlDeviceGetCount())
    except Exception as exc:  # NVMLError, or OSError from a broken library
        state.error = _UNAVAILABLE.format(_which(pynvml, exc, _INIT_REASONS, f"{type(exc).__name__}: {exc}"))
        return state
    state.nv = pynvml
    return state


def _which(nv, exc, table, otherwise):
    """The meaning in `table` ((binding's exception class name, meaning)) of `exc`."""
    for class_name, meaning in table:
        cls = getattr(nv, class_name, None)
        if isinstance(cls, type) and isinstance(exc, cls):
            return meaning
    return otherwise


def shutdown():
    """Shut NVML down and forget everything; the next call initialises it again."""
    global _state
    with _lock:
        state, _state = _state, None
        if state is None or state.nv is None:
            return
        for buffers in state.gpm.values():
            if buffers is not None:
                for gpm_sample in (buffers.prev, buffers.spare):
                    _quietly(state.nv.nvmlGpmSampleFree, gpm_sample)
        _quietly(state.nv.nvmlShutdown)


def _quietly(fn, *args):
    try:
        return fn(*args)
    except Exception:
        return None


def available():
    """True when NVML answered (it may still see zero GPUs)."""
    return _nvml().nv is not None


def init_error():
    """Why NVML is unavailable, as a sentence for users; None when it works."""
    return _nvml().error


def gpu_count():
    """Number of GPUs NVML sees; 0 when NVML is unavailable."""
    return _nvml().count


def _checked(index):
    state = _nvml()
    try:
        in_range = 0 <= operator.index(index) < state.count
    except TypeError:
        in_range = False
    if not in_range:
        if state.nv is None:
            raise ValueError(f"GPU index {index!r}: there are no GPUs ({state.error})")
        raise ValueError(f"GPU index {index!r} out of range: allowed 0..{state.count - 1}")
    return state


def _ask(state, errors, what, fn_names, *args):
    """Call the first of fn_names that the binding and the driver know; None when
    unsupported or failed (appended to errors), _GpuLost when the GPU is lost."""
    for name in (fn_names,) if isinstance(fn_names, str) else fn_names:
        fn = getattr(state.nv, name, None)
        if fn is None:
            continue              # the binding is older than this function
        try:
            return fn(*args)
        except Exception as exc:
            kind = _which(state.nv, exc, _KINDS, "error")
            if kind == "missing":
                continue
            if kind == "lost":
                raise _GpuLost() from exc
            if kind == "error":
                errors.append(f"{what}: {exc}")
            return None
    return None


def _handle(state, index, errors):
    if state.handles.get(index) is None:   # a failed query is asked again next time
        state.handles[index] = _ask(state, errors, "handle", "nvmlDeviceGetHandleByIndex", index)
    return state.handles[index]


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def driver_version():
    """The NVIDIA driver version, e.g. "550.54.15"; None when NVML is unavailable."""
    return _text(_ask(_nvml(), [], "driver", "nvmlSystemGetDriverVersion"))


def cuda_driver_version():
    """The newest CUDA version the driver supports, e.g. "12.4"; None when unknown."""
    version = _ask(_nvml(), [], "cuda", (
        "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"))
    return None if version is None else f"{version // 1000}.{version % 1000 // 10}"   # 12040 -> "12.4"


def gpu_info(index):
    """Static facts about one GPU: index, name, memory_total_mib, compute_capability, error."""
    with _lock:
        return _reading(index, {"index": index, "name": None, "memory_total_mib": None,
                                "compute_capability": None}, _read_info)


def _read_info(state, index, handle, out, errors):
    out["name"] = _text(_ask(state, errors, "name", "nvmlDeviceGetName", handle))
    memory = _ask(state, errors, "memory", "nvmlDeviceGetMemoryInfo", handle)
    capability = _ask(state, errors, "cc", "nvmlDeviceGetCudaComputeCapability", handle)
    out["memory_total_mib"] = None if memory is None else round(memory.total / MiB, 1)
    out["compute_capability"] = None if capability is None else "{}.{}".format(*capability)


def gpus_info():
    """``gpu_info(i)`` for every GPU NVML sees (an empty list without NVML)."""
    return [gpu_info(i) for i in range(gpu_count())]


def sample(index):
    """One reading of GPU ``index`` (SAMPLE_KEYS); GPM (Hopper+) percentages average since the last."""
    # no lock: a query that blocks (a wedged driver) must not hold what others need
    return _reading(index, dict.fromkeys(SAMPLE_KEYS), _read_metrics)


def _reading(index, empty, read):
    """`empty` filled by read(state, index, handle, out, errors), the errors joined into its
    "error"; a lost GPU is remembered, and what was read before the loss is not trusted."""
    state, out, errors = _checked(index), dict(empty), []
    try:
        if index in state.lost:
            raise _GpuLost()
        handle = _handle(state, index, errors)
        if handle is not None:
            read(state, index, handle, out, errors)
    except _GpuLost:
        state.lost.add(index)
        out, errors = dict(empty), ["GPU is lost"]
    out["error"] = "; ".join(errors) or None
    return out


def _read_metrics(state, index, handle, row, errors):
    utilization = _ask(state, errors, "util", "nvmlDeviceGetUtilizationRates", handle)
    if utilization is not None:
        row["util_gpu"], row["util_mem"] = utilization.gpu, utilization.memory
    memory = _memory_info(state, errors, handle)
    if memory is not None:
        row["mem_used_mib"] = round(memory.used / MiB, 1)
        row["mem_total_mib"] = round(memory.total / MiB, 1)
    row.update(_read(state, errors, handle, ("power_w", "power_limit_w", "temp_c", "sm_clock_mhz")))
    if index not in state.static:
        before = len(errors)
        max_clock = _read(state, errors, handle, ("sm_clock_max_mhz",))["sm_clock_max_mhz"]
        if len(errors) == before:       # cache only an answer, not a failure
            state.static[index] = max_clock
    row["sm_clock_max_mhz"] = state.static.get(index)
    row["clock_event_reasons"] = _reasons(state, errors, handle)
    with _lock:  # the GPM sample pair per GPU is shared state
        row["sm_active"], row["tensor_active"], row["dram_active"] = _gpm_metrics(
            state, index, handle, errors)


# readings of one number: key -> (NVML functions, the constant of its argument and its usual
# value); power ("_w") comes in milliwatts
READINGS = {
    "power_w": ("nvmlDeviceGetPowerUsage", None),
    "power_limit_w": ("nvmlDeviceGetEnforcedPowerLimit", None),
    "power_max_limit_w": ("nvmlDeviceGetPowerManagementDefaultLimit", None),
    "temp_c": (("nvmlDeviceGetTemperature", "nvmlDeviceGetTemperatureV"), ("NVML_TEMPERATURE_GPU", 0)),
    "sm_clock_mhz": ("nvmlDeviceGetClockInfo", ("NVML_CLOCK_SM", 1)),
    "sm_clock_max_mhz": ("nvmlDeviceGetMaxClockInfo", ("NVML_CLOCK_SM", 1)),
    "mem_clock_mhz": ("nvmlDeviceGetClockInfo", ("NVML_CLOCK_MEM", 2)),
    "mem_clock_max_mhz": ("nvmlDeviceGetMaxClockInfo", ("NVML_CLOCK_MEM", 2)),
    "pcie_gen": ("nvmlDeviceGetCurrPcieLinkGeneration", None),
    "pcie_gen_max": ("nvmlDeviceGetMaxPcieLinkGeneration", None),
    "pcie_width": ("nvmlDeviceGetCurrPcieLinkWidth", None),
    "pcie_width_max": ("nvmlDeviceGetMaxPcieLinkWidth", None),
}


def _read(state, errors, handle, keys) -> dict:
    """{key: reading or None} for `keys` of READINGS."""
    out = {}
    for key in keys:
        fn, constant = READINGS[key]
        args = (handle,) if constant is None else (handle, getattr(state.nv, *constant))
        value = _ask(state, errors, key, fn, *args)
        out[key] = value / 1000 if key.endswith("_w") and value is not None else value
    return out


def _reasons(state, errors, handle):
    reasons = _ask(state, errors, "clock_event_reasons", (
        "nvmlDeviceGetCurrentClocksEventReasons",      # drivers >= 535
        "nvmlDeviceGetCurrentClocksThrottleReasons"), handle)
    if reasons is None:
        return None
    mask = int(reasons)   # the names of the bits set, joined by "|" ("" for none)
    return "|".join(CLOCK_EVENT_REASONS.get(1 << bit, f"0x{1 << bit:x}")
                    for bit in range(mask.bit_length()) if mask >> bit & 1)


def _memory_info(state, errors, handle):
    """Memory as nvidia-smi counts it: v2, whose "used" leaves out the driver's reserve."""
    version = getattr(state.nv, "nvmlMemory_v2", None)
    if version is not None:
        memory = _ask(state, [], "memory", "nvmlDeviceGetMemoryInfo", handle, version)
        if memory is not None:
            return memory
    return _ask(state, errors, "memory", "nvmlDeviceGetMemoryInfo", handle)


def _gpm_buffers(nv, handle):
    """The GPM sample pair and metrics request for one GPU; None without GPM."""
    try:
        if not nv.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice:
            return None
        request = nv.c_nvmlGpmMetricsGet_t()
        request.version = nv.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = 3   # DRAM_BW_UTIL: % of peak DRAM bandwidth
        for k, name in enumerate(("SM_UTIL", "ANY_TENSOR_UTIL", "DRAM_BW_UTIL")):
            request.metrics[k].metricId = getattr(nv, f"NVML_GPM_METRIC_{name}")
        return _GpmBuffers(request, nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc())
    except Exception:  # an older binding (AttributeError) or driver, or no GPM here
        return None


def _gpm_metrics(state, index, handle, errors):
    """(sm_active, tensor_active, dram_active) in percent between the previous sample and now."""
    if index not in state.gpm:
        state.gpm[index] = _gpm_buffers(state.nv, handle)
    buffers = state.gpm[index]
    if buffers is None:
        return None, None, None
    if _ask(state, errors, "gpm", "nvmlGpmSampleGet", handle, buffers.spare) is None:
        buffers.primed = False
        return None, None, None
    values = (None, None, None)
    if buffers.primed:
        request = buffers.request
        request.sample1, request.sample2 = buffers.prev, buffers.spare
        if _ask(state, errors, "gpm", "nvmlGpmMetricsGet", request) is not None:
            values = tuple(None if request.metrics[k].nvmlReturn != 0   # each metric's own status
                           else round(float(request.metrics[k].value), 2) for k in (0, 1, 2))
    buffers.prev, buffers.spare = buffers.spare, buffers.prev  # the newest becomes prev
    buffers.primed = True
    return values


#: PCIe bandwidth per lane and direction in GB/s, by generation (after line encoding).
PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}


def device_state(index):
    """Clocks, reasons, temperature, power and PCIe link of one GPU (None: unsupported)."""
    with _lock:
        return _reading(index, {"index": index}, _read_state)


def _read_state(state, index, handle, out, errors):
    out.update(_read(state, errors, handle, READINGS))
    out["clock_event_reasons"] = _reasons(state, errors, handle)
    lane = PCIE_LANE_GBPS.get(out["pcie_gen"])
    out["pcie_gbps"] = lane * out["pcie_width"] if lane and out["pcie_width"] else None
