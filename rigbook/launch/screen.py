"""Screen a recipe's launch with every safety rule, the same way for `plan`, `up` and `check`."""

from __future__ import annotations

from pathlib import Path

from rigbook.errors import RigbookError
from rigbook.home import rigbook_home
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


def recipe_dangers(
    recipe: Recipe, *, models_dir: Path, gpus: list[int] | None = None, port: int | None = None
) -> list[Danger]:
    """The dangers `plan` would find, for `check` (which has no launch target): nothing allowed.

    A recipe without a launch rigbook can run has none (`plan` says why it cannot run it).
    """
    try:
        launch_spec(recipe)
    except RigbookError:
        return []
    chosen = [GpuRef(index=i) for i in (gpus if gpus is not None else range(recipe.gpu_count))]
    target = Target(
        name="check",
        gpus=chosen,
        port=port or 8000,
        models_dir=models_dir,
        work_dir=rigbook_home() / "repos",
    )
    return target_dangers(recipe, target)
