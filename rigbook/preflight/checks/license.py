"""License check: parts of the recipe under a non-commercial license."""

from __future__ import annotations

import re

from rigbook.findings import Finding
from rigbook.preflight.context import CheckContext

_NON_COMMERCIAL = re.compile(r"non[- ]?commercial|(^|[-_ ])nc([-_ ]|$)", re.IGNORECASE)


def non_commercial(license_text: str | None) -> bool:
    """True for 'non-commercial', 'CC-BY-NC-4.0' and the like."""
    return bool(license_text and _NON_COMMERCIAL.search(license_text))


def check_license(ctx: CheckContext) -> list[Finding]:
    """W_LICENSE for the drafter and each artifact under a non-commercial license, with the recipe's alternative."""
    findings = []
    spec = ctx.recipe.ext.speculative
    drafter_flagged = bool(
        spec and (non_commercial(spec.drafter_license) or spec.drafter_commercial_use is False)
    )
    if spec and drafter_flagged:
        alt = (
            f"; the recipe's alternative: {spec.alternative}"
            if spec.alternative
            else "; the recipe offers no alternative"
        )
        findings.append(
            Finding.make(
                "W_LICENSE",
                f"drafter {spec.drafter or spec.method}: license {spec.drafter_license or 'not for commercial use'}{alt}",
            )
        )
    for artifact in ctx.recipe.artifacts:
        if artifact.kind == "drafter" and drafter_flagged:
            continue
        if non_commercial(artifact.license):
            findings.append(
                Finding.make(
                    "W_LICENSE",
                    f"{artifact.kind} {artifact.pointer or ''}: license {artifact.license}".replace(
                        "  ", " "
                    ),
                )
            )
    if non_commercial(ctx.recipe.license):
        findings.append(
            Finding.make("W_LICENSE", f"the recipe itself is under {ctx.recipe.license}")
        )
    return findings
