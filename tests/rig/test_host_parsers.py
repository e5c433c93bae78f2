"""Readers of host facts: driver params, lspci ACS, docker info, os-release, cpuinfo, commands with timeouts."""

from __future__ import annotations

import json
import sys
import time

from rigbook.rig.docker import nvidia_cdi_specs, parse_docker_info
from rigbook.rig.driver_params import parse_params, read_params
from rigbook.rig.host import container_hint, cpu_model, meminfo_mib, os_name
from rigbook.rig.iommu import parse_acs
from rigbook.rig.run import run_cmd
from rigbook.rig.tools import probe_tool
from tests.conftest import FIXTURES

LSPCI = """40:01.1 PCI bridge: Advanced Micro Devices, Inc. [AMD] Device 14ab (rev 01)
\tControl: I/O+ Mem+ BusMaster+
\tCapabilities: [2a0 v1] Access Control Services
\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-

41:00.0 VGA compatible controller: NVIDIA Corporation Device 2bb1 (rev a1)
\tCapabilities: [2a0 v1] Access Control Services
\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-
"""


def test_driver_params_from_the_h200():
    text = json.loads((FIXTURES / "rigs" / "h200-1gpu-vm.nvml.json").read_text())["files"][
        "/proc/driver/nvidia/params"
    ]
    params = parse_params(text)
    assert params["EnableStreamMemOPs"] == "0"
    assert params["RegistryDwords"] == ""
    assert params["NvLinkDisable"] == "1"


def test_unreadable_params_keep_the_error(tmp_path):
    params, error = read_params(tmp_path / "missing")
    assert params == {} and error.field == "params" and "No such file" in error.error


def test_acs_redirects_found():
    acs = parse_acs(LSPCI)
    assert [(a.device.split()[0], a.redirects) for a in acs] == [
        ("40:01.1", True),
        ("41:00.0", False),
    ]


def test_docker_info_runtimes():
    docker = parse_docker_info(
        json.dumps(
            {
                "ServerVersion": "28.3.3",
                "Runtimes": {"runc": {}, "nvidia": {}},
                "DefaultRuntime": "runc",
                "CDISpecDirs": ["/etc/cdi"],
            }
        )
    )
    assert docker.available and docker.runtimes == ["nvidia", "runc"] and docker.nvidia_ready


def test_docker_info_server_error_is_unavailable():
    docker = parse_docker_info(
        json.dumps({"ServerErrors": ["Cannot connect to the Docker daemon"]})
    )
    assert not docker.available and "Cannot connect" in docker.errors[0].error


def test_cdi_specs_naming_nvidia(tmp_path):
    (tmp_path / "nvidia.yaml").write_text("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\n")
    (tmp_path / "other.yaml").write_text("kind: vendor.com/fpga\n")
    assert nvidia_cdi_specs([str(tmp_path), str(tmp_path / "absent")]) == [
        str(tmp_path / "nvidia.yaml")
    ]


def test_os_cpu_ram_parsers():
    assert os_name('NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 24.04.2 LTS"\n') == "Ubuntu 24.04.2 LTS"
    assert (
        cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 9554 64-Core Processor\n")
        == "AMD EPYC 9554 64-Core Processor"
    )
    assert meminfo_mib("MemTotal:       16384000 kB\n", "MemTotal") == 16000


def test_container_hint(tmp_path):
    assert container_hint(tmp_path) is None
    (tmp_path / ".dockerenv").write_text("")
    assert container_hint(tmp_path) == "/.dockerenv exists"


def test_command_timeout_never_hangs():
    start = time.monotonic()
    result = run_cmd([sys.executable, "-c", "import time; time.sleep(10)"], timeout_s=0.5)
    assert time.monotonic() - start < 5
    assert not result.ok and "did not finish within 0.5 s" in result.error


def test_missing_program_and_tool():
    assert run_cmd(["rigbook-no-such-program"]).error == "rigbook-no-such-program: not found"
    tool = probe_tool("rigbook-no-such-program")
    assert not tool.found and tool.error == "not found on PATH"
    python = probe_tool("python3")
    assert python.found and python.version.startswith("Python 3")
