"""Power checks: the enforced per-card limit against the recipe's, or below the card's default."""

from __future__ import annotations

from rigbook.findings import Finding
from rigbook.preflight.context import CheckContext

_TOLERANCE_W = 1.0


def check_power(ctx: CheckContext) -> list[Finding]:
    """W_POWER per GPU whose enforced limit differs from ``rigbook.power_limit_w_per_gpu``.

    When the recipe does not say its power, numbers are taken as measured at the
    card's default, so a limit below the default is the warning instead.
    """
    want = ctx.recipe.ext.power_limit_w_per_gpu
    findings = []
    for gpu in ctx.gpus:
        have = gpu.power_enforced_limit_w
        if have is None:
            continue
        if want is not None and abs(have - want) > _TOLERANCE_W:
            remedy = f"Set it with `sudo nvidia-smi -i {gpu.index} -pl {want:g}` to match, or record {have:g} W with any comparison."
            if gpu.power_max_limit_w is not None and want > gpu.power_max_limit_w:
                remedy = f"This card allows at most {gpu.power_max_limit_w:g} W, so it cannot match; record {have:g} W with any comparison."
            elif gpu.power_min_limit_w is not None and want < gpu.power_min_limit_w:
                remedy = f"This card allows no less than {gpu.power_min_limit_w:g} W, so it cannot match; record {have:g} W with any comparison."
            findings.append(
                Finding.make(
                    "W_POWER",
                    f"GPU {gpu.index}: enforced power limit {have:g} W; the recipe's numbers were measured at {want:g} W per card, "
                    "so yours will not be comparable",
                    gpus=[gpu.index],
                    remedy=remedy,
                )
            )
        elif (
            want is None
            and gpu.power_default_limit_w is not None
            and have < gpu.power_default_limit_w - _TOLERANCE_W
        ):
            default = gpu.power_default_limit_w
            findings.append(
                Finding.make(
                    "W_POWER",
                    f"GPU {gpu.index}: enforced power limit {have:g} W is below the card's default {default:g} W; "
                    "the recipe does not say its power",
                    gpus=[gpu.index],
                    remedy=f"Restore it with `sudo nvidia-smi -i {gpu.index} -pl {default:g}`, or record {have:g} W with any comparison.",
                )
            )
    return findings
