"""Every NVML query the probe makes, against any ``pynvml``-like object.

The only dependency is ``nv``: the ``pynvml`` module itself on a live machine,
or the test kit's ``rigbook_testkit.nvml_replay.NvmlReplay`` (outside the wheel) replaying
recorded answers in tests. That argument is the whole seam: no setting or environment variable
switches rigbook to a replay. Both raise ``pynvml.NVMLError`` subclasses, so the same code runs
either way.
A query that fails leaves its field null and adds a :class:`ProbeError`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from rigbook.rig.model import Driver, Gpu, GpuPair, GpuProcess, NvLink, ProbeError

_MIB = 1024 * 1024
_TOPOLOGY_NAMES = ("INTERNAL", "SINGLE", "MULTIPLE", "HOSTBRIDGE", "NODE", "SYSTEM")
_P2P_STATUS_NAMES = (
    "OK",
    "CHIPSET_NOT_SUPPORTED",
    "GPU_NOT_SUPPORTED",
    "IOH_TOPOLOGY_NOT_SUPPORTED",
    "DISABLED_BY_REGKEY",
    "NOT_SUPPORTED",
    "UNKNOWN",
)
_P2P_CAPS = (
    ("p2p_read", "NVML_P2P_CAPS_INDEX_READ"),
    ("p2p_write", "NVML_P2P_CAPS_INDEX_WRITE"),
    ("p2p_nvlink", "NVML_P2P_CAPS_INDEX_NVLINK"),
    ("p2p_atomics", "NVML_P2P_CAPS_INDEX_ATOMICS"),
)


class NvmlReading(BaseModel):
    """What NVML said: the driver, the GPUs and the pairs, or why it said nothing."""

    driver: Driver | None = None
    gpus: list[Gpu] = Field(default_factory=list)
    pairs: list[GpuPair] = Field(default_factory=list)
    reason: str | None = None
    errors: list[ProbeError] = Field(default_factory=list)


class _Querier:
    """Calls ``nv`` functions by name; a failure is recorded, never raised."""

    def __init__(self, nv: Any):
        self.nv = nv

    def __call__(
        self, errors: list[ProbeError], field: str, query: str, *args: Any, **kwargs: Any
    ) -> Any:
        try:
            return getattr(self.nv, query)(*args, **kwargs)
        except self.nv.NVMLError as exc:
            errors.append(
                ProbeError(
                    field=field, query=query, error=str(exc), nvml_code=getattr(exc, "value", None)
                )
            )
        except Exception as exc:  # noqa: BLE001 - a binding bug must not lose the rest of the probe
            errors.append(
                ProbeError(field=field, query=query, error=f"{type(exc).__name__}: {exc}")
            )
        return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def _watts(milliwatts: Any) -> float | None:
    return None if milliwatts is None else milliwatts / 1000


def _mib(n_bytes: Any) -> int | None:
    return None if n_bytes is None else int(n_bytes) // _MIB


def _cuda_version(raw: Any) -> str | None:
    """NVML's integer CUDA version (13000) as text ('13.0')."""
    if raw is None:
        return None
    return f"{raw // 1000}.{(raw % 1000) // 10}"


def _name_of(table: tuple[str, ...], step: int, value: Any) -> str | None:
    if value is None:
        return None
    index = int(value) // step
    return (
        table[index] if 0 <= index < len(table) and int(value) % step == 0 else f"UNKNOWN({value})"
    )


def read_nvml(nv: Any) -> NvmlReading:
    """Read the driver, every GPU and every GPU pair through ``nv`` (a pynvml-like object)."""
    errors: list[ProbeError] = []
    q = _Querier(nv)
    try:
        nv.nvmlInit()
    except nv.NVMLError as exc:
        errors.append(
            ProbeError(
                field="driver",
                query="nvmlInit",
                error=str(exc),
                nvml_code=getattr(exc, "value", None),
            )
        )
        return NvmlReading(
            reason=f"NVML did not start ({exc}): no NVIDIA driver is loaded or no GPU is visible",
            errors=errors,
        )
    try:
        driver = _read_driver(q)
        count = q(errors, "gpus", "nvmlDeviceGetCount")
        handles: dict[int, Any] = {}
        gpus = []
        for index in range(count or 0):
            gpu, handle = _read_gpu(q, index)
            gpus.append(gpu)
            if handle is not None:
                handles[index] = handle
        pairs = [
            _read_pair(q, a, b, handles[a], handles[b])
            for a in sorted(handles)
            for b in sorted(handles)
            if a < b
        ]
        reason = None
        if count == 0:
            reason = "the NVIDIA driver is loaded but reports no GPU"
        elif count is None:
            reason = f"NVML could not count the GPUs: {errors[-1].error}"
        return NvmlReading(driver=driver, gpus=gpus, pairs=pairs, reason=reason, errors=errors)
    finally:
        q([], "driver", "nvmlShutdown")


