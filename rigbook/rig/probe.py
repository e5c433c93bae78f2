"""Probe this machine into a Rig document: NVML, driver parameters, host, Docker, IOMMU, tools, disk."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rigbook.rig.disk import default_models_dir, probe_disk
from rigbook.rig.docker import probe_docker
from rigbook.rig.driver_params import read_params
from rigbook.rig.host import probe_host
from rigbook.rig.iommu import probe_iommu
from rigbook.rig.model import ProbeError, Rig
from rigbook.rig.nvml import NvmlReading, probe_nvml
from rigbook.rig.tools import probe_tools

NVML_TIMEOUT_S = 60.0


def rig_from_nvml(reading: NvmlReading, **sections: Any) -> Rig:
    """A Rig from an NVML reading plus the host sections (``host=``, ``docker=`` …), stamped now."""
    return Rig(
        taken_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        source="probe",
        driver=reading.driver,
        gpus=reading.gpus,
        pairs=reading.pairs,
        reason=reading.reason,
        errors=list(reading.errors),
        **sections,
    )


def probe_rig(models_dir: Path | None = None) -> Rig:
    """Read this machine. No driver or no GPU gives a valid Rig with no GPUs and a ``reason``."""
    # NVML can block on a wedged GPU; it runs in its own thread so the probe still returns.
    pool = ThreadPoolExecutor(max_workers=4)
    try:
        nvml = pool.submit(probe_nvml)
        docker = pool.submit(probe_docker)
        iommu = pool.submit(probe_iommu)
        tools = pool.submit(probe_tools)
        host = probe_host()
        disk = probe_disk(models_dir or default_models_dir())
        try:
            reading = nvml.result(timeout=NVML_TIMEOUT_S)
        except FutureTimeout:
            reading = NvmlReading(
                reason=f"NVML did not answer within {NVML_TIMEOUT_S:g} s (a GPU may be wedged)",
                errors=[ProbeError(field="gpus", query="nvml", error="timeout")],
            )
        rig = rig_from_nvml(
            reading,
            host=host,
            docker=docker.result(),
            iommu=iommu.result(),
            tools=tools.result(),
            models_disk=disk,
        )
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    if rig.driver is not None:
        rig.driver.params, error = read_params()
        if error:
            rig.driver.errors.append(error)
    rig.live = True
    return rig
