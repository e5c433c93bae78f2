"""Replay recorded NVML answers as a ``pynvml``-like object.

A recording (``tests/fixtures/rigs/*.nvml.json``) holds, per query, the value
NVML gave or the error it raised (``{"nvml_error": "Not Supported", "code": 3}``).
:class:`NvmlReplay` answers :mod:`rigbook.rig.nvml`'s calls from it and raises
the real ``pynvml.NVMLError`` subclass for each recorded error, so the probe
code is tested exactly as it runs on a GPU machine.

Recording layout: top level ``driver_version``, ``cuda_driver_version_v2``,
``cuda_driver_version``, ``nvml_version``, ``device_count``, optional ``init``
(an error makes ``nvmlInit`` fail); ``devices[i]`` with the keys used below;
``p2p`` entries ``{"a", "b", "read", "write", "nvlink", "atomics", "topology"}``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml


class NotRecorded(LookupError):
    """The recording has no answer for this query."""


class NvmlReplay:
    """A pynvml stand-in that answers from one recording."""

    NVMLError = pynvml.NVMLError

    def __init__(self, recording: dict[str, Any]):
        self._rec = recording

    @classmethod
    def from_file(cls, path: Path | str) -> NvmlReplay:
        """The replay of a recording file."""
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def __getattr__(self, name: str) -> Any:
        # Constants (NVML_CLOCK_SM, nvmlMemory_v2 …) are the real module's.
        if name.startswith(("NVML_", "nvmlMemory_")):
            return getattr(pynvml, name)
        raise AttributeError(name)

    # --- answering ---

    @staticmethod
    def _answer(value: Any) -> Any:
        if isinstance(value, dict) and "nvml_error" in value:
            raise pynvml.NVMLError(value["code"])
        return value

    def _top(self, key: str) -> Any:
        if key not in self._rec:
            raise NotRecorded(key)
        return self._answer(self._rec[key])

    def _dev(self, handle: int, key: str) -> Any:
        device = self._rec["devices"][handle]
        if key not in device:
            raise NotRecorded(f"devices[{handle}].{key}")
        return self._answer(device[key])

    # --- system ---

    def nvmlInit(self) -> None:
        if "init" in self._rec:
            self._answer(self._rec["init"])

    def nvmlShutdown(self) -> None:
        return None

    def nvmlSystemGetDriverVersion(self) -> str:
        return self._top("driver_version")

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return self._top("cuda_driver_version_v2")

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return self._top("cuda_driver_version")

    def nvmlSystemGetNVMLVersion(self) -> str:
        return self._top("nvml_version")

    def nvmlDeviceGetCount(self) -> int:
        return self._top("device_count")

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        for device in self._rec["devices"]:
            for proc in device.get("compute_processes") or []:
                if isinstance(proc, dict) and proc.get("pid") == pid and "name" in proc:
                    return self._answer(proc["name"])
        raise NotRecorded(f"process name of {pid}")

    # --- devices ---

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        if not 0 <= index < len(self._rec["devices"]):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return index

    def nvmlDeviceGetName(self, h: int) -> str:
        return self._dev(h, "name")

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return self._dev(h, "uuid")

    def nvmlDeviceGetPciInfo(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(**self._dev(h, "pci"))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: int) -> int:
        return self._dev(h, "pcie_gen_current")

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: int) -> int:
        return self._dev(h, "pcie_gen_max")

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: int) -> int:
        return self._dev(h, "pcie_width_current")

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: int) -> int:
        return self._dev(h, "pcie_width_max")

    def nvmlDeviceGetMemoryInfo(self, h: int, version: Any = None) -> SimpleNamespace:
        key = "memory_v2" if version is not None else "memory_v1"
        return SimpleNamespace(**self._dev(h, key))

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return self._dev(h, "power_enforced_limit_mw")

    def nvmlDeviceGetPowerManagementLimit(self, h: int) -> int:
        return self._dev(h, "power_limit_mw")

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h: int) -> int:
        return self._dev(h, "power_default_limit_mw")

    def nvmlDeviceGetPowerManagementLimitConstraints(self, h: int) -> list[int]:
        return self._dev(h, "power_limit_constraints_mw")

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return self._dev(h, "power_usage_mw")

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int:
        return self._dev(h, "total_energy_mj")

    def nvmlDeviceGetClockInfo(self, h: int, clock: int) -> int:
        key = {pynvml.NVML_CLOCK_SM: "clock_sm_mhz", pynvml.NVML_CLOCK_MEM: "clock_mem_mhz"}.get(
            clock
        )
        if key is None:
            raise NotRecorded(f"clock {clock}")
        return self._dev(h, key)

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        return self._dev(h, "temperature_c")

    def nvmlDeviceGetUtilizationRates(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(**self._dev(h, "utilization"))

    def nvmlDeviceGetPersistenceMode(self, h: int) -> int:
        return self._dev(h, "persistence_mode")

    def nvmlDeviceGetMigMode(self, h: int) -> list[int]:
        return self._dev(h, "mig_mode")

    def nvmlDeviceGetEccMode(self, h: int) -> list[int]:
        return self._dev(h, "ecc_mode")

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        return tuple(self._dev(h, "cuda_compute_capability"))

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[SimpleNamespace]:
        return [
            SimpleNamespace(pid=p["pid"], usedGpuMemory=p.get("usedGpuMemory"))
            for p in self._dev(h, "compute_processes")
        ]

    def nvmlDeviceGetNvLinkState(self, h: int, link: int) -> int:
        links = self._dev(h, "nvlink")
        if link >= len(links):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return self._answer(links[link])

    # --- pairs ---

    def _pair(self, ha: int, hb: int, key: str) -> Any:
        lo, hi = sorted((ha, hb))
        for entry in self._rec.get("p2p", []):
            if (entry["a"], entry["b"]) == (lo, hi):
                if key not in entry:
                    raise NotRecorded(f"p2p[{lo},{hi}].{key}")
                return self._answer(entry[key])
        raise NotRecorded(f"p2p[{lo},{hi}]")

    def nvmlDeviceGetP2PStatus(self, ha: int, hb: int, index: int) -> int:
        key = {
            pynvml.NVML_P2P_CAPS_INDEX_READ: "read",
            pynvml.NVML_P2P_CAPS_INDEX_WRITE: "write",
            pynvml.NVML_P2P_CAPS_INDEX_NVLINK: "nvlink",
            pynvml.NVML_P2P_CAPS_INDEX_ATOMICS: "atomics",
        }[index]
        return self._pair(ha, hb, key)

    def nvmlDeviceGetTopologyCommonAncestor(self, ha: int, hb: int) -> int:
        return self._pair(ha, hb, "topology")