def _read_driver(q: _Querier) -> Driver:
    errors: list[ProbeError] = []
    cuda = q(errors, "cuda_driver_version", "nvmlSystemGetCudaDriverVersion_v2")
    if cuda is None:
        cuda = q(errors, "cuda_driver_version", "nvmlSystemGetCudaDriverVersion")
    return Driver(
        driver_version=_text(q(errors, "driver_version", "nvmlSystemGetDriverVersion")),
        cuda_driver_version=_cuda_version(cuda),
        nvml_version=_text(q(errors, "nvml_version", "nvmlSystemGetNVMLVersion")),
        errors=errors,
    )


def _read_gpu(q: _Querier, index: int) -> tuple[Gpu, Any]:
    errors: list[ProbeError] = []
    nv = q.nv
    handle = q(errors, "index", "nvmlDeviceGetHandleByIndex", index)
    if handle is None:
        return Gpu(index=index, errors=errors), None
    gpu = Gpu(
        index=index,
        name=_text(q(errors, "name", "nvmlDeviceGetName", handle)),
        uuid=_text(q(errors, "uuid", "nvmlDeviceGetUUID", handle)),
        pcie_gen_current=q(
            errors, "pcie_gen_current", "nvmlDeviceGetCurrPcieLinkGeneration", handle
        ),
        pcie_gen_max=q(errors, "pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration", handle),
        pcie_width_current=q(
            errors, "pcie_width_current", "nvmlDeviceGetCurrPcieLinkWidth", handle
        ),
        pcie_width_max=q(errors, "pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth", handle),
        power_enforced_limit_w=_watts(
            q(errors, "power_enforced_limit_w", "nvmlDeviceGetEnforcedPowerLimit", handle)
        ),
        power_limit_w=_watts(
            q(errors, "power_limit_w", "nvmlDeviceGetPowerManagementLimit", handle)
        ),
        power_default_limit_w=_watts(
            q(errors, "power_default_limit_w", "nvmlDeviceGetPowerManagementDefaultLimit", handle)
        ),
        power_draw_w=_watts(q(errors, "power_draw_w", "nvmlDeviceGetPowerUsage", handle)),
        energy_mj=q(errors, "energy_mj", "nvmlDeviceGetTotalEnergyConsumption", handle),
        clock_sm_mhz=q(errors, "clock_sm_mhz", "nvmlDeviceGetClockInfo", handle, nv.NVML_CLOCK_SM),
        clock_mem_mhz=q(
            errors, "clock_mem_mhz", "nvmlDeviceGetClockInfo", handle, nv.NVML_CLOCK_MEM
        ),
        temperature_c=q(
            errors, "temperature_c", "nvmlDeviceGetTemperature", handle, nv.NVML_TEMPERATURE_GPU
        ),
    )
    pci = q(errors, "pci_bus_id", "nvmlDeviceGetPciInfo", handle)
    gpu.pci_bus_id = _text(pci.busId) if pci is not None else None
    _read_memory(q, handle, gpu, errors)
    constraints = q(
        errors, "power_min_limit_w", "nvmlDeviceGetPowerManagementLimitConstraints", handle
    )
    if constraints is not None:
        gpu.power_min_limit_w, gpu.power_max_limit_w = (
            _watts(constraints[0]),
            _watts(constraints[1]),
        )
    util = q(errors, "utilization_gpu_pct", "nvmlDeviceGetUtilizationRates", handle)
    if util is not None:
        gpu.utilization_gpu_pct, gpu.utilization_mem_pct = util.gpu, util.memory
    persistence = q(errors, "persistence_mode", "nvmlDeviceGetPersistenceMode", handle)
    gpu.persistence_mode = None if persistence is None else persistence == 1
    mig = q(errors, "mig_mode_current", "nvmlDeviceGetMigMode", handle)
    if mig is not None:
        gpu.mig_mode_current, gpu.mig_mode_pending = bool(mig[0]), bool(mig[1])
    ecc = q(errors, "ecc_mode_current", "nvmlDeviceGetEccMode", handle)
    if ecc is not None:
        gpu.ecc_mode_current, gpu.ecc_mode_pending = bool(ecc[0]), bool(ecc[1])
    cc = q(errors, "compute_capability", "nvmlDeviceGetCudaComputeCapability", handle)
    gpu.compute_capability = f"{cc[0]}.{cc[1]}" if cc is not None else None
    gpu.processes = _read_processes(q, handle, errors)
    gpu.nvlinks = _read_nvlinks(q, handle, errors)
    gpu.errors = errors
    return gpu, handle


