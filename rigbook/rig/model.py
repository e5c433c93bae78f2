"""The Rig document: what one machine has, as read by the probe (`rigbook rig`).

Every query the probe makes either gives its value or leaves the field null and
records why in an ``errors`` list next to it (:class:`ProbeError`), so a failed
query is kept with its error, never dropped. ``docs/rig.md`` documents each field.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rigbook.errors import FetchError, InputError

RIG_SCHEMA_VERSION = 1


class Doc(BaseModel):
    """Base of the Rig models: unknown fields are kept, so newer documents still load."""

    model_config = ConfigDict(extra="allow")


class ProbeError(Doc):
    """One query that failed: which field it would have filled, the call, and the error."""

    field: str
    query: str
    error: str
    nvml_code: int | None = Field(
        default=None, description="The NVML return code, for NVML queries."
    )


class Host(Doc):
    """The machine: OS, kernel, CPU, RAM, and whether it runs inside a container."""

    hostname: str | None = None
    os: str | None = Field(
        default=None,
        description="e.g. 'Ubuntu 24.04.1 LTS' from /etc/os-release, else platform.system().",
    )
    kernel: str | None = None
    arch: str | None = None
    cpu_model: str | None = None
    cpu_count: int | None = None
    ram_total_mib: int | None = None
    ram_available_mib: int | None = None
    python: str | None = None
    in_container: bool | None = None
    container_hint: str | None = Field(
        default=None, description="What showed the container (/.dockerenv, cgroup …)."
    )
    errors: list[ProbeError] = Field(default_factory=list)


class GpuProcess(Doc):
    """A compute process on a GPU and the memory it holds."""

    pid: int
    name: str | None = None
    used_mib: int | None = None


class NvLink(Doc):
    """One NVLink link of a GPU."""

    link: int
    active: bool


class Gpu(Doc):
    """One NVIDIA GPU, read through NVML. Power in watts, memory in MiB, energy in millijoules."""

    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    memory_total_mib: int | None = None
    memory_free_mib: int | None = None
    memory_used_mib: int | None = None
    memory_reserved_mib: int | None = Field(
        default=None, description="Driver-reserved memory (v2 query only)."
    )
    memory_query: str | None = Field(
        default=None, description="'v2' or 'v1': which memory query gave the numbers."
    )
    power_enforced_limit_w: float | None = None
    power_limit_w: float | None = Field(
        default=None, description="The current power management limit."
    )
    power_default_limit_w: float | None = None
    power_min_limit_w: float | None = None
    power_max_limit_w: float | None = None
    power_draw_w: float | None = None
    energy_mj: int | None = Field(
        default=None, description="Total energy counter since driver load, millijoules."
    )
    clock_sm_mhz: int | None = None
    clock_mem_mhz: int | None = None
    temperature_c: int | None = None
    utilization_gpu_pct: int | None = None
    utilization_mem_pct: int | None = None
    persistence_mode: bool | None = None
    processes: list[GpuProcess] = Field(default_factory=list)
    mig_mode_current: bool | None = None
    mig_mode_pending: bool | None = None
    ecc_mode_current: bool | None = None
    ecc_mode_pending: bool | None = None
    compute_capability: str | None = Field(default=None, description="e.g. '9.0'.")
    nvlinks: list[NvLink] = Field(default_factory=list)
    errors: list[ProbeError] = Field(default_factory=list)


class GpuPair(Doc):
    """Peer access and topology between two GPUs (``a`` < ``b``), as NVML reports them.

    The P2P fields hold NVML's status name: ``OK``, ``NOT_SUPPORTED``,
    ``CHIPSET_NOT_SUPPORTED``, ``GPU_NOT_SUPPORTED``, ``IOH_TOPOLOGY_NOT_SUPPORTED``,
    ``DISABLED_BY_REGKEY`` or ``UNKNOWN``.
    """

    a: int
    b: int
    p2p_read: str | None = None
    p2p_write: str | None = None
    p2p_nvlink: str | None = None
    p2p_atomics: str | None = None
    topology: str | None = Field(
        default=None, description="INTERNAL, SINGLE, MULTIPLE, HOSTBRIDGE, NODE or SYSTEM."
    )
    errors: list[ProbeError] = Field(default_factory=list)

    @property
    def peer_ok(self) -> bool:
        """Peer reads and writes both work."""
        return self.p2p_read == "OK" and self.p2p_write == "OK"


class Driver(Doc):
    """The NVIDIA driver: versions and the module parameters that affect peer access."""

    driver_version: str | None = None
    cuda_driver_version: str | None = Field(
        default=None, description="The CUDA version the driver supports, e.g. '13.0'."
    )
    nvml_version: str | None = None
    params: dict[str, str] = Field(
        default_factory=dict, description="/proc/driver/nvidia/params, name → value."
    )
    errors: list[ProbeError] = Field(default_factory=list)


class AcsControl(Doc):
    """One PCIe device's ACS control line from `lspci -vvv`."""

    device: str
    ctl: str
    redirects: bool = Field(
        description="ReqRedir+ or CmpltRedir+: peer traffic is sent up to the root complex."
    )


class Iommu(Doc):
    """IOMMU and ACS hints: what can route or block GPU peer traffic."""

    cmdline: str | None = None
    iommu_groups: int | None = Field(
        default=None, description="Entries in /sys/kernel/iommu_groups (0: no IOMMU)."
    )
    acs: list[AcsControl] = Field(default_factory=list)
    errors: list[ProbeError] = Field(default_factory=list)


