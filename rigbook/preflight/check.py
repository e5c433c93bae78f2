"""check_recipe: a recipe against a rig gives a CheckReport of coded findings."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from rigbook.codes import Severity
from rigbook.errors import InputError
from rigbook.findings import Finding
from rigbook.preflight.checks.driver import check_driver
from rigbook.preflight.checks.gpus import check_busy, check_count, check_memory, check_model
from rigbook.preflight.checks.host import check_disk, check_docker, check_port, check_tools
from rigbook.preflight.checks.license import check_license
from rigbook.preflight.checks.peers import check_p2p, check_topology
from rigbook.preflight.checks.power import check_power
from rigbook.preflight.checks.sandbox import check_sandbox
from rigbook.preflight.context import CheckContext
from rigbook.recipe.schema import Recipe
from rigbook.rig.model import Gpu, P2PTest, Rig
from rigbook.rig.p2p_test import run_p2p_test

_ORDER = {Severity.error: 0, Severity.warning: 1, Severity.info: 2}


class CheckReport(BaseModel):
    """The findings of one recipe on one rig; ``ok`` when none is an error."""

    recipe: str
    rig_source: str
    hostname: str | None
    gpus: list[int] = Field(description="The GPUs the recipe was checked on.")
    findings: list[Finding]
    p2p_test: P2PTest | None = None
    ok: bool

    @property
    def codes(self) -> list[str]:
        """The finding codes, in report order."""
        return [f.code for f in self.findings]


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, then notes (stable within each)."""
    return sorted(findings, key=lambda f: _ORDER[f.severity])


def pick_gpus(rig: Rig, need: int, asked: list[int] | None) -> list[Gpu]:
    """The GPUs asked for with ``--gpus`` (each must exist), else the rig's first ``need`` GPUs."""
    if asked is None:
        return rig.gpus[:need]
    missing = [i for i in asked if rig.gpu(i) is None]
    if missing:
        have = ", ".join(str(g.index) for g in rig.gpus) or "none"
        raise InputError(
            "E_INPUT",
            f"--gpus names GPU {', '.join(map(str, missing))}, not on this rig (GPUs: {have})",
            "Pick GPUs by the indices `rigbook rig` lists.",
        )
    if len(set(asked)) != len(asked):
        raise InputError(
            "E_INPUT", "--gpus names a GPU twice", "Give each GPU index once, e.g. --gpus 0,1."
        )
    return [g for i in asked for g in rig.gpus if g.index == i]


def check_recipe(
    recipe: Recipe,
    rig: Rig,
    *,
    gpus: list[int] | None = None,
    port: int | None = None,
    models_dir: Path | None = None,
    p2p_test: bool = False,
) -> CheckReport:
    """Check ``recipe`` on ``rig`` (on the GPUs ``gpus``, else the first it needs).

    ``p2p_test`` runs the functional peer copy test between the picked GPUs
    (a live rig only); a saved rig's own test result is used when it has one.
    Port and tool re-checks and the models dir's current free space apply to a
    live rig (``rig.live``), not to a saved document from another machine.
    """
    ctx = CheckContext(
        recipe=recipe,
        rig=rig,
        gpus=pick_gpus(rig, recipe.gpu_count, gpus),
        port=port,
        models_dir=models_dir,
    )
    test = rig.p2p_test
    if p2p_test and rig.live and len(ctx.tp_pairs) > 0:
        test = run_p2p_test(ctx.tp_pairs)
    findings: list[Finding] = []
    if not rig.gpus:
        findings.append(
            Finding.make("I_NO_GPU", f"no GPU on this rig: {rig.reason or 'none found'}")
        )
    findings += check_count(ctx, gpus)
    findings += check_driver(ctx)
    if recipe.gpu_count > 0:
        findings += check_model(ctx) + check_memory(ctx) + check_busy(ctx) + check_p2p(ctx, test)
        findings += check_topology(ctx) + check_power(ctx)
    findings += (
        check_docker(ctx)
        + check_tools(ctx)
        + check_disk(ctx)
        + check_port(ctx)
        + check_license(ctx)
        + check_sandbox(ctx)
    )
    findings = sort_findings(findings)
    return CheckReport(
        recipe=recipe.slug,
        rig_source=rig.source,
        hostname=rig.host.hostname,
        gpus=ctx.indices,
        findings=findings,
        p2p_test=test,
        ok=not any(f.blocks for f in findings),
    )
