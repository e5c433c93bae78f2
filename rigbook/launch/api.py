"""The library's launch entry points: pick the recipe, plan it, and run it, as the CLI does.

``make_plan`` and ``up`` own the choices a caller would otherwise copy from the
CLI: which rig (a saved file, a probe of this machine, or none), which recipe
when none is named (the first built-in GPU recipe whose check passes, else the
embedded CPU one) and the rule for unattended runs: with ``unattended`` (the
CLI's ``--yes``) nothing but the embedded CPU recipe is picked, because a GPU
recipe can clone and run a stranger's script that nobody saw chosen.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rigbook.errors import InputError
from rigbook.findings import Finding
from rigbook.home import rigbook_home
from rigbook.launch.plan import Plan
from rigbook.launch.planner import DEFAULT_READY_TIMEOUT, build_plan
from rigbook.launch.run import UpResult, run_plan
from rigbook.launch.safety import describe, remedy_for
from rigbook.launch.screen import recipe_dangers
from rigbook.preflight.check import CheckReport, check_recipe, sort_findings
from rigbook.recipe import EMBEDDED_SLUG, Recipe, list_recipes
from rigbook.recipe.resolve import resolve_recipe
from rigbook.rig.model import Rig


def check(recipe: Recipe, rig: Rig, **choices) -> CheckReport:
    """:func:`rigbook.preflight.check.check_recipe` plus the launch safety rules, as `plan` runs
    them.

    Each construct `up` would refuse is an E_UNSAFE finding (nothing is allowed here; `up --allow`
    can). ``choices`` are check_recipe's (gpus, port, models_dir, p2p_test).
    """
    report = check_recipe(recipe, rig, **choices)
    models_dir = choices.get("models_dir") or rigbook_home() / "models"
    dangers, judged = recipe_dangers(
        recipe, models_dir=models_dir, gpus=report.gpus or None, port=choices.get("port")
    )
    unsafe = [Finding.make("E_UNSAFE", describe(d), remedy=remedy_for(d)) for d in dangers]
    unsafe += [judged] if judged else []
    findings = sort_findings(report.findings + unsafe)
    return report.model_copy(
        update={"findings": findings, "ok": not any(f.blocks for f in findings)}
    )


def load_or_probe_rig(
    rig: Rig | Path | None, *, probe: bool, models_dir: Path | None = None
) -> Rig | None:
    """``rig`` itself, the saved rig at that path, a read-only probe of this machine (``probe``),
    or None."""
    if isinstance(rig, Rig):
        return rig
    if rig is not None:
        from rigbook.rig.model import load_rig

        return load_rig(rig)
    if not probe:
        return None
    from rigbook.rig.probe import probe_rig

    return probe_rig(models_dir=models_dir)


def _fitting_recipe(rig: Rig) -> Recipe:
    """The first built-in GPU recipe whose check passes on ``rig``, else the embedded CPU one."""
    if rig.gpus:
        for recipe in list_recipes():
            if (
                0 < recipe.gpu_count <= len(rig.gpus)
                and recipe.ext.launch is not None
                and check_recipe(recipe, rig).ok
            ):
                return recipe
    return resolve_recipe(EMBEDDED_SLUG)


def pick_recipe(recipe_ref: str | None, rig: Rig | None, *, unattended: bool) -> Recipe:
    """The recipe named, else the built-in one for this machine; unattended, only the embedded
    CPU one."""
    if recipe_ref:
        return resolve_recipe(recipe_ref)
    picked = _fitting_recipe(rig) if rig is not None else resolve_recipe(EMBEDDED_SLUG)
    if unattended and picked.slug != EMBEDDED_SLUG:
        raise InputError(
            "E_INPUT",
            f"no recipe named, and the built-in pick for this machine is {picked.slug}; "
            f"with --yes rigbook picks nothing but the embedded CPU recipe {EMBEDDED_SLUG}",
            remedy=f"Read `rigbook plan {picked.slug}`, then name it: "
            f"`rigbook up {picked.slug} --yes` "
            f"(or `rigbook up {EMBEDDED_SLUG} --yes` for the CPU recipe).",
        )
    return picked


def make_plan(
    recipe_ref: str | None = None,
    *,
    rig: Rig | Path | None = None,
    probe: bool = False,
    gpus: str | None = None,
    port: int | str | None = None,
    models_dir: Path | None = None,
    drafter: str | None = None,
    name: str | None = None,
    allow: list[str] | None = None,
    timeout: float = DEFAULT_READY_TIMEOUT,
    dry_run: bool = True,
    unattended: bool = False,
) -> tuple[Recipe, Plan]:
    """The recipe (named or picked) and its plan on this machine; reads no network, starts
    nothing."""
    found = load_or_probe_rig(rig, probe=probe, models_dir=models_dir)
    recipe = pick_recipe(recipe_ref, found, unattended=unattended)
    plan = build_plan(
        recipe,
        rig=found,
        gpus=gpus,
        port=port,
        models_dir=models_dir,
        drafter=drafter,
        name=name,
        allow=allow,
        timeout=timeout,
        dry_run=dry_run,
    )
    return recipe, plan


def up(
    recipe_ref: str | None = None,
    *,
    confirm: Callable[[Plan], bool],
    progress: Callable[[str], None],
    rig: Rig | Path | None = None,
    probe: bool = True,
    unattended: bool = False,
    timeout: float = DEFAULT_READY_TIMEOUT,
    **choices,
) -> UpResult:
    """Launch a recipe for real: pick it, plan it, refuse what is unsafe, fetch, start, wait and
    smoke-test.

    ``confirm`` sees the plan before anything changes; ``choices`` are :func:`make_plan`'s (gpus,
    port, models_dir, drafter, name, allow). Signal handling is the caller's: a KeyboardInterrupt
    stops the launch.
    """
    _, plan = make_plan(
        recipe_ref,
        rig=rig,
        probe=probe,
        unattended=unattended,
        timeout=timeout,
        dry_run=False,
        **choices,
    )
    return run_plan(plan, confirm=confirm, progress=progress, timeout=timeout)