class Docker(Doc):
    """The Docker engine and how it exposes NVIDIA GPUs (runtime or CDI)."""

    available: bool = False
    server_version: str | None = None
    runtimes: list[str] = Field(default_factory=list)
    default_runtime: str | None = None
    cdi_spec_dirs: list[str] = Field(default_factory=list)
    cdi_devices: list[str] = Field(
        default_factory=list, description="CDI spec files that name nvidia.com/gpu devices."
    )
    errors: list[ProbeError] = Field(default_factory=list)

    @property
    def nvidia_ready(self) -> bool:
        """Docker can hand NVIDIA GPUs to a container (nvidia runtime or CDI devices)."""
        return "nvidia" in self.runtimes or bool(self.cdi_devices)


class HostTool(Doc):
    """A host program a recipe may need."""

    name: str
    path: str | None = None
    version: str | None = None
    error: str | None = None

    @property
    def found(self) -> bool:
        """The program is on PATH."""
        return self.path is not None


class Disk(Doc):
    """Free space where models are stored."""

    path: str
    free_bytes: int | None = None
    total_bytes: int | None = None
    error: str | None = None


class P2PCopy(Doc):
    """One functional peer copy test between two GPUs."""

    a: int
    b: int
    verified: bool = Field(description="The bytes copied both ways came back equal.")
    gbps_a_to_b: float | None = None
    gbps_b_to_a: float | None = None
    peer_access: bool | None = Field(
        default=None, description="The CUDA runtime reports peer access."
    )
    error: str | None = None


class P2PTest(Doc):
    """The functional peer-access test: per pair results, or why it was skipped."""

    backend: str | None = Field(default=None, description="'torch' or 'cupy'.")
    size_mib: int
    pairs: list[P2PCopy] = Field(default_factory=list)
    skipped: str | None = None


class GpuSummary(BaseModel):
    """A GPU as a bench result embeds it."""

    index: int
    name: str | None
    uuid: str | None
    power_enforced_limit_w: float | None


class RigSummary(BaseModel):
    """The few facts of a rig a bench result embeds."""

    hostname: str | None
    os: str | None
    cpu: str | None
    driver_version: str | None
    cuda_driver_version: str | None
    gpus: list[GpuSummary]


class Rig(Doc):
    """One machine as the probe read it."""

    schema_version: int = RIG_SCHEMA_VERSION
    taken_at: str
    source: str = Field(description="'probe', or what the document was made from.")
    host: Host = Field(default_factory=Host)
    driver: Driver | None = Field(default=None, description="Null when no NVIDIA driver answered.")
    gpus: list[Gpu] = Field(default_factory=list)
    pairs: list[GpuPair] = Field(default_factory=list)
    reason: str | None = Field(default=None, description="Why there are no GPUs.")
    iommu: Iommu = Field(default_factory=Iommu)
    docker: Docker = Field(default_factory=Docker)
    tools: list[HostTool] = Field(default_factory=list)
    models_disk: Disk | None = None
    p2p_test: P2PTest | None = None
    errors: list[ProbeError] = Field(default_factory=list)
    live: bool = Field(
        default=False,
        exclude=True,
        description="Read from this machine just now (not loaded from a file): port and tool checks may look again.",
    )

    def gpu(self, index: int) -> Gpu | None:
        """The GPU with NVML index ``index``."""
        return next((g for g in self.gpus if g.index == index), None)

    def pair(self, a: int, b: int) -> GpuPair | None:
        """The pair record of GPUs ``a`` and ``b`` (either order)."""
        lo, hi = sorted((a, b))
        return next((p for p in self.pairs if p.a == lo and p.b == hi), None)

    def tool(self, name: str) -> HostTool | None:
        """The probed host tool ``name``."""
        return next((t for t in self.tools if t.name == name), None)

    def summary(self) -> RigSummary:
        """The facts a bench result embeds: host, CPU, driver, and each GPU's enforced power limit."""
        return RigSummary(
            hostname=self.host.hostname,
            os=self.host.os,
            cpu=self.host.cpu_model,
            driver_version=self.driver.driver_version if self.driver else None,
            cuda_driver_version=self.driver.cuda_driver_version if self.driver else None,
            gpus=[
                GpuSummary(
                    index=g.index,
                    name=g.name,
                    uuid=g.uuid,
                    power_enforced_limit_w=g.power_enforced_limit_w,
                )
                for g in self.gpus
            ],
        )


def load_rig(path: Path | str) -> Rig:
    """Read a saved Rig document (as `rigbook rig --save` writes it)."""
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FetchError("E_FETCH", f"cannot read rig file {path}: {exc.strerror or exc}") from exc
    try:
        return Rig.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        raise InputError(
            "E_INPUT",
            f"{path} is not JSON: {exc.msg} at line {exc.lineno}",
            "Give a file written by `rigbook rig --save FILE`.",
        ) from exc
    except ValidationError as exc:
        details = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise InputError(
            "E_INPUT",
            f"{path} is not a Rig document ({len(details)} problems)",
            "Give a file written by `rigbook rig --save FILE`.",
            details=details,
        ) from exc


def save_rig(rig: Rig, path: Path | str) -> Path:
    """Write ``rig`` as indented JSON to ``path``."""
    path = Path(path).expanduser()
    path.write_text(rig.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return path
