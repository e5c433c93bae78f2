"""Screen a recipe's launch with every safety rule, the same way for `plan`, `up` and `check`."""

from __future__ import annotations

from pathlib import Path

from rigbook.errors import RigbookError
from rigbook.findings import Finding
from rigbook.home import dry_run_from_env, rigbook_home
from rigbook.launch.docker_inspect import Judgement, judge_run
from rigbook.launch.engines import engine_for
from rigbook.launch.plan import GpuRef, Target
from rigbook.launch.rules import Danger
from rigbook.launch.sandbox import sandbox_dangers
from rigbook.launch.spec import launch_spec
from rigbook.recipe.schema import LaunchSpec, Recipe


def target_dangers(recipe: Recipe, target: Target, spec: LaunchSpec | None = None) -> list[Danger]:
    """Every danger in ``recipe``'s launch on ``target``; a path that escapes its root is one
    too. ``spec``: the recipe's launch spec when the caller has it (a plan resolves it once)."""
    spec = spec if spec is not None else launch_spec(recipe)
    try:
        return engine_for(spec.kind).dangers(recipe, spec, target) + sandbox_dangers(spec.kind)
    except RigbookError as exc:
        if exc.code != "E_UNSAFE":
            raise
        return [Danger(None, exc.message)]


def docker_judgement(recipe: Recipe, target: Target, spec: LaunchSpec) -> Judgement:
    """Docker's own verdict on the container a docker recipe would start (see docker_inspect);
    a dry run asks docker nothing."""
    if dry_run_from_env():
        return Judgement(judge="hand", reason="a dry run (RIGBOOK_DRY_RUN) asks docker nothing")
    run = engine_for(spec.kind).run_model(recipe, spec, target)  # type: ignore[attr-defined]
    gpus = {str(g.index) for g in target.gpus} | {g.uuid for g in target.gpus if g.uuid}
    return judge_run(run, gpus=gpus, roots=[target.models_dir])


def screen(
    recipe: Recipe, target: Target, spec: LaunchSpec | None = None
) -> tuple[list[Danger], Finding | None]:
    """:func:`target_dangers`; for a docker recipe also docker's own verdict (its dangers are
    added to the hand parser's) and a finding that says which judge decided."""
    spec = spec if spec is not None else launch_spec(recipe)
    dangers = target_dangers(recipe, target, spec)
    if spec.kind != "docker":
        return dangers, None
    judged = docker_judgement(recipe, target, spec)
    if judged.judge == "hand":
        return dangers, Finding.make(
            "I_HAND_JUDGE", f"rigbook's own reading decided: {judged.reason}"
        )
    found = [d for d in judged.dangers if d not in dangers]
    message = f"docker judged it: {judged.reason}; {len(judged.dangers)} danger(s) seen by docker"
    return dangers + found, Finding.make("I_DOCKER_JUDGE", message)


def recipe_dangers(
    recipe: Recipe, *, models_dir: Path, gpus: list[int] | None = None, port: int | None = None
) -> tuple[list[Danger], Finding | None]:
    """The dangers `plan` would find, for `check` (which has no launch target): nothing allowed;
    and which judge decided a docker recipe.

    A recipe without a launch rigbook can run has none (`plan` says why it cannot run it).
    """
    try:
        launch_spec(recipe)
    except RigbookError:
        return [], None
    chosen = [GpuRef(index=i) for i in (gpus if gpus is not None else range(recipe.gpu_count))]
    target = Target(
        name="check",
        gpus=chosen,
        port=port or 8000,
        models_dir=models_dir,
        work_dir=rigbook_home() / "repos",
    )
    return screen(recipe, target)
