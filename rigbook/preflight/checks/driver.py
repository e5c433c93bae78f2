"""Driver checks: a driver for a GPU recipe, and the recipe's driver / CUDA floor."""

from __future__ import annotations

import re

from rigbook.findings import Finding
from rigbook.preflight.context import CheckContext


def _version(text: str | None) -> tuple[int, ...] | None:
    match = re.match(r"\s*(\d+(?:\.\d+)*)", text or "")
    return tuple(int(p) for p in match.group(1).split(".")) if match else None


def check_driver(ctx: CheckContext) -> list[Finding]:
    """E_DRIVER when a GPU recipe meets no driver, or a driver / CUDA version below the floor."""
    if ctx.recipe.gpu_count == 0:
        return []
    driver = ctx.rig.driver
    if driver is None or driver.driver_version is None:
        return [
            Finding.make(
                "E_DRIVER", "no NVIDIA driver answered on this rig; the recipe runs on GPUs"
            )
        ]
    floor = ctx.recipe.requirements.driver_floor if ctx.recipe.requirements else None
    if floor is None:
        return []
    findings = []
    for what, have, want in (
        ("driver", driver.driver_version, floor.linux_min),
        ("CUDA driver version", driver.cuda_driver_version, floor.cuda),
    ):
        have_v, want_v = _version(have), _version(want)
        if have_v is not None and want_v is not None and have_v < want_v:
            findings.append(
                Finding.make("E_DRIVER", f"{what} {have} is below the recipe's floor {want}")
            )
    return findings