def _read_memory(q: _Querier, handle: Any, gpu: Gpu, errors: list[ProbeError]) -> None:
    """The v2 memory query (it splits out driver-reserved memory); v1 where the driver lacks it."""
    nv = q.nv
    version = getattr(nv, "nvmlMemory_v2", None)
    memory = (
        q(errors, "memory_v2", "nvmlDeviceGetMemoryInfo", handle, version=version)
        if version
        else None
    )
    gpu.memory_query = "v2" if memory is not None else None
    if memory is None:
        memory = q(errors, "memory_total_mib", "nvmlDeviceGetMemoryInfo", handle)
        gpu.memory_query = "v1" if memory is not None else None
    if memory is not None:
        gpu.memory_total_mib, gpu.memory_free_mib = _mib(memory.total), _mib(memory.free)
        gpu.memory_used_mib = _mib(memory.used)
        gpu.memory_reserved_mib = _mib(getattr(memory, "reserved", None))


def _read_processes(q: _Querier, handle: Any, errors: list[ProbeError]) -> list[GpuProcess]:
    running = q(errors, "processes", "nvmlDeviceGetComputeRunningProcesses", handle) or []
    processes = []
    for proc in running:
        name = _text(q(errors, f"processes[{proc.pid}].name", "nvmlSystemGetProcessName", proc.pid))
        used = getattr(proc, "usedGpuMemory", None)
        processes.append(GpuProcess(pid=proc.pid, name=name, used_mib=_mib(used)))
    return processes


def _read_nvlinks(q: _Querier, handle: Any, errors: list[ProbeError]) -> list[NvLink]:
    """Links in order until the first that does not answer; only link 0's failure is an error worth keeping."""
    links = []
    for link in range(q.nv.NVML_NVLINK_MAX_LINKS):
        link_errors: list[ProbeError] = []
        state = q(link_errors, "nvlinks", "nvmlDeviceGetNvLinkState", handle, link)
        if state is None:
            if link == 0:
                errors.extend(link_errors)
            break
        links.append(NvLink(link=link, active=state == 1))
    return links


def _read_pair(q: _Querier, a: int, b: int, ha: Any, hb: Any) -> GpuPair:
    errors: list[ProbeError] = []
    pair = GpuPair(a=a, b=b)
    for field, constant in _P2P_CAPS:
        status = q(errors, field, "nvmlDeviceGetP2PStatus", ha, hb, getattr(q.nv, constant))
        setattr(pair, field, _name_of(_P2P_STATUS_NAMES, 1, status))
    pair.topology = _name_of(
        _TOPOLOGY_NAMES, 10, q(errors, "topology", "nvmlDeviceGetTopologyCommonAncestor", ha, hb)
    )
    pair.errors = errors
    return pair


def probe_nvml() -> NvmlReading:
    """Read NVML through the installed ``pynvml`` (nvidia-ml-py); no package gives a reading with the reason."""
    try:
        import pynvml as nv
    except ImportError as exc:
        return NvmlReading(
            reason=f"nvidia-ml-py (pynvml) is not installed: {exc}",
            errors=[ProbeError(field="driver", query="import pynvml", error=str(exc))],
        )
    return read_nvml(nv)
