"""IOMMU and ACS hints: the kernel command line, IOMMU groups, and ACS control of PCIe bridges."""

from __future__ import annotations

import re
from pathlib import Path

from rigbook.rig.model import AcsControl, Iommu, ProbeError
from rigbook.rig.run import run_cmd

_DEVICE_LINE = re.compile(r"^([0-9a-fA-F:.]+)\s+(.*)$")


def parse_acs(lspci_vvv: str) -> list[AcsControl]:
    """ACSCtl lines of `lspci -vvv` output, each with its device."""
    controls = []
    device = None
    for line in lspci_vvv.splitlines():
        head = _DEVICE_LINE.match(line)
        if head and not line.startswith((" ", "\t")):
            device = f"{head.group(1)} {head.group(2)}"
        elif "ACSCtl:" in line and device:
            ctl = line.split("ACSCtl:", 1)[1].strip()
            controls.append(
                AcsControl(
                    device=device, ctl=ctl, redirects="ReqRedir+" in ctl or "CmpltRedir+" in ctl
                )
            )
    return controls


def probe_iommu(sys_root: Path = Path("/")) -> Iommu:
    """Read /proc/cmdline, count /sys/kernel/iommu_groups, and ACS lines of `lspci -vvv` where readable."""
    iommu = Iommu()
    try:
        iommu.cmdline = (
            (sys_root / "proc/cmdline").read_text(encoding="utf-8", errors="replace").strip()
        )
    except OSError as exc:
        iommu.errors.append(
            ProbeError(field="cmdline", query="read /proc/cmdline", error=exc.strerror or str(exc))
        )
    groups = sys_root / "sys/kernel/iommu_groups"
    try:
        iommu.iommu_groups = len(list(groups.iterdir()))
    except OSError as exc:
        iommu.errors.append(
            ProbeError(field="iommu_groups", query=f"list {groups}", error=exc.strerror or str(exc))
        )
    result = run_cmd(["lspci", "-vvv"], timeout_s=15)
    if result.ok:
        iommu.acs = parse_acs(result.stdout)
    else:
        iommu.errors.append(
            ProbeError(field="acs", query="lspci -vvv", error=result.describe_failure())
        )
    return iommu
