"""Peer-access checks between tensor-parallel GPUs: NVML P2P status, the copy test, and topology."""

from __future__ import annotations

from rigbook.codes import CODES, Code
from rigbook.findings import Finding
from rigbook.preflight.context import CheckContext
from rigbook.rig.model import GpuPair, P2PTest, Rig

_FAR = {
    "NODE": "across PCIe host bridges within a NUMA node",
    "SYSTEM": "across NUMA nodes (the CPU interconnect)",
}


def _hints(rig: Rig) -> str:
    """What on this rig can break peer access: IOMMU, ACS redirects, driver registry keys."""
    hints = []
    cmdline = rig.iommu.cmdline or ""
    if rig.iommu.iommu_groups and "iommu=pt" not in cmdline and "iommu=off" not in cmdline:
        hints.append(
            f"the IOMMU is on ({rig.iommu.iommu_groups} groups) and the kernel command line has no iommu=pt"
        )
    redirecting = [a.device for a in rig.iommu.acs if a.redirects]
    if redirecting:
        hints.append(
            f"ACS redirects peer traffic on {len(redirecting)} bridge(s): {', '.join(redirecting[:3])}"
        )
    dwords = (rig.driver.params.get("RegistryDwords") if rig.driver else None) or ""
    if dwords:
        hints.append(f"driver RegistryDwords={dwords}")
    return "; ".join(hints)


def _status(pair: GpuPair) -> str:
    errors = {e.field: e.error for e in pair.errors}
    parts = [
        f"{what} {getattr(pair, field) or 'unread (' + errors.get(field, 'not recorded') + ')'}"
        for what, field in (("read", "p2p_read"), ("write", "p2p_write"))
    ]
    return ", ".join(parts)


def check_p2p(ctx: CheckContext, test: P2PTest | None) -> list[Finding]:
    """E_P2P for each needed pair without peer read and write (NVML) or whose copy test failed; W_P2P_TEST when skipped."""
    if not ctx.needs_p2p:
        return []
    hints = _hints(ctx.rig)
    remedy = CODES[Code.E_P2P].remedy + (f" On this rig: {hints}." if hints else "")
    findings = []
    for a, b in ctx.tp_pairs:
        pair = ctx.rig.pair(a, b)
        if pair is None:
            why = "peer access was not read on this rig"
        elif not pair.peer_ok:
            why = f"NVML peer {_status(pair)}; the recipe needs both OK"
        else:
            continue
        findings.append(
            Finding.make("E_P2P", f"GPUs {a} and {b}: {why}", gpus=[a, b], remedy=remedy)
        )
    if test is None or not ctx.tp_pairs:
        return findings
    if test.skipped:
        findings.append(
            Finding.make("W_P2P_TEST", f"peer copy test skipped: {test.skipped}", gpus=ctx.indices)
        )
        return findings
    for copy in test.pairs:
        if not copy.verified:
            why = copy.error or "the bytes copied back differ"
            findings.append(
                Finding.make(
                    "E_P2P",
                    f"GPUs {copy.a} and {copy.b}: peer copy test failed ({test.backend}): {why}",
                    gpus=[copy.a, copy.b],
                    remedy=remedy,
                )
            )
    return findings


def check_topology(ctx: CheckContext) -> list[Finding]:
    """W_TOPOLOGY for tensor-parallel pairs whose common ancestor is NODE or SYSTEM."""
    findings = []
    for a, b in ctx.tp_pairs:
        pair = ctx.rig.pair(a, b)
        if pair is not None and pair.topology in _FAR and pair.p2p_nvlink != "OK":
            findings.append(
                Finding.make(
                    "W_TOPOLOGY",
                    f"GPUs {a} and {b} connect {_FAR[pair.topology]} (topology {pair.topology})",
                    gpus=[a, b],
                )
            )
    return findings
