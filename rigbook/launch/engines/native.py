"""What the native GPU engines (vLLM, SGLang) share: GPU env, weights path, host and port mapping."""

from __future__ import annotations

import shutil
from typing import ClassVar

from rigbook.launch.engines.base import Engine, step
from rigbook.launch.placeholders import cuda_env, drop_options, gpu_env_defaults
from rigbook.launch.plan import StepKind, Target
from rigbook.launch.rules import Danger
from rigbook.launch.sandbox import note as sandbox_note
from rigbook.recipe.hf import artifact_repo, weights_dir
from rigbook.recipe.schema import Recipe, SglangLaunch, VllmLaunch


class NativeEngine(Engine):
    """An engine started as a program on the host, answering on ``target.host:target.port``."""

    program: str
    #: Options rigbook sets itself (host, port): the recipe's values are author-side.
    mapped_options: ClassVar[set[str]] = {"--host", "--port"}

    def local_model(self, recipe: Recipe, spec: VllmLaunch | SglangLaunch, target: Target) -> str:
        """The fetched weights folder when the recipe pins the model's repository, else the model as written."""
        for artifact in recipe.artifacts:
            if artifact_repo(artifact) == spec.model and artifact.pin:
                return str(weights_dir(target.models_dir, spec.model, artifact.pin))
        return spec.model

    def dangers(self, recipe: Recipe, spec, target: Target) -> list[Danger]:
        # The weights folder the command will name is resolved here too, so that `check` (which
        # builds no command) refuses a pinned folder that leads out of the models folder, as
        # `plan` does.
        self.local_model(recipe, spec, target)
        return super().dangers(recipe, spec, target)

    def env(self, spec: VllmLaunch | SglangLaunch, target: Target) -> dict[str, str]:
        """Multicast-off defaults, then the recipe's env, then the GPUs this launch uses."""
        return {**gpu_env_defaults(), **spec.env, **cuda_env(target)}

    def args(self, spec: VllmLaunch | SglangLaunch, target: Target) -> list[str]:
        """The recipe's args without the options rigbook maps, then host and port."""
        kept, _ = drop_options(spec.args, self.mapped_options)
        return [*kept, "--host", target.host, "--port", str(target.port)]

    def fetch_steps(self, recipe: Recipe, spec, target: Target):
        source = recipe.engine_source
        version = source.base_version if source and source.base_version else "any version"
        problem = self.missing(spec)
        package = source.pip_package if source and source.pip_package else self.kind
        found = f"{problem}: install {package}" if problem else "installed"
        return [
            step(
                StepKind.engine,
                f"engine: {self.kind} {version} (native, from your environment)",
                [found],
            )
        ]

    def notes(self, recipe: Recipe, spec, target: Target) -> list[str]:
        _, dropped = drop_options(spec.args, self.mapped_options)
        notes = [f"replaced author-side option: {d}" for d in dropped]
        return [*notes, sandbox_note(spec.kind, target)]

    def missing(self, spec) -> str | None:
        return None if shutil.which(self.program) else f"`{self.program}` is not on PATH"
