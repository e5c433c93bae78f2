"""The NVML reader, fed the real H200 answers (errors included) through the same code the live probe runs."""

from __future__ import annotations

import copy
import json

import pynvml
import pytest

from rigbook.rig.nvml import read_nvml
from rigbook_testkit.nvml_replay import NvmlReplay
from tests.conftest import FIXTURES

H200 = FIXTURES / "rigs" / "h200-1gpu-vm.nvml.json"


@pytest.fixture
def recording() -> dict:
    return json.loads(H200.read_text())


def test_h200_values_come_through(recording):
    reading = read_nvml(NvmlReplay(recording))
    assert reading.reason is None
    assert reading.driver.driver_version == "580.159.04"
    assert reading.driver.cuda_driver_version == "13.0"
    [gpu] = reading.gpus
    assert gpu.name == "NVIDIA H200"
    assert gpu.uuid == "GPU-86422532-93c9-922e-b340-691a046a01ad"
    assert gpu.pci_bus_id == "00000000:00:06.0"
    assert (gpu.pcie_gen_current, gpu.pcie_width_current) == (5, 16)
    assert gpu.power_enforced_limit_w == 700.0
    assert (gpu.power_default_limit_w, gpu.power_min_limit_w, gpu.power_max_limit_w) == (
        700.0,
        200.0,
        700.0,
    )
    assert gpu.power_draw_w == pytest.approx(120.342)
    assert gpu.energy_mj == 2426939
    assert gpu.memory_query == "v2"
    assert gpu.memory_total_mib == 150754820096 // 2**20 == 143771
    assert gpu.memory_free_mib == 143155
    assert gpu.memory_reserved_mib == 615
    assert gpu.compute_capability == "9.0"
    assert (gpu.clock_sm_mhz, gpu.clock_mem_mhz, gpu.temperature_c) == (405, 3201, 35)
    assert (
        gpu.persistence_mode is True
        and gpu.ecc_mode_current is True
        and gpu.mig_mode_current is False
    )
    assert gpu.processes == []


def test_nvml_error_is_kept_with_its_code(recording):
    [gpu] = read_nvml(NvmlReplay(recording)).gpus
    assert gpu.nvlinks == []
    [error] = gpu.errors
    assert (error.field, error.query, error.error, error.nvml_code) == (
        "nvlinks",
        "nvmlDeviceGetNvLinkState",
        "Not Supported",
        3,
    )


def test_replay_raises_real_pynvml_errors(recording):
    with pytest.raises(pynvml.NVMLError_NotSupported):
        NvmlReplay(recording).nvmlDeviceGetNvLinkState(0, 0)


def test_v1_memory_when_v2_fails(recording):
    recording["devices"][0]["memory_v2"] = {"nvml_error": "Function Not Found", "code": 13}
    [gpu] = read_nvml(NvmlReplay(recording)).gpus
    assert gpu.memory_query == "v1"
    assert gpu.memory_used_mib == 644939776 // 2**20
    assert any(e.field == "memory_v2" and e.nvml_code == 13 for e in gpu.errors)


def test_failed_power_query_leaves_null_and_error(recording):
    recording["devices"][0]["power_enforced_limit_mw"] = {"nvml_error": "No Permission", "code": 4}
    [gpu] = read_nvml(NvmlReplay(recording)).gpus
    assert gpu.power_enforced_limit_w is None
    assert [e.error for e in gpu.errors if e.field == "power_enforced_limit_w"] == [
        "Insufficient Permissions"
    ]


def test_no_driver_gives_no_gpus_and_a_reason(recording):
    recording["init"] = {"nvml_error": "Driver Not Loaded", "code": 9}
    reading = read_nvml(NvmlReplay(recording))
    assert reading.gpus == [] and reading.driver is None
    assert "Driver Not Loaded" in reading.reason


def test_pairs_read_p2p_status_and_topology(recording):
    second = copy.deepcopy(recording["devices"][0])
    second["index"], second["uuid"] = 1, "GPU-second"
    second["compute_processes"] = [{"pid": 77, "usedGpuMemory": 2 * 2**30, "name": "vllm"}]
    recording["devices"].append(second)
    recording["device_count"] = 2
    recording["p2p"] = [
        {
            "a": 0,
            "b": 1,
            "read": pynvml.NVML_P2P_STATUS_OK,
            "write": pynvml.NVML_P2P_STATUS_OK,
            "nvlink": pynvml.NVML_P2P_STATUS_NOT_SUPPORTED,
            "atomics": {"nvml_error": "Unknown Error", "code": 999},
            "topology": pynvml.NVML_TOPOLOGY_NODE,
        }
    ]
    reading = read_nvml(NvmlReplay(recording))
    [pair] = reading.pairs
    assert (pair.a, pair.b, pair.p2p_read, pair.p2p_write, pair.p2p_nvlink) == (
        0,
        1,
        "OK",
        "OK",
        "NOT_SUPPORTED",
    )
    assert pair.p2p_atomics is None and pair.errors[0].field == "p2p_atomics"
    assert pair.topology == "NODE" and pair.peer_ok
    assert [(p.pid, p.name, p.used_mib) for p in reading.gpus[1].processes] == [(77, "vllm", 2048)]
